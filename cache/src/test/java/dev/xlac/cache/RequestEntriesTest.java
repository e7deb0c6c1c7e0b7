package dev.xlac.cache;

import static dev.xlac.cache.RequestFixtures.request;
import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.store.RocksDbStore;
import dev.xlac.cache.store.StoreInternals;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.WriteBatch;

/** The runtime's recorded requests in the store (schema version 4): writes, reads, hits, prune, verify, upgrade. */
class RequestEntriesTest {
  @TempDir
  Path tmp;
  final List<String> notices = new CopyOnWriteArrayList<>();

  CacheStore open(Fixtures.ManualClock clock) throws InterruptedException {
    return Internals.open(tmp.resolve("cache"), notices::add, clock);
  }

  static byte[] streamed(CacheStore s, RequestKey key) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    assertThat(s.readExecutable(key, out)).isTrue();
    return out.toByteArray();
  }

  @Test
  void putRequests_storesEachOnce_readsBackVerified_andKeepsWhatIsPresent() throws Exception {
    List<RecordedRequest> rs = List.of(request(1, 1000), request(2, 200_000), request(3, 10));
    try (CacheStore s = open(new Fixtures.ManualClock())) {
      assertThat(s.putRequests(rs)).isEqualTo(new RequestIngest(3, 0, List.of()));
      RecordedRequest other = new RecordedRequest(rs.get(0).key(), rs.get(0).format(), rs.get(0).program(),
          rs.get(0).options(), rs.get(0).identityText(), new byte[] {9, 9}, 5);
      assertThat(s.putRequests(List.of(other, request(4, 5), request(4, 6)))).isEqualTo(new RequestIngest(1, 2, List.of()));
      for (RecordedRequest r : rs) {
        RecordedRequest back = s.readRequest(r.key()).orElseThrow();
        assertThat(back.program()).isEqualTo(r.program());
        assertThat(back.options()).isEqualTo(r.options());
        assertThat(back.identityText()).isEqualTo(r.identityText());
        assertThat(back.executable()).isEqualTo(r.executable()); // the first one stays
        assertThat(back.compileNanos()).isEqualTo(r.compileNanos());
        assertThat(streamed(s, r.key())).isEqualTo(r.executable());
      }
      List<RequestInfo> infos = s.requests();
      assertThat(infos).extracting(i -> i.key().hex()).isSorted().hasSize(4);
      RequestInfo two = s.requestInfo(rs.get(1).key()).orElseThrow();
      assertThat(two.platformName()).isEqualTo("cpu");
      assertThat(two.pluginSha256()).isEqualTo(RequestFixtures.PLUGIN_A);
      assertThat(two.format()).isEqualTo("mlir");
      assertThat(two.executableBytes()).isEqualTo(200_000);
      assertThat(two.programBytes()).isEqualTo(rs.get(1).program().length);
      assertThat(two.compileTime()).isEqualTo(Duration.ofNanos(rs.get(1).compileNanos()));
      CacheStatistics stat = s.statistics();
      assertThat(stat.runtimeEntries()).isEqualTo(4);
      assertThat(stat.runtimeBytes()).isEqualTo(infos.stream().mapToLong(RequestInfo::storedBytes).sum())
          .isGreaterThan(201_015);
      assertThat(stat.storedBytes()).isEqualTo(stat.runtimeBytes());
      assertThat(s.verify(false).problems()).isEmpty();
      assertThat(s.verify(false).requestsChecked()).isEqualTo(4);
    }
    try (CacheStore r = CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      assertThat(r.requests()).hasSize(4);
      assertThat(streamed(r, rs.get(1).key())).isEqualTo(rs.get(1).executable());
      assertThat(r.readRequest(RequestFixtures.request(99, 1).key())).isEmpty();
    }
  }

  @Test
  void aLargeExecutable_isStoredInChunks_andStreamedBack() throws Exception {
    StoreInternals.chunkBytes(1000);
    try (CacheStore s = open(new Fixtures.ManualClock())) {
      RecordedRequest big = request(5, 12_345);
      s.putRequests(List.of(big, request(6, 999)));
      assertThat(streamed(s, big.key())).isEqualTo(big.executable());
      assertThat(s.readRequest(big.key()).orElseThrow().executable()).isEqualTo(big.executable());
      assertThat(s.verify(false).problems()).isEmpty();
      s.prune(new PruneRequest(OptionalLong.of(0), null, false, null, null, false, false));
      assertThat(s.requests()).isEmpty();
      assertThat(s.verify(false).problems()).isEmpty();
    } finally {
      StoreInternals.chunkBytes(0);
    }
  }

  @Test
  void hits_countPerRequest_andInTheRuntimeCounters_andZeroing() throws Exception {
    Fixtures.ManualClock clock = new Fixtures.ManualClock();
    try (CacheStore s = open(clock)) {
      RecordedRequest a = request(1, 100);
      RecordedRequest b = request(2, 100);
      s.putRequests(List.of(a, b));
      clock.advance(Duration.ofHours(1));
      s.recordRequestHits(Map.of(a.key(), 3L, request(77, 1).key(), 1L), Duration.ofSeconds(12));
      RequestInfo ia = s.requestInfo(a.key()).orElseThrow();
      assertThat(ia.hits()).isEqualTo(3);
      assertThat(ia.lastAccess()).isEqualTo(clock.instant());
      assertThat(s.requestInfo(b.key()).orElseThrow().hits()).isZero();
      CacheStatistics stat = s.statistics();
      assertThat(stat.runtimeHits()).isEqualTo(4);
      assertThat(stat.runtimeTimeSaved()).isEqualTo(Duration.ofSeconds(12));
      assertThat(stat.hits()).isZero(); // a compile run's lookups are counted apart
      assertThat(s.verify(false).problems()).isEmpty();
      s.zeroStatistics();
      assertThat(s.statistics().runtimeHits()).isZero();
      assertThat(s.statistics().runtimeTimeSaved()).isZero();
      assertThat(s.requestInfo(a.key()).orElseThrow().hits()).isEqualTo(3);
    }
  }

  @Test
  void prune_removesTheLeastRecentlyUsedOrHitRequestsFirst_andTheSizeLimitCoversThem() throws Exception {
    Fixtures.ManualClock clock = new Fixtures.ManualClock();
    try (CacheStore s = open(clock)) {
      RecordedRequest a = request(1, 50_000);
      RecordedRequest b = request(2, 50_000);
      RecordedRequest c = request(3, 50_000);
      s.putRequests(List.of(a));
      clock.advance(Duration.ofHours(1));
      s.putRequests(List.of(b));
      clock.advance(Duration.ofHours(1));
      s.putRequests(List.of(c));
      clock.advance(Duration.ofHours(1));
      s.recordRequestHits(Map.of(a.key(), 1L), Duration.ofSeconds(1)); // a is used again: b is now the oldest
      Fixtures.graph(s, 1);
      long total = s.statistics().storedBytes();
      PruneResult dry = s.prune(new PruneRequest(OptionalLong.of(total - 1), null, false, null, null, true, false));
      assertThat(dry.requestsRemoved()).extracting(PruneResult.RemovedRequest::key).containsExactly(b.key());
      PruneResult r = s.prune(new PruneRequest(OptionalLong.of(total - 1), null, false, null, null, false, false));
      assertThat(r.requestsRemoved()).singleElement().satisfies(x -> {
        assertThat(x.key()).isEqualTo(b.key());
        assertThat(x.platformName()).isEqualTo("cpu");
      });
      assertThat(r.removed()).isEmpty();
      assertThat(s.requests()).extracting(RequestInfo::key).containsExactlyInAnyOrder(a.key(), c.key());
      // --failed and --compiler prune artifacts only
      PruneResult failed = s.prune(new PruneRequest(OptionalLong.empty(), null, true, null, null, false, false));
      assertThat(failed.requestsRemoved()).isEmpty();
      // the automatic limit: c goes before a (a was hit later than c was added), the graph (newest) stays
      clock.advance(Duration.ofHours(1));
      Fixtures.graph(s, 2);
      s.setMaxSize(OptionalLong.of(s.statistics().storedBytes() - 1000));
      assertThat(s.requests()).extracting(RequestInfo::key).containsExactly(a.key());
      assertThat(s.graphs()).hasSize(2);
      assertThat(s.verify(false).problems()).isEmpty();
    }
  }

  @Test
  void aDamagedExecutable_isAMiss_reported_andVerifyRepairDropsIt() throws Exception {
    RecordedRequest a = request(1, 40_000);
    RecordedRequest b = request(2, 300);
    try (CacheStore s = open(new Fixtures.ManualClock())) {
      s.putRequests(List.of(a, b));
      byte[] bad = a.executable().clone();
      bad[20_000] ^= 1;
      RocksDbStore db = StoreInternals.db(Internals.store(s));
      try (WriteBatch batch = new WriteBatch()) {
        db.put(batch, RocksDbStore.Cf.EXECUTABLES, a.key().digest(), bad);
        db.write(batch, true);
      }
      assertThat(s.readExecutable(a.key(), new ByteArrayOutputStream())).isFalse();
      assertThat(s.readRequest(a.key())).isEmpty();
      assertThat(notices).anySatisfy(n -> assertThat(n).contains("runtime entry " + a.key().text())
          .contains("executable fails its checksum"));
      assertThat(s.statistics().damagedReads()).isEqualTo(2);
      VerifyReport check = s.verify(false);
      assertThat(check.problems()).singleElement().satisfies(p -> {
        assertThat(p.entry()).isEqualTo("runtime entry pjrt1:" + a.key().hex().substring(0, 12) + " (cpu)");
        assertThat(p.description()).contains("executable fails its checksum");
      });
      VerifyReport repaired = s.verify(true);
      assertThat(repaired.problems()).singleElement().satisfies(p -> assertThat(p.action()).isEqualTo("dropped"));
      assertThat(s.requests()).extracting(RequestInfo::key).containsExactly(b.key());
      assertThat(s.verify(false).problems()).isEmpty();
      assertThat(s.statistics().runtimeEntries()).isEqualTo(1);
    }
  }

  @Test
  void clear_removesTheRequests_andKeepsTheRuntimeCounters() throws Exception {
    try (CacheStore s = open(new Fixtures.ManualClock())) {
      RecordedRequest a = request(1, 100);
      s.putRequests(List.of(a));
      s.recordRequestHits(Map.of(a.key(), 2L), Duration.ofSeconds(3));
      s.clear();
      assertThat(s.requests()).isEmpty();
      assertThat(s.statistics().runtimeEntries()).isZero();
      assertThat(s.statistics().runtimeHits()).isEqualTo(2);
      assertThat(s.verify(false).problems()).isEmpty();
    }
  }

  @Test
  void aSchemaVersion3Cache_readsAsItIs_andIsUpgradedByAWritableOpen() throws Exception {
    Path dir = tmp.resolve("cache");
    try (CacheStore s = open(new Fixtures.ManualClock())) {
      Fixtures.graph(s, 1);
      s.putArtifact(Fixtures.key(1, Fixtures.CPU), Fixtures.bytes(1, 100), CompileInfo.of(1, "log"));
      // What a version-3 xlac leaves: its schema version and a totals record of 14 fields.
      RocksDbStore db = StoreInternals.db(Internals.store(s));
      byte[] current = db.get(RocksDbStore.Cf.META, "totals".getBytes(StandardCharsets.US_ASCII));
      ByteBuffer old = ByteBuffer.allocate(1 + 14 * 8).put(current, 0, 1 + 14 * 8);
      try (WriteBatch batch = new WriteBatch()) {
        db.put(batch, RocksDbStore.Cf.META, StoreInternals.schemaKey(), "3".getBytes(StandardCharsets.US_ASCII));
        db.put(batch, RocksDbStore.Cf.META, "totals".getBytes(StandardCharsets.US_ASCII), old.array());
        db.write(batch, true);
      }
    }
    try (CacheStore r = CacheStore.open(dir, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      assertThat(r.statistics().schemaVersion()).isEqualTo(3);
      assertThat(r.statistics().compiled()).isEqualTo(1);
      assertThat(r.statistics().runtimeEntries()).isZero();
      assertThat(r.requests()).isEmpty();
    }
    try (CacheStore s = open(new Fixtures.ManualClock())) {
      assertThat(s.statistics().schemaVersion()).isEqualTo(4);
      assertThat(s.getArtifact(Fixtures.key(1, Fixtures.CPU))).isPresent();
      s.putRequests(List.of(request(1, 100)));
      assertThat(s.verify(false).problems()).isEmpty();
    }
    List<String> seen = new ArrayList<>();
    try (CacheStore r = CacheStore.open(dir, CacheStore.Mode.READ_ONLY, Duration.ZERO, seen::add)) {
      assertThat(r.statistics().runtimeEntries()).isEqualTo(1);
    }
  }

  @Test
  void aRebuildOfADamagedDatabase_keepsTheRuntimeEntries_andTakesNoneForAGraph() throws Exception {
    Path dir = tmp.resolve("cache");
    List<RecordedRequest> rs = List.of(request(1, 100), request(2, 60_000));
    try (CacheStore s = open(new Fixtures.ManualClock())) {
      Fixtures.graph(s, 1);
      s.putRequests(rs);
    }
    java.nio.file.Files.delete(dir.resolve("db/CURRENT")); // the database cannot be opened: it is rebuilt
    RepairReport r = CacheRepair.repair(dir, Duration.ZERO, notices::add);
    assertThat(r.rebuilt()).isTrue();
    assertThat(r.lost()).isEmpty();
    assertThat(r.clean()).isTrue();
    try (CacheStore s = open(new Fixtures.ManualClock())) {
      for (RecordedRequest q : rs) {
        assertThat(streamed(s, q.key())).isEqualTo(q.executable());
        assertThat(s.readRequest(q.key()).orElseThrow().program()).isEqualTo(q.program());
      }
      assertThat(s.graphs()).hasSize(1);
      assertThat(s.statistics().runtimeEntries()).isEqualTo(2);
      assertThat(s.verify(false).problems()).isEmpty();
    }
  }
}
