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
      // a second ingest does not meet them again
      assertThat(PjrtRecordSpool.ingest(spool(), s, problems::add)).isEqualTo(new RequestIngest(0, 0, List.of()));
    }
  }

  @Test
  void materialize_rewritesADamagedEntry_removesEntriesNoLongerCached_andFiltersByPlugin() throws Exception {
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
      PjrtRuntimeLayout.MaterializeResult m = PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add);
      assertThat(m).isEqualTo(new PjrtRuntimeLayout.MaterializeResult(2, 3, 1, 0));
      assertServes(layout, a);
      assertServes(layout, b);
      assertThat(LayoutEntry.path(layout, stray)).doesNotExist();
      // only plugin B's entries: plugin A's are removed, the manifest names B alone
      PjrtRuntimeLayout.MaterializeResult onlyB = PjrtRuntimeLayout.materialize(s, layout, Optional.of(PLUGIN_B),
          problems::add);
      assertThat(onlyB).isEqualTo(new PjrtRuntimeLayout.MaterializeResult(0, 2, 3, 0));
      assertThat(LayoutManifest.read(layout)).contains(Set.of(PLUGIN_B));
      assertThat(entryFiles(layout)).hasSize(2);
      // a request pruned from the cache leaves the layout at the next materialize
      s.prune(new dev.xlac.cache.PruneRequest(java.util.OptionalLong.of(0), null, false, null, null, false, false));
      assertThat(PjrtRuntimeLayout.materialize(s, layout, Optional.empty(), problems::add))
          .isEqualTo(new PjrtRuntimeLayout.MaterializeResult(0, 0, 2, 0));
      assertThat(entryFiles(layout)).isEmpty();
      assertThat(LayoutManifest.read(layout)).contains(Set.of());
    }
    assertThat(problems).isEmpty();
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
  void twoIngestsOfOneSpoolAtOnce_takeEveryRecordOnce_withoutComplaint() throws Exception {
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
}
