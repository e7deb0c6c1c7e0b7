package dev.xlac.cli.compile;

import dev.xlac.cache.RemoteSetting;
import dev.xlac.compiler.schedule.MemoryProbe;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.pipeline.RunReport;
import dev.xlac.pipeline.shard.ShardTask;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * One task of {@code parallel-compile --executor slurm} or {@code ray} (hidden: the submitter writes its command line):
 * compiles shard {@code $SLURM_ARRAY_TASK_ID} of the run in {@code --run-dir} in a node-local cache under
 * {@code $TMPDIR}, removed at the end, and hands the results back (a bundle in the run directory, or with
 * {@code --remote} through the remote tier). Exit 0 when the results were handed back, even
 * if graphs failed to compile (those are results).
 */
@Command(name = "compile-shard", hidden = true, mixinStandardHelpOptions = true,
    description = "Internal: one task of 'parallel-compile --executor slurm' or 'ray'.")
public final class CompileShardCommand implements Callable<Integer> {
  @Mixin
  CompileOptions options;

  @Option(names = "--run-dir", paramLabel = "DIR", required = true, description = "The run's shared directory.")
  Path runDir;

  @Option(names = "--shard", paramLabel = "I", description = "The shard (default: $SLURM_ARRAY_TASK_ID).")
  Integer shard;

  @Option(names = "--attempt", paramLabel = "ID", description = "This attempt's name, under which the results go back"
      + " (default: $SLURM_ARRAY_JOB_ID; a Ray job passes its submission id).")
  String attemptGiven;

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
    var err = spec.commandLine().getErr();
    ShardTask.Node node = new ShardTask.Node(Path.of(System.getenv().getOrDefault("TMPDIR", "/tmp")),
        options::drivers, options.settings(), options.retryFailed(), MemoryProbe.system(),
        m -> err.println("xlac: " + m));
    Optional<RemoteSetting> through = remote == null ? Optional.empty()
        : Optional.of(RemoteSetting.parse(remote, remoteEndpoint));
    RunReport r = ShardTask.runOnNode(runDir, index, attemptGiven != null ? attemptGiven : attempt(), through, node);
    var out = spec.commandLine().getOut();
    out.println("xlac compile-shard " + index + " on " + hostName() + ":");
    r.summaryLines().forEach(out::println);
    out.flush();
    return ExitCode.OK.code();
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
}
