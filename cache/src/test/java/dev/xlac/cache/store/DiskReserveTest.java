package dev.xlac.cache.store;

import dev.xlac.cache.Internals;
import static dev.xlac.cache.Fixtures.CPU;
import static dev.xlac.cache.Fixtures.key;
import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.BundleKey;
import dev.xlac.cache.CacheRepair;
import dev.xlac.cache.CacheStatistics;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.Fixtures;
import dev.xlac.cache.PruneRequest;
import dev.xlac.cache.PruneResult;
import dev.xlac.cache.RepairReport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.OptionalLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The disk reserve, clear by swapping in a fresh database, and compaction when the disk has no room
 * (the free space is set by hand here; {@link DiskFullTest} fills a real small file system).
 */
class DiskReserveTest {
  @TempDir
  Path tmp;

  @AfterEach
  void realFreeSpace() {
    DiskReserve.usableSpaceForTests = null;
  }

  private static CacheStore reader(Path dir) throws InterruptedException {
    return CacheStore.open(dir, CacheStore.Mode.READ_ONLY, Duration.ZERO, m -> { });
  }

  @Test
  void writerOpen_writesTheReserve_andStatShowsIt() throws Exception {
    Path dir = tmp.resolve("cache");
    try (CacheStore r = reader(dir)) {
      assertThat(r.statistics().diskReserveBytes()).isZero();
      assertThat(r.statistics().diskReserveNote()).isEqualTo("no cache yet");
    }
    assertThat(dir).doesNotExist();
    try (CacheStore s = Fixtures.open(dir)) {
      assertThat(dir.resolve(DiskReserve.FILE)).isRegularFile();
      assertThat(s.statistics().diskReserveBytes()).isEqualTo(Files.size(dir.resolve(DiskReserve.FILE))).isPositive();
      assertThat(s.statistics().diskReserveNote()).isNull();
    }
    try (CacheStore r = reader(dir)) {
      assertThat(r.statistics().diskReserveBytes()).isPositive();
    }
    // its bytes are not zeros: a file system that compresses or deduplicates still stores them
    byte[] head = new byte[4096];
    try (var in = Files.newInputStream(dir.resolve(DiskReserve.FILE))) {
      assertThat(in.read(head)).isEqualTo(head.length);
    }
    assertThat(head).contains((byte) 'x');
  }

  @Test
  void reserve_isNotWrittenWithoutRoom_andStatSaysWhy() throws Exception {
    Path dir = tmp.resolve("cache");
    DiskReserve.usableSpaceForTests = () -> 1 << 20;
    try (CacheStore s = Fixtures.open(dir)) {
      Fixtures.graph(s, 1);
      assertThat(dir.resolve(DiskReserve.FILE)).doesNotExist();
      CacheStatistics st = s.statistics();
      assertThat(st.diskReserveBytes()).isZero();
      assertThat(st.diskReserveNote()).contains("1.0 MiB free").contains("written again once");
    }
    DiskReserve.usableSpaceForTests = () -> 100L << 30;
    try (CacheStore s = Fixtures.open(dir)) {
      assertThat(dir.resolve(DiskReserve.FILE)).isRegularFile();
    }
  }

  @Test
  void pruneOnAFullDisk_releasesTheReserve_andWritesItAgainWhenThereIsRoom() throws Exception {
    Path dir = tmp.resolve("cache");
    try (CacheStore s = Fixtures.open(dir)) {
      Fixtures.bulk(s, 0, 20, 20_000);
      assertThat(dir.resolve(DiskReserve.FILE)).isRegularFile();
      DiskReserve.usableSpaceForTests = () -> 0;
      s.prune(new PruneRequest(OptionalLong.of(0), null, false, null, null, false, false));
      assertThat(dir.resolve(DiskReserve.FILE)).as("released for the prune, not written again").doesNotExist();
      DiskReserve.usableSpaceForTests = () -> 100L << 30;
      s.prune(new PruneRequest(OptionalLong.of(0), null, false, null, null, false, false));
      assertThat(dir.resolve(DiskReserve.FILE)).as("written again once there is room").isRegularFile();
    }
  }

  /**
   * The CLI's {@code verify --repair} ({@link CacheRepair}) on a disk with less than the headroom
   * free gives the reserve up before it repairs, as the docs say; it kept it, so a repair that had to
   * write met the full disk first.
   */
  @Test
  void verifyRepairOnAFullDisk_releasesTheReserveFirst() throws Exception {
    Path dir = tmp.resolve("cache");
    try (CacheStore s = Fixtures.open(dir)) {
      Fixtures.bulk(s, 0, 20, 20_000);
    }
    assertThat(dir.resolve(DiskReserve.FILE)).isRegularFile();
    DiskReserve.usableSpaceForTests = () -> 0;
    RepairReport r = CacheRepair.repair(dir, Duration.ZERO, m -> { });
    assertThat(r.clean()).isTrue();
    assertThat(dir.resolve(DiskReserve.FILE)).as("released for the repair, not written again").doesNotExist();
  }

  @Test
  void pruneWithoutRoomToRewriteBlobFiles_compactsWithoutIt_andSaysWhatIsLeft() throws Exception {
    Path dir = tmp.resolve("cache");
    int size = 64 << 10;
    try (CacheStore s = Fixtures.open(dir)) {
      Fixtures.bulk(s, 0, 200, size); // one batch: the artifacts share a blob file
      Internals.store(s).db.flushAll();
      long stored = s.statistics().storedBytes();
      DiskReserve.usableSpaceForTests = () -> 0;
      PruneResult tight = s.prune(new PruneRequest(OptionalLong.of(stored / 2), null, false, null, null, false,
          false));
      assertThat(tight.artifactsRemoved()).isEqualTo(100);
      assertThat(tight.diskUnreclaimed()).as("removed artifacts still in the shared blob file")
          .isGreaterThanOrEqualTo(100L * size);
      assertThat(tight.roomNeeded()).isGreaterThanOrEqualTo(100L * size);
      assertThat(tight.diskAfter()).isGreaterThan(200L * size);
      assertThat(s.verify(false).clean()).isTrue();
      // with room, the same prune (nothing more to remove) rewrites the blob file
      DiskReserve.usableSpaceForTests = () -> 100L << 30;
      PruneResult roomy = s.prune(new PruneRequest(OptionalLong.of(stored / 2), null, false, null, null, false,
          false));
      assertThat(roomy.removed()).isEmpty();
      assertThat(roomy.diskUnreclaimed()).isZero();
      assertThat(roomy.diskAfter()).isLessThan(150L * size);
      for (int n = 100; n < 200; n++) {
        assertThat(s.getArtifact(key(n, CPU))).as("entry " + n).hasValueSatisfying(
            a -> assertThat(a.bytes()).hasSize(size));
      }
    }
  }

  /** A cache with entries, settings (max-size, require-signed, a trusted key) and counters (a hit, a miss). */
  private static void populate(Path dir) throws Exception {
    try (CacheStore s = Fixtures.open(dir)) {
      Fixtures.bulk(s, 0, 30, 20_000);
      s.setMaxSize(OptionalLong.of(100L << 30));
      s.setRequireSigned(true);
      s.trustKey(BundleKey.of(java.security.KeyPairGenerator.getInstance("Ed25519").generateKeyPair().getPublic()),
          "ci");
      s.lookup(key(1, CPU));
      s.lookup(key(1, Fixtures.TRN1));
    }
  }

  private static void assertCleared(Path dir) throws Exception {
    try (CacheStore s = reader(dir)) {
      CacheStatistics st = s.statistics();
      assertThat(st.graphs()).isZero();
      assertThat(st.compiled()).isZero();
      assertThat(st.storedBytes()).isZero();
      assertThat(st.hits()).isEqualTo(1);
      assertThat(st.misses()).isEqualTo(1);
      assertThat(s.maxSize()).hasValue(100L << 30);
      assertThat(s.trustSettings().requireSigned()).isTrue();
      assertThat(s.trustSettings().keys()).singleElement().satisfies(k -> assertThat(k.label()).isEqualTo("ci"));
      assertThat(s.verify(false).clean()).isTrue();
    }
    try (Stream<Path> left = Files.list(dir)) {
      assertThat(left.map(p -> p.getFileName().toString())).as("what the clear left in the cache directory")
          .noneMatch(n -> n.startsWith(DatabaseSwap.REBUILD_PREFIX) || n.startsWith(DatabaseSwap.CLEARED_PREFIX));
    }
  }

  private static void assertFull(Path dir) throws Exception {
    try (CacheStore s = reader(dir)) {
      assertThat(s.statistics().graphs()).isEqualTo(30);
      assertThat(s.getArtifact(key(7, CPU))).isPresent();
    }
  }

  @Test
  void clear_keepsEverySettingAndTheCounters_andTheDiskSpaceIsFreed() throws Exception {
    Path dir = tmp.resolve("cache");
    populate(dir);
    try (CacheStore s = Fixtures.open(dir)) {
      assertThat(s.clear()).isPositive();
      assertThat(s.statistics().graphs()).isZero();
      assertThat(s.maxSize()).hasValue(100L << 30);
      Fixtures.graph(s, 99); // and it takes writes at once
    }
    try (CacheStore s = Fixtures.open(dir)) {
      assertThat(s.clear()).isPositive();
      assertThat(Internals.store(s).db.diskUsage()).isLessThan(1 << 20);
    }
    assertCleared(dir);
  }

  private static void copy(Path from, Path to) throws Exception {
    try (Stream<Path> files = Files.walk(from)) {
      for (Path p : files.sorted(Comparator.naturalOrder()).toList()) {
        Files.copy(p, to.resolve(from.relativize(p).toString()));
      }
    }
  }

  /** {@code full}: a populated cache; {@code cleared}: the same, cleared (what a clear builds in its rebuild directory). */
  private Path[] caches() throws Exception {
    Path full = tmp.resolve("full");
    populate(full);
    Path cleared = tmp.resolve("cleared");
    Files.createDirectories(cleared);
    copy(full.resolve(RocksDbStore.DB_DIR), cleared.resolve(RocksDbStore.DB_DIR));
    try (CacheStore s = Fixtures.open(cleared)) {
      s.clear();
    }
    return new Path[] {full, cleared};
  }

  /** What a clear of {@code c[0]} killed with its fresh database built (and, if {@code complete}, marked complete) leaves. */
  private static Path killedClear(Path[] c, boolean complete) throws Exception {
    Path rebuild = c[0].resolve(DatabaseSwap.REBUILD_PREFIX + "4242");
    Files.createDirectories(rebuild);
    copy(c[1].resolve(RocksDbStore.DB_DIR), rebuild.resolve(RocksDbStore.DB_DIR));
    if (complete) {
      DatabaseSwap.markComplete(rebuild, false);
    }
    return rebuild;
  }

  @Test
  void clearKilledWhileBuildingTheFreshDatabase_leavesTheCacheAsItWas() throws Exception {
    Path[] c = caches();
    Path rebuild = killedClear(c, false);
    try (CacheStore r = reader(c[0])) {
      assertThat(r.statistics().graphs()).as("a reader meanwhile: the clear has not happened").isEqualTo(30);
    }
    try (CacheStore s = Fixtures.open(c[0])) {
      assertThat(s.statistics().graphs()).isEqualTo(30);
    }
    assertThat(rebuild).doesNotExist();
    assertFull(c[0]);
  }

  @Test
  void clearKilledWithTheFreshDatabaseComplete_isFinishedByTheNextWriter() throws Exception {
    Path[] c = caches();
    killedClear(c, true);
    try (CacheStore r = reader(c[0])) {
      assertThat(r.statistics().graphs()).as("a reader meanwhile: the cache is cleared").isZero();
    }
    try (CacheStore s = Fixtures.open(c[0])) {
      assertThat(s.statistics().graphs()).isZero();
    }
    assertCleared(c[0]);
  }

  @Test
  void clearKilledBetweenItsRenames_isFinishedByTheNextWriter() throws Exception {
    Path[] c = caches();
    killedClear(c, true);
    Files.move(c[0].resolve(RocksDbStore.DB_DIR), c[0].resolve(DatabaseSwap.CLEARED_PREFIX + "4242"));
    try (CacheStore r = reader(c[0])) {
      assertThat(r.statistics().graphs()).as("a reader meanwhile: the cache is cleared").isZero();
    }
    try (CacheStore s = Fixtures.open(c[0])) {
      assertThat(s.statistics().graphs()).isZero();
    }
    assertCleared(c[0]);
  }

  @Test
  void clearKilledBeforeDeletingTheOldDatabase_isFinishedByTheNextWriter() throws Exception {
    Path[] c = caches();
    Files.move(c[0].resolve(RocksDbStore.DB_DIR), c[0].resolve(DatabaseSwap.CLEARED_PREFIX + "4242"));
    copy(c[1].resolve(RocksDbStore.DB_DIR), c[0].resolve(RocksDbStore.DB_DIR));
    try (CacheStore s = Fixtures.open(c[0])) {
      assertThat(s.statistics().graphs()).isZero();
    }
    assertCleared(c[0]);
  }

  @Test
  void unflushedData_staysBelowHalfTheReserve() {
    for (long reserve : new long[] {DiskReserve.MIN_BYTES, 1_677_721, DiskReserve.MAX_BYTES}) {
      RocksDbStore.Buffers b = RocksDbStore.Buffers.forReserve(reserve);
      // memtables being filled and being flushed (the write buffer manager flushes at b.total()), and the log
      assertThat(2 * b.total()).isLessThanOrEqualTo(reserve / 2);
      assertThat(b.blobFamily()).isLessThanOrEqualTo(b.total());
      assertThat(b.wal()).isLessThanOrEqualTo(reserve / 4);
      assertThat(DiskReserve.headroomBytes(reserve)).isGreaterThanOrEqualTo(reserve / 2);
    }
    assertThat(DiskReserve.targetBytes(10L << 40)).isEqualTo(DiskReserve.MAX_BYTES);
    assertThat(DiskReserve.targetBytes(32L << 20)).isEqualTo((32L << 20) / 20);
    assertThat(DiskReserve.targetBytes(4L << 20)).isEqualTo(DiskReserve.MIN_BYTES);
  }

}
