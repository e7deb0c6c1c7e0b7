package dev.xlac.pipeline.explain;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.CacheStore;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphDiff;
import dev.xlac.hlo.HloReadException;
import dev.xlac.hlo.TestModules;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How {@code xlac diff} resolves its two inputs: files first, then cache fingerprints, read-only. */
class DiffsTest {
  @TempDir
  Path tmp;

  @Test
  void fingerprintShapes_areRecognised() {
    assertThat(Diffs.looksLikeFingerprint("abcdef")).isTrue();
    assertThat(Diffs.looksLikeFingerprint("ABCDEF12")).isTrue();
    assertThat(Diffs.looksLikeFingerprint("hlo1:" + "0".repeat(64))).isTrue();
    assertThat(Diffs.looksLikeFingerprint("abcde")).as("too short").isFalse();
    assertThat(Diffs.looksLikeFingerprint("0".repeat(65))).as("too long").isFalse();
    assertThat(Diffs.looksLikeFingerprint("step.hlo.pb")).isFalse();
  }

  @Test
  void anExistingFile_winsOverAFingerprintOfTheSameName() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("work"));
    Path a = TestModules.writeDump(dir, "abcdef", TestModules.mulAdd(1f));
    Path b = TestModules.writeDump(dir, "b.hlo.pb", TestModules.mulAdd(2f));
    List<String> notices = new ArrayList<>();
    Path cache = tmp.resolve("no-cache");
    GraphDiff d = Diffs.diff(a.toString(), b.toString(), readOnly(cache, notices::add));
    assertThat(d.verdict()).startsWith("1 constant differs: f32[4] {1.0, 1.0, 1.0, 1.0} -> {2.0, 2.0, 2.0, 2.0}");
    assertThat(notices).isEmpty();
    assertThat(cache).as("a read-only open creates nothing, and files need no cache").doesNotExist();
  }

  @Test
  void aMissingPrefix_andAMissingFile_areBadInput() {
    Path cache = tmp.resolve("empty-cache");
    assertThatThrownBy(() -> Diffs.diff("abcdef", "abcdef", readOnly(cache, m -> { })))
        .isInstanceOfSatisfying(XlacException.class, e -> assertThat(e.exitCode()).isEqualTo(ExitCode.BAD_INPUT))
        .hasMessage("no graph in cache " + cache + " has fingerprint abcdef");
    assertThat(cache).doesNotExist();
    assertThatThrownBy(() -> Diffs.diff(tmp.resolve("x.pb").toString(), "abcdef", readOnly(cache, m -> { })))
        .isInstanceOf(HloReadException.class).hasMessage("cannot read " + tmp.resolve("x.pb") + ": no such file");
  }

  @Test
  void readingBothAtOnce_givesTheSameDiff_asReadingOneAfterTheOther() throws Exception {
    Path a = TestModules.writeDump(tmp, "a.hlo.pb", TestModules.mulAdd(1f));
    Path b = TestModules.writeDump(tmp, "b.hlo.pb", TestModules.mulAdd(3f));
    CacheStore.Opener none = readOnly(tmp.resolve("no-cache"), m -> { });

    GraphDiff parallel = Diffs.diff(a.toString(), b.toString(), none, true);
    GraphDiff sequential = Diffs.diff(a.toString(), b.toString(), none, false);

    assertThat(parallel.verdict()).isEqualTo(sequential.verdict()).startsWith("1 constant differs");
    assertThat(parallel.same()).isFalse();
  }

  @Test
  void twoBadInputs_reportA_whetherReadAtOnceOrInTurn() throws Exception {
    Path badA = Files.write(tmp.resolve("a.hlo.pb"), new byte[] {(byte) 0xff, (byte) 0xff, 1});
    Path badB = Files.write(tmp.resolve("b.hlo.pb"), new byte[] {(byte) 0xfe});
    CacheStore.Opener none = readOnly(tmp.resolve("no-cache"), m -> { });
    for (boolean parallel : new boolean[] {true, false}) {
      assertThatThrownBy(() -> Diffs.diff(badA.toString(), badB.toString(), none, parallel))
          .as("parallel=" + parallel).isInstanceOf(HloReadException.class).hasMessageContaining(badA.toString());
      assertThatThrownBy(() -> Diffs.diff(badA.toString(), "abcdef", none, parallel))
          .as("parallel=" + parallel).isInstanceOf(HloReadException.class).hasMessageContaining(badA.toString());
    }
  }

  private static CacheStore.Opener readOnly(Path cache, java.util.function.Consumer<String> notices) {
    return () -> dev.xlac.cache.CacheStore.open(cache, dev.xlac.cache.CacheStore.Mode.READ_ONLY,
        java.time.Duration.ZERO, notices);
  }
}
