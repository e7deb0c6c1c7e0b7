package dev.xlac.capture;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs one of xlac's Python hooks ({@code run/MODULE.py}) in a real interpreter: the hooks' directory and a
 * directory of stand-in framework modules first on {@code sys.path}, {@code MODULE.install()}, then a script.
 */
final class HookInterpreter {
  record Run(int exitCode, String out, String err) {}

  private HookInterpreter() {}

  /**
   * @param work a directory for the run's output files
   * @param cleared variables of this JVM's environment the run must not inherit (besides every {@code XLAC_*})
   */
  static Run run(Path work, String module, Path site, Map<String, String> env, List<String> cleared, String script)
      throws Exception {
    Path run = Path.of(HookInterpreter.class.getResource("run/" + module + ".py").toURI()).getParent();
    String py = System.getenv("XLAC_PYTHON");
    ProcessBuilder pb = new ProcessBuilder(py == null || py.isBlank() ? "python3" : py, "-c",
        "import sys\nsys.path[:0] = [" + pyString(run) + ", " + pyString(site) + "]\n"
            + "import " + module + "\n" + module + ".install()\n" + script);
    Map<String, String> e = pb.environment();
    e.keySet().removeIf(k -> k.startsWith("XLAC_") || cleared.contains(k));
    e.putAll(env);
    Path out = work.resolve("out");
    Path err = work.resolve("err");
    Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    return new Run(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
        Files.readString(err, StandardCharsets.UTF_8));
  }

  private static String pyString(Path p) {
    return "'" + p.toString().replace("\\", "\\\\").replace("'", "\\'") + "'";
  }
}
