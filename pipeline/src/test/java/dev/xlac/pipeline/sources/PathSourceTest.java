package dev.xlac.pipeline.sources;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.CacheRepair;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.DamagedCacheException;
import dev.xlac.core.ExitCode;
import dev.xlac.hlo.TestModules;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.rocksdb.Options;
import org.rocksdb.SstFileReader;
import org.junit.jupiter.api.io.TempDir;

/** {@code cache add}'s intake ({@link CacheIntake#addPaths}), once {@code cache.GraphIngest}. */
class PathSourceTest {
  @TempDir
  Path tmp;

  private CacheStore open() throws InterruptedException {
    return CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
  }

  @Test
  void addPaths_storesEachGraphOnce_andCountsWhatWasThere() throws Exception {
    Path dumps = tmp.resolve("dumps");
    TestModules.writeDump(dumps, "a.before_optimizations.hlo.pb", TestModules.mulAdd(1.5f));
    TestModules.writeDump(dumps, "b.before_optimizations.hlo.pb", TestModules.mulAdd(1.5f)); // the same graph
    TestModules.writeDump(dumps, "c.before_optimizations.hlo.pb", TestModules.mulAdd(3.5f));
    Files.writeString(dumps.resolve("notes.txt"), "not a dump");
    try (CacheStore store = open()) {
      PathSource.Result first = CacheIntake.addPaths(store, List.of(dumps));
      assertThat(first.added()).isEqualTo(2);
      assertThat(first.alreadyPresent()).isEqualTo(1);
      assertThat(first.graphs()).hasSize(2);
      assertThat(first.skipped()).isEqualTo(1);
      assertThat(first.exitCode()).isEqualTo(ExitCode.OK);
      assertThat(store.graphs()).hasSize(2);

      PathSource.Result again = CacheIntake.addPaths(store, List.of(dumps));
      assertThat(again.added()).isZero();
      assertThat(again.alreadyPresent()).isEqualTo(3);
    }
  }

  @Test
  void addPaths_unreadableFiles_areCollected_notFatal() throws Exception {
    Path dumps = tmp.resolve("dumps");
    TestModules.writeDump(dumps, "a.before_optimizations.hlo.pb", TestModules.mulAdd(1.5f));
    Files.write(dumps.resolve("z.before_optimizations.hlo.pb"), new byte[] {(byte) 0xff, 1, 2});
    Path missing = tmp.resolve("missing");
    try (CacheStore store = open()) {
      PathSource.Result r = CacheIntake.addPaths(store, List.of(dumps, missing));
      assertThat(r.added()).isEqualTo(1);
      assertThat(r.scanErrors()).singleElement().satisfies(e -> assertThat(e.getMessage()).contains("missing"));
      assertThat(r.readErrors()).singleElement()
          .satisfies(e -> assertThat(e.getMessage()).contains("z.before_optimizations"));
      assertThat(r.errors()).hasSize(2);
      assertThat(r.noModules()).isFalse();
      assertThat(r.exitCode()).isEqualTo(ExitCode.BAD_INPUT);
    }
  }

  @Test
  void addPaths_noModuleAnywhere_isBadInput() throws Exception {
    Path empty = Files.createDirectories(tmp.resolve("empty"));
    try (CacheStore store = open()) {
      PathSource.Result r = CacheIntake.addPaths(store, List.of(empty));
      assertThat(r.noModules()).isTrue();
      assertThat(r.exitCode()).isEqualTo(ExitCode.BAD_INPUT);
      assertThat(r.paths()).containsExactly(empty);
    }
  }

  @Test
  void read_storesNothing_andGivesOneReadPerInput_inFileOrder() throws Exception {
    Path dumps = tmp.resolve("dumps");
    TestModules.writeDump(dumps, "a.before_optimizations.hlo.pb", TestModules.mulAdd(1.5f));
    Files.write(dumps.resolve("b.before_optimizations.hlo.pb"), new byte[] {(byte) 0xff, 1, 2});
    TestModules.writeDump(dumps, "c.before_optimizations.hlo.pb", TestModules.mulAdd(3.5f));
    Files.writeString(dumps.resolve("notes.txt"), "not a dump");
    PathSource.Listing<String> r = PathSource.read(List.of(dumps), m -> m.fingerprint().value());
    assertThat(r.reads()).extracting(x -> x.file().getFileName().toString())
        .containsExactly("a.before_optimizations.hlo.pb", "b.before_optimizations.hlo.pb",
            "c.before_optimizations.hlo.pb");
    assertThat(r.reads()).extracting(PathSource.Read::ok).containsExactly(true, false, true);
    assertThat(r.reads().get(0).value()).startsWith("hlo1:");
    assertThat(r.notes()).singleElement().satisfies(n -> assertThat(n).startsWith("skipped 1 other dump file"));
    assertThat(r.noModules()).isFalse();
    assertThat(tmp.resolve("cache")).doesNotExist();

    Path empty = Files.createDirectories(tmp.resolve("empty"));
    assertThat(PathSource.read(List.of(empty), m -> m).noModules()).isTrue();
    assertThat(PathSource.read(List.of(tmp.resolve("missing")), m -> m).noModules()).as("a scan error").isFalse();
  }

  /**
   * The fault suite's damage trial (seed 226025663066682) met this: a compile over a cache whose graph records have
   * a damaged table block printed "cache ... is damaged" once per dump file (74 times), as if each file were
   * unreadable, and went on compiling. The damage is the cache's, not the files': it is said once and the
   * intake stops.
   */
  @Test
  void addPaths_intoACacheWithADamagedGraphRecordBlock_failsOnce_notOncePerFile() throws Exception {
    Path dumps = tmp.resolve("dumps");
    for (int i = 0; i < 12; i++) {
      TestModules.writeDump(dumps, "m" + i + ".before_optimizations.hlo.pb", TestModules.mulAdd(1.5f + i));
    }
    try (CacheStore store = open()) {
      assertThat(CacheIntake.addPaths(store, List.of(dumps)).added()).isEqualTo(12);
    }
    CacheRepair.repair(tmp.resolve("cache"), Duration.ZERO, m -> {}); // compacts: the records are in table files
    Path graphRecords = tableOf("graph_meta");
    try (RandomAccessFile raf = new RandomAccessFile(graphRecords.toFile(), "rw")) { // in the first data block
      raf.seek(20);
      int b = raf.read();
      raf.seek(20);
      raf.write(b ^ 0x20);
    }

    try (CacheStore store = open()) {
      assertThatThrownBy(() -> CacheIntake.addPaths(store, List.of(dumps))).isInstanceOf(DamagedCacheException.class)
          .hasMessageContaining("is damaged").hasMessageContaining("verify --repair");
    }
  }

  private Path tableOf(String family) throws Exception {
    org.rocksdb.RocksDB.loadLibrary();
    try (var files = Files.list(tmp.resolve("cache/db"))) {
      for (Path f : files.filter(p -> p.toString().endsWith(".sst")).toList()) {
        try (Options o = new Options(); SstFileReader r = new SstFileReader(o)) {
          r.open(f.toString());
          if (new String(r.getTableProperties().getColumnFamilyName(), StandardCharsets.UTF_8).equals(family)) {
            return f;
          }
        }
      }
    }
    throw new AssertionError("no table file of " + family);
  }
}
