package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs real processes: the ./xlac launcher and the pinned Python environment's interpreter. */
final class Launcher {
  private Launcher() {}

  record Result(int exitCode, String out, String err) {
    /** xlac run's summary line ({@code xlac run: N compiles: ...}), on stderr: stdout is the command's. */
    String runSummary() {
      return Launcher.runSummary(err);
    }
  }

  /** The summary line of xlac run in {@code err}, or a line saying there is none. */
  static String runSummary(String err) {
    return err.lines().filter(l -> l.matches("xlac run: \\d+ compiles?: .*")).findFirst()
        .orElse("(no summary line in: " + err + ")");
  }

  static Path root() {
    String root = System.getenv("XLAC_ROOT");
    assertThat(root).as("XLAC_ROOT (set by the tests module's surefire configuration)").isNotBlank();
    return Path.of(root);
  }

  /** The pinned environment's python; scripts/test exports it. */
  static String python() {
    String py = System.getenv("XLAC_PYTHON");
    assertThat(py).as("XLAC_PYTHON is unset: run the tests with ./scripts/test, which builds the pinned Python "
        + "environment and exports its interpreter").isNotBlank();
    return py;
  }

  /** The real XLA CPU PJRT plugin; scripts/test exports it. */
  static String cpuPlugin() {
    String p = System.getenv("XLAC_PJRT_PLUGIN");
    assertThat(p).as("XLAC_PJRT_PLUGIN is unset: run the tests with ./scripts/test").isNotBlank();
    return p;
  }

  /** Builds compiler-drivers' C test plugin into {@code out} with gcc; returns the library. */
  static Path buildTestPlugin(Path out) throws IOException, InterruptedException {
    Path source = root().resolve("compiler-drivers/src/test/c/xlac_test_plugin.c");
    Path plugin = out.resolve("xlac-test-plugin.so");
    Result gcc = run(List.of("gcc", "-shared", "-fPIC", "-O1", "-o", plugin.toString(), source.toString()), Map.of(),
        120);
    assertThat(gcc.exitCode()).as("gcc: %s", gcc.err()).isZero();
    return plugin;
  }

  static Result xlac(String... args) throws IOException, InterruptedException {
    return xlac(Map.of(), args);
  }

  /** {@code ./xlac ARGS...} with {@code env} added to this process's environment (credentials of an S3 server). */
  static Result xlac(Map<String, String> env, String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(root().resolve("xlac").toString());
    cmd.addAll(List.of(args));
    return run(cmd, env, 300);
  }

  /** Runs a JAX sample with XLA dumping protos of every module into {@code dumps}. */
  static Result traceJax(Path script, Path dumps, String... args) throws IOException, InterruptedException {
    Files.createDirectories(dumps);
    List<String> cmd = new ArrayList<>(List.of(python(), script.toString()));
    cmd.addAll(List.of(args));
    Result r = run(cmd, Map.of(
        "XLA_FLAGS", "--xla_dump_to=" + dumps + " --xla_dump_hlo_as_proto",
        "JAX_COMPILER_DETAILED_LOGGING_MIN_OPS", "0",
        "JAX_PLATFORMS", "cpu"), 300);
    assertThat(r.exitCode()).as("%s failed:%n%s", script, r.err()).isZero();
    return r;
  }

  private static final java.util.regex.Pattern REPORT_NUMBER =
      java.util.regex.Pattern.compile("\"(\\w+)\": (\\d+(\\.\\d+)?)");

  /** The numbers of an {@code xlac run --report} file, by their keys (nested objects' keys included). */
  static Map<String, Double> reportNumbers(Path file) throws IOException {
    Map<String, Double> m = new java.util.HashMap<>();
    java.util.regex.Matcher matcher = REPORT_NUMBER.matcher(Files.readString(file));
    while (matcher.find()) {
      m.put(matcher.group(1), Double.parseDouble(matcher.group(2)));
    }
    return m;
  }

  static Result run(List<String> cmd, Map<String, String> env, int timeoutSeconds) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(root().toFile());
    pb.environment().putAll(env);
    Path out = Files.createTempFile("xlac-e2e", ".out");
    Path err = Files.createTempFile("xlac-e2e", ".err");
    pb.redirectOutput(out.toFile()).redirectError(err.toFile());
    Process p = pb.start();
    try {
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AssertionError("timed out after " + timeoutSeconds + "s: " + cmd);
      }
      return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
          Files.readString(err, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }
}
