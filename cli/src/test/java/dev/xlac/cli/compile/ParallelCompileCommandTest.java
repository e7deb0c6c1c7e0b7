package dev.xlac.cli.compile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.CacheStore;
import dev.xlac.cli.Main;
import dev.xlac.cli.compile.CompileFixture.Run;
import dev.xlac.hlo.TestModules;
import dev.xlac.pipeline.TestPlugin;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code xlac parallel-compile} in-process, against a real cache and worker JVMs running the C
 * test plugin from compiler-drivers (built here with gcc), which aborts on modules named
 * {@code *crash*} and rejects {@code *reject*}. The real CPU plugin is exercised end to end in
 * the tests module.
 */
class ParallelCompileCommandTest {
  private static Path testPlugin;

  @TempDir
  Path tmp;
  Path cache;
  Path dumps;

  @BeforeAll
  static void buildTestPlugin(@TempDir Path dir) throws Exception {
    testPlugin = TestPlugin.build(dir);
  }

  @BeforeEach
  void dumps() throws IOException {
    cache = tmp.resolve("cache");
    dumps = tmp.resolve("dumps");
    // Distinct constants make distinct fingerprints; the suffix makes the module name the plugin reads.
    TestModules.writeDump(dumps, "module_0001.jit_step_ok.before_optimizations.hlo.pb", TestModules.mulAdd(1f, 1, "_ok", 1));
    TestModules.writeDump(dumps, "module_0002.jit_step_crash.before_optimizations.hlo.pb",
        TestModules.mulAdd(2f, 1, "_crash", 1));
    TestModules.writeDump(dumps, "module_0003.jit_step_reject.before_optimizations.hlo.pb",
        TestModules.mulAdd(3f, 1, "_reject", 1));
  }

  Run xlac(String... args) {
    return CompileFixture.parallelCompile(cache, new StringWriter(), args);
  }

  int cacheCommand(String... args) {
    List<String> all = new ArrayList<>(List.of("cache"));
    all.addAll(List.of(args));
    all.addAll(List.of("--cache", cache.toString()));
    return new Main(new PrintWriter(new StringWriter(), true), new PrintWriter(new StringWriter(), true))
        .run(all.toArray(String[]::new));
  }

  long storedBytes() throws InterruptedException {
    try (CacheStore store = CacheStore.open(cache, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      return store.statistics().storedBytes();
    }
  }

  @Test
  void cacheStat_countsACompileRunsLookups_cachedGraphsAreHits() throws Exception {
    Path ok = tmp.resolve("ok");
    TestModules.writeDump(ok, "module_0001.jit_step_ok.before_optimizations.hlo.pb", TestModules.mulAdd(1f, 1, "_ok", 1));
    TestModules.writeDump(ok, "module_0004.jit_step_ok.before_optimizations.hlo.pb", TestModules.mulAdd(4f, 1, "_ok", 1));
    assertThat(xlac("--plugin", testPlugin.toString(), ok.toString()).code()).isZero(); // 2 misses, compiled
    assertThat(xlac("--plugin", testPlugin.toString(), ok.toString()).out()).startsWith("2 graphs: 0 compiled, 2 cached");

    StringWriter out = new StringWriter();
    int code = new Main(new PrintWriter(out, true), new PrintWriter(new StringWriter(), true))
        .run("cache", "stat", "--json", "--cache", cache.toString());
    assertThat(code).isZero();
    assertThat(out.toString()).contains("\"hits\": 2", "\"misses\": 2");
  }

  @Test
  void crashAndReject_failOnlyTheirGraphs_areStored_andSkippedNextTimeUnlessRetryFailed() throws Exception {
    Path report = tmp.resolve("report.json");
    Path junit = tmp.resolve("junit.xml");

    Run first = xlac("--plugin", testPlugin.toString(), "--jobs", "2", "--report", report.toString(), "--junit",
        junit.toString(), dumps.toString());

    assertThat(first.code()).as(first.err()).isEqualTo(1);
    assertThat(first.out()).startsWith("3 graphs: 1 compiled, 0 cached, 2 failed\n");
    assertThat(first.out()).containsPattern("  failed: jit_step_crash \\(\\w+\\): .*SIGABRT.*; log: xlac cache log hlo1:");
    assertThat(first.out()).containsPattern("  failed: jit_step_reject \\(\\w+\\): .*rejects module.*");
    assertThat(first.err()).contains("xlac: 3 graphs: 0 cached, 3 to compile with 2 jobs")
        .containsPattern("xlac: \\[\\d/3\\] compiled jit_step_ok \\(\\w{12}\\) in ");
    String json = Files.readString(report);
    assertThat(json).contains("\"total\": 3", "\"compiled\": 1", "\"cached\": 0", "\"failed\": 2",
        "\"failure_kind\": \"crash\"", "\"failure_kind\": \"compile-error\"", "\"wall_seconds\": ");
    assertThat(Files.readString(junit)).contains("tests=\"3\" failures=\"2\"");

    Run second = xlac("--plugin", testPlugin.toString(), dumps.toString());
    assertThat(second.code()).isEqualTo(1);
    assertThat(second.out()).startsWith("3 graphs: 0 compiled, 1 cached, 2 failed (2 failed in an earlier run and"
        + " were skipped; --retry-failed compiles them again)");
    assertThat(second.err()).contains("1 cached, 0 to compile");

    Run retried = xlac("--plugin", testPlugin.toString(), "--retry-failed", "--report", report.toString());
    assertThat(retried.code()).isEqualTo(1);
    assertThat(retried.out()).startsWith("3 graphs: 0 compiled, 1 cached, 2 failed\n");
    assertThat(Files.readString(report)).contains("\"attempts\": 1", "\"failure_kind\": \"crash\"");
  }

  @Test
  void goodGraphsOnly_exit0_thenAllCached() {
    Path good = dumps.resolve("module_0001.jit_step_ok.before_optimizations.hlo.pb");
    Run first = xlac("--plugin", testPlugin.toString(), good.toString());
    assertThat(first.code()).as(first.err()).isZero();
    assertThat(first.out()).startsWith("1 graph: 1 compiled, 0 cached, 0 failed\n");

    Run second = xlac("--plugin", testPlugin.toString(), good.toString());
    assertThat(second.code()).isZero();
    assertThat(second.out()).startsWith("1 graph: 0 compiled, 1 cached, 0 failed\n").contains("nothing compiled");
  }

  @Test
  void paths_printWhyEachNewGraphIsNew_asTheLastLine_andInTheReport() throws Exception {
    Path good = dumps.resolve("module_0001.jit_step_ok.before_optimizations.hlo.pb");
    Run first = xlac("--plugin", testPlugin.toString(), good.toString());
    assertThat(first.code()).as(first.err()).isZero();
    assertThat(first.out()).as("a first fill explains nothing").doesNotContain("new graph");

    Path changed = TestModules.writeDump(tmp.resolve("rerun"), "module_0001.jit_step_ok.before_optimizations.hlo.pb",
        TestModules.mulAdd(1.5f, 1, "_ok", 1));
    Path report = tmp.resolve("report.json");
    Run second = xlac("--plugin", testPlugin.toString(), "--report", report.toString(), changed.toString());
    assertThat(second.code()).as(second.err()).isZero();
    List<String> lines = second.out().lines().toList();
    assertThat(lines.get(lines.size() - 2)).startsWith("wall ");
    assertThat(lines.getLast()).isEqualTo("1 new graph: 1 differs from a cached graph only in a constant"
        + " ({1.0, 1.0, 1.0, 1.0} -> {1.5, 1.5, 1.5, 1.5}: jit_step_ok)");
    assertThat(Files.readString(report)).contains("\"reason\": \"a constant ({1.0, 1.0, 1.0, 1.0} -> {1.5, 1.5, 1.5,"
        + " 1.5})\"").contains("\"relative\": \"hlo1:");
  }

  @Test
  void unreadablePaths_areReportedBeforeCompiling_searchErrorsThenNotesThenFiles_andExit2() throws IOException {
    Path good = dumps.resolve("module_0001.jit_step_ok.before_optimizations.hlo.pb");
    Path more = Files.createDirectories(tmp.resolve("more"));
    Files.write(more.resolve("module_0005.jit_x.after_optimizations.hlo.pb"), new byte[] {1}); // not an input
    Path broken = Files.write(more.resolve("module_0006.jit_y.before_optimizations.hlo.pb"), new byte[] {0x0a, 0x05});
    Path absent = tmp.resolve("absent");

    Run r = xlac("--plugin", testPlugin.toString(), absent.toString(), good.toString(), more.toString());

    assertThat(r.code()).as(r.err()).isEqualTo(2);
    assertThat(r.out()).startsWith("1 graph: 1 compiled, 0 cached, 0 failed\n");
    List<String> lines = r.err().lines().toList();
    assertThat(lines.get(0)).isEqualTo("xlac: cannot read " + absent + ": no such file or directory");
    assertThat(lines.get(1)).startsWith("xlac: skipped 1 other dump file ");
    assertThat(lines.get(2)).startsWith("xlac: cannot read " + broken + ": ");
    assertThat(lines.get(3)).startsWith("xlac: 1 graph: 0 cached, 1 to compile");

    Path empty = Files.createDirectories(tmp.resolve("empty"));
    Run none = xlac("--plugin", testPlugin.toString(), empty.toString());
    assertThat(none.code()).isEqualTo(2);
    assertThat(none.err()).startsWith("xlac: no HLO modules found in " + empty + "\n");
  }

  /**
   * Issue #10 item 2: with a max-size below what the run stores, the automatic cleanup used to remove
   * the run's pending graphs under it ("cannot read the graph ...: it is missing or damaged in the
   * cache", then "graph ... is not in cache; store the graph before its artifacts").
   */
  @Test
  void maxSizeSmallerThanTheRunsGraphs_everyGraphIsCompiled_exit0_andTheLimitHoldsAfterTheRun() throws Exception {
    Path old = tmp.resolve("old");
    Path many = tmp.resolve("many");
    for (int i = 1; i <= 3; i++) { // in the cache before the run, not used by it: the cleanup takes these first
      TestModules.writeDump(old, "module_%04d.jit_old_ok.before_optimizations.hlo.pb".formatted(i),
          TestModules.mulAdd(100f + i, 1, "_ok", 1));
    }
    for (int i = 1; i <= 12; i++) {
      TestModules.writeDump(many, "module_%04d.jit_step_ok.before_optimizations.hlo.pb".formatted(i),
          TestModules.mulAdd(10f + i, 1, "_ok", 1));
    }
    assertThat(cacheCommand("add", old.toString())).isZero();
    long oldBytes = storedBytes();
    long limit = oldBytes * 2; // the run's 12 graphs and artifacts take far more
    assertThat(cacheCommand("config", "max-size", Long.toString(limit))).isZero();

    Run r = xlac("--plugin", testPlugin.toString(), "--jobs", "2", many.toString());

    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).startsWith("12 graphs: 12 compiled, 0 cached, 0 failed\n");
    assertThat(r.err()).doesNotContain("missing or damaged", "is not in cache", "not stored");
    assertThat(r.err().lines().filter(l -> l.contains("over its max-size")).toList()).singleElement().asString()
        .startsWith("xlac: cache " + cache.toAbsolutePath().normalize() + " holds ")
        .contains("all of it in use by this run");
    try (CacheStore store = CacheStore.open(cache, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      assertThat(store.statistics().storedBytes()).isLessThanOrEqualTo(limit); // the run's end enforced it
      assertThat(store.statistics().cleanups()).isPositive();
      assertThat(store.graphs()).noneMatch(g -> g.moduleName().equals("jit_old_ok")); // least recently used
    }
  }

  /** Issue #10: --memory-per-job 0, 1 and 1k were accepted. */
  @Test
  void memoryPerJob_belowWhatAnyCompileNeeds_isRefusedWithExit2_sayingWhy() throws Exception {
    for (String size : new String[] {"0", "1", "1k", "255MiB"}) {
      Run r = xlac("--plugin", testPlugin.toString(), "--memory-per-job", size, dumps.toString());
      assertThat(r.code()).as(size).isEqualTo(2);
      assertThat(r.err()).as(size).startsWith("xlac: --memory-per-job ").contains("is too small: no compile fits in"
          + " less than 256.0 MiB").contains("use --jobs N");
    }
    Path ok = tmp.resolve("ok");
    TestModules.writeDump(ok, "module_0001.jit_step_ok.before_optimizations.hlo.pb", TestModules.mulAdd(1f, 1, "_ok", 1));
    Run least = xlac("--plugin", testPlugin.toString(), "--memory-per-job", "256MiB", ok.toString());
    assertThat(least.code()).as(least.err()).isZero();
  }

  @Test
  void usageErrors_exit2() {
    assertThat(xlac("--driver", "gcc").code()).isEqualTo(2);
    assertThat(xlac("--plugin", testPlugin.toString(), "--compiler-flags", "-O2").err())
        .contains("--compiler-flags is for neuronx-cc");
    assertThat(xlac("--plugin", testPlugin.toString(), "--jobs", "0").code()).isEqualTo(2);
    assertThat(xlac("--plugin", testPlugin.toString(), "--memory-per-job", "lots").code()).isEqualTo(2);
    assertThat(xlac("--plugin", testPlugin.toString(), "--compile-option", "bogus=1").code()).isEqualTo(2);
    Run target = xlac("--plugin", testPlugin.toString(), "--target", "trn1", dumps.toString());
    assertThat(target.code()).isEqualTo(2);
    assertThat(target.err()).contains("--target trn1 does not match").contains("xlac-test");
    assertThat(xlac("--plugin", testPlugin.toString(), "--report", tmp.resolve("no/such/dir/r.json").toString())
        .code()).isEqualTo(2);
  }

  @Test
  void environmentErrors_exit3() throws Exception {
    Run missing = xlac("--plugin", tmp.resolve("absent.so").toString(), dumps.toString());
    assertThat(missing.code()).isEqualTo(3);
    assertThat(missing.err()).contains("cannot use PJRT plugin").contains("absent.so: no such file");

    Run neuron = xlac("--driver", "neuronx-cc", dumps.toString());
    assertThat(neuron.code()).isEqualTo(3);
    assertThat(neuron.err()).startsWith("xlac: neuronx-cc was not found on PATH");

    try (CacheStore holder = CacheStore.open(cache, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      Run locked = xlac("--plugin", testPlugin.toString(), dumps.toString());
      assertThat(locked.code()).isEqualTo(3);
      assertThat(locked.err()).contains("is locked by another xlac process");
    }
  }
}
