package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.CacheStore;
import dev.xlac.hlo.TestModules;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.w3c.dom.Document;

/**
 * {@code xlac parallel-compile} through the real launcher: the real XLA CPU plugin on real JAX
 * dumps, and the C test plugin (compiler-drivers/src/test/c, built here with gcc) for crashes and
 * hangs.
 */
class ParallelCompileE2ETest {
  private static Path testPlugin;

  @TempDir
  Path dir;

  @BeforeAll
  static void buildTestPlugin(@TempDir Path out) throws Exception {
    testPlugin = Launcher.buildTestPlugin(out);
  }

  /** Reads a JSON report with the pinned Python's json module and prints the figures the test checks. */
  private static String summarize(Path report) throws Exception {
    Launcher.Result r = Launcher.run(List.of(Launcher.python(), "-c", """
        import json, sys
        r = json.load(open(sys.argv[1]))
        print(r["total"], r["compiled"], r["cached"], r["failed"], type(r["wall_seconds"]).__name__)
        for g in r["graphs"]:
            assert set(g) >= {"fingerprint", "module", "status", "compile_seconds", "error"}, g
            print(g["module"], g["status"], g["error"] is None)
        """, report.toString()), Map.of(), 60);
    assertThat(r.exitCode()).as(r.err()).isZero();
    return r.out();
  }

  @Test
  void realCpuPlugin_compilesGoldenDumps_thenEverythingIsCached() throws Exception {
    Path cache = dir.resolve("cache");
    Path report = dir.resolve("report.json");
    Path junit = dir.resolve("junit.xml");
    String dumps = TestModules.golden("mlp_run1").toString();

    Launcher.Result first = Launcher.xlac("parallel-compile", "--cache", cache.toString(), "--plugin", Launcher.cpuPlugin(),
        "--jobs", "2", "--report", report.toString(), "--junit", junit.toString(), dumps);

    assertThat(first.exitCode()).as(first.err()).isZero();
    assertThat(first.out()).startsWith("24 graphs: 24 compiled, 0 cached, 0 failed\n")
        .containsPattern("wall [0-9.]+ s, compile time [0-9.]+ s, effective parallel speedup [0-9.]+x \\(2 jobs\\)");
    // Not a terminal: plain log lines, no live bar.
    assertThat(first.err()).contains("xlac: [24/24] compiled ").doesNotContain("\r");
    String summary = summarize(report);
    assertThat(summary.lines().findFirst()).hasValue("24 24 0 0 float");
    assertThat(summary).contains("jit_train_step compiled True");
    Document xml = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(junit.toFile());
    assertThat(xml.getElementsByTagName("testcase").getLength()).isEqualTo(24);
    assertThat(xml.getElementsByTagName("failure").getLength()).isZero();

    Launcher.Result second = Launcher.xlac("parallel-compile", "--cache", cache.toString(), "--plugin", Launcher.cpuPlugin(),
        "--report", report.toString(), dumps);
    assertThat(second.exitCode()).as(second.err()).isZero();
    assertThat(second.out()).startsWith("24 graphs: 0 compiled, 24 cached, 0 failed\n");
    assertThat(summarize(report).lines().findFirst()).hasValue("24 0 24 0 float");
    Launcher.Result ls = Launcher.xlac("cache", "ls", "--cache", cache.toString(), "--status", "compiled");
    assertThat(ls.out().lines().filter(l -> l.contains("pjrt:cpu"))).hasSize(24);
  }

  /**
   * With PATHs the first worker starts before the cache opens; when everything turns out to be
   * cached it is killed, and none outlives the run (a worker leads its own process group, so only
   * xlac can stop it). The plugin is reached through a link of this test's own, which names this
   * run's workers on their command line.
   */
  @Test
  void allCachedPaths_exit0_andLeaveNoWorkerBehind() throws Exception {
    Path cache = dir.resolve("cache");
    Path plugin = Files.createSymbolicLink(dir.resolve("pjrt-plugin-link.so"), Path.of(Launcher.cpuPlugin()));
    String dumps = TestModules.golden("mlp_run1").toString();
    Launcher.Result first = Launcher.xlac("parallel-compile", "--cache", cache.toString(), "--plugin",
        plugin.toString(), "--jobs", "1", dumps);
    assertThat(first.exitCode()).as(first.err()).isZero();
    assertThat(workersOf(plugin)).isEmpty();

    Launcher.Result again = Launcher.xlac("parallel-compile", "--cache", cache.toString(), "--plugin",
        plugin.toString(), dumps);
    assertThat(again.exitCode()).as(again.err()).isZero();
    assertThat(again.out()).startsWith("24 graphs: 0 compiled, 24 cached, 0 failed\n");
    assertThat(workersOf(plugin)).isEmpty();
    Files.delete(plugin); // not left to @TempDir, which warns about links
  }

  /** The command lines of live PJRT worker JVMs loading {@code plugin}. */
  private static List<String> workersOf(Path plugin) {
    return ProcessHandle.allProcesses().filter(ProcessHandle::isAlive)
        .map(p -> p.info().commandLine().orElse(""))
        .filter(c -> c.contains("PjrtWorkerProcess") && c.contains(plugin.toString())).toList();
  }

  @Test
  void crashingPlugin_costsOneGraph_isRecorded_andRetryFailedTriesAgain() throws Exception {
    Path cache = dir.resolve("cache");
    Path dumps = dir.resolve("dumps");
    TestModules.writeDump(dumps, "module_0001.jit_step_a.before_optimizations.hlo.pb", TestModules.mulAdd(1f, 1, "_a", 1));
    TestModules.writeDump(dumps, "module_0002.jit_step_crash.before_optimizations.hlo.pb",
        TestModules.mulAdd(2f, 1, "_crash", 1));
    TestModules.writeDump(dumps, "module_0003.jit_step_segv.before_optimizations.hlo.pb",
        TestModules.mulAdd(3f, 1, "_segv", 1));
    TestModules.writeDump(dumps, "module_0004.jit_step_b.before_optimizations.hlo.pb", TestModules.mulAdd(4f, 1, "_b", 1));
    Path junit = dir.resolve("junit.xml");

    Launcher.Result first = Launcher.xlac("parallel-compile", "--cache", cache.toString(), "--plugin",
        testPlugin.toString(), "--junit", junit.toString(), dumps.toString());

    assertThat(first.exitCode()).as(first.err()).isEqualTo(1);
    assertThat(first.out()).startsWith("4 graphs: 2 compiled, 0 cached, 2 failed\n")
        .containsPattern("failed: jit_step_crash \\(\\w+\\): .*SIGABRT");
    assertThat(first.out()).containsPattern("failed: jit_step_segv \\(\\w+\\): .*SIGSEGV");
    assertThat(first.err()).doesNotContain("Exception");
    Document xml = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(junit.toFile());
    assertThat(xml.getElementsByTagName("failure").getLength()).isEqualTo(2);
    String fp = first.out().lines().filter(l -> l.contains("jit_step_crash")).findFirst().orElseThrow()
        .replaceAll(".*xlac cache log (hlo1:\\w+)$", "$1");
    Launcher.Result log = Launcher.xlac("cache", "log", "--cache", cache.toString(), fp);
    assertThat(log.out()).contains("crash").contains("SIGABRT");

    Launcher.Result skipped = Launcher.xlac("parallel-compile", "--cache", cache.toString(), "--plugin",
        testPlugin.toString());
    assertThat(skipped.exitCode()).isEqualTo(1);
    assertThat(skipped.out()).contains("2 failed in an earlier run and were skipped");
    assertThat(skipped.err()).contains("0 to compile");

    Launcher.Result retried = Launcher.xlac("parallel-compile", "--cache", cache.toString(), "--plugin",
        testPlugin.toString(), "--retry-failed", "--retries", "1");
    assertThat(retried.exitCode()).isEqualTo(1);
    assertThat(retried.err()).contains("2 to compile").contains("xlac: retrying jit_step_crash");
  }

  @Test
  void neuronxCc_standIn_compilesFailsAndRetriesOutOfMemoryOnce() throws Exception {
    // neuronx-cc cannot be installed here: the stand-in follows its documented contract, and the
    // marker XLAC_STANDIN:<mode> in a module (here its name) picks the outcome.
    Path cache = dir.resolve("cache");
    Path dumps = dir.resolve("dumps");
    TestModules.writeDump(dumps, "module_0001.step.before_optimizations.hlo.pb", TestModules.mulAdd(1f));
    TestModules.writeDump(dumps, "module_0002.bad.before_optimizations.hlo.pb",
        TestModules.mulAdd(2f).toBuilder().setName("XLAC_STANDIN:compile-error").build());
    TestModules.writeDump(dumps, "module_0003.big.before_optimizations.hlo.pb",
        TestModules.mulAdd(3f).toBuilder().setName("XLAC_STANDIN:oom").build());
    Path report = dir.resolve("report.json");
    Map<String, String> env = Map.of("PATH", Launcher.root().resolve("tests/neuronx-cc-standin") + ":"
        + System.getenv("PATH"), "NEURON_CC_FLAGS", "--model-type=transformer --cache_dir=/var/tmp/ignored");

    Launcher.Result r = Launcher.run(List.of(Launcher.root().resolve("xlac").toString(), "parallel-compile",
        "--cache", cache.toString(), "--driver", "neuronx-cc", "--target", "trn2", "--jobs", "2",
        "--report", report.toString(), dumps.toString()), env, 300);

    assertThat(r.exitCode()).as(r.err()).isEqualTo(1);
    assertThat(r.out()).startsWith("3 graphs: 1 compiled, 0 cached, 2 failed\n");
    String summary = Launcher.run(List.of(Launcher.python(), "-c", """
        import json, sys
        for g in sorted(json.load(open(sys.argv[1]))["graphs"], key=lambda g: g["module"]):
            print(g["module"], g["status"], g["failure_kind"], g["attempts"])
        """, report.toString()), Map.of(), 60).out();
    assertThat(summary).isEqualTo("""
        XLAC_STANDIN:compile-error failed compile-error 1
        XLAC_STANDIN:oom failed out-of-memory 2
        jit_step compiled None 1
        """);
    // The identity carries the target and the flags minus the wrapper's own (--cache_dir).
    Launcher.Result ls = Launcher.xlac("cache", "ls", "--cache", cache.toString(), "--status", "compiled");
    assertThat(ls.out()).contains("neuronx-cc:trn2");
    Launcher.Result log = Launcher.xlac("cache", "log", "--cache", cache.toString(),
        r.out().lines().filter(l -> l.contains("compile-error")).findFirst().orElseThrow()
            .replaceAll(".*xlac cache log (hlo1:\\w+)$", "$1"));
    assertThat(log.out()).contains("--model-type=transformer").doesNotContain("--cache_dir");
  }

  @Test
  void exitCodes_usage2_environment3_lockedCache3() throws Exception {
    Path cache = dir.resolve("cache");
    Launcher.Result usage = Launcher.xlac("parallel-compile", "--cache", cache.toString(), "--jobs", "zero");
    assertThat(usage.exitCode()).isEqualTo(2);

    Launcher.Result noPlugin = Launcher.xlac("parallel-compile", "--cache", cache.toString(), "--plugin",
        dir.resolve("missing.so").toString());
    assertThat(noPlugin.exitCode()).isEqualTo(3);
    assertThat(noPlugin.err().strip()).isEqualTo("xlac: cannot use PJRT plugin " + dir.resolve("missing.so")
        + ": no such file");

    try (CacheStore holder = CacheStore.open(cache, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      Launcher.Result locked = Launcher.xlac("parallel-compile", "--cache", cache.toString(), "--plugin",
          testPlugin.toString());
      assertThat(locked.exitCode()).isEqualTo(3);
      assertThat(locked.err()).contains("locked by another xlac process").doesNotContain("\tat ");
    }
  }

  /**
   * SIGINT to xlac alone (as {@code kill -INT}), and to its whole process group (as a terminal's
   * Ctrl-C does): either way xlac stops the compiles itself, so none is recorded as a crash.
   */
  @ParameterizedTest(name = "whole group: {0}")
  @ValueSource(booleans = {false, true})
  void interrupt_stopsHangingWorkers_andLeavesTheCacheUsable(boolean wholeGroup) throws Exception {
    Path cache = dir.resolve("cache");
    Path dumps = dir.resolve("dumps");
    TestModules.writeDump(dumps, "module_0001.jit_step_hang1.before_optimizations.hlo.pb",
        TestModules.mulAdd(1f, 1, "_hang1", 1));
    TestModules.writeDump(dumps, "module_0002.jit_step_hang2.before_optimizations.hlo.pb",
        TestModules.mulAdd(2f, 1, "_hang2", 1));
    List<String> cmd = new ArrayList<>();
    if (wholeGroup) {
      cmd.add("setsid"); // xlac leads a group of its own, as a shell's foreground job does
    }
    cmd.addAll(List.of(Launcher.root().resolve("xlac").toString(), "parallel-compile", "--cache",
        cache.toString(), "--plugin", testPlugin.toString(), "--jobs", "2", dumps.toString()));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    Process p = pb.start();
    List<ProcessHandle> workers = new ArrayList<>();
    StringBuilder output = new StringBuilder();
    try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line; (line = r.readLine()) != null; ) {
        output.append(line).append('\n');
        if (line.contains("to compile with")) {
          // both workers are started before their first compile; wait until the hanging compiles run
          while (p.descendants().count() < 2) {
            Thread.sleep(200);
          }
          Thread.sleep(3000);
          workers.addAll(p.descendants().toList());
          String target = wholeGroup ? "-" + p.pid() : Long.toString(p.pid());
          new ProcessBuilder("kill", "-INT", "--", target).start().waitFor();
        }
      }
    }
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as(output.toString()).isTrue();
    assertThat(p.exitValue()).as(output.toString()).isEqualTo(130);
    assertThat(workers).isNotEmpty().allSatisfy(w -> assertThat(w.isAlive()).as("worker %d", w.pid()).isFalse());
    Launcher.Result ls = Launcher.xlac("cache", "ls", "--cache", cache.toString());
    assertThat(ls.exitCode()).as(ls.err()).isZero();
    assertThat(ls.out()).contains("pending").doesNotContain("failed");
  }
}
