package dev.xlac.cli.compile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cli.Main;
import dev.xlac.cli.compile.CompileFixture.Run;
import dev.xlac.hlo.TestModules;
import dev.xlac.pipeline.TestPlugin;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The one-shot {@code xlac parallel-compile -- COMMAND} in-process: the "training command" is a
 * shell script that copies dump files where the trace environment tells XLA to dump (the last
 * {@code --xla_dump_to} in {@code XLA_FLAGS}), and the compiler is the C test plugin in worker
 * JVMs (it aborts on {@code *crash*} modules). The real JAX sample and the real CPU plugin run in
 * the tests module.
 */
class OneShotCompileTest {
  private static Path testPlugin;

  @TempDir
  Path tmp;
  Path cache;
  Path ok;
  Path ok2;
  Path crash;

  @BeforeAll
  static void buildTestPlugin(@TempDir Path dir) throws Exception {
    testPlugin = TestPlugin.build(dir);
  }

  @BeforeEach
  void dumps() throws IOException {
    cache = tmp.resolve("cache");
    Path src = tmp.resolve("src");
    ok = TestModules.writeDump(src, "module_0001.jit_step_ok.before_optimizations.hlo.pb", TestModules.mulAdd(1f, 1, "_ok", 1));
    ok2 = TestModules.writeDump(src, "module_0002.jit_other_ok.before_optimizations.hlo.pb",
        TestModules.mulAdd(4f, 1, "_ok", 1));
    crash = TestModules.writeDump(src, "module_0003.jit_step_crash.before_optimizations.hlo.pb",
        TestModules.mulAdd(2f, 1, "_crash", 1));
  }

  /** A script: {@code body} runs with {@code $D} set to the dump directory XLA was told to use. */
  private Path script(String body) throws IOException {
    Path p = tmp.resolve("train-" + System.nanoTime() + ".sh");
    Files.writeString(p, "#!/bin/sh\nD=${XLA_FLAGS##*--xla_dump_to=}; D=${D%% *}; mkdir -p \"$D\"\n" + body);
    p.toFile().setExecutable(true);
    return p;
  }

  private Run xlac(StringWriter err, String... args) {
    return CompileFixture.parallelCompile(cache, err, args);
  }

  private Run xlac(String... args) {
    return xlac(new StringWriter(), args);
  }

  @Test
  void compilesWhileTheCommandRuns_thenARerunFindsEverythingCached() throws Exception {
    // The script dumps one graph and waits until xlac reports it compiled, so the compile must
    // overlap the command (it gives up with 7 after 120 s); then it dumps a second graph.
    Path go = tmp.resolve("go");
    Path train = script("cp " + ok + " \"$D/\"\n"
        + "i=0; while [ ! -e " + go + " ]; do sleep 0.1; i=$((i+1)); [ $i -lt 1200 ] || exit 7; done\n"
        + "cp " + ok2 + " \"$D/\"\n");
    StringWriter err = new StringWriter();
    CompletableFuture<Run> run = CompletableFuture.supplyAsync(() -> xlac(err, "--plugin", testPlugin.toString(),
        "--jobs", "2", "--", train.toString()));
    for (int i = 0; i < 1200 && !err.toString().contains("compiled jit_step_ok"); i++) {
      Thread.sleep(100);
    }
    Files.writeString(go, "");
    Run r = run.get(300, TimeUnit.SECONDS);

    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.err()).contains("xlac: compiling each graph " + train.getFileName() + " dumps as it arrives, with 2 jobs")
        .containsPattern("xlac: \\[1/1, capturing\\] compiled jit_step_ok \\(\\w{12}\\) in ")
        .containsPattern("xlac: " + train.getFileName() + " ended: 2 unique graphs, [12]/2 compiled so far");
    assertThat(r.out()).contains("dumped 2 modules from 1 process: 2 unique graphs, 2 new, 0 already in the cache\n"
        + "2 graphs: 2 compiled, 0 cached, 0 failed\n");

    Run again = xlac("--plugin", testPlugin.toString(), "--", train.toString());
    assertThat(again.code()).as(again.err()).isZero();
    assertThat(again.out()).contains("2 unique graphs, 0 new, 2 already in the cache\n2 graphs: 0 compiled, 2 cached,"
        + " 0 failed\n").contains("nothing compiled");
  }

  @Test
  void sameGraphFromTwoProcesses_isCompiledOnce() throws Exception {
    Path train = script("mkdir -p \"$D/../pid-1\" \"$D/../pid-2\"\ncp " + ok + " \"$D/../pid-1/\"\ncp " + ok
        + " \"$D/../pid-2/\"\n");
    Path report = tmp.resolve("report.json");
    Run r = xlac("--plugin", testPlugin.toString(), "--report", report.toString(), "--", train.toString());
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("dumped 2 modules from 2 processes: 1 unique graph, 1 new").contains("1 graph: 1 compiled");
    assertThat(Files.readString(report)).contains("\"total\": 1", "\"compiled\": 1");
  }

  @Test
  void failingCommand_itsStatusWins_andItsGraphsAreStillCompiled_ignoreScriptErrorsLeavesTheCompileCode()
      throws Exception {
    Path train = script("cp " + ok + " " + crash + " \"$D/\"\nexit 5\n");
    Path junit = tmp.resolve("junit.xml");
    Run r = xlac("--plugin", testPlugin.toString(), "--junit", junit.toString(), "--", train.toString());
    assertThat(r.code()).as(r.err()).isEqualTo(5);
    assertThat(r.out()).contains("2 graphs: 1 compiled, 0 cached, 1 failed");
    assertThat(r.err()).contains("exited with status 5; the graphs it dumped before are in the cache");
    assertThat(Files.readString(junit)).contains("tests=\"2\" failures=\"1\"");

    Run ignored = xlac("--plugin", testPlugin.toString(), "--ignore-script-errors", "--", train.toString());
    assertThat(ignored.code()).as(ignored.err()).isEqualTo(1);
    assertThat(ignored.out()).contains("2 graphs: 0 compiled, 1 cached, 1 failed (1 failed in an earlier run");
    assertThat(ignored.err()).contains("(ignored: --ignore-script-errors)");

    Run retried = xlac("--plugin", testPlugin.toString(), "--ignore-script-errors", "--retry-failed", "--module-filter",
        "crash", "--", train.toString());
    assertThat(retried.code()).isEqualTo(1);
    assertThat(retried.out()).contains("dumped 1 module from 1 process").contains("1 graph: 0 compiled, 0 cached, 1 failed\n");
  }

  /** Issue #10 item 2, one-shot: the automatic cleanup must not remove the graphs the command dumped before they compile. */
  @Test
  void maxSizeSmallerThanTheDumpedGraphs_everyGraphIsCompiled_exit0() throws Exception {
    Path src = tmp.resolve("many");
    StringBuilder copies = new StringBuilder();
    for (int i = 1; i <= 12; i++) {
      Path dump = TestModules.writeDump(src, "module_%04d.jit_step_ok.before_optimizations.hlo.pb".formatted(i),
          TestModules.mulAdd(10f + i, 1, "_ok", 1));
      copies.append("cp ").append(dump).append(" \"$D/\"\n");
    }
    Path train = script(copies.toString());
    int config = new Main(new PrintWriter(new StringWriter(), true), new PrintWriter(new StringWriter(), true))
        .run("cache", "config", "--cache", cache.toString(), "max-size", "500");

    Run r = xlac("--plugin", testPlugin.toString(), "--jobs", "2", "--", train.toString());

    assertThat(config).isZero();
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("12 graphs: 12 compiled, 0 cached, 0 failed\n");
    assertThat(r.err()).doesNotContain("missing or damaged", "is not in cache", "not stored");
    assertThat(r.err().lines().filter(l -> l.contains("over its max-size")).count()).isOne();
  }

  @Test
  void commandThatDumpsNothing_is1_commandNotFound_is127() {
    Run nothing = xlac("--plugin", testPlugin.toString(), "--", "true");
    assertThat(nothing.code()).isEqualTo(1);
    assertThat(nothing.out()).contains("0 graphs: 0 compiled, 0 cached, 0 failed");
    assertThat(nothing.err()).contains("xlac: true ran but no XLA graph was dumped");

    Run missing = xlac("--plugin", testPlugin.toString(), "--", "no-such-command-xlac");
    assertThat(missing.code()).isEqualTo(127);
    assertThat(missing.err()).endsWith("xlac: command not found: no-such-command-xlac (not on PATH)\n");
  }

  @Test
  void usageErrors_exit2_beforeTheCommandRuns() throws Exception {
    Path ran = tmp.resolve("ran");
    String touch = "touch " + ran;
    Run both = xlac("--plugin", testPlugin.toString(), ok.toString(), "--", "sh", "-c", touch);
    assertThat(both.code()).isEqualTo(2);
    assertThat(both.err()).isEqualTo("xlac: PATHs and '-- COMMAND' do not go together: compile dumps (" + ok
        + ") or run a command, not both\n");
    Run empty = xlac("--plugin", testPlugin.toString(), "--");
    assertThat(empty.code()).isEqualTo(2);
    assertThat(empty.err()).startsWith("xlac: no command after '--'");
    Run traceOptionWithoutCommand = xlac("--plugin", testPlugin.toString(), "--module-filter", "x", ok.toString());
    assertThat(traceOptionWithoutCommand.code()).isEqualTo(2);
    assertThat(traceOptionWithoutCommand.err()).contains("need a command to run");
    assertThat(xlac("--plugin", testPlugin.toString(), "--frontend", "tf", "--", "sh", "-c", touch).code()).isEqualTo(2);
    assertThat(xlac("--plugin", testPlugin.toString(), "--compiler-flags", "-O2", "--", "sh", "-c", touch).code())
        .isEqualTo(2);
    assertThat(ran).doesNotExist();
  }

  @Test
  void missingPlugin_is3_beforeTheCommandRuns() {
    Path ran = tmp.resolve("ran");
    Run r = xlac("--plugin", tmp.resolve("absent.so").toString(), "--", "sh", "-c", "touch " + ran);
    assertThat(r.code()).isEqualTo(3);
    assertThat(r.err()).isEqualTo("xlac: cannot use PJRT plugin " + tmp.resolve("absent.so") + ": no such file\n");
    assertThat(ran).doesNotExist();
  }

  @Test
  void pluginThatCannotLoad_is3_beforeTheCommandStarts() throws Exception {
    // --plugin also records the command's compiles through the runtime proxy, so the plugin is checked (loadable,
    // a PJRT plugin) before the command starts; a plugin from $XLAC_PJRT_PLUGIN alone is loaded by the first
    // worker, and its failure stops a command that has started (CompileRuns.command).
    Path bogus = Files.writeString(tmp.resolve("bogus.so"), "not a shared library");
    Path started = tmp.resolve("started");
    Path train = script("touch " + started + "\ncp " + ok + " \"$D/\"\n");
    Run r = xlac("--plugin", bogus.toString(), "--", train.toString());
    assertThat(r.code()).as(r.err()).isEqualTo(3);
    assertThat(r.err()).isEqualTo("xlac: cannot use PJRT plugin " + bogus + ": not a loadable shared library (no ELF"
        + " header)\n");
    assertThat(started).as("the command never ran").doesNotExist();
  }
}
