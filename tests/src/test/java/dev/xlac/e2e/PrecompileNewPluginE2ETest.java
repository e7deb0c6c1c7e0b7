package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.xlac.runtime.RecordSpool;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #13 part 2 on two real CPU plugins: samples/jax/mlp.py (JAX 0.10.2) is recorded under {@code xlac run
 * --record} with the 0.115 plugin ($XLAC_PJRT_PLUGIN), pre-compiled for the xla-cpu-pjrt 0.81 plugin
 * ($XLAC_PJRT_PLUGIN_2) by {@code xlac parallel-compile --plugin}, and run with the 0.81 plugin under
 * {@code xlac run --require-hits}: every compile is served, and the losses are those of the same script on the 0.81
 * plugin without xlac. This direction, because JAX serializes its StableHLO for min(its own version, the
 * plugin's): recorded with the newer plugin, the version the older one gets is known (pipeline's StablehloTarget).
 * A recorded request the new plugin rejects is a compile failure with its log (exit 1), and is tried again.
 */
class PrecompileNewPluginE2ETest {
  @TempDir
  Path work;

  private static String secondPlugin() {
    String p = System.getenv("XLAC_PJRT_PLUGIN_2");
    assumeTrue(p != null && !p.isBlank(), "XLAC_PJRT_PLUGIN_2 (the xla-cpu-pjrt 0.81 plugin) is not set; scripts/test"
        + " sets it");
    return p;
  }

  private static List<String> mlp() {
    return List.of(Launcher.python(), Launcher.root().resolve("samples/jax/mlp.py").toString(), "--steps", "3");
  }

  private static Map<String, String> env() {
    Map<String, String> env = new HashMap<>();
    env.put("JAX_PLATFORMS", "");
    env.put("XLAC_PJRT_PLUGIN", "");
    return env;
  }

  private static List<String> losses(String out) {
    return out.lines().filter(l -> l.startsWith("step ") || l.startsWith("done: ")).toList();
  }

  private Launcher.Result xlac(List<String> args, List<String> command) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Launcher.root().resolve("xlac").toString()));
    cmd.addAll(args);
    if (!command.isEmpty()) {
      cmd.add("--");
      cmd.addAll(command);
    }
    return Launcher.run(cmd, env(), 600);
  }

  @Test
  void recordedWithOnePlugin_precompiledForTheOther_isAllHitsThere_withTheSameLosses() throws Exception {
    String newPlugin = secondPlugin();
    String cache = work.resolve("cache").toString();

    Map<String, String> plain = env();
    plain.put("PJRT_NAMES_AND_LIBRARY_PATHS", "newcpu:" + newPlugin);
    plain.put("JAX_PLATFORMS", "newcpu");
    Launcher.Result reference = Launcher.run(mlp(), plain, 300);
    assertThat(reference.exitCode()).as(reference.err()).isZero();
    assertThat(losses(reference.out())).hasSize(4);

    Launcher.Result record = xlac(List.of("run", "--cache", cache, "--plugin", Launcher.cpuPlugin(), "--record"), mlp());
    assertThat(record.exitCode()).as(record.err()).isZero();
    assertThat(record.runSummary()).containsPattern("xlac run: (\\d+) compiles: 0 served from the cache, \\1 compiled;.*"
        + "recorded \\1 new");
    int compiles = Integer.parseInt(record.runSummary().replaceAll("(?s).*xlac run: (\\d+) compiles.*", "$1"));

    // Before: the new plugin serves nothing (--require-hits says how many were not served).
    Launcher.Result before = xlac(List.of("run", "--cache", cache, "--plugin", newPlugin, "--require-hits"), mlp());
    assertThat(before.exitCode()).isEqualTo(1);
    assertThat(before.err()).contains("xlac run: " + compiles + " of " + compiles
        + " compiles were not served from the cache (" + compiles + " not in the cache)");

    Path report = work.resolve("precompile.json");
    Launcher.Result pre = xlac(List.of("parallel-compile", "--cache", cache, "--plugin", newPlugin, "--report",
        report.toString()), List.of());
    assertThat(pre.exitCode()).as(pre.err()).isZero();
    // The run before recorded nothing new (no --record): the new plugin's entries come from parallel-compile only.
    assertThat(pre.out()).startsWith(compiles + " recorded requests: " + compiles + " compiled, 0 cached, 0 failed");
    assertThat(Files.readString(report)).contains("\"compiled\": " + compiles, "pjrt1:");

    Path served = work.resolve("served.json");
    Launcher.Result run = xlac(List.of("run", "--cache", cache, "--plugin", newPlugin, "--require-hits", "--report",
        served.toString()), mlp());
    assertThat(run.exitCode()).as(run.err()).isZero();
    assertThat(run.runSummary()).contains("xlac run: " + compiles + " compiles: " + compiles + " served from the cache, 0"
        + " compiled");
    assertThat(losses(run.out())).isEqualTo(losses(reference.out()));

    // Again: nothing left to compile for the new plugin.
    Launcher.Result again = xlac(List.of("parallel-compile", "--cache", cache, "--plugin", newPlugin), List.of());
    assertThat(again.exitCode()).as(again.err()).isZero();
    assertThat(again.out()).startsWith(compiles + " recorded requests: 0 compiled, " + compiles + " cached, 0 failed");

    // A recorded request the new plugin rejects: a failure with its log, exit 1; the others stay cached.
    Path spool = Files.createDirectories(work.resolve("spool"));
    byte[] format = "mlir".getBytes(StandardCharsets.UTF_8);
    byte[] program = "this is not a StableHLO module".getBytes(StandardCharsets.UTF_8);
    byte[] options = {};
    String identity = "xlac-pjrt-plugin/2\nplatform_name=cpu\nplatform_version=cpu\napi_version=0.115\n"
        + "plugin_sha256=" + "cd".repeat(32) + "\n";
    RequestKey key = RequestKey.of(format, program, options, identity.getBytes(StandardCharsets.UTF_8));
    RecordSpool.write(spool, new RecordedRequest(key, format, program, options, identity, new byte[] {1}, 1));
    assertThat(Launcher.xlac("cache", "add", "--cache", cache, spool.toString()).exitCode()).isZero();
    Path junit = work.resolve("junit.xml");
    Launcher.Result rejected = xlac(List.of("parallel-compile", "--cache", cache, "--plugin", newPlugin, "--junit",
        junit.toString()), List.of());
    assertThat(rejected.exitCode()).as(rejected.err()).isEqualTo(1);
    assertThat(rejected.out()).startsWith((compiles + 1) + " recorded requests: 0 compiled, " + compiles + " cached, 1 failed")
        .containsPattern("failed: mlir request \\([0-9a-f]{12}\\): PJRT_Client_Compile [^\\n]*; log: \\S+\\.log");
    Path log = Path.of(rejected.out().replaceAll("(?s).*; log: (\\S+\\.log).*", "$1"));
    assertThat(log).exists();
    assertThat(Files.readString(log)).isNotBlank();
    assertThat(Files.readString(junit)).contains("failures=\"1\"", "<failure");
  }

  /**
   * {@code kill -9} of {@code parallel-compile --plugin} in the middle of the requests' compiles: the cache verifies
   * clean, holds whole entries only, and the next run compiles what is left (the finished entries are cached), after
   * which the new plugin is all hits.
   */
  @Test
  void killedMidway_keepsWholeEntries_andTheNextRunFinishes() throws Exception {
    String newPlugin = secondPlugin();
    String cache = work.resolve("cache").toString();
    Launcher.Result record = xlac(List.of("run", "--cache", cache, "--plugin", Launcher.cpuPlugin(), "--record"), mlp());
    assertThat(record.exitCode()).as(record.err()).isZero();
    int compiles = Integer.parseInt(record.runSummary().replaceAll("(?s).*xlac run: (\\d+) compiles.*", "$1"));

    Path err = work.resolve("precompile.err");
    ProcessBuilder pb = new ProcessBuilder(Launcher.root().resolve("xlac").toString(), "parallel-compile", "--cache",
        cache, "--plugin", newPlugin, "--jobs", "1").directory(Launcher.root().toFile())
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(err.toFile());
    pb.environment().putAll(env());
    Process p = pb.start();
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(5);
    while (!(Files.exists(err) && Files.readString(err).contains("[3/")) && p.isAlive() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    // The launcher execs the JVM, so this is xlac itself; its workers end when their stdin closes.
    p.destroyForcibly().waitFor();
    assertThat(Files.readString(err)).as("killed while it compiled").contains("[3/").doesNotContain("[" + compiles + "/");

    Launcher.Result verify = xlac(List.of("cache", "verify", "--cache", cache), List.of());
    assertThat(verify.exitCode()).as(verify.out() + verify.err()).isZero();
    assertThat(verify.out()).contains("all good");

    Launcher.Result rest = xlac(List.of("parallel-compile", "--cache", cache, "--plugin", newPlugin), List.of());
    assertThat(rest.exitCode()).as(rest.err()).isZero();
    int cached = Integer.parseInt(rest.out().replaceAll("(?s)^\\d+ recorded requests: \\d+ compiled, (\\d+) cached.*", "$1"));
    assertThat(cached).isBetween(3, compiles - 1);
    assertThat(rest.out()).startsWith(compiles + " recorded requests: " + (compiles - cached) + " compiled, " + cached
        + " cached, 0 failed");

    Launcher.Result run = xlac(List.of("run", "--cache", cache, "--plugin", newPlugin, "--require-hits"), mlp());
    assertThat(run.exitCode()).as(run.err()).isZero();
  }
}
