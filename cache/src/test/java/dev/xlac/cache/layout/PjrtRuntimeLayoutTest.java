package dev.xlac.cache.layout;

import static dev.xlac.cache.RequestFixtures.PLUGIN_A;
import static dev.xlac.cache.RequestFixtures.PLUGIN_B;
import static dev.xlac.cache.RequestFixtures.request;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.Fixtures;
import dev.xlac.cache.Internals;
import dev.xlac.cache.RequestInfo;
import dev.xlac.cache.RequestIngest;
import dev.xlac.cache.store.CacheFaultTest.Child;
import dev.xlac.cache.store.RocksDbStore;
import dev.xlac.cache.store.StoreInternals;
import dev.xlac.core.XlacException;
import dev.xlac.runtime.LayoutEntry;
import dev.xlac.runtime.LayoutManifest;
import dev.xlac.runtime.RecordSpool;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.WriteBatch;

/**
 * The record spool taken into the cache and the runtime layout written from it, with the faults: damaged records,
 * damaged executables in the cache, damaged entry files, a full disk, kill -9 during an ingest, two ingests at once.
 */
class PjrtRuntimeLayoutTest {
  @TempDir
  Path tmp;
  final List<String> problems = new CopyOnWriteArrayList<>();
  final Random random = new Random(Long.getLong("xlac.test.seed", System.nanoTime()));

  Path spool() {
    return tmp.resolve("spool");
  }

  Path cacheDir() {
    return tmp.resolve("cache");
  }

  static byte[] sha(byte[] b) throws Exception {
    return MessageDigest.getInstance("SHA-256").digest(b);
  }

  List<RecordedRequest> record(int from, int to, int size, String plugin) throws Exception {
    List<RecordedRequest> out = new ArrayList<>();
    for (int n = from; n < to; n++) {
      RecordedRequest r = request(n, size, plugin);
      RecordSpool.write(spool(), r);
      out.add(r);
    }
    return out;
  }

  /** Every entry file of the layout holds exactly the request's executable, as the proxy checks it. */
  static void assertServes(Path layout, List<RecordedRequest> rs) throws Exception {
    for (RecordedRequest r : rs) {
      Path f = LayoutEntry.path(layout, r.key());
      assertThat(LayoutEntry.matches(f, r.key(), sha(r.executable()), r.executable().length)).as(f.toString()).isTrue();
      byte[] b = Files.readAllBytes(f);
      assertThat(java.util.Arrays.copyOfRange(b, LayoutEntry.HEADER, b.length)).isEqualTo(r.executable());
      assertThat(java.nio.ByteBuffer.wrap(b, 80, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong())
          .isEqualTo(r.compileNanos());
    }
  }

  /** Entry files and anything else under DIR/entries, by name. */
  static List<String> entryFiles(Path layout) throws Exception {
    Path entries = layout.resolve("entries");
    if (!Files.isDirectory(entries)) {
      return List.of();
    }
    try (Stream<Path> s = Files.walk(entries)) {
      return s.filter(Files::isRegularFile).map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  @Test
  void ingest_takesEveryRecord_andMaterializeWritesWhatTheProxyServes_incrementally() throws Exception {
    List<RecordedRequest> rs = record(0, 3, 30_000, PLUGIN_A);
    Path staleTmp = Files.writeString(spool().resolve(".tmp-999-1-1"), "half a record");
    Files.setLastModifiedTime(staleTmp, FileTime.from(Instant.now().minus(Duration.ofHours(2))));
    Path freshTmp = Files.writeString(spool().resolve(".tmp-999-1-2"), "being written");
    Path layout = tmp.resolve("layout");
    try (CacheStore s = Fixtures.open(cacheDir())) {
      RequestIngest in = PjrtRecordSpool.ingest(spool(), s, problems::add);
      assertThat(in).isEqualTo(new RequestIngest(3, 0, List.of()));
      assertThat(RecordSpool.files(spool())).isEmpty();
      assertThat(staleTmp).doesNotExist();
      assertThat(freshTmp).exists();
      PjrtRuntimeLayout.MaterializeResult m = PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add);
      assertThat(m).isEqualTo(new PjrtRuntimeLayout.MaterializeResult(3, 0, 0, 0));
      assertServes(layout, rs);
      assertThat(LayoutManifest.read(layout)).contains(Set.of(PLUGIN_A));
      assertThat(entryFiles(layout)).hasSize(3).allSatisfy(n -> assertThat(n).endsWith(".xpx"));
      PjrtRuntimeLayout.MaterializeResult again = PjrtRuntimeLayout.materialize(s, layout, Optional.empty(),
          problems::add);
      assertThat(again).isEqualTo(new PjrtRuntimeLayout.MaterializeResult(0, 3, 0, 0));
      // ingesting the same records again: present, kept
      record(0, 3, 30_000, PLUGIN_A);
      assertThat(PjrtRecordSpool.ingest(spool(), s, problems::add)).isEqualTo(new RequestIngest(0, 3, List.of()));
      assertThat(RecordSpool.files(spool())).isEmpty();
    }
    assertThat(problems).isEmpty();
  }

  @Test
  void aDamagedRecord_isRejectedByNameAndMovedAside_whileTheOthersGoIn() throws Exception {
    List<RecordedRequest> rs = record(0, 4, 5_000, PLUGIN_A);
    Path bad = spool().resolve(rs.get(2).key().hex() + ".xpr");
    byte[] b = Files.readAllBytes(bad);
    b[b.length / 2] ^= 0x10;
    Files.write(bad, b);
    Path cut = spool().resolve(rs.get(3).key().hex() + ".xpr");
    Files.write(cut, java.util.Arrays.copyOf(Files.readAllBytes(cut), 100));
    try (CacheStore s = Fixtures.open(cacheDir())) {
      RequestIngest in = PjrtRecordSpool.ingest(spool(), s, problems::add);
      assertThat(in.added()).isEqualTo(2);
      assertThat(in.rejected()).hasSize(2);
      assertThat(in.rejected()).anySatisfy(l -> assertThat(l).contains(bad.toString()).contains("SHA-256"));
      assertThat(in.rejected()).anySatisfy(l -> assertThat(l).contains(cut.toString()).contains("cut short"));
      assertThat(problems).containsExactlyInAnyOrderElementsOf(in.rejected());
      assertThat(bad).doesNotExist();
      assertThat(bad.resolveSibling(bad.getFileName() + ".rejected")).exists();
      assertThat(s.requests()).extracting(RequestInfo::key).containsExactlyInAnyOrder(rs.get(0).key(), rs.get(1).key());
      assertThat(in.leftInSpool()).as("the rejected records stay in the spool, aside").isEqualTo(2);
      // a second ingest does not meet them again
      assertThat(PjrtRecordSpool.ingest(spool(), s, problems::add)).isEqualTo(new RequestIngest(0, 0, List.of(), 2));
    }
  }

  @Test
  void materialize_rewritesADamagedEntry_andRemovesEntriesNoLongerCached() throws Exception {
    List<RecordedRequest> a = record(0, 3, 20_000, PLUGIN_A);
    List<RecordedRequest> b = record(10, 12, 20_000, PLUGIN_B);
    Path layout = tmp.resolve("layout");
    try (CacheStore s = Fixtures.open(cacheDir())) {
      PjrtRecordSpool.ingest(spool(), s, problems::add);
      PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add);
      assertThat(LayoutManifest.read(layout)).contains(Set.of(PLUGIN_A, PLUGIN_B));
      // damage: a flipped executable byte in one entry, a cut header in another, a stray entry of an unknown key
      Path flipped = LayoutEntry.path(layout, a.get(0).key());
      byte[] f = Files.readAllBytes(flipped);
      f[LayoutEntry.HEADER + 5] ^= 1;
      Files.write(flipped, f);
      Path cut = LayoutEntry.path(layout, a.get(1).key());
      Files.write(cut, java.util.Arrays.copyOf(Files.readAllBytes(cut), 50));
      RequestKey stray = request(99, 1).key();
      Files.createDirectories(LayoutEntry.path(layout, stray).getParent());
      Files.write(LayoutEntry.path(layout, stray), new byte[200]);
      PjrtRuntimeLayout.MaterializeResult m = PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), true,
          problems::add);
      assertThat(m).isEqualTo(new PjrtRuntimeLayout.MaterializeResult(2, 3, 1, 0));
      assertServes(layout, a);
      assertServes(layout, b);
      assertThat(LayoutEntry.path(layout, stray)).doesNotExist();
      // a request pruned from the cache leaves the layout at the next materialize
      s.prune(new dev.xlac.cache.PruneRequest(java.util.OptionalLong.of(0), null, false, null, null, false, false));
      assertThat(PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add))
          .isEqualTo(new PjrtRuntimeLayout.MaterializeResult(0, 0, 5, 0));
      assertThat(entryFiles(layout)).isEmpty();
      assertThat(LayoutManifest.read(layout)).contains(Set.of());
    }
    assertThat(problems).isEmpty();
  }

  @Test
  void materializeWithAPluginFilter_keepsTheOtherPluginsEntries_andTheManifestNamesEveryPluginPresent()
      throws Exception {
    List<RecordedRequest> a = record(0, 3, 20_000, PLUGIN_A);
    List<RecordedRequest> b = record(10, 12, 20_000, PLUGIN_B);
    Path layout = tmp.resolve("layout");
    try (CacheStore s = Fixtures.open(cacheDir())) {
      PjrtRecordSpool.ingest(spool(), s, problems::add);
      // two plugins' runs materialize into one layout in turn: neither removes the other's entries
      assertThat(PjrtRuntimeLayout.materialize(s, layout, Optional.of(PLUGIN_A), problems::add))
          .isEqualTo(new PjrtRuntimeLayout.MaterializeResult(3, 0, 0, 0));
      assertThat(LayoutManifest.read(layout)).contains(Set.of(PLUGIN_A));
      assertThat(PjrtRuntimeLayout.materialize(s, layout, Optional.of(PLUGIN_B.toUpperCase(java.util.Locale.ROOT)),
          problems::add)).isEqualTo(new PjrtRuntimeLayout.MaterializeResult(2, 0, 0, 0));
      assertThat(LayoutManifest.read(layout)).contains(Set.of(PLUGIN_A, PLUGIN_B));
      assertThat(PjrtRuntimeLayout.materialize(s, layout, Optional.of(PLUGIN_A), problems::add))
          .isEqualTo(new PjrtRuntimeLayout.MaterializeResult(0, 3, 0, 0));
      assertServes(layout, a);
      assertServes(layout, b);
      assertThat(LayoutManifest.read(layout)).contains(Set.of(PLUGIN_A, PLUGIN_B));
      // a key the cache no longer holds goes, whichever plugin it was for; the manifest follows what is present
      StoreInternals.commitUnlogged(Internals.store(s), txn -> {
        for (RecordedRequest r : b) {
          txn.removeRequest(r.key().digest());
        }
        return null;
      });
      assertThat(PjrtRuntimeLayout.materialize(s, layout, Optional.of(PLUGIN_A), problems::add))
          .isEqualTo(new PjrtRuntimeLayout.MaterializeResult(0, 3, 2, 0));
      assertThat(LayoutManifest.read(layout)).contains(Set.of(PLUGIN_A));
      assertThat(entryFiles(layout)).hasSize(3);
    }
    assertThat(problems).isEmpty();
  }

  @Test
  void materialize_trustsAKeptEntrysHeader_andReadsItsExecutableOnlyWhenAskedToVerify() throws Exception {
    List<RecordedRequest> rs = record(0, 3, 50_000, PLUGIN_A);
    Path layout = tmp.resolve("layout");
    try (CacheStore s = Fixtures.open(cacheDir())) {
      PjrtRecordSpool.ingest(spool(), s, problems::add);
      PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add);
      Path flipped = LayoutEntry.path(layout, rs.get(1).key());
      byte[] f = Files.readAllBytes(flipped);
      f[LayoutEntry.HEADER + 7] ^= 1; // the header still matches: only a full read finds it
      Files.write(flipped, f);
      // the default (before every xlac run) reads headers only: the proxy checks the SHA-256 before it serves
      assertThat(PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add))
          .isEqualTo(new PjrtRuntimeLayout.MaterializeResult(0, 3, 0, 0));
      assertThat(Files.readAllBytes(flipped)).isEqualTo(f);
      assertThat(PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), true, problems::add))
          .isEqualTo(new PjrtRuntimeLayout.MaterializeResult(1, 2, 0, 0));
      assertServes(layout, rs);
      // an entry deleted (as xlac run does with those the proxy reported damaged) is written again
      Files.delete(LayoutEntry.path(layout, rs.get(2).key()));
      assertThat(PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add))
          .isEqualTo(new PjrtRuntimeLayout.MaterializeResult(1, 2, 0, 0));
      assertServes(layout, rs);
    }
    assertThat(problems).isEmpty();
  }

  @Test
  void materialize_doesNotCountAsAUse_soThePruneStillSeesEntriesTheRuntimeNeverServed() throws Exception {
    List<RecordedRequest> rs = record(0, 2, 1_000, PLUGIN_A);
    Fixtures.ManualClock clock = new Fixtures.ManualClock();
    try (CacheStore s = Internals.open(cacheDir(), problems::add, clock)) {
      PjrtRecordSpool.ingest(spool(), s, problems::add);
      Instant created = s.requests().getFirst().created();
      clock.advance(Duration.ofDays(3));
      PjrtRuntimeLayout.materialize(s, tmp.resolve("layout"), Optional.empty(), problems::add);
      assertThat(s.requests()).extracting(RequestInfo::lastAccess).containsOnly(created);
      s.recordRequestHits(java.util.Map.of(rs.get(1).key(), 1L), Duration.ofSeconds(1));
      assertThat(s.requestInfo(rs.get(1).key()).orElseThrow().lastAccess()).isEqualTo(clock.instant());
      assertThat(s.requestInfo(rs.get(0).key()).orElseThrow().lastAccess()).isEqualTo(created);
    }
    assertThat(problems).isEmpty();
  }

  @Test
  void aRuntimeEntryWithAnInvalidPluginSha_isReportedAndSkippedByMaterialize_notAnUncaughtError() throws Exception {
    List<RecordedRequest> rs = record(0, 3, 1_000, PLUGIN_A);
    Path layout = tmp.resolve("layout");
    try (CacheStore s = Fixtures.open(cacheDir())) {
      PjrtRecordSpool.ingest(spool(), s, problems::add);
      PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add);
      // what an older xlac let in from a bundle whose manifest named another plugin SHA-256
      byte[] digest = rs.get(1).key().digest();
      var old = Internals.store(s).readRequestRecord(digest);
      var bad = new dev.xlac.cache.store.Records.RequestRecord(old.format(), old.platformName(), "not-a-sha\n",
          old.programBytes(), old.requestRawBytes(), old.requestStoredBytes(), old.requestSha256(),
          old.executableBytes(), old.executableSha256(), old.compileNanos(), old.created(), old.lastAccess(), 0);
      StoreInternals.commitUnlogged(Internals.store(s), txn -> {
        txn.writeRequest(digest, bad, null, null);
        return null;
      });
      PjrtRuntimeLayout.MaterializeResult m = PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add);
      assertThat(m).isEqualTo(new PjrtRuntimeLayout.MaterializeResult(0, 2, 1, 0, 1));
      assertThat(problems).singleElement().asString().contains("runtime entry " + rs.get(1).key().text())
          .contains("plugin SHA-256 (\"not-a-sha?\") is not 64 hex digits");
      assertThat(LayoutManifest.read(layout)).contains(Set.of(PLUGIN_A));
      assertThat(LayoutEntry.path(layout, rs.get(1).key())).doesNotExist();
    }
  }

  @Test
  void anExecutableDamagedInTheCache_isReportedAndNeverWritten_andAnOldEntryOfItGoes() throws Exception {
    List<RecordedRequest> rs = record(0, 3, 40_000, PLUGIN_A);
    Path layout = tmp.resolve("layout");
    try (CacheStore s = Fixtures.open(cacheDir())) {
      PjrtRecordSpool.ingest(spool(), s, problems::add);
      RecordedRequest victim = rs.get(1);
      byte[] bad = victim.executable().clone();
      bad[39_000] ^= 1;
      RocksDbStore db = StoreInternals.db(Internals.store(s));
      try (WriteBatch batch = new WriteBatch()) {
        db.put(batch, RocksDbStore.Cf.EXECUTABLES, victim.key().digest(), bad);
        db.write(batch, true);
      }
      Path old = LayoutEntry.path(layout, victim.key());
      Files.createDirectories(old.getParent());
      Files.write(old, new byte[LayoutEntry.HEADER]); // an old, wrong entry file of that key
      PjrtRuntimeLayout.MaterializeResult m = PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add);
      assertThat(m).isEqualTo(new PjrtRuntimeLayout.MaterializeResult(2, 0, 0, 1));
      assertThat(problems).singleElement().asString().contains("runtime entry " + victim.key().text())
          .contains("damaged in the cache");
      assertThat(old).doesNotExist();
      assertServes(layout, List.of(rs.get(0), rs.get(2)));
      assertThat(entryFiles(layout)).hasSize(2).allSatisfy(n -> assertThat(n).doesNotStartWith("."));
    }
  }

  @Test
  void aFullDiskDuringMaterialize_isOneClearLine_andLeavesNoPartialEntry() throws Exception {
    // RLIMIT_FSIZE of 1 MiB: a 3 MB executable's entry cannot be written (EFBIG), small ones can.
    List<RecordedRequest> rs = new ArrayList<>(record(0, 2, 10_000, PLUGIN_A));
    rs.add(request(5, 3_000_000, PLUGIN_A));
    RecordSpool.write(spool(), rs.get(2));
    try (CacheStore s = Fixtures.open(cacheDir())) {
      PjrtRecordSpool.ingest(spool(), s, problems::add);
    }
    Path layout = tmp.resolve("layout");
    Path lib = Files.createDirectories(tmp.resolve("lib"));
    try (var in = org.rocksdb.RocksDB.class.getResourceAsStream("/librocksdbjni-linux64.so")) {
      org.junit.jupiter.api.Assumptions.assumeTrue(in != null, "RocksDB ships no linux64 library for this platform");
      Files.copy(in, lib.resolve("librocksdbjni-linux64.so"));
    }
    Child c = new Child("trap '' XFSZ; ulimit -f 1024;", lib, "materialize", cacheDir().toString(), layout.toString());
    assertThat(c.await()).as("exit code; output %s", c.lines).isEqualTo(3);
    assertThat(c.lines).anySatisfy(l -> assertThat(l).startsWith("xlac: cannot write runtime layout " + layout)
        .contains(rs.get(2).key().text()));
    assertThat(LayoutEntry.path(layout, rs.get(2).key())).doesNotExist();
    assertThat(entryFiles(layout)).allSatisfy(n -> assertThat(n).doesNotStartWith("."));
    assertThat(layout.resolve(LayoutManifest.FILE)).doesNotExist(); // written last: the layout is not complete
    for (String n : entryFiles(layout)) {
      assertThat(rs.subList(0, 2).stream().map(r -> r.key().hex() + ".xpx")).contains(n);
    }
    assertServes(layout, rs.stream().filter(r -> Files.exists(LayoutEntry.path(layout, r.key()))).toList());
    // with room again, the next materialize completes it
    try (CacheStore s = CacheStore.open(cacheDir(), CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add);
    }
    assertServes(layout, rs);
    assertThat(problems).isEmpty();
  }

  @Test
  void aFullDiskDuringAnIngest_saysSo_andLeavesEveryRecordNotTakenInTheSpool() throws Exception {
    List<RecordedRequest> rs = record(0, 40, 300_000, PLUGIN_A); // the first batch alone is over the limit
    Path lib = Files.createDirectories(tmp.resolve("lib"));
    try (var in = org.rocksdb.RocksDB.class.getResourceAsStream("/librocksdbjni-linux64.so")) {
      org.junit.jupiter.api.Assumptions.assumeTrue(in != null, "RocksDB ships no linux64 library for this platform");
      Files.copy(in, lib.resolve("librocksdbjni-linux64.so"));
    }
    Child c = new Child("trap '' XFSZ; ulimit -f 4096;", lib, "ingest", cacheDir().toString(), spool().toString());
    assertThat(c.await()).as("exit code; output %s", c.lines).isEqualTo(3);
    assertThat(c.lines).anySatisfy(l -> assertThat(l).startsWith("xlac: cache ").contains("disk full"));
    try (CacheStore s = Fixtures.open(cacheDir())) {
      assertThat(s.verify(false).problems()).isEmpty();
      Set<RequestKey> cached = new HashSet<>();
      s.requests().forEach(i -> cached.add(i.key()));
      for (RecordedRequest r : rs) {
        assertThat(cached.contains(r.key()) || Files.exists(spool().resolve(r.key().hex() + ".xpr")))
            .as("request %s is in the cache or still in the spool", r.key()).isTrue();
      }
      RequestIngest rest = PjrtRecordSpool.ingest(spool(), s, problems::add);
      assertThat(rest.rejected()).isEmpty();
      assertThat(s.requests()).hasSize(rs.size());
      assertThat(RecordSpool.files(spool())).isEmpty();
    }
  }

  @Test
  void killDuringAnIngest_leavesWholeEntries_andEveryRecordNotTakenInTheSpool() throws Exception {
    List<RecordedRequest> rs = record(0, 150, 150_000, PLUGIN_A); // five batches of 32
    Child c = new Child(null, "ingest", cacheDir().toString(), spool().toString());
    c.awaitLine("started", 1);
    // Killed once the first batch is in and its files are being deleted, or a little later: in the middle.
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (RecordSpool.files(spool()).size() == rs.size() && c.process.isAlive() && System.nanoTime() < deadline) {
      Thread.sleep(1);
    }
    Thread.sleep(random.nextInt(100));
    c.kill();
    Set<RequestKey> cached = new HashSet<>();
    try (CacheStore s = Fixtures.open(cacheDir())) {
      assertThat(s.verify(false).problems()).as("verify after kill -9").isEmpty();
      for (RequestInfo i : s.requests()) {
        cached.add(i.key());
      }
      for (RecordedRequest r : rs) {
        if (cached.contains(r.key())) {
          assertThat(s.readRequest(r.key()).orElseThrow().executable()).isEqualTo(r.executable());
        } else {
          Path f = spool().resolve(r.key().hex() + ".xpr");
          assertThat(f).as("a record not taken in stays in the spool").exists();
          assertThat(RecordSpool.read(f).executable()).isEqualTo(r.executable());
        }
      }
      assertThat(cached).as("the first batch was committed before the kill").isNotEmpty();
      RequestIngest rest = PjrtRecordSpool.ingest(spool(), s, problems::add);
      assertThat(rest.rejected()).isEmpty();
      assertThat(rest.added()).isEqualTo(rs.size() - cached.size());
      assertThat(s.requests()).hasSize(rs.size());
      assertThat(RecordSpool.files(spool())).isEmpty();
      assertThat(s.verify(false).problems()).isEmpty();
    }
  }

  @Test
  void aRejectedRecord_isMovedAsideUnderANameOfItsOwn_neverOverAnEarlierRejectedOne() throws Exception {
    List<RecordedRequest> rs = record(0, 1, 5_000, PLUGIN_A);
    Path f = spool().resolve(rs.getFirst().key().hex() + ".xpr");
    Path earlier = Files.writeString(f.resolveSibling(f.getFileName() + ".rejected"), "an earlier rejected record");
    byte[] b = Files.readAllBytes(f);
    b[100] ^= 1;
    Files.write(f, b);
    try (CacheStore s = Fixtures.open(cacheDir())) {
      RequestIngest in = PjrtRecordSpool.ingest(spool(), s, problems::add);
      assertThat(in.rejected()).singleElement().asString().contains("moved aside as " + f.getFileName() + ".2.rejected");
      assertThat(in.leftInSpool()).isEqualTo(2);
    }
    assertThat(earlier).hasContent("an earlier rejected record");
    assertThat(f.resolveSibling(f.getFileName() + ".2.rejected")).hasBinaryContent(b);
    assertThat(f).doesNotExist();
  }

  @Test
  void aRecordTooLargeForThisXlac_isLeftInTheSpoolWithItsOwnMessage_notRejectedAsDamaged() throws Exception {
    // A whole record's header whose program section (2^31 bytes) is over what one Java array holds: a sparse file.
    Files.createDirectories(spool());
    Path big = spool().resolve("f".repeat(64) + ".xpr");
    java.nio.ByteBuffer h = java.nio.ByteBuffer.allocate(8 + 32 + 8 + 4 + 8).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    h.put(RecordSpool.MAGIC).put(new byte[32]).putLong(4).put("mlir".getBytes(java.nio.charset.StandardCharsets.UTF_8))
        .putLong(1L << 31);
    try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(big.toFile(), "rw")) {
      raf.write(h.array());
      raf.setLength(h.capacity() + (1L << 31) + 4 * 8 + 8 + 32);
    }
    List<RecordedRequest> rs = record(0, 2, 1_000, PLUGIN_A);
    try (CacheStore s = Fixtures.open(cacheDir())) {
      RequestIngest in = PjrtRecordSpool.ingest(spool(), s, problems::add);
      assertThat(in.added()).isEqualTo(2);
      assertThat(in.rejected()).singleElement().asString().contains("record " + big)
          .contains("program section (2147483648 bytes) is larger than this xlac can take in")
          .endsWith("left in the spool").doesNotContain("damaged");
      assertThat(in.leftInSpool()).as("xlac run must not delete this spool").isEqualTo(1);
      assertThat(s.requests()).hasSize(rs.size());
    }
    assertThat(big).exists();
    assertThat(spool().resolve(big.getFileName() + ".rejected")).doesNotExist();
  }

  @Test
  void aRecordKeyedByTheCProxysOwnKeyCode_withRealJaxOptions_isTakenIn_andTheOtherRunsOptionsFindItPresent()
      throws Exception {
    // The C side's key (the proxy's key.c and options.c, through the key tool runtime/ builds for its tests) on the
    // options of two real JAX runs: a canonicalisation that differed between C and Java would reject these.
    Path tool = Path.of("..", "runtime", "target", "native-test", "xlac-pjrt-key").toAbsolutePath();
    Path jax = Path.of("..", "runtime", "src", "test", "resources", "jax-options").toAbsolutePath();
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.isExecutable(tool),
        "the C key tool is built by the runtime module's test-compile (run with -am): " + tool);
    String identity = runTool(tool, "identity", "cpu", "cpu", "0", "75", PLUGIN_A, "s", "xla_version", "0.10.2", "i",
        "stablehlo_current_version", "1", "b", "supports_cross_host_transfers", "false");
    Path idFile = Files.writeString(tmp.resolve("identity.txt"), identity);
    byte[] program = "module @jit_f { func.func public @main() { return } }".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    Path programFile = Files.write(tmp.resolve("program.bin"), program);
    try (CacheStore s = Fixtures.open(cacheDir())) {
      int run = 0;
      for (String options : List.of("run1.bin", "run2.bin")) {
        String keyText = runTool(tool, "key", "mlir", programFile.toString(), jax.resolve(options).toString(),
            idFile.toString()).strip();
        RequestKey key = RequestKey.parse(keyText);
        RecordedRequest r = new RecordedRequest(key, "mlir".getBytes(java.nio.charset.StandardCharsets.UTF_8), program,
            Files.readAllBytes(jax.resolve(options)), identity, Fixtures.bytes(7, 3_000), 5_000_000L);
        RecordSpool.write(spool(), r);
        RequestIngest in = PjrtRecordSpool.ingest(spool(), s, problems::add);
        assertThat(in.rejected()).as("ingest of the record of %s", options).isEmpty();
        assertThat(in).isEqualTo(run++ == 0 ? new RequestIngest(1, 0, List.of()) : new RequestIngest(0, 1, List.of()));
        assertThat(s.requestInfo(key)).isPresent();
      }
      assertThat(s.requests()).singleElement().extracting(RequestInfo::pluginSha256).isEqualTo(PLUGIN_A);
    }
    assertThat(problems).isEmpty();
  }

  static String runTool(Path tool, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(tool.toString()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    assertThat(p.waitFor()).as("exit status of %s", cmd).isZero();
    return out;
  }

  @Test
  void aRecordWhoseKeyWasComputedDifferently_isSaidSo_andKeptAsideNotLost() throws Exception {
    RecordedRequest good = request(1, 2_000, PLUGIN_A);
    RequestKey other = request(2, 1, PLUGIN_A).key();
    RecordedRequest differently = new RecordedRequest(other, good.format(), good.program(), good.options(),
        good.identityText(), good.executable(), good.compileNanos());
    Files.createDirectories(spool());
    Path f = Files.write(spool().resolve(other.hex() + ".xpr"), RecordSpool.encode(differently));
    try (CacheStore s = Fixtures.open(cacheDir())) {
      RequestIngest in = PjrtRecordSpool.ingest(spool(), s, problems::add);
      assertThat(in.rejected()).singleElement().asString().contains("record " + f)
          .contains("its key " + other.text() + " was computed differently from this xlac's key of its request ("
              + good.key().text() + ")").doesNotContain("damaged");
      assertThat(in.leftInSpool()).isEqualTo(1);
      // putRequests, given such a record directly, rejects it too and takes the others
      RequestIngest direct = s.putRequests(List.of(differently, good));
      assertThat(direct.added()).isEqualTo(1);
      assertThat(direct.rejected()).singleElement().asString().contains("runtime entry " + other.text())
          .contains("its key was computed differently");
      assertThat(s.requestInfo(other)).isEmpty();
    }
    assertThat(f.resolveSibling(f.getFileName() + ".rejected")).exists();
  }

  @Test
  void twoIngestsOfOneSpool_inTwoThreadsOfOneCache_raceOnListingAndReading_andTakeEveryRecordOnce() throws Exception {
    List<RecordedRequest> rs = record(0, 200, 2_000, PLUGIN_A); // seven batches: each deletes what the other listed
    try (CacheStore s = Fixtures.open(cacheDir())) {
      java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(2);
      List<java.util.concurrent.Future<RequestIngest>> runs = new ArrayList<>();
      try (var pool = java.util.concurrent.Executors.newFixedThreadPool(2)) {
        for (int i = 0; i < 2; i++) {
          runs.add(pool.submit(() -> {
            start.await();
            return PjrtRecordSpool.ingest(spool(), s, problems::add);
          }));
        }
      }
      RequestIngest one = runs.get(0).get();
      RequestIngest two = runs.get(1).get();
      assertThat(one.added() + two.added()).isEqualTo(rs.size());
      assertThat(one.rejected()).isEmpty();
      assertThat(two.rejected()).isEmpty();
      assertThat(s.requests()).extracting(RequestInfo::key)
          .containsExactlyInAnyOrderElementsOf(rs.stream().map(RecordedRequest::key).toList());
      assertThat(s.verify(false).problems()).isEmpty();
    }
    assertThat(RecordSpool.files(spool())).isEmpty();
    assertThat(problems).isEmpty();
  }

  @Test
  void twoIngestProcessesOnOneSpool_takeTurnsAtTheWriterLock_andTakeEveryRecordOnce() throws Exception {
    List<RecordedRequest> rs = record(0, 80, 50_000, PLUGIN_A);
    Child one = new Child(null, "ingest", cacheDir().toString(), spool().toString());
    Child two = new Child(null, "ingest", cacheDir().toString(), spool().toString());
    assertThat(one.await()).as("first: %s", one.lines).isZero();
    assertThat(two.await()).as("second: %s", two.lines).isZero();
    for (Child c : List.of(one, two)) {
      assertThat(c.lines).noneSatisfy(l -> assertThat(l).startsWith("problem"));
    }
    try (CacheStore s = Fixtures.open(cacheDir())) {
      assertThat(s.requests()).extracting(RequestInfo::key)
          .containsExactlyInAnyOrderElementsOf(rs.stream().map(RecordedRequest::key).toList());
      assertThat(s.verify(false).problems()).isEmpty();
    }
    assertThat(RecordSpool.files(spool())).isEmpty();
  }

  @Test
  void aMissingSpool_isBadInputNamingIt() throws Exception {
    try (CacheStore s = Fixtures.open(cacheDir())) {
      assertThatThrownBy(() -> PjrtRecordSpool.ingest(tmp.resolve("none"), s, problems::add))
          .isInstanceOf(XlacException.class).hasMessageContaining("record spool " + tmp.resolve("none"));
    }
  }

  /**
   * Regression (issue #22, 6): {@code cache clear} and {@code cache prune} left the cache's own layout serving what
   * they removed (to a run in progress too) and holding its space. A store that removed runtime entries removes their
   * files from {@code CACHE/runtime/pjrt} when it closes, and only theirs.
   */
  @Test
  void clearOrPrune_removesTheirEntriesFromTheCachesLayout_whenTheStoreCloses() throws Exception {
    RecordedRequest a = request(1, 4000);
    RecordedRequest b = request(2, 4000);
    Path layout = PjrtRuntimeLayout.managedDir(cacheDir());
    Path other = tmp.resolve("user-layout"); // one written by cache materialize --layout: served as it is
    try (CacheStore s = Fixtures.open(cacheDir())) {
      s.putRequests(List.of(a, b));
      PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add);
      PjrtRuntimeLayout.materialize(s, other, Optional.empty(), problems::add);
    }
    try (CacheStore s = Fixtures.open(cacheDir())) {
      s.recordRequestHits(java.util.Map.of(b.key(), 1L), Duration.ofSeconds(1)); // b used later: a goes first
    }
    try (CacheStore s = Fixtures.open(cacheDir())) {
      long keep = s.requestInfo(b.key()).orElseThrow().storedBytes();
      assertThat(s.prune(new dev.xlac.cache.PruneRequest(java.util.OptionalLong.of(keep), null, false, null, null,
          false, false)).requestsRemoved()).hasSize(1);
      assertThat(LayoutEntry.path(layout, a.key())).as("not before the store closes").exists();
    }
    assertThat(LayoutEntry.path(layout, a.key())).doesNotExist();
    assertThat(LayoutEntry.path(layout, b.key())).exists();
    try (CacheStore s = Fixtures.open(cacheDir())) {
      s.clear();
    }
    assertThat(LayoutEntry.path(layout, b.key())).doesNotExist();
    assertThat(LayoutEntry.path(other, a.key())).exists();
    assertThat(problems).isEmpty();
  }

  /**
   * Regression: when the entry of a cleared request could not leave the layout, the store's close only printed a
   * notice, and {@code xlac run}'s finish stamped the layout current: later runs kept serving what the cache no longer
   * held. The store now says so ({@link CacheStore#runtimeLayoutHoldsRemoved}), and a materialize reports it.
   */
  @Test
  void removedEntryThatCannotLeaveTheLayout_isReported_soTheLayoutIsNotTakenAsCurrent() throws Exception {
    RecordedRequest a = request(1, 4000);
    Path layout = PjrtRuntimeLayout.managedDir(cacheDir());
    try (CacheStore s = Fixtures.open(cacheDir())) {
      s.putRequests(List.of(a));
      PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add);
    }
    Path entry = LayoutEntry.path(layout, a.key());
    Files.delete(entry);
    Files.createDirectories(entry.resolve("kept")); // its removal fails, as a file on a read-only mount's would
    CacheStore cleared = Fixtures.open(cacheDir());
    try (cleared) {
      cleared.clear();
      assertThat(cleared.runtimeLayoutHoldsRemoved()).as("not before the close").isFalse();
    }
    assertThat(cleared.runtimeLayoutHoldsRemoved()).isTrue();
    try (CacheStore s = Fixtures.open(cacheDir())) {
      problems.clear();
      PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add);
      assertThat(problems).singleElement().asString().startsWith("cannot remove 1 entry the cache no longer holds");
    }
    try (CacheStore s = Fixtures.open(cacheDir())) {
      s.clear();
    }
    Files.delete(entry.resolve("kept"));
    CacheStore clean = Fixtures.open(cacheDir());
    try (clean) {
      clean.clear();
    }
    assertThat(clean.runtimeLayoutHoldsRemoved()).as("nothing left to remove").isFalse();
  }

  /** The same for the clear of a database that cannot be opened ({@code CacheRepair.clearDamaged}). */
  @Test
  void clearOfADamagedDatabase_removesTheEntriesFromTheCachesLayout() throws Exception {
    RecordedRequest a = request(1, 4000);
    Path layout = PjrtRuntimeLayout.managedDir(cacheDir());
    try (CacheStore s = Fixtures.open(cacheDir())) {
      s.putRequests(List.of(a));
      PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add);
    }
    Path current = cacheDir().resolve("db/CURRENT");
    Path manifest = cacheDir().resolve("db").resolve(Files.readString(current).strip());
    Files.write(manifest, java.util.Arrays.copyOf(Files.readAllBytes(manifest), 20));
    dev.xlac.cache.CacheRepair.clearDamaged(cacheDir(), Duration.ZERO, problems::add);
    assertThat(LayoutEntry.path(layout, a.key())).doesNotExist();
  }

  /** {@code CacheStore.lock}: other writers wait while it is held, also after a store opened under it closed. */
  @Test
  void writerLock_keepsOtherWritersOut_untilReleased() throws Exception {
    try (CacheStore.WriterLock lock = CacheStore.lock(cacheDir(), Duration.ZERO, m -> { })) {
      try (CacheStore s = lock.open()) {
        s.putRequests(List.of(request(1, 100)));
      }
      assertThatThrownBy(() -> CacheStore.open(cacheDir(), CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> { }))
          .isInstanceOf(XlacException.class).hasMessageContaining("locked by another xlac process");
    }
    try (CacheStore s = Fixtures.open(cacheDir())) {
      assertThat(s.requests()).hasSize(1);
    }
  }
}
