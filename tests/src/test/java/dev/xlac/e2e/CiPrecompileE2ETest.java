package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CI path of samples/ci/precompile.yml, by hand (issue #13 part 3): a CI job records samples/jax/mlp.py
 * through {@code xlac parallel-compile --plugin P -- COMMAND} and exports the bundle; the training job imports it
 * into a fresh cache and runs the same command under {@code xlac run --require-hits}: all hits, exit 0. A training
 * command with a graph the CI job never saw (another batch size) fails the job with exit 1 and one line.
 */
class CiPrecompileE2ETest {
  @TempDir
  Path work;

  private static List<String> mlp(String... extra) {
    List<String> cmd = new ArrayList<>(List.of(Launcher.python(), Launcher.root().resolve("samples/jax/mlp.py")
        .toString(), "--steps", "2"));
    cmd.addAll(List.of(extra));
    return cmd;
  }

  private static Launcher.Result xlac(List<String> args, List<String> command) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Launcher.root().resolve("xlac").toString()));
    cmd.addAll(args);
    if (!command.isEmpty()) {
      cmd.add("--");
      cmd.addAll(command);
    }
    Map<String, String> env = new HashMap<>();
    env.put("JAX_PLATFORMS", "");
    env.put("XLAC_PJRT_PLUGIN", "");
    return Launcher.run(cmd, env, 600);
  }

  @Test
  void recordExportImportRun_isAllHits_andAGraphCiNeverSawFailsTheJob() throws Exception {
    String plugin = Launcher.cpuPlugin();
    String ci = work.resolve("ci-cache").toString();
    Path bundle = work.resolve("warm-cache.tar.zst");

    Launcher.Result record = xlac(List.of("parallel-compile", "--cache", ci, "--plugin", plugin), mlp());
    assertThat(record.exitCode()).as(record.err()).isZero();
    Launcher.Result export = xlac(List.of("cache", "export", "--cache", ci, bundle.toString()), List.of());
    assertThat(export.exitCode()).as(export.err()).isZero();

    String training = work.resolve("training-cache").toString();
    Launcher.Result imported = xlac(List.of("cache", "import", "--cache", training, bundle.toString()), List.of());
    assertThat(imported.exitCode()).as(imported.err()).isZero();

    Launcher.Result run = xlac(List.of("run", "--cache", training, "--plugin", plugin, "--require-hits"), mlp());
    assertThat(run.exitCode()).as(run.err()).isZero();
    assertThat(run.runSummary()).containsPattern("xlac run: (\\d+) compiles: \\1 served from the cache, 0 compiled");
    assertThat(run.err()).doesNotContain("not served");

    Launcher.Result missing = xlac(List.of("run", "--cache", training, "--plugin", plugin, "--require-hits"),
        mlp("--batch-size", "48"));
    assertThat(missing.exitCode()).isEqualTo(1);
    assertThat(missing.out()).as("the command itself succeeded").contains("done: mlp");
    assertThat(missing.err()).containsPattern("xlac run: \\d+ of \\d+ compiles were not served from the cache"
        + " \\(\\d+ not in the cache\\)");
    assertThat(Files.exists(bundle)).isTrue();
  }
}
