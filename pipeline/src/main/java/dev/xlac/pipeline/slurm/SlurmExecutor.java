package dev.xlac.pipeline.slurm;

import dev.xlac.pipeline.shard.ResultLines;
import dev.xlac.pipeline.shard.RemoteShardTransport;
import dev.xlac.pipeline.shard.SharedDirectoryTransport;
import dev.xlac.pipeline.shard.ShardTransport;
import dev.xlac.pipeline.shard.ShardTask;
import dev.xlac.pipeline.shard.ShardPlan;
import dev.xlac.cache.BundleKey;
import dev.xlac.cache.BundleSigningKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.DiskFullException;
import dev.xlac.cache.RemoteSetting;
import dev.xlac.cache.remote.RemoteSession;
import dev.xlac.cache.remote.RemoteTier;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.pipeline.CompileExecutor;
import dev.xlac.pipeline.CompileWork;
import dev.xlac.pipeline.RecordedRequests;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * {@code parallel-compile --executor slurm}: the programs {@link CompileRuns} hands over are split into shards
 * ({@link ShardPlan}) and one Slurm job array compiles them, task I shard I, each on its node with the local
 * scheduler ({@link ShardTask}). The results come back through a {@link ShardTransport} (the shared directory, or
 * the cache's remote tier) and are imported into the cache; the run reports them as a local one's.
 *
 * <p>A task that ends without handing back results (it died, its node failed, it was cancelled by someone else,
 * its bundle could not be imported) is submitted again, its shard alone, up to {@code taskRetries} times; then its
 * graphs are reported as not compiled, naming the task's state and log. A shutdown (Ctrl-C, SIGTERM) cancels every
 * job of the run ({@code scancel}) and ends the graphs not yet back as not compiled.
 */
public final class SlurmExecutor implements CompileExecutor {
  private final SlurmSettings slurm;

  public SlurmExecutor(SlurmSettings slurm) {
    this.slurm = slurm;
  }

  @Override
  public void checkReady() {
    SlurmClient.requireSbatch(slurm.env().get("PATH"));
  }

  @Override
  public boolean compilesHere() {
    return false;
  }

  /** This one's, with the Slurm commands' over it, as sbatch passes it on to the tasks. */
  @Override
  public Map<String, String> compileEnvironment() {
    Map<String, String> env = new HashMap<>(System.getenv());
    env.putAll(slurm.env());
    return env;
  }

  @Override
  public Compiles start(Run run) {
    return new Submission(run);
  }

  /** The programs of one run, gathered until {@link #finish}, then compiled on one job array. */
  private final class Submission implements Compiles {
    private final Run run;
    private final SequencedMap<GraphFingerprint, String> graphs = new TreeMap<>();
    private final Map<RequestKey, CompileWork.Request> requests = new LinkedHashMap<>();
    private Array array;
    private boolean cancelled;
    private int jobs;

    Submission(Run run) {
      this.run = run;
      this.jobs = run.settings().jobs();
    }

    @Override
    public synchronized void submit(CompileWork work) {
      switch (work) {
        case CompileWork.Graph g -> graphs.put(g.key(), g.name());
        case CompileWork.Request r -> requests.put(r.key(), r);
      }
    }

    @Override
    public List<GraphResult> finish() throws InterruptedException {
      synchronized (this) {
        if (cancelled) { // stopped before anything was submitted: no job to cancel
          return stopped();
        }
      }
      return distribute(this);
    }

    private synchronized List<GraphResult> stopped() {
      List<GraphResult> stopped = new ArrayList<>();
      graphs.forEach((fp, module) -> stopped.add(notCompiled(fp, module, "the run was stopped")));
      requests.values().forEach(r -> stopped.add(notCompiled(r.key(), r.name(), "the run was stopped")));
      return stopped;
    }

    @Override
    public void cancel() {
      Array a;
      synchronized (this) {
        cancelled = true;
        a = array;
      }
      if (a != null) {
        a.cancel();
      }
    }

    /** Whether {@code a} may submit: false when a shutdown came while the shards were written. */
    synchronized boolean started(Array a) {
      array = a;
      return !cancelled;
    }

    @Override
    public synchronized int jobs() {
      return jobs;
    }

    @Override
    public void close() {}
  }

  /** Compiles what {@code s} gathered on the cluster; the results come back through the remote or the shared directory. */
  private List<GraphResult> distribute(Submission s) throws InterruptedException {
    Run r = s.run;
    CacheStore store = r.store();
    RemoteSession session = r.remote();
    CompilerIdentity identity = r.drivers().identity();
    SequencedMap<GraphFingerprint, String> todo = s.graphs;
    Map<RequestKey, CompileWork.Request> requests = s.requests;
    List<ShardPlan.SizedRequest> sized = new ArrayList<>();
    for (CompileWork.Request q : requests.values()) {
      sized.add(new ShardPlan.SizedRequest(q.key(), q.name(), programBytes(store, q)));
    }
    ShardPlan plan = ShardPlan.plan(ShardPlan.costs(store, todo, sized), Math.min(slurm.shards(),
        todo.size() + requests.size()));
    Path run = runDirectory(slurm.sharedDir());
    // The session is enabled exactly when the run uses the cache's remote: then the results come back through it,
    // unless the remote already failed while the graphs were settled (said once): then through the shared directory.
    // With require-signed on, the cache would refuse the tasks' unsigned objects: the results then come back as
    // bundles signed by the run's own key, which the import trusts.
    boolean enabled = session != null && session.enabled();
    boolean signed = store.trustSettings().requireSigned();
    Optional<RemoteSetting> remote = enabled && session.stats().unavailable() == null && !signed
        ? store.remoteSetting() : Optional.empty();
    if (signed && enabled) {
      slurm.progress().accept("Slurm: the cache has require-signed on: the shards' results come back as bundles"
          + " signed by the run's own key through the shared directory, not through the remote tier");
    }
    try (RemoteTier tier = remote.map(t -> RemoteShardTransport.openTier(t, r.listener()::notice)).orElse(null)) {
      Path script = run.resolve("task.sh");
      ShardTransport transport;
      try {
        if (tier == null) { // bundles signed by a throwaway key of this run's, imported trusting only it
          BundleKey runKey = BundleSigningKey.generate(run.resolve(ShardTask.RUN_KEY), false).key();
          transport = new SharedDirectoryTransport(run, null, runKey);
        } else {
          transport = new RemoteShardTransport(run, tier, session.stats(), line -> slurm.progress().accept(line));
        }
        transport.sendInputs(plan, store, key -> requestInput(store, requests.get(key)));
        AtomicFiles.writeString(script, script(slurm.taskCommand(), transport.taskArguments(), run));
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
      } catch (IOException e) {
        throw new XlacException(ExitCode.ENVIRONMENT, "cannot write the shards to " + run + ": "
            + XlacException.reason(e) + " (--shared-dir must be a directory every node sees, writable here)", e);
      }
      Array array = new Array(new SlurmClient(slurm.env()), slurm, transport, run, plan, store, identity);
      if (!s.started(array)) {
        return s.stopped();
      }
      List<GraphResult> results = array.run();
      synchronized (s) {
        s.jobs = r.settings().jobs() * plan.nonEmpty().size();
      }
      return results;
    } finally {
      try { // the key signs nothing more: no one may use it to sign a bundle this run would take
        Files.deleteIfExists(run.resolve(ShardTask.RUN_KEY + ".key"));
      } catch (IOException e) {
        // it was trusted by this run only, which is over
      }
    }
  }

  /** The size of the program a request sends the run's plugin; 0 when its recorded request cannot be read. */
  private static long programBytes(CacheStore store, CompileWork.Request r) {
    try {
      return RecordedRequests.program(store, r).length;
    } catch (IllegalStateException e) {
      return 0; // the store said why; sending its inputs will fail the same way, naming it
    }
  }

  private static ShardTransport.RequestInput requestInput(CacheStore store, CompileWork.Request r)
      throws IOException {
    try {
      return new ShardTransport.RequestInput(r.key(), r.name(), r.format(), RecordedRequests.program(store, r),
          r.options(), r.identityText());
    } catch (IllegalStateException e) {
      throw new IOException(r.key().describe(r.name()) + ": " + e.getMessage(), e);
    }
  }


  static GraphResult notCompiled(dev.xlac.core.ProgramKey fp, String module, String why) {
    return new GraphResult(fp, module, GraphResult.Status.NOT_RUN, Duration.ZERO, 0, null, "not compiled: " + why);
  }

  private static Path runDirectory(Path shared) {
    // The name also names the run's objects in a remote tier, which submitters on other hosts share.
    String name = "run-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + "-"
        + ProcessHandle.current().pid() + "-" + java.util.HexFormat.of().toHexDigits(
            new java.security.SecureRandom().nextInt()).substring(0, 6);
    try {
      Files.createDirectories(shared);
      return Files.createDirectory(shared.toAbsolutePath().resolve(name));
    } catch (IOException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot make a run directory in --shared-dir " + shared + ": "
          + XlacException.reason(e), e);
    }
  }

  /** The batch script: the task command for this run, the shard from Slurm's array index. */
  static String script(List<String> taskCommand, Path run) {
    return script(taskCommand, List.of(), run);
  }

  /** As {@link #script(List, Path)}, with the transport's arguments ({@code --remote URL}) after the command's. */
  static String script(List<String> taskCommand, List<String> transportArgs, Path run) {
    StringBuilder s = new StringBuilder("#!/bin/sh\n# xlac parallel-compile --executor slurm: array task I compiles"
        + " shard I of the run in " + run.toString().replace('\n', ' ').replace('\r', ' ') + "\nexec");
    for (String arg : taskCommand) {
      s.append(' ').append(quote(arg));
    }
    for (String arg : transportArgs) {
      s.append(' ').append(quote(arg));
    }
    return s.append(' ').append(quote("--run-dir")).append(' ').append(quote(run.toString())).append('\n').toString();
  }

  static String quote(String arg) {
    return "'" + arg.replace("'", "'\\''") + "'";
  }

  /**
   * Imports what a shard's task handed back through {@code transport} (its bundle, signed by the run's own key, or
   * the artifacts its manifest names in the remote tier) into {@code store}, and one result per graph of the shard
   * (a graph the task did not report is not compiled). Damaged or missing results are an {@link XlacException}
   * (from the cache's importer, which checks every piece and the signature, or from the remote pull), a damaged
   * line an IllegalArgumentException: either way the shard counts as failed and is submitted again.
   */
  static List<GraphResult> importResults(CacheStore store, ShardTransport transport, ShardTransport.Results back,
      ShardPlan.Shard shard, CompilerIdentity identity) throws InterruptedException {
    List<GraphResult> lines = new ArrayList<>();
    for (int i = 0; i < back.lines().size(); i++) {
      try {
        lines.add(ResultLines.parse(back.lines().get(i)));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("shard result line " + (i + 1) + ": " + e.getMessage(), e);
      }
    }
    transport.importResults(store, back, lines, identity);
    // The lines and what came with them must agree: a task that Slurm requeued under the same job id may have
    // replaced the bundle after its lines were read, and a line that says compiled must not outlive its artifact.
    for (GraphResult g : lines) {
      if (g.status() == GraphResult.Status.COMPILED && !storedCompiled(store, g.fingerprint(), identity)) {
        throw XlacException.environment("shard " + shard.index() + "'s results say " + g.fingerprint().describe(
            g.moduleName()) + " compiled, but what came with them (" + transport.describe() + ") does not hold it");
      }
    }
    Map<dev.xlac.core.ProgramKey, GraphResult> byGraph = new HashMap<>();
    lines.forEach(g -> byGraph.put(g.fingerprint(), g));
    List<GraphResult> out = new ArrayList<>();
    for (ShardPlan.Item item : shard.items()) {
      GraphResult g = byGraph.get(item.fingerprint());
      out.add(g != null ? g : notCompiled(item.fingerprint(), item.moduleName(), "shard " + shard.index()
          + "'s task did not report it"));
    }
    return out;
  }

  /** Whether {@code store} holds what a compiled graph (its artifact for {@code identity}) or request left. */
  private static boolean storedCompiled(CacheStore store, dev.xlac.core.ProgramKey key, CompilerIdentity identity) {
    return switch (key) {
      case GraphFingerprint fp -> store.artifactInfo(new dev.xlac.cache.ArtifactKey(fp, identity))
          .filter(a -> a.status() == dev.xlac.cache.EntryStatus.COMPILED).isPresent();
      case RequestKey r -> store.requestInfo(r).isPresent();
      default -> false;
    };
  }

  /** How long the results of a task that completed may take to show on the submitter's host. */
  static final Duration RESULTS_GRACE = Duration.ofSeconds(120);

  /**
   * The job array of one run, its resubmissions, and the results as they come back. Each submission is an attempt
   * named by its job id: a shard's results are read under its current attempt's name only. Whichever way
   * {@link #run} ends, no task of the run is left in the queue but those whose results were imported (they are
   * ending): an exception or a shutdown cancels every job, a normal end the tasks still queued or running.
   */
  static final class Array {
    private final SlurmClient client;
    private final SlurmSettings slurm;
    private final ShardTransport transport;
    private final Path run;
    private final ShardPlan plan;
    private final CacheStore store;
    private final CompilerIdentity identity;
    private final List<String> jobs = new ArrayList<>();
    private final List<String> tasks = new ArrayList<>(); // JOB_INDEX of every submission
    private final java.util.Set<String> imported = new java.util.HashSet<>(); // JOB_INDEX whose results were imported
    private final Map<Integer, String> jobOf = new HashMap<>();
    private final Map<Integer, Integer> attempts = new HashMap<>();
    private final Map<Integer, Integer> missing = new HashMap<>();
    private final TreeSet<Integer> outstanding = new TreeSet<>();
    private final Map<Integer, Long> goneSince = new HashMap<>(); // nanoTime a shard's task was first missed
    private final Map<Integer, String> completed = new HashMap<>(); // how a task that completed (exit 0) ended
    private final Duration resultsGrace;
    private final List<GraphResult> results = new ArrayList<>();
    private boolean cancelled;
    private String lastProgress;

    Array(SlurmClient client, SlurmSettings slurm, ShardTransport transport, Path run, ShardPlan plan,
        CacheStore store, CompilerIdentity identity) {
      this(client, slurm, transport, run, plan, store, identity, RESULTS_GRACE);
    }

    /**
     * {@code resultsGrace}: how long the results of a task that completed (exit 0, so it handed them back) may take
     * to show on this host before the shard counts as failed.
     */
    Array(SlurmClient client, SlurmSettings slurm, ShardTransport transport, Path run, ShardPlan plan,
        CacheStore store, CompilerIdentity identity, Duration resultsGrace) {
      this.resultsGrace = resultsGrace;
      this.identity = identity;
      this.client = client;
      this.slurm = slurm;
      this.transport = transport;
      this.run = run;
      this.plan = plan;
      this.store = store;
    }

    List<GraphResult> run() throws InterruptedException {
      boolean normal = false;
      try {
        List<GraphResult> out = runArray();
        synchronized (this) {
          normal = !cancelled;
        }
        return out;
      } finally {
        release(normal);
      }
    }

    /**
     * Leaves nothing of the run in the queue: after a normal end the tasks still queued or running whose results
     * were not imported (superseded attempts), otherwise every job. Never throws (it runs in a finally), and runs
     * with the interrupt cleared, so that scancel runs even when the run was interrupted.
     */
    private void release(boolean normal) {
      boolean interrupted = Thread.interrupted();
      try {
        List<String> all;
        List<String> unimported;
        synchronized (this) {
          all = List.copyOf(jobs);
          unimported = tasks.stream().filter(t -> !imported.contains(t)).toList();
        }
        if (all.isEmpty()) {
          return;
        }
        if (!normal) {
          client.cancel(all);
          return;
        }
        Map<String, List<SlurmClient.Queued>> queued;
        try {
          queued = client.queued(all);
        } catch (XlacException | InterruptedException e) {
          queued = null;
        }
        if (queued == null) { // squeue did not answer: cancel what may still be there
          client.cancel(unimported);
          return;
        }
        List<String> left = new ArrayList<>();
        queued.forEach((job, list) -> list.forEach(q -> {
          String task = job + "_" + q.index();
          if (!imported.contains(task)) {
            left.add(task);
          }
        }));
        client.cancel(left);
      } finally {
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
    }

    private List<GraphResult> runArray() throws InterruptedException {
      List<Integer> shards = plan.nonEmpty().stream().map(ShardPlan.Shard::index).toList();
      outstanding.addAll(shards);
      String job = submit(shards);
      slurm.progress().accept(String.format("submitted Slurm job array %s: %d task%s for %d graph%s; shards in %s",
          job, shards.size(), shards.size() == 1 ? "" : "s", plan.shards().stream().mapToInt(s -> s.items().size())
              .sum(), plan.shards().stream().mapToInt(s -> s.items().size()).sum() == 1 ? "" : "s",
          transport.describe()));
      while (true) {
        synchronized (this) {
          if (cancelled || outstanding.isEmpty()) {
            break;
          }
          wait(slurm.poll().toMillis());
          if (cancelled) {
            break;
          }
        }
        collect();
        if (!outstanding.isEmpty()) {
          watchQueue();
        }
      }
      synchronized (this) {
        for (int shard : outstanding) {
          for (ShardPlan.Item item : plan.shards().get(shard).items()) {
            results.add(notCompiled(item.fingerprint(), item.moduleName(), "the run was stopped (Slurm job "
                + jobOf.get(shard) + " cancelled)"));
          }
        }
        outstanding.clear();
      }
      return results;
    }

    private String submit(List<Integer> shards) throws InterruptedException {
      String indices = String.join(",", shards.stream().map(String::valueOf).toList());
      if (shards.size() > 1 && shards.getLast() - shards.getFirst() == shards.size() - 1) {
        indices = shards.getFirst() + "-" + shards.getLast();
      }
      String job = client.submit(indices, slurm.sbatchArgs(), run.resolve("logs"), run.resolve("task.sh"),
          "xlac:" + run.getFileName());
      synchronized (this) {
        jobs.add(job);
        for (int s : shards) {
          tasks.add(job + "_" + s);
          jobOf.put(s, job);
          attempts.merge(s, 1, Integer::sum);
          missing.remove(s);
          goneSince.remove(s);
          completed.remove(s);
        }
        if (cancelled) { // a shutdown came while sbatch ran: this job is cancelled too
          client.cancel(List.of(job));
        }
      }
      return job;
    }

    /** Imports every shard whose results are back. */
    private void collect() throws InterruptedException {
      for (int shard : List.copyOf(outstanding)) {
        Optional<ShardTransport.Results> back;
        try {
          back = transport.receiveResults(shard, jobOf.get(shard)); // this attempt's only
        } catch (IOException e) {
          continue; // not readable yet: the next look
        }
        if (back.isEmpty()) {
          continue;
        }
        try {
          results.addAll(importResults(store, transport, back.get(), plan.shards().get(shard), identity));
          transport.done(shard);
          synchronized (this) {
            imported.add(jobOf.get(shard) + "_" + shard);
            outstanding.remove(shard);
          }
        } catch (ShardTransport.Failed | DiskFullException e) {
          throw e; // the submitter's side failed, not these results: no attempt could be taken in; the run stops
        } catch (XlacException | IllegalArgumentException e) {
          transport.discard(shard, back.get()); // read once: the next look waits for the next attempt's
          failed(shard, "its results could not be imported: " + XlacException.reason(e), true);
        }
      }
    }

    /** Shards whose task left the queue without results (twice in a row, so a slow file system is no failure). */
    private void watchQueue() throws InterruptedException {
      List<String> live;
      synchronized (this) {
        live = outstanding.stream().map(jobOf::get).distinct().toList();
      }
      Map<String, List<SlurmClient.Queued>> queued = client.queued(live);
      if (queued == null) {
        return; // squeue did not answer: look again next time
      }
      int pending = 0;
      int running = 0;
      for (int shard : List.copyOf(outstanding)) {
        Optional<SlurmClient.Queued> q = queued.getOrDefault(jobOf.get(shard), List.of()).stream()
            .filter(t -> t.index() == shard).findFirst();
        if (q.isPresent()) {
          missing.remove(shard);
          goneSince.remove(shard);
          if (q.get().state().equals("PENDING")) {
            pending++;
          } else {
            running++;
          }
          continue;
        }
        goneSince.putIfAbsent(shard, System.nanoTime());
        if (missing.merge(shard, 1, Integer::sum) < 2) {
          continue;
        }
        // A task exits 0 only after it handed its results back: those are on their way (a shared file system may
        // show another host's new files only after its attribute cache expires, up to a minute on NFS).
        String how = completed.containsKey(shard) ? completed.get(shard) : client.ended(jobOf.get(shard), shard);
        if (!how.startsWith("COMPLETED (exit 0:0")) {
          failed(shard, "its task ended without results: " + how, false);
        } else if (System.nanoTime() - goneSince.get(shard) < resultsGrace.toNanos()) {
          completed.put(shard, how);
        } else {
          failed(shard, "its task " + how + " handed back results that did not show here within "
              + SlurmClient.seconds(resultsGrace) + " (does --shared-dir show this host what the nodes write?)", false);
        }
      }
      int done = plan.nonEmpty().size() - outstanding.size();
      String line = String.format("Slurm: %d of %d shards done, %d running, %d pending", done, plan.nonEmpty().size(),
          running, pending);
      if (!line.equals(lastProgress)) {
        slurm.progress().accept(line);
        lastProgress = line;
      }
    }

    /** {@code stillQueued}: the failed task may still be in the queue; it is cancelled before the next attempt. */
    private void failed(int shard, String why, boolean stillQueued) throws InterruptedException {
      String job = jobOf.get(shard);
      Path log = run.resolve("logs").resolve(job + "_" + shard + ".out");
      String tail = lastLine(log);
      String reason = why + (tail == null ? "" : "; its log ends: " + tail);
      if (stillQueued) {
        client.cancel(List.of(job + "_" + shard));
      }
      if (attempts.get(shard) <= slurm.taskRetries()) {
        try {
          String again = submit(List.of(shard));
          slurm.progress().accept(String.format("Slurm: shard %d (job %s_%d) %s; submitted again as job %s (attempt"
              + " %d of %d)", shard, job, shard, reason, again, attempts.get(shard), slurm.taskRetries() + 1));
          return;
        } catch (XlacException e) { // the shards already back are kept; this one is reported
          reason = reason + "; submitting it again failed: " + e.getMessage();
        }
      }
      slurm.progress().accept(String.format("Slurm: shard %d (job %s_%d) %s; log: %s", shard, job, shard, reason, log));
      for (ShardPlan.Item item : plan.shards().get(shard).items()) {
        results.add(notCompiled(item.fingerprint(), item.moduleName(), "the Slurm task of shard " + shard + " failed "
            + attempts.get(shard) + " time" + (attempts.get(shard) == 1 ? "" : "s") + " (" + reason + "; log: " + log
            + ")"));
      }
      synchronized (this) {
        outstanding.remove(shard);
      }
    }

    private static String lastLine(Path log) {
      try {
        List<String> lines = Files.readAllLines(log).stream().filter(l -> !l.isBlank()).toList();
        return lines.isEmpty() ? null : lines.getLast().strip();
      } catch (IOException | java.io.UncheckedIOException e) {
        return null;
      }
    }

    /** From the shutdown hook: cancels every job of the run and wakes the loop. */
    void cancel() {
      List<String> all;
      synchronized (this) {
        cancelled = true;
        all = List.copyOf(jobs);
        notifyAll();
      }
      client.cancel(all);
    }
  }
}
