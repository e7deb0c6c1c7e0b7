package dev.xlac.pipeline.shard;

import dev.xlac.cache.BundleSigningKey;
import dev.xlac.cache.CacheRemote;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.DiskFullException;
import dev.xlac.cache.RemoteSetting;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.MemoryProbe;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.FileTrees;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloFileKind;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.pipeline.CompileResult;
import dev.xlac.pipeline.CompileRuns;
import dev.xlac.pipeline.CompileSetup;
import dev.xlac.pipeline.CompileWork;
import dev.xlac.pipeline.DriverSource;
import dev.xlac.pipeline.RunListener;
import dev.xlac.pipeline.RunReport;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.function.Consumer;

/**
 * One Slurm array task of {@code parallel-compile --executor slurm} ({@code xlac compile-shard}): receives its
 * shard's graphs through the {@link ShardTransport}, stores them in a node-local cache, compiles them there with the
 * local scheduler, longest first, and sends back what that cache holds (a bundle, or its artifacts pushed to the
 * remote tier) and one line per graph. A graph whose
 * compile fails is a result like any other; only a task that cannot hand back results has failed (the submitter
 * then submits the shard again).
 *
 * <p>A graph whose bytes do not have the fingerprint the plan says (damaged on the way) is not compiled; its line
 * says so, as a failure of that graph. So is a recorded request whose sections do not have the key the plan says.
 * Recorded requests ({@code parallel-compile --plugin NEW}) travel with their program and are compiled after the
 * graphs, each into a runtime entry of the node-local cache under the key the submitter computed for NEW.
 */
public final class ShardTask {
  private ShardTask() {}

  /**
   * What a task's node gives it: {@code tmp} holds the node-local cache (a fresh directory, removed at the end),
   * {@code drivers} makes the compiler for a cache directory (its probe records live there), {@code notices} takes
   * the store's and the remote's one-line warnings.
   */
  public record Node(Path tmp, java.util.function.Function<Path, DriverSource> drivers, SchedulerSettings settings,
      boolean retryFailed, MemoryProbe memory, Consumer<String> notices) {}

  /**
   * {@code xlac compile-shard}: runs {@code shard} of the run in {@code runDir} on this node, in a node-local cache
   * made in {@code node.tmp()} and removed at the end, its results handed back through the remote tier when
   * {@code remote} is given (opened with failures fatal), else as a bundle in the run directory signed by the
   * run's key. A node-local cache that cannot be made or written (a full disk) is an {@link XlacException} with
   * exit code 3 and one line naming the directory; the task then ends without results, so the submitter submits
   * the shard again.
   */
  public static RunReport runOnNode(Path runDir, int shard, String attempt, Optional<RemoteSetting> remote, Node node)
      throws InterruptedException {
    Path dir;
    try {
      dir = Files.createTempDirectory(node.tmp(), "xlac-shard-" + shard + "-");
    } catch (IOException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot make a node-local cache in " + node.tmp() + ": "
          + XlacException.reason(e), e);
    }
    try {
      Path cacheDir = dir.resolve("cache");
      CompileSetup setup = new CompileSetup(() -> CacheStore.open(cacheDir, CacheStore.Mode.READ_WRITE, Duration.ZERO,
          node.notices()), node.drivers().apply(cacheDir.resolve("probes")), node.settings(), node.retryFailed(),
          RunListener.NONE, node.memory());
      Path scratch = dir.resolve("shard.bundle");
      if (remote.isEmpty()) {
        return run(setup, new SharedDirectoryTransport(runDir, runKey(runDir).orElse(null), null), shard, attempt,
            scratch);
      }
      try (CacheRemote tier = CacheRemote.open(remote.get(), node.notices())) {
        return run(setup, new RemoteShardTransport(runDir, tier, node.notices()), shard, attempt, scratch);
      }
    } catch (DiskFullException e) { // the cache's own advice (prune, clear) is no help for a cache made just now
      java.util.regex.Matcher detail = java.util.regex.Pattern.compile("disk full \\((.*?)\\);").matcher(
          e.getMessage());
      throw new XlacException(ExitCode.ENVIRONMENT, "shard " + shard + ": the node-local cache in " + node.tmp()
          + " is on a full disk (" + (detail.find() ? detail.group(1) : e.getMessage()) + "); free space there, or"
          + " give the tasks a TMPDIR with room (Slurm: --sbatch-arg=--export=ALL,TMPDIR=/scratch; Ray: TMPDIR in the"
          + " environment its nodes start with)", e);
    } catch (UncheckedIOException e) { // e.g. a full disk met while writing a scratch file
      throw new XlacException(ExitCode.ENVIRONMENT, "shard " + shard + ": node-local cache in " + dir + ": "
          + XlacException.reason(e.getCause()), e);
    } finally {
      try {
        FileTrees.deleteTree(dir);
      } catch (IOException e) {
        // a node-local temporary: the node's tmp cleaner takes what is left
      }
    }
  }

  /** Where a run keeps the private half of its throwaway signing key: {@code RUN/run-key.key} (owner only). */
  public static final String RUN_KEY = "run-key";

  /**
   * Runs shard {@code shard}; {@code nodeSetup} opens the node-local cache (an empty directory), {@code attempt}
   * names this attempt's results ({@code $SLURM_ARRAY_JOB_ID}), and {@code scratch} is a node-local scratch file
   * (where the shared-directory transport writes its bundle, signed by the run's key, {@link #runKey}, when the
   * transport was given it).
   */
  public static RunReport run(CompileSetup nodeSetup, ShardTransport transport, int shard, String attempt,
      Path scratch) throws InterruptedException {
    try {
      List<ShardTransport.Input> inputs;
      List<ShardTransport.RequestInput> requests;
      try {
        inputs = transport.receiveInputs(shard);
        requests = transport.receiveRequests(shard);
      } catch (IllegalArgumentException e) { // a damaged list of the shard's graphs or requests
        throw new XlacException(ExitCode.ENVIRONMENT, "shard " + shard + " through " + transport.describe() + ": "
            + e.getMessage(), e);
      }
      SequencedMap<GraphFingerprint, String> graphs = new LinkedHashMap<>();
      List<GraphResult> damaged = new ArrayList<>();
      try (CacheStore store = nodeSetup.cache().open()) {
        HloModuleReader reader = new HloModuleReader();
        for (ShardTransport.Input in : inputs) {
          LoadedModule m;
          try {
            m = reader.read(in.module(), HloFileKind.HLO_MODULE);
          } catch (RuntimeException e) {
            damaged.add(notCompiled(in, "cannot read it on this node: " + XlacException.reason(e)));
            continue;
          }
          if (!m.fingerprint().equals(in.fingerprint())) {
            damaged.add(notCompiled(in, "its bytes on this node have fingerprint " + m.fingerprint().shortForm()
                + " (damaged on the way)"));
            continue;
          }
          store.putGraph(m);
          graphs.put(in.fingerprint(), in.moduleName());
        }
        store.sync();
      }
      List<CompileWork.Request> carried = new ArrayList<>();
      for (ShardTransport.RequestInput r : requests) {
        if (r.intact()) {
          carried.add(new CompileWork.Request(r.key(), r.key(), r.name(), r.format(), r.options(), r.identityText(),
              r.program()));
        } else {
          damaged.add(new GraphResult(r.key(), r.name(), GraphResult.Status.NOT_RUN, Duration.ZERO, 0, null,
              "not compiled: its sections on this node do not have its key (damaged on the way)"));
        }
      }
      CompileResult compiled = CompileRuns.inOrder(nodeSetup, graphs, carried);
      List<GraphResult> all = new ArrayList<>(compiled.report().graphs());
      all.addAll(damaged);
      try (CacheStore store = nodeSetup.cache().open()) {
        transport.sendResults(shard, attempt, store, scratch, all.stream().map(ResultLines::of).toList());
      }
      return new RunReport(all, compiled.report().wall(), compiled.report().jobs());
    } catch (IOException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "shard " + shard + " through " + transport.describe() + ": "
          + XlacException.reason(e), e);
    }
  }

  /** The run's signing key its submitter left in {@code runDir}; empty when there is none. */
  public static java.util.Optional<BundleSigningKey> runKey(Path runDir) {
    Path file = runDir.resolve(RUN_KEY + ".key");
    return Files.isRegularFile(file) ? java.util.Optional.of(BundleSigningKey.read(file)) : java.util.Optional.empty();
  }

  private static GraphResult notCompiled(ShardTransport.Input in, String why) {
    return new GraphResult(in.fingerprint(), in.moduleName(), GraphResult.Status.NOT_RUN, Duration.ZERO, 0, null,
        "not compiled: " + why);
  }
}
