package dev.xlac.pipeline.shard;

import dev.xlac.cache.BundleKey;
import dev.xlac.cache.BundleSigningKey;
import dev.xlac.cache.CacheRemote;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.TieredCache;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.pipeline.CompileExecutor;
import dev.xlac.pipeline.CompileWork;
import dev.xlac.pipeline.RecordedRequests;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.TreeMap;

/**
 * The compiles of one run on a sharding engine (Slurm, Ray): the programs {@code CompileRuns} hands over are gathered
 * until {@link #finish}, split into shards ({@link ShardPlan}), sent through a {@link ShardTransport} (the cache's
 * remote tier, or the shared directory), compiled by the engine's tasks ({@code xlac compile-shard}, {@link ShardTask})
 * and their results imported into the cache ({@link ShardRun}); the run reports them as a local one's. A shutdown
 * stops every task of the run and ends the programs not yet back as not compiled.
 */
public final class ShardedCompiles implements CompileExecutor.Compiles {
  /** How an engine starts on a run: given its directory and transport, what it needs there, and the engine. */
  public interface Launch {
    ShardEngine open(Path runDir, ShardTransport transport) throws IOException;
  }

  private final CompileExecutor.Run run;
  private final ShardSettings settings;
  private final String engineName;
  private final Launch launch;
  private final SequencedMap<GraphFingerprint, String> graphs = new TreeMap<>();
  private final Map<RequestKey, CompileWork.Request> requests = new LinkedHashMap<>();
  private ShardRun shardRun;
  private boolean cancelled;
  private int jobs;

  /** {@code engineName}: how progress lines name the engine ("Slurm"). */
  public ShardedCompiles(CompileExecutor.Run run, ShardSettings settings, String engineName, Launch launch) {
    this.run = run;
    this.settings = settings;
    this.engineName = engineName;
    this.launch = launch;
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
      if (cancelled) { // stopped before anything was submitted: nothing to stop
        return stopped();
      }
    }
    return distribute();
  }

  private synchronized List<GraphResult> stopped() {
    List<GraphResult> stopped = new ArrayList<>();
    graphs.forEach((fp, module) -> stopped.add(ShardRun.notCompiled(fp, module, "the run was stopped")));
    requests.values().forEach(r -> stopped.add(ShardRun.notCompiled(r.key(), r.name(), "the run was stopped")));
    return stopped;
  }

  @Override
  public void cancel() {
    ShardRun r;
    synchronized (this) {
      cancelled = true;
      r = shardRun;
    }
    if (r != null) {
      r.cancel();
    }
  }

  /** Whether {@code r} may submit: false when a shutdown came while the shards were written. */
  private synchronized boolean started(ShardRun r) {
    shardRun = r;
    return !cancelled;
  }

  @Override
  public synchronized int jobs() {
    return jobs;
  }

  @Override
  public void close() {}

  /** Compiles what was gathered on the engine; the results come back through the remote or the shared directory. */
  private List<GraphResult> distribute() throws InterruptedException {
    CacheStore store = run.store();
    TieredCache tiers = run.tiers();
    CompilerIdentity identity = run.drivers().identity();
    List<ShardPlan.SizedRequest> sized = new ArrayList<>();
    for (CompileWork.Request q : requests.values()) {
      sized.add(new ShardPlan.SizedRequest(q.key(), q.name(), programBytes(store, q)));
    }
    ShardPlan plan = ShardPlan.plan(ShardPlan.costs(store, graphs, sized), Math.min(settings.shards(),
        graphs.size() + requests.size()));
    Path runDir = runDirectory(settings.sharedDir());
    // The session is enabled exactly when the run uses the cache's remote: then the results come back through it,
    // unless the remote already failed while the graphs were settled (said once): then through the shared directory.
    // With require-signed on, the cache would refuse the tasks' unsigned objects: the results then come back as
    // bundles signed by the run's own key, which the import trusts.
    boolean enabled = tiers != null && tiers.hasRemote();
    boolean signed = store.trustSettings().requireSigned();
    if (signed && enabled) {
      settings.progress().accept(engineName + ": the cache has require-signed on: the shards' results come back as"
          + " bundles signed by the run's own key through the shared directory, not through the remote tier");
    }
    try (CacheRemote tier = enabled && !signed ? tiers.remoteForResults(run.listener()::notice).orElse(null) : null) {
      ShardTransport transport;
      ShardEngine engine;
      try {
        if (tier == null) { // bundles signed by a throwaway key of this run's, imported trusting only it
          BundleKey runKey = BundleSigningKey.generate(runDir.resolve(ShardTask.RUN_KEY), false).key();
          transport = new SharedDirectoryTransport(runDir, null, runKey);
        } else {
          transport = new RemoteShardTransport(runDir, tier, line -> settings.progress().accept(line));
        }
        transport.sendInputs(plan, store, key -> requestInput(store, requests.get(key)));
        engine = launch.open(runDir, transport);
      } catch (IOException e) {
        throw new XlacException(ExitCode.ENVIRONMENT, "cannot write the shards to " + runDir + ": "
            + XlacException.reason(e) + " (--shared-dir must be a directory every node sees, writable here)", e);
      }
      try (ShardEngine opened = engine) {
        ShardRun shards = new ShardRun(opened, transport, plan, store, identity, settings, ShardRun.RESULTS_GRACE);
        if (!started(shards)) {
          return stopped();
        }
        List<GraphResult> results = shards.run();
        synchronized (this) {
          jobs = run.settings().jobs() * plan.nonEmpty().size();
        }
        return results;
      }
    } finally {
      try { // the key signs nothing more: no one may use it to sign a bundle this run would take
        Files.deleteIfExists(runDir.resolve(ShardTask.RUN_KEY + ".key"));
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
}
