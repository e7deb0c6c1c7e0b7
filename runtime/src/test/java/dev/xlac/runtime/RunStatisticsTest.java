package dev.xlac.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RunStatisticsTest {
  private static final String A = "pjrt1:" + "a".repeat(64);
  private static final String B = "pjrt1:" + "b".repeat(64);
  private static final String C = "pjrt1:" + "c".repeat(64);

  @TempDir
  Path dir;

  @Test
  void read_sumsEveryProcessFile() throws Exception {
    Files.writeString(dir.resolve("stats-100.tsv"), String.join("\n",
        "hit\t" + A + "\t10\t20\t3000000000",
        "hit\t" + A + "\t10\t20\t3000000000",
        "miss\t" + B + "\t5\t1500000000",
        "recorded\t" + B + "\t1234", "") );
    Files.writeString(dir.resolve("stats-200.tsv"), String.join("\n",
        "fallback\t" + C + "\t7\t500000000\tentry size does not match its header",
        "fallback\t-\t0\t250000000\tunexpected struct size",
        "unrecorded\t" + C + "\tno space left on device", ""));
    Files.writeString(dir.resolve("unrelated.txt"), "not a statistics file");

    RunStatistics s = RunStatistics.read(dir);

    assertThat(s.compiles()).isEqualTo(5);
    assertThat(s.hits()).isEqualTo(2);
    assertThat(s.misses()).isEqualTo(1);
    assertThat(s.fallbacks()).isEqualTo(2);
    assertThat(s.recorded()).isEqualTo(1);
    assertThat(s.unrecorded()).isEqualTo(1);
    assertThat(s.savedTime()).isEqualTo(Duration.ofSeconds(6));
    assertThat(s.compileTime()).isEqualTo(Duration.ofMillis(2250));
    assertThat(s.hitsByKey()).containsExactly(java.util.Map.entry(RequestKey.parse(A), 2L));
    assertThat(s.damagedKeys()).containsExactly(RequestKey.parse(C));
    assertThat(s.fallbackReasons()).containsExactly("entry size does not match its header", "unexpected struct size");
    assertThat(s.missLookupTime()).isEqualTo(Duration.ofNanos(5));
    assertThat(s.missCompileTime()).isEqualTo(Duration.ofMillis(1500));
    assertThat(s.serveTime()).as("lookup and load of the two hits").isEqualTo(Duration.ofNanos(60));
    assertThat(s.missOverheadPercent()).isCloseTo(100.0 * 5 / 1_500_000_000, org.assertj.core.data.Offset.offset(1e-12));
  }

  @Test
  void read_missingDirectory_isNone() throws Exception {
    assertThat(RunStatistics.read(dir.resolve("absent"))).isEqualTo(RunStatistics.NONE);
    assertThat(RunStatistics.read(dir).compiles()).isZero();
  }

  @Test
  void read_badLine_namesTheFileAndLine() throws Exception {
    Files.writeString(dir.resolve("stats-1.tsv"), "miss\t" + B + "\t5\t9\nhit\tnot-a-key\t1\t2\t3\n");
    assertThatThrownBy(() -> RunStatistics.read(dir))
        .isInstanceOf(XlacException.class)
        .hasMessageContaining("stats-1.tsv line 2")
        .satisfies(e -> assertThat(((XlacException) e).exitCode()).isEqualTo(ExitCode.BAD_INPUT));
  }

  @Test
  void read_wrongFieldCountOrNegative_isRefused() throws Exception {
    Files.writeString(dir.resolve("stats-1.tsv"), "miss\t" + B + "\t5\n");
    assertThatThrownBy(() -> RunStatistics.read(dir)).hasMessageContaining("miss has 3 fields, not 4");
    Files.writeString(dir.resolve("stats-1.tsv"), "miss\t" + B + "\t5\t-1\n");
    assertThatThrownBy(() -> RunStatistics.read(dir)).hasMessageContaining("negative");
    Files.writeString(dir.resolve("stats-1.tsv"), "served\t" + B + "\n");
    assertThatThrownBy(() -> RunStatistics.read(dir)).hasMessageContaining("unknown kind 'served'");
  }

  @Test
  void missesByKey_andTheMissesRequestsKeptBesideTheStatistics() throws Exception {
    Files.writeString(dir.resolve("stats-1.tsv"), String.join("\n", "miss\t" + A + "\t5\t10", "miss\t" + B + "\t5\t10",
        "miss\t" + A + "\t5\t10", ""));
    byte[] format = "hlo".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    byte[] program = {1, 2, 3};
    String identity = "xlac-pjrt-plugin/2\nplatform_name=cpu\n";
    RequestKey key = RequestKey.of(format, program, new byte[0], identity.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    RecordSpool.write(dir, new RecordedRequest(key, format, program, new byte[0], identity, new byte[0], 7));
    Files.write(dir.resolve("c".repeat(64) + ".xpr"), new byte[] {1, 2, 3}); // damaged: left out

    RunStatistics s = RunStatistics.read(dir);

    assertThat(s.missesByKey()).containsExactly(java.util.Map.entry(RequestKey.parse(A), 2L),
        java.util.Map.entry(RequestKey.parse(B), 1L));
    var requests = RunStatistics.missRequests(dir);
    assertThat(requests).containsOnlyKeys(key);
    assertThat(requests.get(key).program()).isEqualTo(program);
    assertThat(RunStatistics.missRequests(dir.resolve("none"))).isEmpty();
  }

  @Test
  void preloadLines_countLoadedAheadHitsWastedAndHiddenTime_andRequestedIsInOrder() throws Exception {
    Files.writeString(dir.resolve("stats-1.tsv"), String.join("\n",
        "preloaded\t" + B + "\t300",
        "preloaded\t" + A + "\t200",
        "preloaded\t" + C + "\t100",
        "hit\t" + B + "\t10\t0\t5",
        "preload_hit\t" + B + "\t40\t260",
        "miss\t" + C + "\t5\t10",
        "hit\t" + A + "\t10\t0\t5",
        "preload_hit\t" + A + "\t0\t200", ""));
    Files.writeString(dir.resolve("stats-2.tsv"), "miss\t" + C + "\t5\t10\nhit\t" + A + "\t1\t2\t3\n");

    RunStatistics s = RunStatistics.read(dir);

    assertThat(s.preloaded()).isEqualTo(3);
    assertThat(s.preloadHits()).isEqualTo(2);
    assertThat(s.preloadWasted()).isEqualTo(1);
    assertThat(s.preloadHidden()).isEqualTo(Duration.ofNanos(460));
    assertThat(s.hits()).as("a hit loaded ahead is a hit").isEqualTo(3);
    assertThat(s.requested()).containsExactly(RequestKey.parse(B), RequestKey.parse(C), RequestKey.parse(A));
    Files.writeString(dir.resolve("stats-2.tsv"), "preload_hit\t" + A + "\t1\n");
    assertThatThrownBy(() -> RunStatistics.read(dir)).hasMessageContaining("preload_hit has 3 fields, not 4");
  }
}
