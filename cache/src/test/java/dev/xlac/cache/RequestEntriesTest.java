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
  void readRequestWithoutExecutable_readsTheRequestAlone_evenWhenItsExecutableIsDamaged() throws Exception {
    RecordedRequest a = request(1, 40_000);
    try (CacheStore s = open(new Fixtures.ManualClock())) {
      s.putRequests(List.of(a));
      RocksDbStore db = StoreInternals.db(Internals.store(s));
      try (WriteBatch batch = new WriteBatch()) {
        db.put(batch, RocksDbStore.Cf.EXECUTABLES, a.key().digest(), new byte[] {1, 2, 3});
        db.write(batch, true);
      }
      RecordedRequest r = s.readRequestWithoutExecutable(a.key()).orElseThrow();
      assertThat(r.key()).isEqualTo(a.key());
      assertThat(r.program()).isEqualTo(a.program());
      assertThat(r.options()).isEqualTo(a.options());
      assertThat(r.identityText()).isEqualTo(a.identityText());
      assertThat(r.executable()).isEmpty();
      assertThat(s.readRequest(a.key())).as("the executable is damaged").isEmpty();
      assertThat(s.readRequestWithoutExecutable(dev.xlac.runtime.RequestKey.parse("pjrt1:" + "0".repeat(64))))
          .isEmpty();
      try (WriteBatch batch = new WriteBatch()) { // now the request itself: a miss, reported
        db.put(batch, RocksDbStore.Cf.REQUESTS, a.key().digest(), new byte[] {9, 9, 9});
        db.write(batch, true);
      }
      notices.clear();
      assertThat(s.readRequestWithoutExecutable(a.key())).isEmpty();
      assertThat(notices).anySatisfy(n -> assertThat(n).contains("runtime entry " + a.key().text()));
    }
  }

  @Test
  void verify_findsARequestFiledUnderAnotherKey_andRepairDropsItAlone() throws Exception {
    RecordedRequest a = request(1, 500);
    RecordedRequest b = request(2, 600);
    try (CacheStore s = open(new Fixtures.ManualClock())) {
      s.putRequests(List.of(a, b));
      // a's record and request replaced by b's request, its checksum made to agree: the values are intact, but the
      // request is not the request of its key (as a key computed by other rules would leave it)
      var store = Internals.store(s);
      var recA = store.readRequestRecord(a.key().digest());
      var recB = store.readRequestRecord(b.key().digest());
      byte[] storedB = StoreInternals.db(store).get(RocksDbStore.Cf.REQUESTS, b.key().digest());
      var forged = new dev.xlac.cache.store.Records.RequestRecord(recA.format(), recA.platformName(),
          recA.pluginSha256(), recB.programBytes(), recB.requestRawBytes(), recB.requestStoredBytes(),
          recB.requestSha256(), recA.executableBytes(), recA.executableSha256(), recA.compileNanos(), recA.created(),
          recA.lastAccess(), 0);
      StoreInternals.commitUnlogged(store, txn -> {
        txn.writeRequest(a.key().digest(), forged, storedB, null);
        return null;
      });
      VerifyReport check = s.verify(false);
      assertThat(check.problems()).singleElement().satisfies(p -> {
        assertThat(p.entry()).isEqualTo("runtime entry pjrt1:" + a.key().hex().substring(0, 12) + " (cpu)");
        assertThat(p.description()).contains("its request's key is " + b.key().text());
      });
      VerifyReport repaired = s.verify(true);
      assertThat(repaired.problems()).singleElement().satisfies(p -> assertThat(p.action()).isEqualTo("dropped"));
      assertThat(s.requests()).extracting(RequestInfo::key).containsExactly(b.key());
      assertThat(s.verify(false).problems()).isEmpty();
      assertThat(streamed(s, b.key())).isEqualTo(b.executable());
    }
  }

  @Test
  void putRequests_rejectsEachRecordItCannotStore_byName_andTakesTheOthers() throws Exception {
    RecordedRequest good = request(1, 100);
    RecordedRequest wrongKey = new RecordedRequest(request(9, 1).key(), good.format(), good.program(), good.options(),
        good.identityText(), good.executable(), 1);
    String badIdentity = RequestFixtures.identity("A1".repeat(32));
    RecordedRequest upperSha = new RecordedRequest(dev.xlac.runtime.RequestKey.of(good.format(), good.program(),
        good.options(), badIdentity.getBytes(StandardCharsets.UTF_8)), good.format(), good.program(), good.options(),
        badIdentity, good.executable(), 1);
    try (CacheStore s = open(new Fixtures.ManualClock())) {
      RequestIngest in = s.putRequests(List.of(wrongKey, upperSha, good));
      assertThat(in.added()).isEqualTo(1);
      assertThat(in.rejected()).hasSize(2);
      assertThat(in.rejected().get(0)).startsWith("runtime entry " + wrongKey.key().text() + ": its key was computed"
          + " differently from this xlac's key of its request (" + good.key().text() + ")");
      assertThat(in.rejected().get(1)).startsWith("runtime entry " + upperSha.key().text())
          .contains("plugin_sha256 is not 64 lowercase hex digits");
      assertThat(s.requests()).extracting(RequestInfo::key).containsExactly(good.key());
      assertThat(CacheStore.requestProblem(good)).isEmpty();
    }
  }

  @Test
  void aCacheWithOnlyTheVersion3ColumnFamilies_opensReadOnlyAndWritable_takesRequests_andVerifies() throws Exception {
    Path dir = tmp.resolve("cache");
    try (CacheStore s = open(new Fixtures.ManualClock())) {
      Fixtures.graph(s, 1);
      s.putArtifact(Fixtures.key(1, Fixtures.CPU), Fixtures.bytes(1, 100), CompileInfo.of(1, "log"));
    }
    // The database again, through RocksDB itself, as a version-3 xlac made it: its eight column families only (in
    // their order of creation), schema version 3 and a totals record of 14 fields.
    Path db = dir.resolve("db");
    Path v3 = dir.resolve("db-v3");
    List<String> old = List.of("meta", "graphs", "graph_meta", "artifacts", "artifact_meta", "logs", "identities",
        "access_index");
    org.rocksdb.RocksDB.loadLibrary();
    try (org.rocksdb.Options o = new org.rocksdb.Options();
        org.rocksdb.DBOptions dbo = new org.rocksdb.DBOptions();
        org.rocksdb.ColumnFamilyOptions cfo = new org.rocksdb.ColumnFamilyOptions();
        org.rocksdb.Options create = new org.rocksdb.Options().setCreateIfMissing(true)) {
      List<org.rocksdb.ColumnFamilyDescriptor> descriptors = new ArrayList<>();
      for (byte[] n : org.rocksdb.RocksDB.listColumnFamilies(o, db.toString())) {
        descriptors.add(new org.rocksdb.ColumnFamilyDescriptor(n, cfo));
      }
      List<org.rocksdb.ColumnFamilyHandle> handles = new ArrayList<>();
      try (org.rocksdb.RocksDB from = org.rocksdb.RocksDB.openReadOnly(dbo, db.toString(), descriptors, handles);
          org.rocksdb.RocksDB to = org.rocksdb.RocksDB.open(create, v3.toString())) {
        assertThat(descriptors).extracting(d -> new String(d.getName(), StandardCharsets.UTF_8))
            .containsAll(old).contains("requests", "request_meta", "executables");
        for (String name : old) {
          org.rocksdb.ColumnFamilyHandle target = to.createColumnFamily(
              new org.rocksdb.ColumnFamilyDescriptor(name.getBytes(StandardCharsets.UTF_8), cfo));
          org.rocksdb.ColumnFamilyHandle source = handles.get(descriptors.stream().map(d -> new String(d.getName(),
              StandardCharsets.UTF_8)).toList().indexOf(name));
          try (org.rocksdb.RocksIterator it = from.newIterator(source)) {
            for (it.seekToFirst(); it.isValid(); it.next()) {
              byte[] value = it.value();
              if (name.equals("meta") && new String(it.key(), StandardCharsets.US_ASCII).equals("totals")) {
                value = java.util.Arrays.copyOf(value, 1 + 14 * 8);
              } else if (name.equals("meta") && java.util.Arrays.equals(it.key(), StoreInternals.schemaKey())) {
                value = "3".getBytes(StandardCharsets.US_ASCII);
              }
              to.put(target, it.key(), value);
            }
          }
          target.close();
        }
        handles.forEach(org.rocksdb.ColumnFamilyHandle::close);
      }
    }
    try (java.util.stream.Stream<Path> files = java.nio.file.Files.walk(db)) {
      files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    }
    java.nio.file.Files.move(v3, db);
    try (org.rocksdb.Options o = new org.rocksdb.Options()) {
      assertThat(org.rocksdb.RocksDB.listColumnFamilies(o, db.toString())).hasSize(9); // default and the eight
    }
    try (CacheStore r = CacheStore.open(dir, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      assertThat(r.statistics().schemaVersion()).isEqualTo(3);
      assertThat(r.statistics().compiled()).isEqualTo(1);
      assertThat(r.statistics().runtimeEntries()).isZero();
      assertThat(r.requests()).isEmpty();
      assertThat(r.requestInfo(request(1, 1).key())).isEmpty();
      assertThat(r.getArtifact(Fixtures.key(1, Fixtures.CPU))).isPresent();
      assertThat(r.verify(false).problems()).isEmpty();
    }
    RecordedRequest q = request(1, 70_000);
    try (CacheStore s = open(new Fixtures.ManualClock())) {
      assertThat(s.statistics().schemaVersion()).isEqualTo(4);
      assertThat(s.verify(false).problems()).isEmpty();
      assertThat(s.putRequests(List.of(q)).added()).isEqualTo(1);
      assertThat(streamed(s, q.key())).isEqualTo(q.executable());
      assertThat(s.getArtifact(Fixtures.key(1, Fixtures.CPU))).isPresent();
      assertThat(s.verify(false).problems()).isEmpty();
    }
    try (CacheStore r = CacheStore.open(dir, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      assertThat(r.statistics().runtimeEntries()).isEqualTo(1);
      assertThat(r.verify(false).problems()).isEmpty();
    }
  }

  @Test
  void killDuringPutRequestsOfExecutablesLargerThanAChunk_leavesWholeEntriesOnly_andTheNextWriterCleansUp()
      throws Exception {
    Path dir = tmp.resolve("cache");
    // chunks of 4 KiB: each 300 KB executable is some 75 chunk batches, written before its record's batch
    dev.xlac.cache.store.CacheFaultTest.Child c = new dev.xlac.cache.store.CacheFaultTest.Child(null, "put-requests",
        dir.toString(), "4096");
    c.awaitLine("committed", 2);
    Thread.sleep(new java.util.Random().nextInt(50));
    c.kill();
    long committed = c.lines.stream().filter(l -> l.startsWith("committed")).count();
    StoreInternals.chunkBytes(4096);
    try {
      try (CacheStore s = open(new Fixtures.ManualClock())) {
        assertThat(s.verify(false).problems()).as("verify after kill -9").isEmpty();
        dev.xlac.cache.store.CacheFaultTest.assertNoValueWithoutRecord(s);
        List<RequestInfo> infos = s.requests();
        assertThat(infos.size()).isGreaterThanOrEqualTo((int) committed * 2);
        for (RequestInfo i : infos) {
          int n = -1;
          for (int k = 0; k <= committed + 1 && n < 0; k++) {
            if (request(k, 1).key().equals(i.key())) {
              n = k;
            }
          }
          if (n >= 0) {
            assertThat(streamed(s, i.key())).isEqualTo(request(n, 300_000).executable());
          }
        }
        // the next writer takes the same requests again without trouble: present, or added whole
        RequestIngest again = s.putRequests(List.of(request((int) committed, 300_000), request(0, 300_000)));
        assertThat(again.rejected()).isEmpty();
        assertThat(again.added() + again.alreadyPresent()).isEqualTo(2);
        assertThat(streamed(s, request((int) committed, 1).key())).isEqualTo(request((int) committed, 300_000)
            .executable());
        assertThat(s.verify(false).problems()).isEmpty();
      }
    } finally {
      StoreInternals.chunkBytes(0);
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

  @Test
  void anEntryOfAnOlderKeyVersion_isIntact_notReportedDamaged_norDroppedByRepair() throws Exception {
    RecordedRequest now = request(7, 100);
    RequestKey old = RequestFixtures.version1Key(now);
    RecordedRequest filedByOldXlac = new RecordedRequest(old, now.format(), now.program(), now.options(),
        now.identityText(), now.executable(), now.compileNanos());
    try (CacheStore s = open(new Fixtures.ManualClock())) {
      assertThat(s.putRequests(List.of(filedByOldXlac)).added()).isEqualTo(1);
      assertThat(s.readRequest(old)).isPresent();
      assertThat(s.verify(false).problems()).isEmpty();
      assertThat(s.verify(true).problems()).isEmpty();
      assertThat(s.requestInfo(old)).isPresent();
      assertThat(s.readRequest(now.key())).as("never served under the key the proxy asks for").isEmpty();
    }
    assertThat(notices).isEmpty();
  }
}
