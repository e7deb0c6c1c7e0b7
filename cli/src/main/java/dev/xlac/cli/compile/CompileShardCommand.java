package dev.xlac.cli.compile;

import dev.xlac.cli.cache.CacheOptions;
import dev.xlac.compiler.schedule.MemoryProbe;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.FileTrees;
import dev.xlac.pipeline.CompileSetup;
import dev.xlac.pipeline.RunListener;
import dev.xlac.pipeline.RemoteShardTransport;
import dev.xlac.pipeline.RunReport;
import dev.xlac.pipeline.SharedDirectoryTransport;
import dev.xlac.pipeline.ShardTask;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RemoteSetting;
import dev.xlac.cache.remote.RemoteTier;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * One array task of {@code parallel-compile --executor slurm} (hidden: the submitter writes its command line):
 * compiles shard {@code $SLURM_ARRAY_TASK_ID} of the run in {@code --run-dir} in a node-local cache under
 * {@code $TMPDIR}, removed at the end, and hands the results back (a bundle in the run directory, or with
 * {@code --remote} through the remote tier). Exit 0 when the results were handed back, even
 * if graphs failed to compile (those are results).
 */
@Command(name = "compile-shard", hidden = true, mixinStandardHelpOptions = true,
    description = "Internal: one task of 'parallel-compile --executor slurm'.")
public final class CompileShardCommand implements Callable<Integer> {
  @Mixin
  CompileOptions options;

  @Option(names = "--run-dir", paramLabel = "DIR", required = true, description = "The run's shared directory.")
  Path runDir;

  @Option(names = "--shard", paramLabel = "I", description = "The shard (default: $SLURM_ARRAY_TASK_ID).")
  Integer shard;

  @Option(names = "--remote", paramLabel = "s3://BUCKET/PREFIX", description = "Hand the results back through this"
      + " remote tier (the submitter's cache's; credentials from AWS's default chain) instead of a bundle.")
  String remote;

  @Option(names = "--remote-endpoint", paramLabel = "URL", description = "The remote's S3-compatible endpoint.")
  String remoteEndpoint;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException {
    int index = shard != null ? shard : arrayIndex();
    Path tmp = Path.of(System.getenv().getOrDefault("TMPDIR", "/tmp"));
    Path node;
    try {
      node = Files.createTempDirectory(tmp, "xlac-shard-" + index + "-");
    } catch (IOException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot make a node-local cache in " + tmp + ": "
          + XlacException.reason(e), e);
    }
    var out = spec.commandLine().getOut();
    try {
      Path cacheDir = node.resolve("cache");
      CompileSetup setup = new CompileSetup(() -> CacheStore.open(cacheDir, CacheStore.Mode.READ_WRITE, Duration.ZERO,
          m -> spec.commandLine().getErr().println("xlac: " + m)), options.drivers(cacheDir.resolve("probes")),
          options.settings(), options.retryFailed(), RunListener.NONE, MemoryProbe.system());
      RunReport r;
      if (remote == null) {
        r = ShardTask.run(setup, new SharedDirectoryTransport(runDir, ShardTask.runKey(runDir).orElse(null), null),
            index, attempt(), node.resolve("shard.bundle"));
      } else {
        RemoteSetting setting = RemoteSetting.parse(remote, remoteEndpoint);
        try (RemoteTier tier = RemoteShardTransport.openTier(setting, m -> spec.commandLine().getErr()
            .println("xlac: " + m))) {
          r = ShardTask.run(setup, new RemoteShardTransport(runDir, tier, m -> spec.commandLine().getErr()
              .println("xlac: " + m)), index, attempt(), node.resolve("shard.bundle"));
        }
      }
      out.println("xlac compile-shard " + index + " on " + hostName() + ":");
      r.summaryLines().forEach(out::println);
      out.flush();
      return ExitCode.OK.code();
    } finally {
      deleteTree(node);
    }
  }

  private static int arrayIndex() {
    String id = System.getenv("SLURM_ARRAY_TASK_ID");
    if (id == null || !id.matches("\\d+")) {
      throw XlacException.badInput("compile-shard needs --shard I or $SLURM_ARRAY_TASK_ID (it runs as a task of"
          + " 'parallel-compile --executor slurm')");
    }
    return Integer.parseInt(id);
  }

  /** This attempt's name: the job id sbatch gave the submission ({@code $SLURM_ARRAY_JOB_ID}); "manual" outside Slurm. */
  private static String attempt() {
    String id = System.getenv("SLURM_ARRAY_JOB_ID");
    return id != null && id.matches("\\d+") ? id : "manual";
  }

  private static String hostName() {
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "this node";
    }
  }

  private static void deleteTree(Path dir) {
    try {
      FileTrees.deleteTree(dir);
    } catch (IOException e) {
      // a node-local temporary: the node's tmp cleaner takes what is left
    }
  }
}
