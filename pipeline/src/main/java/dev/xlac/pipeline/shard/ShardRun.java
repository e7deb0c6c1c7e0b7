package dev.xlac.pipeline.shard;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.DiskFullException;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ProgramKey;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * The shards of one run on one engine ({@link ShardEngine}): their submissions and resubmissions, and their results as
 * they come back. Each submission of a shard is an attempt: a shard's results are read under its current attempt's
 * name only. Whichever way {@link #run} ends, no task of the run is left in the engine but those whose results were
 * imported (they are ending): an exception or a shutdown cancels everything, a normal end the tasks still queued or
 * running.
 *
 * <p>A task that ends without handing back results (it died, its node failed, someone else stopped it, its results
 * could not be imported) is submitted again, its shard alone, up to {@code taskRetries} times; then its programs are
 * reported as not compiled, naming how the task ended and its log.
 */
public final class ShardRun {
  /** How long the results of a task that ended well may take to show on the submitter's host. */
  public static final Duration RESULTS_GRACE = Duration.ofSeconds(120);

  private final ShardEngine engine;
  private final ShardTransport transport;
  private final ShardPlan plan;
  private final CacheStore store;
  private final CompilerIdentity identity;
  private final ShardSettings settings;
  private final Duration resultsGrace;
  private final List<ShardEngine.Task> tasks = new ArrayList<>(); // every submission
  private final Set<ShardEngine.Task> imported = new HashSet<>();
  private final Map<Integer, String> attemptOf = new HashMap<>();
  private final Map<Integer, Integer> attempts = new HashMap<>();
  private final Map<Integer, Integer> missing = new HashMap<>();
  private final TreeSet<Integer> outstanding = new TreeSet<>();
  private final Map<Integer, Long> goneSince = new HashMap<>(); // nanoTime a shard's task was first missed
  private final Map<Integer, String> completed = new HashMap<>(); // how a task that ended well ended
  private final List<GraphResult> results = new ArrayList<>();
  private boolean cancelled;
  private String lastProgress;

  /**
   * {@code resultsGrace}: how long the results of a task that ended well (so it handed them back) may take to show on
   * this host before the shard counts as failed.
   */
  public ShardRun(ShardEngine engine, ShardTransport transport, ShardPlan plan, CacheStore store,
      CompilerIdentity identity, ShardSettings settings, Duration resultsGrace) {
    this.engine = engine;
    this.transport = transport;
    this.plan = plan;
    this.store = store;
    this.identity = identity;
    this.settings = settings;
    this.resultsGrace = resultsGrace;
  }

  public List<GraphResult> run() throws InterruptedException {
    boolean normal = false;
    try {
      List<GraphResult> out = runShards();
      synchronized (this) {
        normal = !cancelled;
      }
      return out;
    } finally {
      release(normal);
    }
  }

  /**
   * Leaves nothing of the run in the engine: after a normal end the tasks still queued or running whose results were
   * not imported (superseded attempts, and those of a submission that failed after the engine took them), otherwise
   * everything (even when no submission returned: one may have failed partway). Never throws (it runs in a finally),
   * and runs with the interrupt cleared, so that the engine is told even when the run was interrupted.
   */
  private void release(boolean normal) {
    boolean interrupted = Thread.interrupted();
    try {
      if (!normal) {
        engine.cancelAll();
        return;
      }
      Set<ShardEngine.Task> known = new LinkedHashSet<>(engine.submitted());
      List<ShardEngine.Task> unimported;
      synchronized (this) {
        known.addAll(tasks);
        unimported = known.stream().filter(t -> !imported.contains(t)).toList();
      }
      if (unimported.isEmpty()) {
        return;
      }
      Map<ShardEngine.Task, Boolean> queued;
      try {
        queued = engine.queued(unimported);
      } catch (XlacException | InterruptedException e) {
        queued = null;
      }
      // the engine did not answer: stop what may still be there
      engine.cancel(queued == null ? unimported : unimported.stream().filter(queued::containsKey).toList());
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private List<GraphResult> runShards() throws InterruptedException {
    List<Integer> shards = plan.nonEmpty().stream().map(ShardPlan.Shard::index).toList();
    outstanding.addAll(shards);
    ShardEngine.Submitted first;
    try {
      first = submit(shards);
    } catch (XlacException e) {
      synchronized (this) {
        if (!cancelled) {
          throw e;
        }
      }
      // a shutdown stopped the submission, and the engine left nothing of it running
      return stopped("the run was stopped while it was being submitted to " + engine.name());
    }
    int graphs = plan.shards().stream().mapToInt(s -> s.items().size()).sum();
    settings.progress().accept(String.format("submitted %s: %d task%s for %d graph%s; shards in %s", first.first(),
        shards.size(), shards.size() == 1 ? "" : "s", graphs, graphs == 1 ? "" : "s", transport.describe()));
    while (true) {
      synchronized (this) {
        if (cancelled || outstanding.isEmpty()) {
          break;
        }
        wait(settings.poll().toMillis());
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
          results.add(notCompiled(item.fingerprint(), item.moduleName(), "the run was stopped (" + engine.name() + " "
              + engine.describe(task(shard)) + " cancelled)"));
        }
      }
      outstanding.clear();
    }
    return results;
  }

  /** Every graph of the run as not compiled, saying {@code why}. */
  private synchronized List<GraphResult> stopped(String why) {
    for (int shard : outstanding) {
      for (ShardPlan.Item item : plan.shards().get(shard).items()) {
        results.add(notCompiled(item.fingerprint(), item.moduleName(), why));
      }
    }
    outstanding.clear();
    return results;
  }

  private ShardEngine.Task task(int shard) {
    return new ShardEngine.Task(shard, attemptOf.get(shard));
  }

  private ShardEngine.Submitted submit(List<Integer> shards) throws InterruptedException {
    ShardEngine.Submitted s = engine.submit(shards);
    synchronized (this) {
      List<ShardEngine.Task> submitted = new ArrayList<>();
      for (int shard : shards) {
        ShardEngine.Task t = new ShardEngine.Task(shard, s.attempts().get(shard));
        tasks.add(t);
        submitted.add(t);
        attemptOf.put(shard, t.attempt());
        attempts.merge(shard, 1, Integer::sum);
        missing.remove(shard);
        goneSince.remove(shard);
        completed.remove(shard);
      }
      if (cancelled) { // a shutdown came while the engine submitted: these are stopped too
        engine.cancel(submitted);
      }
    }
    return s;
  }

  /** Imports every shard whose results are back. */
  private void collect() throws InterruptedException {
    for (int shard : List.copyOf(outstanding)) {
      Optional<ShardTransport.Results> back;
      try {
        back = transport.receiveResults(shard, attemptOf.get(shard)); // this attempt's only
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
          imported.add(task(shard));
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
    List<ShardEngine.Task> live;
    synchronized (this) {
      live = outstanding.stream().map(this::task).toList();
    }
    Map<ShardEngine.Task, Boolean> queued = engine.queued(live);
    if (queued == null) {
      return; // the engine did not answer: look again next time
    }
    int pending = 0;
    int running = 0;
    for (ShardEngine.Task t : live) {
      int shard = t.shard();
      Boolean waiting = queued.get(t);
      if (waiting != null) {
        missing.remove(shard);
        goneSince.remove(shard);
        if (waiting) {
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
      // A task ends well only after it handed its results back: those are on their way (a shared file system may
      // show another host's new files only after its attribute cache expires, up to a minute on NFS).
      ShardEngine.Ended how = completed.containsKey(shard) ? new ShardEngine.Ended(true, completed.get(shard))
          : engine.ended(t);
      if (!how.handedBack()) {
        failed(shard, "its task ended without results: " + how.how(), false);
      } else if (System.nanoTime() - goneSince.get(shard) < resultsGrace.toNanos()) {
        completed.put(shard, how.how());
      } else {
        failed(shard, "its task " + how.how() + " handed back results that did not show here within "
            + seconds(resultsGrace) + " (does --shared-dir show this host what the nodes write?)", false);
      }
    }
    int done = plan.nonEmpty().size() - outstanding.size();
    String line = String.format("%s: %d of %d shards done, %d running, %d pending", engine.name(), done,
        plan.nonEmpty().size(), running, pending);
    if (!line.equals(lastProgress)) {
      settings.progress().accept(line);
      lastProgress = line;
    }
  }

  /** {@code stillQueued}: the failed task may still be in the engine; it is stopped before the next attempt. */
  private void failed(int shard, String why, boolean stillQueued) throws InterruptedException {
    ShardEngine.Task task = task(shard);
    String tail = engine.logTail(task);
    String log = engine.logWhere(task);
    String reason = why + (tail == null ? "" : "; its log ends: " + tail);
    if (stillQueued) {
      engine.cancel(List.of(task));
    }
    if (attempts.get(shard) <= settings.taskRetries()) {
      try {
        ShardEngine.Submitted again = submit(List.of(shard));
        settings.progress().accept(String.format("%s: shard %d (%s) %s; submitted again as %s (attempt %d of %d)",
            engine.name(), shard, engine.describe(task), reason, again.again(), attempts.get(shard),
            settings.taskRetries() + 1));
        return;
      } catch (XlacException e) { // the shards already back are kept; this one is reported
        reason = reason + "; submitting it again failed: " + e.getMessage();
      }
    }
    settings.progress().accept(String.format("%s: shard %d (%s) %s; log: %s", engine.name(), shard,
        engine.describe(task), reason, log));
    for (ShardPlan.Item item : plan.shards().get(shard).items()) {
      results.add(notCompiled(item.fingerprint(), item.moduleName(), "the " + engine.name() + " task of shard " + shard
          + " failed " + attempts.get(shard) + " time" + (attempts.get(shard) == 1 ? "" : "s") + " (" + reason
          + "; log: " + log + ")"));
    }
    synchronized (this) {
      outstanding.remove(shard);
    }
  }

  /** From the shutdown hook: stops everything of the run and wakes the loop. */
  public void cancel() {
    synchronized (this) {
      cancelled = true;
      notifyAll();
    }
    engine.cancelAll();
  }

  public static GraphResult notCompiled(ProgramKey fp, String module, String why) {
    return new GraphResult(fp, module, GraphResult.Status.NOT_RUN, Duration.ZERO, 0, null, "not compiled: " + why);
  }

  public static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : String.format(java.util.Locale.ROOT, "%.1f s",
        d.toMillis() / 1000.0);
  }

  /**
   * Imports what a shard's task handed back through {@code transport} (its bundle, signed by the run's own key, or
   * the artifacts its manifest names in the remote tier) into {@code store}, and one result per graph of the shard
   * (a graph the task did not report is not compiled). Damaged or missing results are an {@link XlacException}
   * (from the cache's importer, which checks every piece and the signature, or from the remote pull), a damaged
   * line an IllegalArgumentException: either way the shard counts as failed and is submitted again.
   */
  public static List<GraphResult> importResults(CacheStore store, ShardTransport transport,
      ShardTransport.Results back, ShardPlan.Shard shard, CompilerIdentity identity) throws InterruptedException {
    List<GraphResult> lines = new ArrayList<>();
    for (int i = 0; i < back.lines().size(); i++) {
      try {
        lines.add(ResultLines.parse(back.lines().get(i)));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("shard result line " + (i + 1) + ": " + e.getMessage(), e);
      }
    }
    transport.importResults(store, back, lines, identity);
    // The lines and what came with them must agree: a task that its engine requeued under the same attempt may have
    // replaced the bundle after its lines were read, and a line that says compiled must not outlive its artifact.
    for (GraphResult g : lines) {
      if (g.status() == GraphResult.Status.COMPILED && !storedCompiled(store, g.fingerprint(), identity)) {
        throw XlacException.environment("shard " + shard.index() + "'s results say " + g.fingerprint().describe(
            g.moduleName()) + " compiled, but what came with them (" + transport.describe() + ") does not hold it");
      }
    }
    Map<ProgramKey, GraphResult> byGraph = new HashMap<>();
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
  private static boolean storedCompiled(CacheStore store, ProgramKey key, CompilerIdentity identity) {
    return switch (key) {
      case GraphFingerprint fp -> store.artifactInfo(new dev.xlac.cache.ArtifactKey(fp, identity))
          .filter(a -> a.status() == dev.xlac.cache.EntryStatus.COMPILED).isPresent();
      case RequestKey r -> store.requestInfo(r).isPresent();
      default -> false;
    };
  }
}
