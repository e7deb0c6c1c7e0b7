package dev.xlac.cli.compile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cli.CliRunner;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code parallel-compile --executor slurm}'s options, and the internal command its tasks run. */
class SlurmOptionsTest {
  @TempDir
  Path tmp;

  /** Parses {@code args} as compile-shard would and returns its compile options. */
  private static CompileOptions parsed(List<String> args) {
    CompileShardCommand c = new CompileShardCommand();
    List<String> all = new java.util.ArrayList<>(args);
    all.addAll(List.of("--run-dir", "/x"));
    new CommandLine(c).parseArgs(all.toArray(String[]::new));
    return c.options;
  }

  @Test
  void forwarded_givesTheTaskTheSameCompileOptions() {
    CommandLine cmd = new CommandLine(new ParallelCompileCommand());
    cmd.parseArgs("--driver", "pjrt", "--plugin", "rel/plugin.so", "--target", "cpu", "--client-option", "a=1",
        "--compile-option", "num_replicas=2", "--jobs", "3", "--memory-per-job", "3G", "--timeout", "90s",
        "--retries", "2", "--retry-failed", "--compiler-flags=--foo 'bar'");
    CompileOptions given = ((ParallelCompileCommand) cmd.getCommand()).options;
    CompileOptions task = parsed(SlurmOptions.forwarded(given));
    assertThat(task.driver).isEqualTo("pjrt");
    assertThat(task.plugin).isEqualTo(Path.of("rel/plugin.so").toAbsolutePath());
    assertThat(task.target).isEqualTo("cpu");
    assertThat(task.compilerFlags).isEqualTo("--foo 'bar'");
    assertThat(task.clientOptions).containsExactlyEntriesOf(given.clientOptions);
    assertThat(task.compileOptions).containsExactlyEntriesOf(given.compileOptions);
    assertThat(task.jobs).isEqualTo(3);
    assertThat(task.memoryPerJob).isEqualTo(given.memoryPerJob);
    assertThat(task.timeout).isEqualTo(Duration.ofSeconds(90));
    assertThat(task.retries).isEqualTo(2);
    assertThat(task.retryFailed).isTrue();
  }

  @Test
  void slurmOptionsWithoutTheSlurmExecutor_orAnUnknownExecutor_areUsageErrors() {
    CliRunner r = CliRunner.run("parallel-compile", "--cache", tmp.resolve("c").toString(), "--shards", "2");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err().strip()).isEqualTo("xlac: --shards, --sbatch-arg and --shared-dir need --executor slurm or"
        + " ray");
    r = CliRunner.run("parallel-compile", "--cache", tmp.resolve("c").toString(), "--executor", "k8s");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err().strip()).isEqualTo("xlac: --executor k8s: not an executor (local, slurm or ray)");
    r = CliRunner.run("parallel-compile", "--cache", tmp.resolve("c").toString(), "--executor", "slurm", "--shards",
        "0");
    assertThat(r.exitCode()).isEqualTo(2);
  }

  @Test
  void rayOptionsWithoutTheRayExecutor_andSlurmsWithIt_areUsageErrors() {
    CliRunner r = CliRunner.run("parallel-compile", "--cache", tmp.resolve("c").toString(), "--ray-address",
        "http://head:8265");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err().strip()).isEqualTo("xlac: --ray-address, --ray-resources and --ray-stop-orphans need"
        + " --executor ray");
    r = CliRunner.run("parallel-compile", "--cache", tmp.resolve("c").toString(), "--executor", "ray",
        "--ray-address", "http://head:8265", "--sbatch-arg=--partition=cpu");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err().strip()).isEqualTo("xlac: --sbatch-arg needs --executor slurm");
    r = CliRunner.run("parallel-compile", "--cache", tmp.resolve("c").toString(), "--executor", "ray",
        "--ray-address", "http://127.0.0.1:9", "--ray-resources", "{\"CPU\": 2,}");
    assertThat(r.exitCode()).as("bad JSON is said before the cluster is asked").isEqualTo(2);
    assertThat(r.err().strip()).startsWith("xlac: --ray-resources {\"CPU\": 2,}: not a JSON object of Ray resources");
  }

  @Test
  void compileShard_isInternal_andOutsideATaskSaysWhatItNeeds() {
    assertThat(CliRunner.run("--help").out()).doesNotContain("compile-shard");
    CliRunner r = CliRunner.run("compile-shard", "--run-dir", tmp.toString());
    if (System.getenv("SLURM_ARRAY_TASK_ID") == null) {
      assertThat(r.exitCode()).isEqualTo(2);
      assertThat(r.err().strip()).isEqualTo("xlac: compile-shard needs --shard I or $SLURM_ARRAY_TASK_ID (it runs as a"
          + " task of 'parallel-compile --executor slurm')");
    }
  }

  /** Issue #26: from an installed release (pip's PREFIX/share/xlac, or the tarball's tree) a node got a bare JVM. */
  @Test
  void launcherBeside_findsTheInstalledLauncher_andTheCheckouts() throws Exception {
    Path installed = java.nio.file.Files.createDirectories(tmp.resolve("share/xlac/bin"));
    Path launcher = java.nio.file.Files.writeString(installed.resolve("xlac"), "#!/bin/sh\n");
    assertThat(SlurmOptions.launcherBeside(tmp.resolve("share/xlac/xlac.jar"))).isEmpty();
    assertThat(launcher.toFile().setExecutable(true)).isTrue();
    assertThat(SlurmOptions.launcherBeside(tmp.resolve("share/xlac/xlac.jar"))).contains(launcher);

    Path checkout = java.nio.file.Files.createDirectories(tmp.resolve("checkout/cli/target"));
    Path root = java.nio.file.Files.writeString(tmp.resolve("checkout/xlac"), "#!/bin/sh\n");
    assertThat(root.toFile().setExecutable(true)).isTrue();
    assertThat(SlurmOptions.launcherBeside(checkout.resolve("xlac.jar"))).contains(root);
  }
}
