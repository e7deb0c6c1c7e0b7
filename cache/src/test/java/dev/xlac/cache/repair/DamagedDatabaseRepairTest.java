package dev.xlac.cache.repair;

import static dev.xlac.cache.Fixtures.CPU;
import static dev.xlac.cache.Fixtures.TRN1;
import static dev.xlac.cache.Fixtures.bytes;
import static dev.xlac.cache.Fixtures.fp;
import static dev.xlac.cache.Fixtures.key;
import static dev.xlac.cache.Fixtures.module;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheRepair;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.DamagedCacheException;
import dev.xlac.cache.Fixtures;
import dev.xlac.cache.GraphInfo;
import dev.xlac.cache.Internals;
import dev.xlac.cache.PruneRequest;
import dev.xlac.cache.RepairReport;
import dev.xlac.cache.ops.TrustConfig;
import dev.xlac.cache.store.CacheFaultTest;
import dev.xlac.cache.store.Keys;
import dev.xlac.cache.store.RocksDbStore;
import dev.xlac.cache.store.StoreInternals;
import dev.xlac.hlo.GraphFingerprint;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code verify --repair} on real damaged database files (issue #10, item 4): each test builds a
 * cache (small artifacts in the tables, large ones in blob files, chunked ones, compile logs in
 * blob files, a recorded failure, three flushes so there are several files of each kind), damages
 * one file as a disk or a person could, and repairs. Every test then checks the same promises:
 * the cache opens and verifies clean, every entry that survives holds exactly the bytes stored,
 * every entry that is gone is reported lost (with its graph's fingerprint, module and compiler),
 * nothing appears that was never stored, a prune that compacts (with blob garbage collection)
 * works, and the cache takes writes.
 */
class DamagedDatabaseRepairTest {
  static final int GROUPS = 3;
  static final int PER_GROUP = 6;
  static final int SMALL = 4_000;
  static final int LARGE = 40_000;
  static final int CHUNKED = 50_000;
  static final int CHUNK = 20_000;

  @TempDir
  Path tmp;
  Path dir;
  /** What was stored: modules, artifacts, logs. */
  final Map<Integer, byte[]> modules = new LinkedHashMap<>();
  final Map<ArtifactKey, byte[]> artifacts = new LinkedHashMap<>();
  final Map<ArtifactKey, String> logs = new LinkedHashMap<>();
  /** The blob files each group's flush wrote. */
  final Map<Integer, List<Path>> blobFilesOfGroup = new LinkedHashMap<>();

  @BeforeEach
  void build() throws Exception {
    StoreInternals.chunkBytes(CHUNK);
    dir = tmp.resolve("cache");
    Random text = new Random(7);
    try (CacheStore s = Fixtures.open(dir)) {
      for (int g = 0; g < GROUPS; g++) {
        Set<Path> before = blobFiles();
        for (int i = 0; i < PER_GROUP; i++) {
          int n = g * PER_GROUP + i;
          // The last graph of each group has a module large enough for a blob file (and two chunks).
          byte[] m = i == PER_GROUP - 1 ? bigModule(n) : module(n);
          s.putGraph(fp(n), "jit_g" + n, m, "test/" + n);
          modules.put(n, m);
          byte[] a = bytes(n, switch (n % 3) {
            case 0 -> SMALL;
            case 1 -> LARGE;
            default -> CHUNKED;
          });
          // Every other entry has a log that does not compress well: over 16 KiB stored, in a blob file.
          String log = n % 2 == 0 ? HexFormat.of().formatHex(bytes(1000 + n, 24_000)) : "";
          s.putArtifact(key(n, CPU), a, CompileInfo.of(n, log));
          artifacts.put(key(n, CPU), a);
          logs.put(key(n, CPU), log);
        }
        if (g == 1) {
          s.recordFailure(key(PER_GROUP, TRN1), "compile-error", "no", "failed: " + text.nextLong());
          logs.put(key(PER_GROUP, TRN1), null);
        }
        Internals.store(s).flushUnlogged();
        Set<Path> after = blobFiles();
        after.removeAll(before);
        blobFilesOfGroup.put(g, List.copyOf(new TreeSet<>(after)));
      }
    }
  }

  /** Graph {@code n}'s module with 40,000 random letters of source metadata: the same fingerprint, stored in a blob file. */
  static byte[] bigModule(int n) throws Exception {
    var m = dev.xlac.hlo.proto.HloProtos.HloModuleProto.parseFrom(module(n)).toBuilder();
    var instruction = m.getComputationsBuilder(0).getInstructionsBuilder(0);
    Random r = new Random(n);
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < 40_000; i++) {
      b.append((char) ('a' + r.nextInt(26)));
    }
    instruction.setMetadata(instruction.getMetadata().toBuilder().setSourceFile(b.toString()));
    return m.build().toByteArray();
  }

  @AfterEach
  void resetChunkSize() {
    StoreInternals.chunkBytes(0);
    DatabaseRepair.stepsForTests = step -> { };
  }

  // ---------------------------------------------------------------- blob files

  @Test
  void repair_afterDeletedBlobFiles_dropsOnlyTheirEntries_reportsThem_andAPruneThatCompactsWorks() throws Exception {
    // Every blob file of the middle flush: artifacts, a graph's module, compile logs.
    Set<ArtifactKey> lose = new HashSet<>();
    Set<Integer> graphsLost = new HashSet<>();
    for (Path blob : blobFilesOfGroup.get(1)) {
      BlobFiles.FileScan scan = BlobFiles.scan(blob);
      if (scan.columnFamilyId() == RocksDbStore.Cf.ARTIFACTS.ordinal() + 1) {
        lose.addAll(artifactsIn(blob));
      } else if (scan.columnFamilyId() == RocksDbStore.Cf.GRAPHS.ordinal() + 1) {
        for (BlobFiles.Location l : scan.records()) {
          int n = graphNumber(Keys.hex(l.key()).substring(0, 12));
          graphsLost.add(n);
          lose.add(key(n, CPU));
        }
      }
      Files.delete(blob);
    }
    assertThat(graphsLost).as("a module was in a blob file").isNotEmpty();

    Outcome o = repair();

    try (CacheStore s = Fixtures.open(dir)) {
      assertThat(s.getArtifact(key(6, CPU))).as("an artifact whose log alone was lost is kept, without it")
          .hasValueSatisfying(a -> assertThat(a.bytes()).isEqualTo(artifacts.get(key(6, CPU))));
      assertThat(s.log(key(6, CPU))).isEmpty();
    }
    assertRepaired(o, lose);
    assertThat(o.lostArtifacts()).containsExactlyInAnyOrderElementsOf(lose);
    assertThat(o.lostGraphs()).containsExactlyInAnyOrderElementsOf(graphsLost);
  }

  @Test
  void repair_afterATruncatedBlobFile_keepsTheValuesBeforeTheCut() throws Exception {
    Path victim = artifactBlobFile(1);
    List<BlobFiles.Location> records = BlobFiles.scan(victim).records();
    BlobFiles.Location cutIn = records.get(records.size() / 2);
    Set<ArtifactKey> afterCut = new HashSet<>();
    for (BlobFiles.Location l : records) {
      if (l.keyOffset() >= cutIn.keyOffset()) {
        afterCut.add(artifactKey(l.key()));
      }
    }
    Set<ArtifactKey> beforeCut = new HashSet<>(artifactsIn(victim));
    beforeCut.removeAll(afterCut);
    assertThat(beforeCut).as("entries wholly before the cut").isNotEmpty();
    truncate(victim, cutIn.valueOffset() + cutIn.valueSize() / 2);

    Outcome o = repair();

    assertRepaired(o, afterCut);
    assertThat(o.lostArtifacts()).containsExactlyInAnyOrderElementsOf(afterCut);
  }

  @Test
  void repair_afterAFlippedBlobFile_dropsOnlyTheValueWhoseCrcFails() throws Exception {
    Path victim = artifactBlobFile(2);
    List<BlobFiles.Location> records = BlobFiles.scan(victim).records();
    BlobFiles.Location hit = records.get(1);
    flip(victim, hit.valueOffset() + hit.valueSize() / 2);
    flip(victim, Files.size(victim) - 10); // the footer too: RocksDB then reads no value of the file at all

    Outcome o = repair();

    assertRepaired(o, Set.of(artifactKey(hit.key())));
    assertThat(o.lostArtifacts()).containsExactly(artifactKey(hit.key()));
  }

  // ---------------------------------------------------------------- tables, MANIFEST, CURRENT

  @Test
  void repair_afterADeletedSst_rebuildsTheDatabaseFromWhatIsLeft() throws Exception {
    Files.delete(largestSst());

    Outcome o = repair();

    assertRepaired(o, artifacts.keySet());
    assertThat(o.rebuilt()).isTrue();
  }

  @Test
  void repair_afterAFlippedSst_rebuildsTheDatabaseFromWhatIsLeft() throws Exception {
    Path sst = largestSst();
    flip(sst, Files.size(sst) / 3);

    Outcome o = repair();

    assertRepaired(o, artifacts.keySet());
  }

  /**
   * Removed entries stay removed: {@code cache rm} leaves its deletions in newer table files than the records they
   * delete, until a compaction. A damaged block in such a table made the rebuild take the records from RocksDB's
   * repair of a copy, which drops that table and so shows the older records again.
   */
  @Test
  void repair_afterAFlippedTableHoldingRemovals_bringsNoRemovedEntryBack() throws Exception {
    List<GraphFingerprint> removed = List.of(fp(1), fp(2), fp(7));
    Set<Path> before = tables();
    try (CacheStore s = Fixtures.open(dir)) {
      s.remove(removed);
      Internals.store(s).flushUnlogged();
    }
    Set<Path> removals = tables();
    removals.removeAll(before);
    assertThat(removals).as("the tables the removal's flush wrote").isNotEmpty();
    Path template = tmp.resolve("template");
    copyTree(dir, template);
    for (Path table : removals) {
      dir = tmp.resolve("trial-" + table.getFileName());
      copyTree(template, dir);
      flip(dir.resolve("db").resolve(table.getFileName().toString()), 20); // in its first data block
      repair();
      try (CacheStore s = Fixtures.open(dir)) {
        for (GraphFingerprint fp : removed) {
          assertThat(s.entries(fp)).as("%s: the artifacts of removed graph %s", table.getFileName(), fp).isEmpty();
          assertThat(s.graphs()).as("%s: removed graph %s", table.getFileName(), fp)
              .noneMatch(g -> g.fingerprint().equals(fp));
        }
      }
    }
  }

  Set<Path> tables() throws IOException {
    try (var s = Files.list(dir.resolve("db"))) {
      return new HashSet<>(s.filter(p -> p.toString().endsWith(".sst")).toList());
    }
  }

  @Test
  void repair_afterATruncatedManifest_rebuildsTheDatabase_losingNothing() throws Exception {
    Path manifest = only("MANIFEST-");
    truncate(manifest, Files.size(manifest) / 2);

    Outcome o = repair();

    assertRepaired(o, Set.of());
    assertThat(o.rebuilt()).isTrue();
  }

  @Test
  void repair_afterAnEmptiedCurrent_rebuildsTheDatabase_losingNothing() throws Exception {
    truncate(dir.resolve("db/CURRENT"), 0);

    Outcome o = repair();

    assertRepaired(o, Set.of());
  }

  @Test
  void repair_afterADeletedCurrent_rebuildsTheDatabase_losingNothing() throws Exception {
    Files.delete(dir.resolve("db/CURRENT"));

    Outcome o = repair();

    assertRepaired(o, Set.of());
  }

  @Test
  void writerOpen_afterADeletedCurrent_refusesToStartAnEmptyDatabaseOverTheOldFiles() throws Exception {
    Files.delete(dir.resolve("db/CURRENT"));
    for (int attempt = 0; attempt < 2; attempt++) { // RocksDB's first open failed, its second created an empty database
      assertThatThrownBy(() -> Fixtures.open(dir).close()).isInstanceOf(DamagedCacheException.class)
          .hasMessageContaining("run 'xlac cache verify --repair'");
    }
    assertThatThrownBy(() -> CacheStore.open(dir, CacheStore.Mode.READ_ONLY, Duration.ZERO, m -> { }).close())
        .as("a reader does not take it for an empty cache either").isInstanceOf(DamagedCacheException.class);
    assertRepaired(repair(), Set.of());
  }

  @Test
  void clear_ofADatabaseThatCannotBeOpened_replacesIt_keepingTheSettings() throws Exception {
    try (CacheStore s = Fixtures.open(dir)) {
      s.setMaxSize(OptionalLong.of(50_000_000));
    }
    Path manifest = only("MANIFEST-");
    truncate(manifest, 20);
    assertThatThrownBy(() -> Fixtures.open(dir).close()).isInstanceOf(DamagedCacheException.class);

    CacheRepair.Cleared c = CacheRepair.clearDamaged(dir, Duration.ZERO, m -> { });

    assertThat(c.settingsKept()).isTrue();
    assertThat(c.bytesFreed()).isPositive();
    try (CacheStore s = Fixtures.open(dir)) {
      assertThat(s.graphs()).isEmpty();
      assertThat(s.maxSize()).hasValue(50_000_000);
      assertThat(s.verify(false).clean()).isTrue();
    }
    try (var files = Files.list(dir)) {
      assertThat(files.map(p -> p.getFileName().toString())).doesNotContain("db.broken").noneMatch(n -> n.startsWith("."));
    }
  }

  /** A message that advises a command names one that works: a damaged trusted-key record can be removed as advised. */
  @Test
  void trustRemove_ofADamagedTrustedKeyRecord_worksAsTheMessageAdvises() throws Exception {
    String id = "ab".repeat(32);
    try (CacheStore s = Fixtures.open(dir)) {
      Internals.store(s).commit(true, txn -> {
        txn.put(RocksDbStore.Cf.META, (TrustConfig.TRUSTED_PREFIX + id).getBytes(), "garbage".getBytes());
        return null;
      });
      assertThatThrownBy(s::trustSettings).hasMessageContaining("remove it with 'xlac cache config trust remove " + id + "'");

      assertThat(s.untrustKey(id)).as("removed; there was no key to return").isNull();

      assertThat(s.trustSettings().keys()).isEmpty();
    }
  }

  // ---------------------------------------------------------------- kill -9 during a rebuild

  /**
   * A rebuild killed at a random moment, or at each step of the swap: the old database is still in
   * place (and repairs), or the rebuilt one is (a reader sees it even before the next writer finishes
   * the swap); the repair, run again, loses nothing and leaves no temporary directory.
   */
  @Test
  void killDuringARebuild_leavesTheOldDatabaseOrTheCompletedSwap() throws Exception {
    Path manifest = only("MANIFEST-");
    truncate(manifest, Files.size(manifest) - 3); // the database cannot be opened: a rebuild, losing nothing
    Path template = tmp.resolve("template");
    copyTree(dir, template);
    Random random = new Random();
    List<String> kills = new ArrayList<>(List.of("rebuilt", "complete", "moved"));
    for (int i = 0; i < 4; i++) {
      kills.add("after " + random.nextInt(1_500) + " ms");
    }
    for (String kill : kills) {
      dev.xlac.core.io.FileTrees.deleteTree(dir);
      copyTree(template, dir);
      CacheFaultTest.Child child = kill.startsWith("after ") ? new CacheFaultTest.Child(null, "repair", dir.toString())
          : new CacheFaultTest.Child(null, "repair", dir.toString(), kill);
      if (kill.startsWith("after ")) {
        child.awaitLine("started", 1);
        Thread.sleep(Long.parseLong(kill.split(" ")[1]));
      } else {
        child.awaitLine("step " + kill, 1);
      }
      child.kill();
      boolean swapped = child.lines.contains("step complete") || child.lines.contains("done");
      if (swapped) {
        // Complete: whatever the renames got to, a reader reads the rebuilt database, whole.
        try (CacheStore r = CacheStore.open(dir, CacheStore.Mode.READ_ONLY, Duration.ZERO, m -> { })) {
          assertThat(r.graphs()).as("killed %s: a reader sees the rebuilt database", kill).hasSize(modules.size());
        }
        List<String> notices = new ArrayList<>();
        try (CacheStore w = CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO, notices::add)) {
          assertThat(w.verify(false).clean()).as("killed %s: the next writer finishes the swap", kill).isTrue();
        }
        if (kill.equals("complete") || kill.equals("moved")) {
          assertThat(notices).as("killed %s", kill).anyMatch(n -> n.contains("finished replacing its database"));
        }
      } else {
        assertThatThrownBy(() -> Fixtures.open(dir).close()).as("killed %s: the old database is still there", kill)
            .isInstanceOf(DamagedCacheException.class);
      }
      assertRepaired(repair(), Set.of());
    }
  }

  /**
   * A rebuild that cannot write what it keeps (here: the files it writes may not grow past 100 KiB,
   * which RocksDB reports as on a full disk) stops and changes nothing: it used to go on without the
   * values it could not write, or to move the database aside and start empty, though nothing was
   * wrong with what it read.
   */
  @Test
  void repair_whenTheRebuildMeetsAFileSizeLimit_changesNothing_andSaysDiskFull() throws Exception {
    Path manifest = only("MANIFEST-");
    truncate(manifest, Files.size(manifest) - 3);
    List<String> before = databaseFiles();
    Path lib = Files.createDirectories(tmp.resolve("lib"));
    try (var in = org.rocksdb.RocksDB.class.getResourceAsStream("/librocksdbjni-linux64.so")) {
      org.junit.jupiter.api.Assumptions.assumeTrue(in != null, "RocksDB ships no linux64 library for this platform");
      Files.copy(in, lib.resolve("librocksdbjni-linux64.so"));
    }
    CacheFaultTest.Child child = new CacheFaultTest.Child("trap '' XFSZ; ulimit -f 100;", lib, "repair", dir.toString());
    assertThat(child.await()).as("exit code; output %s", child.lines).isEqualTo(3);
    assertThat(child.lines).as("it says why, in one line").anySatisfy(l -> assertThat(l)
        .startsWith("xlac: cache " + dir + ": disk full while rebuilding its database")
        .contains("the damaged database is unchanged"));
    assertThat(databaseFiles()).as("the damaged database's files").isEqualTo(before);
    try (var files = Files.list(dir)) {
      assertThat(files.map(p -> p.getFileName().toString())).as("what the failed repair left")
          .noneMatch(n -> n.startsWith("db.broken-") || n.startsWith(".rebuild-") || n.startsWith(".salvage-"));
    }
    RepairReport r = CacheRepair.repair(dir, Duration.ZERO, m -> { }); // without the limit
    assertThat(r.clean()).as("the repair without the limit: %s", r).isTrue();
    assertThat(r.emptyReason()).isNull();
    try (CacheStore s = Fixtures.open(dir)) {
      assertThat(s.graphs()).isNotEmpty();
    }
  }

  /** The database's file names (without RocksDB's info logs). */
  private List<String> databaseFiles() throws IOException {
    try (var files = Files.list(dir.resolve(RocksDbStore.DB_DIR))) {
      return files.map(p -> p.getFileName().toString()).filter(n -> !n.startsWith("LOG")).sorted().toList();
    }
  }

  /**
   * When even the rebuild fails for a reason that is not a full disk (here: a failure injected as it
   * starts, standing for one nobody foresaw), the damaged database is moved aside all the same, the
   * cache starts empty, and the repair says so.
   */
  @Test
  void repair_whenTheRebuildFails_movesTheDatabaseAside_startsEmpty_andSaysSo() throws Exception {
    Path manifest = only("MANIFEST-");
    truncate(manifest, Files.size(manifest) - 3);
    DatabaseRepair.stepsForTests = step -> {
      if (step.equals("rebuilding")) {
        throw new IllegalStateException("injected");
      }
    };
    RepairReport r = CacheRepair.repair(dir, Duration.ZERO, m -> { });
    assertThat(r.emptyReason()).as("why it started empty").contains("injected");
    assertThat(r.brokenDatabase()).isNotNull();
    assertThat(r.brokenDatabase().getFileName().toString()).startsWith("db.broken-");
    assertThat(r.clean()).isTrue();
    try (CacheStore s = Fixtures.open(dir)) {
      assertThat(s.graphs()).isEmpty();
      assertThat(s.verify(false).clean()).isTrue();
    }
    try (var files = Files.list(dir)) {
      List<Path> broken = files.filter(p -> p.getFileName().toString().startsWith("db.broken-")).toList();
      assertThat(broken).singleElement().satisfies(b -> assertThat(b.resolve(manifest.getFileName())).exists());
    }
  }

  static void copyTree(Path from, Path to) throws IOException {
    try (var s = Files.walk(from)) {
      for (Path p : s.toList()) {
        Path t = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(t);
        } else {
          Files.copy(p, t);
        }
      }
    }
  }

  // ---------------------------------------------------------------- the promises

  /** What a repair said. */
  record Outcome(RepairReport report, Set<ArtifactKey> lostArtifacts, Set<Integer> lostGraphs, boolean rebuilt) {}

  Outcome repair() throws InterruptedException {
    List<String> notices = new ArrayList<>();
    RepairReport r = CacheRepair.repair(dir, Duration.ZERO, notices::add);
    assertThat(r.clean()).as("the repair ends clean: %s", r).isTrue();
    Set<ArtifactKey> lostArtifacts = new HashSet<>();
    Set<Integer> lostGraphs = new HashSet<>();
    for (RepairReport.LostEntry l : r.lost()) {
      int n = graphNumber(l.fingerprint());
      assertThat(l.module()).as("a lost entry names its module: %s", l).isEqualTo("jit_g" + n);
      if (l.compiler() == null) {
        lostGraphs.add(n);
      } else {
        lostArtifacts.add(key(n, l.compiler().equals(CPU.shortName()) ? CPU : TRN1));
      }
    }
    return new Outcome(r, lostArtifacts, lostGraphs, r.rebuilt());
  }

  /**
   * The promises: clean; intact entries byte for byte; every entry gone was reported; no entry
   * appeared; {@code mayLose} bounds what is gone; a prune that compacts works; writes work.
   */
  void assertRepaired(Outcome o, Set<ArtifactKey> mayLose) throws Exception {
    try (CacheStore s = Fixtures.open(dir)) {
      assertThat(s.verify(false).problems()).as("verify after the repair").isEmpty();
      Set<Integer> graphsLeft = new HashSet<>();
      for (GraphInfo g : s.graphs()) {
        int n = graphNumber(g.fingerprint().value().substring(5, 17));
        graphsLeft.add(n);
        assertThat(s.readGraph(g.fingerprint())).as("graph " + n).hasValueSatisfying(
            m -> assertThat(m).isEqualTo(modules.get(n)));
      }
      for (int n : modules.keySet()) {
        if (!graphsLeft.contains(n)) {
          assertThat(o.lostGraphs()).as("graph %d is gone, so it was reported lost", n).contains(n);
        }
      }
      for (var e : artifacts.entrySet()) {
        ArtifactKey k = e.getKey();
        var info = s.artifactInfo(k);
        if (info.isEmpty()) {
          assertThat(o.lostArtifacts()).as("%s is gone, so it was reported lost", k).contains(k);
          assertThat(mayLose).as("%s may be lost", k).contains(k);
          continue;
        }
        assertThat(s.getArtifact(k)).as(k.toString()).hasValueSatisfying(a -> assertThat(a.bytes()).isEqualTo(e.getValue()));
        String log = logs.get(k);
        if (!log.isEmpty()) {
          assertThat(s.log(k)).as("the log of " + k).isIn(log, ""); // kept whole, or lost alone
        }
      }
      for (GraphInfo g : s.graphs()) {
        for (ArtifactInfo a : s.entries(g.fingerprint())) {
          assertThat(artifacts.containsKey(a.key()) || logs.containsKey(a.key())).as("%s was stored", a.key()).isTrue();
        }
      }
      // A prune that compacts with blob garbage collection, then writes.
      long half = s.statistics().storedBytes() / 2;
      s.prune(new PruneRequest(OptionalLong.of(half), null, false, null, null, false, false));
      assertThat(s.verify(false).problems()).as("verify after a prune").isEmpty();
      Fixtures.graph(s, 500);
      s.putArtifact(key(500, CPU), bytes(500, LARGE), CompileInfo.of(1, ""));
      s.clear();
      assertThat(s.verify(false).clean()).isTrue();
    }
    try (var files = Files.list(dir)) {
      assertThat(files.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(".")))
          .as("no temporaries left").isEmpty();
    }
  }

  // ---------------------------------------------------------------- helpers

  int graphNumber(String fp12) {
    for (int n : modules.keySet()) {
      if (fp(n).value().substring(5).startsWith(fp12)) {
        return n;
      }
    }
    if (fp(500).value().substring(5).startsWith(fp12)) {
      return 500;
    }
    throw new AssertionError("no graph " + fp12 + " was stored");
  }

  ArtifactKey artifactKey(byte[] blobKey) {
    byte[] k = Arrays.copyOf(blobKey, Keys.ARTIFACT);
    for (ArtifactKey a : artifacts.keySet()) {
      if (Arrays.equals(a.bytes(), k)) {
        return a;
      }
    }
    throw new AssertionError("no artifact " + Keys.hex(k));
  }

  /** The artifacts with a value (or a chunk of one) in {@code blob}. */
  Set<ArtifactKey> artifactsIn(Path blob) throws IOException {
    Set<ArtifactKey> out = new HashSet<>();
    for (BlobFiles.Location l : BlobFiles.scan(blob).records()) {
      out.add(artifactKey(l.key()));
    }
    return out;
  }

  /** The blob file of group {@code g}'s flush that holds artifacts (the others hold logs). */
  Path artifactBlobFile(int g) throws IOException {
    int artifactsFamily = RocksDbStore.Cf.ARTIFACTS.ordinal() + 1;
    for (Path p : blobFilesOfGroup.get(g)) {
      if (BlobFiles.scan(p).columnFamilyId() == artifactsFamily) {
        return p;
      }
    }
    throw new AssertionError("group " + g + " wrote no artifact blob file: " + blobFilesOfGroup);
  }

  Set<Path> blobFiles() throws IOException {
    if (!Files.isDirectory(dir.resolve("db"))) {
      return new HashSet<>();
    }
    try (var s = Files.list(dir.resolve("db"))) {
      return new HashSet<>(s.filter(p -> p.toString().endsWith(".blob")).toList());
    }
  }

  Path largestSst() throws IOException {
    try (var s = Files.list(dir.resolve("db"))) {
      return s.filter(p -> p.toString().endsWith(".sst")).max((a, b) -> Long.compare(a.toFile().length(),
          b.toFile().length())).orElseThrow();
    }
  }

  Path only(String prefix) throws IOException {
    try (var s = Files.list(dir.resolve("db"))) {
      List<Path> l = s.filter(p -> p.getFileName().toString().startsWith(prefix)).toList();
      assertThat(l).hasSize(1);
      return l.getFirst();
    }
  }

  static void truncate(Path f, long to) throws IOException {
    try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
      raf.setLength(to);
    }
  }

  static void flip(Path f, long at) throws IOException {
    try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
      raf.seek(at);
      int b = raf.read();
      raf.seek(at);
      raf.write(b ^ 0x20);
    }
  }
}
