package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code xlac run}'s native fast start (runtime/README.md, "The fast start"), through the real launcher, on real
 * JAX with the real CPU plugin: the run after one whose launch plan holds starts its command without a JVM and ends
 * exactly as the JVM path does (summary line, report, losses, exit status, signals, a missing command,
 * {@code --require-hits}); a cache that changed sends the next run through the JVM again; {@code kill -9} of the
 * fast start leaves the cache as it was. Which path a run took is seen by the command itself (the name of its
 * parent process: {@code java} or {@code xlac-fast-start}) and by the fast start's trace
 * ({@code XLAC_FAST_START_DEBUG}, which the plans do not watch); never by timing.
 */
class RuntimeFastStartE2ETest {
  private static final Pattern REPORT_VALUE = Pattern.compile("\"(\\w+)\": ([^,\\n]+)");
  /** The report's timings, which differ from run to run on either path. */
  private static final Set<String> TIMINGS = Set.of("wall_seconds", "serve_seconds", "miss_lookup_seconds",
      "miss_overhead_percent", "compile_seconds",
      // Loading ahead follows the list the previous run of the command left, not the path this run took.
      "preloaded", "preload_hits", "preload_wasted", "preload_hidden_seconds");
  private static final String JVM_PATH = "xlac-fast-start: JVM path";
  private static final String FAST_PATH = "xlac-fast-start: served without a JVM";
  private static final String FINISHED_HERE = "xlac-fast-start: served without a JVM; finished without one";

  @TempDir
  static Path shared;

  @TempDir
  Path work;

  private static Path cache;

  @BeforeAll
  static void recordTheDecoder() throws Exception {
    cache = shared.resolve("cache");
    Launcher.Result r = Launcher.run(xlacRun(List.of("--record"), decoder(List.of())), env(), 300);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.runSummary()).contains("recorded ");
  }

  private static Map<String, String> env() {
    Map<String, String> env = new HashMap<>();
    env.put("JAX_PLATFORMS", "");
    env.put("XLAC_PJRT_PLUGIN", "");
    env.put("XLAC_FAST_START_DEBUG", "1");
    return env;
  }

  private static List<String> decoder(List<String> extra) {
    List<String> cmd = new ArrayList<>(List.of(Launcher.python(),
        Launcher.root().resolve("samples/jax/decoder.py").toString(), "--steps", "2", "--loss-bits"));
    cmd.addAll(extra);
    return cmd;
  }

  /** {@code sh -c} that writes the name of its parent process (the one that started the command) to {@code file}. */
  private static List<String> parentNamedIn(Path file, String then, List<String> args) {
    List<String> cmd = new ArrayList<>(List.of("sh", "-c", "cat /proc/$PPID/comm > '" + file + "'; " + then, "sh"));
    cmd.addAll(args);
    return cmd;
  }

  private static List<String> xlacRun(List<String> options, List<String> command) {
    List<String> cmd = new ArrayList<>(List.of(Launcher.root().resolve("xlac").toString(), "run", "--cache",
        cache.toString(), "--plugin", Launcher.cpuPlugin()));
    cmd.addAll(options);
    cmd.add("--");
    cmd.addAll(command);
    return cmd;
  }

  private static List<String> losses(String out) {
    return out.lines().filter(l -> l.startsWith("step ") || l.startsWith("done: ")).toList();
  }

  private static Map<String, String> report(Path file) throws Exception {
    Map<String, String> m = new HashMap<>();
    Matcher matcher = REPORT_VALUE.matcher(Files.readString(file));
    while (matcher.find()) {
      if (!TIMINGS.contains(matcher.group(1))) {
        m.put(matcher.group(1), matcher.group(2).strip());
      }
    }
    return m;
  }

  /** A decoder run whose command notes its parent in {@code parent}; asserts exit 0 and the path taken. */
  private Launcher.Result decoderRun(List<String> options, Path parent, boolean fast) throws Exception {
    Launcher.Result r = Launcher.run(xlacRun(options, parentNamedIn(parent, "exec \"$@\"", decoder(List.of()))),
        env(), 300);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(Files.readString(parent).strip()).as(r.err()).isEqualTo(fast ? "xlac-fast-start" : "java");
    assertThat(r.err()).as("the fast start's trace").contains(fast ? FAST_PATH : JVM_PATH);
    return r;
  }

  @Test
  void secondIdenticalRun_takesTheFastPath_withTheSameSummaryReportAndLosses_andAChangedCacheTakesTheJvm()
      throws Exception {
    Path report = work.resolve("report.json");
    Path parent = work.resolve("parent");
    List<String> options = List.of("--report", report.toString());
    Launcher.Result jvm = decoderRun(options, parent, false);
    Map<String, String> jvmReport = report(report);
    assertThat(jvmReport.get("hits")).isEqualTo(jvmReport.get("compiles")).isNotEqualTo("0");

    Launcher.Result fast = decoderRun(options, parent, true);
    assertThat(fast.err()).as("every compile served: finished without a JVM").contains(FINISHED_HERE);
    assertThat(fast.runSummary()).isEqualTo(jvm.runSummary()).contains(" served from the cache, 0 compiled");
    assertThat(fast.out()).as("the command's stdout, nothing of xlac's").isEqualTo(jvm.out());
    assertThat(report(report)).isEqualTo(jvmReport);
    assertThat(Launcher.reportNumbers(report).get("preload_hits")).as("the list the JVM run left is loaded ahead")
        .isEqualTo(Launcher.reportNumbers(report).get("compiles"));
    assertThat(losses(fast.out())).hasSize(3).isEqualTo(losses(jvm.out()));
    // Its hits wait in the cache, durably, and the next open for writing (the recording run below) counts them.
    Map<String, Double> before = statNumbers();
    assertThat(before.get("pending_runtime_hit_records")).as("the fast run's hits wait to be counted").isEqualTo(1.0);
    double servedHits = Launcher.reportNumbers(report).get("hits");

    // The cache changes (a recording run puts new executables into it): the plan no longer holds.
    Path otherReport = work.resolve("other.json");
    Launcher.Result other = Launcher.run(xlacRun(List.of("--record", "--report", otherReport.toString()),
        decoder(List.of("--seq-len", "32"))), env(), 300);
    assertThat(other.exitCode()).as(other.err()).isZero();
    Map<String, Double> after = statNumbers();
    assertThat(after.get("pending_runtime_hit_records")).isZero();
    assertThat(after.get("runtime_hits")).as("the fast run's hits counted once, beside the recording run's own")
        .isEqualTo(before.get("runtime_hits") + servedHits + Launcher.reportNumbers(otherReport).get("hits"));
    Launcher.Result afterChange = decoderRun(options, parent, false);
    assertThat(afterChange.err()).contains(JVM_PATH + ": ").containsPattern("pjrt\\.stamp|/db");
    assertThat(report(report)).isEqualTo(jvmReport);
    assertThat(losses(afterChange.out())).isEqualTo(losses(jvm.out()));
    Launcher.Result again = decoderRun(options, parent, true);
    assertThat(again.runSummary()).isEqualTo(jvm.runSummary());
  }

  /** The numbers of {@code xlac cache stat --json} (read-only: it counts nothing). */
  private static Map<String, Double> statNumbers() throws Exception {
    Launcher.Result stat = Launcher.xlac("cache", "stat", "--json", "--cache", cache.toString());
    assertThat(stat.exitCode()).as(stat.err()).isZero();
    Path json = Files.createTempFile("xlac-stat", ".json");
    Files.writeString(json, stat.out());
    return Launcher.reportNumbers(json);
  }

  @Test
  void exitStatusSignalsAMissingCommandAndRequireHits_passThroughTheFastPath() throws Exception {
    Path report = work.resolve("status.json");
    Path parent = work.resolve("parent");
    List<String> options = List.of("--require-hits", "--report", report.toString());
    decoderRun(options, parent, false);

    // An exit status of its own: as the JVM path gives it (a command that compiled nothing fails --require-hits
    // only when it succeeded).
    Launcher.Result seven = Launcher.run(xlacRun(options, parentNamedIn(parent, "exit 7", List.of())), env(), 120);
    assertThat(Files.readString(parent).strip()).as(seven.err()).isEqualTo("xlac-fast-start");
    assertThat(seven.exitCode()).as(seven.err()).isEqualTo(7);
    assertThat(seven.out()).isEmpty();
    assertThat(seven.runSummary()).startsWith("xlac run: 0 compiles: 0 served from the cache, 0 compiled");
    assertThat(report(report)).containsEntry("exit_status", "7");

    // A command that is not there: the JVM's one line and 127.
    Launcher.Result missing = Launcher.run(xlacRun(options, List.of("no-such-command-xlac")), env(), 120);
    assertThat(missing.exitCode()).isEqualTo(127);
    assertThat(missing.err()).isEqualTo("xlac: command not found: no-such-command-xlac (not on PATH)\n");

    // SIGTERM to xlac reaches the command's whole group; the status is 143, as on the JVM path.
    Path pid = work.resolve("sleep.pid");
    List<String> waits = parentNamedIn(parent, "sleep 600 & echo $! > '" + pid + "'; wait", List.of());
    Path err = work.resolve("term.err");
    ProcessBuilder term = new ProcessBuilder(xlacRun(options, waits)).directory(Launcher.root().toFile())
        .redirectOutput(work.resolve("term.out").toFile()).redirectError(err.toFile());
    term.environment().putAll(env()); // as the other runs: a plan watches the environment
    Process xlac = term.start();
    try {
      for (int i = 0; i < 300 && !(Files.exists(pid) && !Files.readString(pid).isBlank()); i++) {
        Thread.sleep(100);
      }
      long sleeper = Long.parseLong(Files.readString(pid).strip());
      assertThat(Files.readString(parent).strip()).as(Files.readString(err)).isEqualTo("xlac-fast-start");
      new ProcessBuilder("kill", "-TERM", Long.toString(xlac.pid())).start().waitFor();
      assertThat(xlac.waitFor(120, TimeUnit.SECONDS)).isTrue();
      assertThat(xlac.exitValue()).as(Files.readString(err)).isEqualTo(143);
      for (int i = 0; i < 100 && ProcessHandle.of(sleeper).map(ProcessHandle::isAlive).orElse(false); i++) {
        Thread.sleep(100);
      }
      assertThat(ProcessHandle.of(sleeper).map(ProcessHandle::isAlive)).as("the group got SIGTERM")
          .isNotEqualTo(java.util.Optional.of(true));
      assertThat(Files.readString(err)).contains("xlac run: 0 compiles");
      assertThat(Files.readString(work.resolve("term.out"))).isEmpty();
    } finally {
      xlac.destroyForcibly();
    }

    // --require-hits on a run that compiles what the cache does not hold: exit 1 and its line, on the fast path.
    Launcher.Result miss = Launcher.run(xlacRun(options, parentNamedIn(parent, "exec \"$@\"",
        decoder(List.of("--d-model", "32")))), env(), 300);
    assertThat(Files.readString(parent).strip()).isEqualTo("xlac-fast-start");
    assertThat(miss.exitCode()).as(miss.err()).isEqualTo(1);
    assertThat(miss.err()).containsPattern("xlac run: \\d+ of \\d+ compiles were not served from the cache");
    // and why, from the requests the proxy kept in the fast start's statistics directory (missWithoutReason)
    assertThat(miss.err()).containsPattern("xlac run:   \\d+ not served: program changed: .*jit_train_step");
  }

  @Test
  void killedFastStart_leavesTheCacheIntact_andTheNextRunIsCorrect() throws Exception {
    Path report = work.resolve("kill.json");
    Path parent = work.resolve("parent");
    List<String> options = List.of("--report", report.toString());
    Launcher.Result first = decoderRun(options, parent, false);

    Path pid = work.resolve("sleep.pid");
    ProcessBuilder killed = new ProcessBuilder(xlacRun(options, parentNamedIn(parent,
        "sleep 600 & echo $! > '" + pid + "'; wait", List.of()))).directory(Launcher.root().toFile())
        .redirectOutput(work.resolve("kill.out").toFile()).redirectError(work.resolve("kill.err").toFile());
    killed.environment().putAll(env());
    Process xlac = killed.start();
    long sleeper = -1;
    try {
      for (int i = 0; i < 300 && !(Files.exists(pid) && !Files.readString(pid).isBlank()); i++) {
        Thread.sleep(100);
      }
      sleeper = Long.parseLong(Files.readString(pid).strip());
      assertThat(Files.readString(parent).strip()).isEqualTo("xlac-fast-start");
      xlac.destroyForcibly(); // SIGKILL, while the command runs
      assertThat(xlac.waitFor(60, TimeUnit.SECONDS)).isTrue();
    } finally {
      xlac.destroyForcibly();
      if (sleeper > 0) {
        ProcessHandle.of(sleeper).ifPresent(ProcessHandle::destroyForcibly);
      }
    }
    Launcher.Result next = decoderRun(options, parent, true);
    assertThat(next.runSummary()).isEqualTo(first.runSummary());
    assertThat(losses(next.out())).isEqualTo(losses(first.out()));
    Launcher.Result verify = Launcher.xlac("cache", "verify", "--cache", cache.toString());
    assertThat(verify.exitCode()).as(verify.out() + verify.err()).isZero();
  }
}
