package dev.xlac.cli.compile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.GraphInfo;
import dev.xlac.cli.CliRunner;
import dev.xlac.hlo.TestModules;
import dev.xlac.pipeline.TestPlugin;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Issue #10: with a byte flipped in a {@code .blob} or {@code .sst} file, or a blob file deleted,
 * {@code parallel-compile} counted the damaged artifacts as cached and exited 0. A hit must be an
 * artifact whose bytes are there and intact: a damaged one is compiled again, with one line each.
 */
class DamagedArtifactsCompileTest {
  private static final int GRAPHS = 3;
  private static Path testPlugin;

  @TempDir
  Path tmp;

  @BeforeAll
  static void buildTestPlugin(@TempDir Path dir) throws Exception {
    testPlugin = TestPlugin.build(dir);
  }

  CliRunner xlac(String... args) {
    return CliRunner.run(args);
  }

  enum Damage {
    /** Artifacts of 40 KiB live in blob files: one byte in the middle of the file flips. */
    FLIPPED_BYTE_IN_A_BLOB_FILE(40 << 10),
    /** The blob file is gone: every artifact in it. */
    DELETED_BLOB_FILE(40 << 10),
    /** Artifacts of 4 KiB live in the table files: one byte of one artifact flips. */
    FLIPPED_BYTE_IN_AN_SST_FILE(4 << 10);

    final int artifactBytes;

    Damage(int artifactBytes) {
      this.artifactBytes = artifactBytes;
    }
  }

  @ParameterizedTest
  @EnumSource(Damage.class)
  void damagedCachedArtifacts_areCompiledAgain_withOneLineEach_andExit0(Damage damage) throws Exception {
    Path cache = tmp.resolve("cache");
    Path dumps = tmp.resolve("dumps");
    for (int i = 1; i <= GRAPHS; i++) {
      TestModules.writeDump(dumps, "module_000" + i + ".jit_step_ok.before_optimizations.hlo.pb",
          TestModules.mulAdd(i, 1, "_ok", i));
    }
    CliRunner first = xlac("parallel-compile", "--cache", cache.toString(), "--plugin", testPlugin.toString(), dumps.toString());
    assertThat(first.exitCode()).as(first.err()).isZero();
    // The test plugin's executables are a few bytes; give the entries artifacts of a realistic size.
    List<byte[]> artifacts = new ArrayList<>();
    try (CacheStore s = CacheStore.open(cache, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      for (GraphInfo g : s.graphs()) {
        for (ArtifactInfo a : s.entries(g.fingerprint())) {
          byte[] bytes = new byte[damage.artifactBytes];
          new Random(artifacts.size()).nextBytes(bytes);
          artifacts.add(bytes);
          s.putArtifact(a.key(), bytes, CompileInfo.of(1, ""));
        }
      }
    }
    assertThat(artifacts).hasSize(GRAPHS);

    int damaged = damage(cache.resolve("db"), damage, artifacts);

    CliRunner again = xlac("parallel-compile", "--cache", cache.toString(), "--plugin", testPlugin.toString(), dumps.toString());
    assertThat(again.exitCode()).as(again.err()).isZero();
    assertThat(again.out()).startsWith(GRAPHS + " graphs: " + damaged + " compiled, " + (GRAPHS - damaged) + " cached, 0 failed");
    assertThat(again.err().lines().filter(l -> l.contains(" is damaged: ")).toList()).as(again.err())
        .hasSize(damaged)
        .allSatisfy(l -> assertThat(l).startsWith("xlac: cache ").contains("compiled again"));

    CliRunner third = xlac("parallel-compile", "--cache", cache.toString(), "--plugin", testPlugin.toString(), dumps.toString());
    assertThat(third.out()).startsWith(GRAPHS + " graphs: 0 compiled, " + GRAPHS + " cached, 0 failed");
    CliRunner verify = xlac("cache", "verify", "--cache", cache.toString());
    if (damage == Damage.FLIPPED_BYTE_IN_AN_SST_FILE) {
      // The damaged block is still in the table file (a compaction would trip over it): only a repair clears it.
      assertThat(verify.exitCode()).as(verify.out() + verify.err()).isEqualTo(1);
      assertThat(verify.out()).contains("damaged table block");
      CliRunner repair = xlac("cache", "verify", "--repair", "--cache", cache.toString());
      assertThat(repair.exitCode()).as(repair.out() + repair.err()).isZero();
      verify = xlac("cache", "verify", "--cache", cache.toString());
    }
    assertThat(verify.exitCode()).as(verify.out() + verify.err()).isZero();
    CliRunner stat = xlac("cache", "stat", "--json", "--cache", cache.toString());
    assertThat(stat.out()).contains("\"damaged_reads\": " + damaged);
  }

  /** Damages the database as {@code damage} says; returns how many artifacts it hit. */
  private static int damage(Path db, Damage damage, List<byte[]> artifacts) throws Exception {
    List<Path> blobs = files(db, ".blob");
    switch (damage) {
      case FLIPPED_BYTE_IN_A_BLOB_FILE -> {
        assertThat(blobs).hasSize(1);
        flip(blobs.getFirst(), Files.size(blobs.getFirst()) / 2); // inside the middle artifact
        return 1;
      }
      case DELETED_BLOB_FILE -> {
        assertThat(blobs).hasSize(1);
        Files.delete(blobs.getFirst());
        return GRAPHS;
      }
      case FLIPPED_BYTE_IN_AN_SST_FILE -> {
        byte[] sample = Arrays.copyOfRange(artifacts.get(1), 2000, 2064);
        for (Path sst : files(db, ".sst")) {
          byte[] content = Files.readAllBytes(sst);
          int at = indexOf(content, sample);
          if (at >= 0) {
            flip(sst, at + 10);
            return 1;
          }
        }
        throw new AssertionError("no table file holds the artifact's bytes");
      }
      default -> throw new IllegalArgumentException(damage.name());
    }
  }

  private static List<Path> files(Path db, String suffix) throws Exception {
    try (Stream<Path> s = Files.list(db)) {
      return s.filter(p -> p.getFileName().toString().endsWith(suffix)).sorted().toList();
    }
  }

  private static void flip(Path file, long at) throws Exception {
    try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
      f.seek(at);
      int b = f.read();
      f.seek(at);
      f.write(b ^ 0x55);
    }
  }

  private static int indexOf(byte[] hay, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= hay.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (hay[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
