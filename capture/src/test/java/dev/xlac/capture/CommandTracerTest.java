package dev.xlac.capture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.hlo.TestModules;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Real child processes (sh, python3) under the tracer. */
class CommandTracerTest {
  @TempDir
  Path tmp;

  private final List<CapturedModule> captured = new ArrayList<>();

  private CommandTracer.Outcome trace(Frontend fe, Map<String, String> env, String... command) throws Exception {
    Path staging = Files.createDirectories(tmp.resolve("staging"));
    return CommandTracer.run(new CommandTracer.Request(List.of(command), fe, staging, null, env,
        Duration.ofMillis(50)), captured::add);
  }

  private static Map<String, String> env(String... kv) {
    Map<String, String> m = new HashMap<>(Map.of("PATH", System.getenv("PATH"), "HOME", System.getProperty("user.home")));
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  private static String python() {
    String py = System.getenv("XLAC_PYTHON");
    return py == null || py.isBlank() ? "python3" : py;
  }

  @Test
  void exitStatus_isTheCommands() throws Exception {
    assertThat(trace(Frontend.JAX, env(), "sh", "-c", "exit 7").exitStatus()).isEqualTo(7);
    assertThat(trace(Frontend.JAX, env(), "sh", "-c", "kill -TERM $$").exitStatus()).isEqualTo(128 + 15);
  }

  @Test
  void dumpsWrittenByTheCommand_areCaptured_evenWhenItFails() throws Exception {
    Path dump = TestModules.writeDump(tmp.resolve("src"), "x.hlo.pb", TestModules.mulAdd(2f));
    CommandTracer.Outcome o = trace(Frontend.TORCH_XLA, env(), "sh", "-c",
        "d=${XLA_FLAGS#*--xla_dump_to=}; d=${d%% *}; mkdir -p $d && cp " + dump
            + " $d/module_0000.SyncTensorsGraph.3.before_optimizations.hlo.pb && exit 5");
    assertThat(o.exitStatus()).isEqualTo(5);
    assertThat(captured).singleElement().satisfies(m -> assertThat(m.process()).isEqualTo("main"));
  }

  @Test
  void xlaEnvironment_keepsUserFlags_andSetsJaxThreshold() throws Exception {
    Path out = tmp.resolve("env.txt");
    trace(Frontend.JAX, env("XLA_FLAGS", "--xla_cpu_enable_fast_math=false", "PYTHONPATH", "/user/lib",
        "XDG_CACHE_HOME", tmp.resolve("user-cache").toString()), "sh", "-c",
        "printf '%s\\n%s\\n%s\\n' \"$XLA_FLAGS\" \"$JAX_COMPILER_DETAILED_LOGGING_MIN_OPS\" \"$PYTHONPATH\" > " + out);
    List<String> lines = Files.readAllLines(out);
    assertThat(lines.get(0)).isEqualTo("--xla_cpu_enable_fast_math=false --xla_dump_to=" + tmp.resolve("staging/main")
        + " --xla_dump_hlo_as_proto");
    assertThat(lines.get(1)).isEqualTo("0");
    assertThat(lines.get(2)).as("xlac's Python hooks first, then the user's path")
        .matches(java.util.regex.Pattern.quote(tmp.resolve("user-cache/xlac/python").toString()) + "/[0-9a-f]{64}:/user/lib");
  }

  @Test
  void neuronEnvironment_extractsGraphsIntoTheStagingCache() throws Exception {
    Path out = tmp.resolve("env.txt");
    CommandTracer.Outcome o = trace(Frontend.NEURON, env("NEURON_COMPILE_CACHE_URL", "/var/tmp/neuron-compile-cache"),
        "sh", "-c", "printf '%s\\n%s\\n' \"$NEURON_EXTRACT_GRAPHS_ONLY\" \"$NEURON_COMPILE_CACHE_URL\" > " + out);
    assertThat(Files.readAllLines(out)).containsExactly("1", tmp.resolve("staging").toString());
    assertThat(o.notes()).singleElement().asString().contains("/var/tmp/neuron-compile-cache");
  }

  @Test
  void sitecustomize_givesEachPythonProcessItsOwnDumpDirectory_andChainsToTheUsersOwn() throws Exception {
    Path userLib = Files.createDirectories(tmp.resolve("userlib"));
    Files.writeString(userLib.resolve("sitecustomize.py"), "import os\nos.environ['USER_SITECUSTOMIZE_RAN'] = 'yes'\n");
    Path out = tmp.resolve("out.txt");
    String script = "import os, subprocess, sys\n"
        + "lines = [str(os.getpid()), os.environ['XLA_FLAGS'], os.environ.get('USER_SITECUSTOMIZE_RAN', 'no')]\n"
        + "child = subprocess.run([sys.executable, '-c', 'import os; print(os.getpid()); print(os.environ[\"XLA_FLAGS\"])'],"
        + " capture_output=True, text=True, check=True).stdout.split('\\n')\n"
        + "open(sys.argv[1], 'w').write('\\n'.join(lines + child))\n";
    CommandTracer.Outcome o = trace(Frontend.TORCH_XLA, env("PYTHONPATH", userLib.toString(), "XLA_FLAGS", "--xla_foo=1"),
        python(), "-c", script, out.toString());
    assertThat(o.exitStatus()).isZero();
    List<String> l = Files.readAllLines(out);
    Path staging = tmp.resolve("staging");
    assertThat(l.get(1)).isEqualTo("--xla_foo=1 --xla_dump_hlo_as_proto --xla_dump_to=" + staging.resolve("pid-" + l.get(0)));
    assertThat(l.get(2)).isEqualTo("yes");
    assertThat(l.get(3)).isNotEqualTo(l.get(0));
    assertThat(l.get(4)).endsWith("--xla_dump_to=" + staging.resolve("pid-" + l.get(3)));
  }

  @Test
  void missingOrUnrunnableCommand_is127or126() throws Exception {
    assertThatThrownBy(() -> trace(Frontend.JAX, env(), "no-such-command-xlac"))
        .isInstanceOfSatisfying(CommandNotRunnableException.class, e -> {
          assertThat(e.status()).isEqualTo(127);
          assertThat(e.getMessage()).isEqualTo("command not found: no-such-command-xlac (not on PATH)");
        });
    assertThatThrownBy(() -> trace(Frontend.JAX, env(), tmp.resolve("nope.sh").toString()))
        .isInstanceOfSatisfying(CommandNotRunnableException.class, e -> assertThat(e.status()).isEqualTo(127));
    Path notExec = Files.writeString(tmp.resolve("train.sh"), "echo hi\n");
    Files.setPosixFilePermissions(notExec, PosixFilePermissions.fromString("rw-r--r--"));
    assertThatThrownBy(() -> trace(Frontend.JAX, env(), notExec.toString()))
        .isInstanceOfSatisfying(CommandNotRunnableException.class, e -> {
          assertThat(e.status()).isEqualTo(126);
          assertThat(e.getMessage()).contains("not executable");
        });
  }
}
