package dev.xlac.cli.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cli.CliRunner;
import dev.xlac.pipeline.TestPlugin;
import dev.xlac.runtime.RecordSpool;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code xlac run}, {@code cache add SPOOL} and {@code cache materialize --layout pjrt} through {@code Main}; the
 * real proxy with real JAX is {@code tests/}' {@code RuntimeRunE2ETest}.
 */
class RunCommandTest {
  @TempDir
  Path tmp;

  private String cache() {
    return tmp.resolve("cache").toString();
  }

  @Test
  void help_namesTheExitCodes() {
    CliRunner r = CliRunner.run("run", "--help");
    assertThat(r.exitCode()).isZero();
    assertThat(r.out()).contains("--plugin=PATH", "--layout=DIR", "--record", "-q, --quiet", "--report=FILE.json",
        "Exit codes:");
  }

  @Test
  void noCommand_isAUsageError() {
    CliRunner r = CliRunner.run("run", "--cache", cache());
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith("xlac: no command given");
  }

  @Test
  void requireRemoteWithNoRemote_isAUsageError_andSoIsRequireRemoteWithoutARemote() throws Exception {
    Path marker = tmp.resolve("ran");
    CliRunner both = CliRunner.run("run", "--cache", cache(), "--require-remote", "--no-remote", "--", "touch",
        marker.toString());
    assertThat(both.exitCode()).isEqualTo(2);
    assertThat(both.err()).isEqualTo("xlac: --require-remote and --no-remote do not go together\n");
    Path plugin = TestPlugin.build(Files.createDirectories(tmp.resolve("plugin")));
    CliRunner none = CliRunner.run("run", "--cache", cache(), "--plugin", plugin.toString(), "--require-remote", "--",
        "touch", marker.toString());
    assertThat(none.exitCode()).isEqualTo(2);
    assertThat(none.err()).startsWith("xlac: --require-remote: cache ").contains("has no remote tier")
        .doesNotContain("\tat ");
    assertThat(marker).doesNotExist();
  }

  @Test
  void missingPlugin_is3_andTheCommandNeverRan() {
    Path marker = tmp.resolve("ran");
    CliRunner r = CliRunner.run("run", "--cache", cache(), "--plugin", tmp.resolve("absent.so").toString(), "--",
        "touch", marker.toString());
    assertThat(r.exitCode()).isEqualTo(3);
    assertThat(r.err()).isEqualTo("xlac: cannot use PJRT plugin " + tmp.resolve("absent.so") + ": no such file\n");
    assertThat(marker).doesNotExist();
  }

  @Test
  void command_exitStatusAndTheOneLine() throws Exception {
    Path plugin = TestPlugin.build(Files.createDirectories(tmp.resolve("plugin")));
    Path report = tmp.resolve("report.json");
    CliRunner r = CliRunner.run("run", "--cache", cache(), "--plugin", plugin.toString(), "--report",
        report.toString(), "sh", "-c", "exit 4");
    assertThat(r.exitCode()).as(r.err()).isEqualTo(4);
    assertThat(r.err()).isEqualTo("xlac run: 0 compiles: 0 served from the cache, 0 compiled; 0.00 s of compiling"
        + " saved\n");
    assertThat(Files.readString(report)).contains("\"compiles\": 0", "\"hits\": 0", "\"misses\": 0",
        "\"fallbacks\": 0", "\"compile_seconds\": 0.0", "\"saved_seconds\": 0.0", "\"exit_status\": 4");
  }

  /**
   * Regression (issue #22, 6): a {@code --report} naming an existing directory was found only after the training had
   * run (exit 3, no report); it and a report directory that does not exist are exit 2 before the command starts.
   */
  @Test
  void reportIntoADirectory_orAMissingOne_isExit2_beforeTheCommandStarts() throws Exception {
    Path plugin = TestPlugin.build(Files.createDirectories(tmp.resolve("plugin")));
    Path marker = tmp.resolve("ran");
    Path dir = Files.createDirectories(tmp.resolve("reports"));
    CliRunner r = CliRunner.run("run", "--cache", cache(), "--plugin", plugin.toString(), "--report", dir.toString(),
        "--", "touch", marker.toString());
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).isEqualTo("xlac: --report " + dir + ": is a directory; name the report's file, e.g. "
        + dir.resolve("report.json") + "\n");
    assertThat(marker).as("the command never ran").doesNotExist();

    Path missing = tmp.resolve("no/such/dir/r.json");
    r = CliRunner.run("run", "--cache", cache(), "--plugin", plugin.toString(), "--report", missing.toString(), "--",
        "touch", marker.toString());
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith("xlac: --report " + missing + ": the directory ").hasLineCount(1);
    assertThat(marker).doesNotExist();
  }

  /** {@code xlac run -- python eval.py > metrics.json} must leave metrics.json the script's own. */
  @Test
  void summaryLine_goesToStderr_stdoutIsTheCommands() throws Exception {
    CliRunner r = requireHits("(" + HIT + "; " + MISS + ") > $XLAC_PJRT_STATS/stats-1.tsv");
    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.out()).as("xlac's stdout, which is the command's").isEmpty();
    assertThat(r.err()).isEqualTo("xlac run: 2 compiles: 1 served from the cache, 1 compiled; 3.00 s of compiling"
        + " saved, 0.50 s spent compiling\n"
        + "xlac run:   1 not served: unknown (the proxy could not keep its request): pjrt1:bbbbbbbb\n"
        + "xlac run: 1 of 2 compiles were not served from the cache (1 not in the cache)\n");
  }

  @Test
  void quiet_dropsTheSummaryAndWhyNotServed_butNotTheRequireHitsFailure() throws Exception {
    Path plugin = TestPlugin.build(Files.createDirectories(tmp.resolve("plugin")));
    for (String quiet : new String[] {"-q", "--quiet"}) {
      CliRunner served = CliRunner.run("run", "--cache", cache(), "--plugin", plugin.toString(), quiet,
          "--require-hits", "--", "sh", "-c", HIT + " > $XLAC_PJRT_STATS/stats-1.tsv");
      assertThat(served.exitCode()).as(served.err()).isZero();
      assertThat(served.out()).isEmpty();
      assertThat(served.err()).as(quiet).isEmpty();
      // through picocli too (--wait is not a simple option)
      CliRunner missed = CliRunner.run("run", "--cache", cache(), "--plugin", plugin.toString(), "--wait=1s", quiet,
          "--require-hits", "--", "sh", "-c", "(" + HIT + "; " + MISS + ") > $XLAC_PJRT_STATS/stats-1.tsv");
      assertThat(missed.exitCode()).isEqualTo(1);
      assertThat(missed.out()).isEmpty();
      assertThat(missed.err()).as(quiet)
          .isEqualTo("xlac run: 1 of 2 compiles were not served from the cache (1 not in the cache)\n");
    }
    CliRunner missing = CliRunner.run("run", "--cache", cache(), "--plugin", plugin.toString(), "-q", "--",
        "no-such-command-xlac");
    assertThat(missing.exitCode()).isEqualTo(127);
    assertThat(missing.err()).as("an error is not quieted").startsWith("xlac: ");
  }

  @Test
  void cacheAddSpool_thenMaterializePjrt_writesTheEntry() throws Exception {
    Path spool = Files.createDirectories(tmp.resolve("spool"));
    byte[] format = "hlo".getBytes(StandardCharsets.UTF_8);
    byte[] program = {1, 2, 3};
    byte[] options = {};
    String identity = "xlac-pjrt-plugin/1\nplatform_name=cpu\nplatform_version=cpu\napi_version=0.94\nplugin_sha256="
        + "ab".repeat(32) + "\n";
    RequestKey key = RequestKey.of(format, program, options, identity.getBytes(StandardCharsets.UTF_8));
    RecordSpool.write(spool, new RecordedRequest(key, format, program, options, identity, new byte[] {9, 9, 9},
        1_000_000));
    CliRunner add = CliRunner.run("cache", "add", "--cache", cache(), spool.toString());
    assertThat(add.exitCode()).as(add.err()).isZero();
    assertThat(add.out()).isEqualTo("runtime requests: added 1, already present 0, rejected 0\n");
    assertThat(RecordSpool.files(spool)).as("taken in, so removed").isEmpty();

    // A bundle carries the runtime entry, and both lines say so.
    Path bundle = tmp.resolve("runtime.tar.zst");
    CliRunner export = CliRunner.run("cache", "export", "--cache", cache(), bundle.toString());
    assertThat(export.out()).startsWith("Exported 0 graphs, 0 artifacts, 1 runtime entry and 0 failures");
    CliRunner imported = CliRunner.run("cache", "import", "--cache", tmp.resolve("fleet").toString(),
        bundle.toString());
    assertThat(imported.out()).contains(", runtime entries added 1 (already present 0)");

    Path layout = tmp.resolve("layout");
    CliRunner m = CliRunner.run("cache", "materialize", "--cache", cache(), "--layout", "pjrt", layout.toString());
    assertThat(m.exitCode()).as(m.err()).isZero();
    assertThat(m.out()).startsWith("Materialized the PJRT runtime layout in " + layout + ": 1 entries written");
    assertThat(dev.xlac.runtime.LayoutEntry.path(layout, key)).exists();
    assertThat(dev.xlac.runtime.LayoutManifest.read(layout)).hasValueSatisfying(s -> assertThat(s)
        .containsExactly("ab".repeat(32)));

    // Damaged executable bytes behind an intact header: trusted by default (the proxy's own SHA-256 check
    // falls back on it), rewritten with --verify.
    Path entry = dev.xlac.runtime.LayoutEntry.path(layout, key);
    byte[] good = Files.readAllBytes(entry);
    byte[] bad = good.clone();
    bad[bad.length - 1] ^= 1;
    Files.write(entry, bad);
    CliRunner again = CliRunner.run("cache", "materialize", "--cache", cache(), "--layout", "pjrt", layout.toString());
    assertThat(again.out()).contains(": 0 entries written, 1 unchanged");
    assertThat(Files.readAllBytes(entry)).isEqualTo(bad);
    CliRunner verified = CliRunner.run("cache", "materialize", "--cache", cache(), "--layout", "pjrt", "--verify",
        layout.toString());
    assertThat(verified.exitCode()).as(verified.err()).isZero();
    assertThat(verified.out()).contains(": 1 entries written, 0 unchanged");
    assertThat(Files.readAllBytes(entry)).isEqualTo(good);
  }

  @Test
  void verify_isForThePjrtLayout() {
    CliRunner r = CliRunner.run("cache", "materialize", "--cache", cache(), "--layout", "neuron", "--verify",
        tmp.resolve("n").toString());
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).isEqualTo("xlac: --verify is for --layout pjrt\n");
  }

  private static final String HIT = "printf 'hit\\tpjrt1:" + "a".repeat(64) + "\\t1\\t2\\t3000000000\\n'";
  private static final String MISS = "printf 'miss\\tpjrt1:" + "b".repeat(64) + "\\t1\\t500000000\\n'";
  private static final String FALLBACK = "printf 'fallback\\tpjrt1:" + "c".repeat(64) + "\\t1\\t2\\tchecksum mismatch\\n'";

  private CliRunner requireHits(String script) throws Exception {
    Path plugin = TestPlugin.build(Files.createDirectories(tmp.resolve("plugin")));
    return CliRunner.run("run", "--cache", cache(), "--plugin", plugin.toString(), "--require-hits", "--", "sh", "-c",
        script);
  }

  @Test
  void requireHits_everyCompileServed_isTheCommandsZero() throws Exception {
    CliRunner r = requireHits(HIT + " > $XLAC_PJRT_STATS/stats-1.tsv; " + HIT + " > $XLAC_PJRT_STATS/stats-2.tsv");
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).startsWith("xlac run: 2 compiles: 2 served from the cache, 0 compiled");
  }

  @Test
  void requireHits_aMissAndAFallback_isExit1_withOneLineSayingHowMany() throws Exception {
    CliRunner r = requireHits("(" + HIT + "; " + MISS + "; " + FALLBACK + ") > $XLAC_PJRT_STATS/stats-1.tsv");
    assertThat(r.exitCode()).as(r.err()).isEqualTo(1);
    assertThat(r.out()).isEmpty();
    assertThat(r.err()).startsWith("xlac run: 3 compiles: 1 served from the cache, 2 compiled");
    assertThat(r.err().lines().skip(1).map(l -> l + "\n").reduce("", String::concat))
        .isEqualTo("xlac run:   1 not served: unknown (the proxy could not keep its request):"
        + " pjrt1:bbbbbbbb\n" // a stand-in miss: the proxy kept no request for it
        + "xlac run: 2 of 3 compiles were not served from the cache (1 not in the cache,"
        + " 1 cached executable the plugin could not use)\n");
  }

  @Test
  void requireHits_noCompileThroughTheProxy_isExit1() throws Exception {
    CliRunner r = requireHits("true");
    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.err().lines().toList().getLast()).startsWith("xlac run: --require-hits: no compile went through"
        + " xlac's proxy");
  }

  @Test
  void requireHits_theCommandsOwnFailureComesFirst() throws Exception {
    CliRunner r = requireHits(MISS + " > $XLAC_PJRT_STATS/stats-1.tsv; exit 4");
    assertThat(r.exitCode()).isEqualTo(4);
    assertThat(r.err()).doesNotContain("compiles were not served");
  }
}
