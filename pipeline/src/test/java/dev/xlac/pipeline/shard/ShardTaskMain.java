package dev.xlac.pipeline.shard;

import dev.xlac.cache.RemoteSetting;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.XlacException;
import dev.xlac.pipeline.DriverSource;
import dev.xlac.pipeline.FakeCompiler;
import dev.xlac.pipeline.RunReport;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A Slurm task's process for {@link SlurmRunTest}: what {@code xlac compile-shard} does ({@link ShardTask#runOnNode}
 * with the array index and job id from the environment, an error as one {@code xlac: } line and its exit code), with
 * {@link FakeCompiler} as a PJRT plugin. Arguments: {@code [--remote URL [--remote-endpoint URL]] --run-dir DIR}.
 */
public final class ShardTaskMain {
  private ShardTaskMain() {}

  public static void main(String[] args) throws InterruptedException {
    String remote = null;
    String endpoint = null;
    Path run = null;
    for (int i = 0; i < args.length; i += 2) {
      switch (args[i]) {
        case "--remote" -> remote = args[i + 1];
        case "--remote-endpoint" -> endpoint = args[i + 1];
        case "--run-dir" -> run = Path.of(args[i + 1]);
        default -> throw new IllegalArgumentException(args[i]);
      }
    }
    ShardTask.Node node = new ShardTask.Node(Path.of(System.getenv("TMPDIR")),
        probes -> new DriverSource.Given(new FakeCompiler(false, FakeCompiler.PJRT_IDENTITY).factory()),
        new SchedulerSettings(2, 0, 0), false, () -> Long.MAX_VALUE, m -> System.err.println("xlac: " + m));
    Optional<RemoteSetting> through = remote == null ? Optional.empty()
        : Optional.of(RemoteSetting.parse(remote, endpoint));
    try {
      RunReport r = ShardTask.runOnNode(run, Integer.parseInt(System.getenv("SLURM_ARRAY_TASK_ID")),
          System.getenv("SLURM_ARRAY_JOB_ID"), through, node);
      r.summaryLines().forEach(System.out::println);
      System.exit(0);
    } catch (XlacException e) {
      System.err.println("xlac: " + e.getMessage());
      System.exit(e.exitCode().code());
    }
  }
}
