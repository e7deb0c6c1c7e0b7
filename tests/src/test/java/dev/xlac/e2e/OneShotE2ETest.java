package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The one-shot {@code xlac parallel-compile -- COMMAND} through the real launcher: real JAX
 * scripts, the real XLA CPU plugin, the C test plugin where a compile must hang, and the
 * neuronx-cc stand-in.
 */
class OneShotE2ETest {
  private static final Pattern FINGERPRINT = Pattern.compile("\"fingerprint\": \"(hlo1:\\w+)\"");
  private static final String JIT_ONE = "import jax, jax.numpy as jnp\n"
      + "jax.jit(lambda x: jnp.tanh(x) * 2 + 1)(jnp.ones(8)).block_until_ready()\n";
  private static Path testPlugin;

  @TempDir
  Path work;

  @BeforeAll
  static void buildTestPlugin(@TempDir Path out) throws Exception {
    testPlugin = Launcher.buildTestPlugin(out);
  }

  private static Map<String, String> cpu() {
    return Map.of("JAX_PLATFORMS", "cpu");
  }

  private Launcher.Result xlac(Map<String, String> env, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Launcher.root().resolve("xlac").toString()));
    cmd.addAll(List.of(args));
    return Launcher.run(cmd, env, 300);
  }

  private Path script(String name, String text) throws IOException {
    Path p = work.resolve(name);
    Files.writeString(p, text);
    return p;
  }

  private static Set<String> fingerprints(String json) {
    Set<String> out = new TreeSet<>();
    Matcher m = FINGERPRINT.matcher(json);
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  @Test
  void mlp_compilesEveryGraphDumpWouldCapture_thenEverythingIsCached() throws Exception {
    String mlp = Launcher.root().resolve("samples/jax/mlp.py").toString();
    // Both through the plugin: under --plugin, the proxy stands in for JAX's CPU client, and the plugin's own XLA
    // turns JAX's StableHLO into the HLO that is dumped (another XLA build than jaxlib's gives other graphs).
    Launcher.Result dump = xlac(cpu(), "dump", "--plugin", Launcher.cpuPlugin(), "--cache",
        work.resolve("dumped").toString(), "--", Launcher.python(), mlp, "--steps", "2");
    assertThat(dump.exitCode()).as(dump.err()).isZero();
    Launcher.Result ls = Launcher.xlac("cache", "ls", "--json", "--cache", work.resolve("dumped").toString());
    Set<String> dumped = fingerprints(ls.out());
    assertThat(dumped).hasSizeGreaterThan(10);

    Path report = work.resolve("report.json");
    String cache = work.resolve("cache").toString();
    Launcher.Result r = xlac(cpu(), "parallel-compile", "--cache", cache, "--plugin", Launcher.cpuPlugin(), "--report",
        report.toString(), "--", Launcher.python(), mlp, "--steps", "2");
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).contains("done: mlp steps=2")
        .contains("dumped 25 modules from 1 process: " + dumped.size() + " unique graphs, " + dumped.size() + " new")
        .contains(dumped.size() + " graphs: " + dumped.size() + " compiled, 0 cached, 0 failed");
    assertThat(r.err()).contains("xlac: python ended: " + dumped.size() + " unique graphs, ");
    assertThat(fingerprints(Files.readString(report))).isEqualTo(dumped);
    assertThat(Launcher.xlac("cache", "ls", "--cache", cache, "--status", "compiled").out().lines()
        .filter(l -> l.contains("pjrt:cpu")).count()).isEqualTo(dumped.size());

    Launcher.Result again = xlac(cpu(), "parallel-compile", "--cache", cache, "--plugin", Launcher.cpuPlugin(), "--",
        Launcher.python(), mlp, "--steps", "2");
    assertThat(again.exitCode()).as(again.err()).isZero();
    assertThat(again.out()).contains(dumped.size() + " graphs: 0 compiled, " + dumped.size() + " cached, 0 failed");
  }

  @Test
  void failingScript_exitStatusPassesThrough_itsGraphsAreCompiled_ignoreScriptErrorsGives0() throws Exception {
    Path fail = script("fail.py", JIT_ONE + "import sys\nsys.exit(5)\n");
    String cache = work.resolve("cache").toString();
    Launcher.Result r = xlac(cpu(), "parallel-compile", "--cache", cache, "--plugin", Launcher.cpuPlugin(), "--",
        Launcher.python(), fail.toString());
    assertThat(r.exitCode()).as(r.err()).isEqualTo(5);
    assertThat(r.out()).containsPattern("(\\d+) graphs?: \\1 compiled, 0 cached, 0 failed");
    assertThat(r.err()).contains("exited with status 5; the graphs it dumped before are in the cache");

    Launcher.Result ignored = xlac(cpu(), "parallel-compile", "--cache", cache, "--plugin", Launcher.cpuPlugin(),
        "--ignore-script-errors", "--", Launcher.python(), fail.toString());
    assertThat(ignored.exitCode()).as(ignored.err()).isZero();
    assertThat(ignored.out()).containsPattern("(\\d+) graphs?: 0 compiled, \\1 cached, 0 failed");
    assertThat(ignored.err()).contains("(ignored: --ignore-script-errors)");
  }

  @Test
  void usageAndEnvironmentErrors_comeBeforeTheScriptRuns() throws Exception {
    Path ran = work.resolve("ran");
    Path touch = script("touch.py", "open(r'" + ran + "', 'w').close()\n");
    String cache = work.resolve("cache").toString();
    Launcher.Result missing = xlac(cpu(), "parallel-compile", "--cache", cache, "--plugin",
        work.resolve("missing.so").toString(), "--", Launcher.python(), touch.toString());
    assertThat(missing.exitCode()).isEqualTo(3);
    assertThat(missing.err().strip()).isEqualTo("xlac: cannot use PJRT plugin " + work.resolve("missing.so")
        + ": no such file");
    Launcher.Result both = xlac(cpu(), "parallel-compile", "--cache", cache, "--plugin", Launcher.cpuPlugin(),
        work.toString(), "--", Launcher.python(), touch.toString());
    assertThat(both.exitCode()).isEqualTo(2);
    assertThat(both.err()).contains("PATHs and '-- COMMAND' do not go together");
    Launcher.Result noCompiler = Launcher.run(List.of(Launcher.root().resolve("xlac").toString(), "parallel-compile",
        "--cache", cache, "--driver", "neuronx-cc", "--", Launcher.python(), touch.toString()),
        Map.of("PATH", "/usr/bin:/bin"), 300);
    assertThat(noCompiler.exitCode()).as(noCompiler.err()).isEqualTo(3);
    assertThat(noCompiler.err()).contains("neuronx-cc was not found on PATH");
    assertThat(ran).doesNotExist();
  }

  @Test
  void neuronxCcStandIn_compilesTheGraphsOfAJaxScript() throws Exception {
    Path one = script("one.py", JIT_ONE);
    Map<String, String> env = Map.of("JAX_PLATFORMS", "cpu", "PATH",
        Launcher.root().resolve("tests/neuronx-cc-standin") + ":" + System.getenv("PATH"));
    Launcher.Result r = xlac(env, "parallel-compile", "--cache", work.resolve("cache").toString(), "--driver",
        "neuronx-cc", "--", Launcher.python(), one.toString());
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).containsPattern("([1-9]\\d*) graphs?: \\1 compiled, 0 cached, 0 failed");
    assertThat(Launcher.xlac("cache", "ls", "--cache", work.resolve("cache").toString(), "--status", "compiled").out())
        .contains("neuronx-cc:trn1").contains("jit__lambda");
  }

  /**
   * A script compiles {@code jit_hang} (the test plugin's compile of it never returns), then waits;
   * SIGINT to xlac reaches the script, and once it ended the hanging compile is stopped: xlac exits
   * with the script's 130, and no failure is recorded for the graph. The script takes 2 s to stop:
   * when SIGINT goes to xlac's whole process group, as a terminal's Ctrl-C does, the compile
   * workers (in groups of their own) must not die meanwhile and be taken for crashes.
   */
  @ParameterizedTest(name = "whole group: {0}")
  @ValueSource(booleans = {false, true})
  void sigint_isForwardedToTheScript_andStopsTheRunningCompiles(boolean wholeGroup) throws Exception {
    Path kept = work.resolve("kept");
    Path waiter = script("wait.py", "import jax, jax.numpy as jnp, signal, sys, time\n"
        + "def stop(*_):\n    time.sleep(2)\n    sys.exit(130)\n"
        + "signal.signal(signal.SIGINT, stop)\n"
        + "def hang(x):\n    return jnp.tanh(x) * 2 + 1\n"
        + "jax.jit(hang)(jnp.ones(8)).block_until_ready()\nprint('ready', flush=True)\ntime.sleep(600)\n");
    Path out = work.resolve("xlac.out");
    Path err = work.resolve("xlac.err");
    String cache = work.resolve("cache").toString();
    List<String> cmd = new ArrayList<>();
    if (wholeGroup) {
      cmd.add("setsid"); // xlac leads a group of its own, as a shell's foreground job does
    }
    cmd.addAll(List.of(Launcher.root().resolve("xlac").toString(), "parallel-compile", "--cache",
        cache, "--plugin", testPlugin.toString(), "--keep-dumps", kept.toString(), "--", Launcher.python(),
        waiter.toString()));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
    pb.environment().putAll(cpu());
    Process xlac = pb.start();
    try {
      for (int i = 0; i < 600 && !(Files.exists(out) && Files.readString(out).contains("ready")); i++) {
        assertThat(xlac.isAlive()).as("xlac ended early: %s", Files.readString(err)).isTrue();
        Thread.sleep(200);
      }
      Thread.sleep(3000); // two polls of the dump directory: the graph is captured and its compile hangs
      String target = wholeGroup ? "-" + xlac.pid() : Long.toString(xlac.pid());
      new ProcessBuilder("kill", "-INT", "--", target).start().waitFor();
      assertThat(xlac.waitFor(120, TimeUnit.SECONDS)).as("xlac still waits for the hanging compile").isTrue();
      String errText = Files.readString(err);
      assertThat(xlac.exitValue()).as(errText).isEqualTo(130);
      assertThat(errText).contains("exited with status 130 after xlac forwarded SIGINT");
      assertThat(Files.readString(out)).containsPattern("  failed: jit_hang \\(\\w+\\): not compiled: the run was"
          + " stopped");
      Launcher.Result failed = Launcher.xlac("cache", "ls", "--cache", cache, "--status", "failed");
      assertThat(failed.out()).doesNotContain("jit_hang");
      assertThat(Launcher.xlac("cache", "ls", "--cache", cache).out()).contains("jit_hang");
    } finally {
      xlac.destroyForcibly();
    }
  }
}
