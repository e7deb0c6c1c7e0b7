package dev.xlac.cache.store;

import dev.xlac.cache.Internals;
import static dev.xlac.cache.Fixtures.CPU;
import static dev.xlac.cache.Fixtures.bytes;
import static dev.xlac.cache.Fixtures.key;
import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.ExportRequest;
import dev.xlac.cache.Fixtures;
import dev.xlac.cache.ListQuery;
import dev.xlac.cache.ListRow;
import dev.xlac.cache.PruneRequest;
import dev.xlac.cache.PruneResult;
import dev.xlac.cache.VerifyReport;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Faults with real processes: SIGKILL in the middle of writes, an import and a prune; a disk that
 * fills up (RLIMIT_FSIZE, so writes fail with EFBIG); two writers started at once.
 */
public class CacheFaultTest {
  @TempDir
  Path tmp;
  final Random random = new Random(Long.getLong("xlac.test.seed", System.nanoTime()));

  /** A child JVM running {@link CacheFaultMain}, optionally under a shell prefix (ulimit). */
  public static final class Child {
    public final Process process;
    public final List<String> lines = new CopyOnWriteArrayList<>();
    final Thread reader;

    public Child(String shellPrefix, String... args) throws IOException {
      this(shellPrefix, null, args);
    }

    /** {@code libraryDir}: where RocksDB's native library already lies, so the child need not unpack it to /tmp. */
    public Child(String shellPrefix, Path libraryDir, String... args) throws IOException {
      this(shellPrefix, List.of(), libraryDir, args);
    }

    /** A child started through {@code wrapper} (a command that runs its arguments: nsenter into a namespace). */
    public static Child through(List<String> wrapper, String... args) throws IOException {
      return new Child(null, wrapper, null, args);
    }

    private Child(String shellPrefix, List<String> wrapper, Path libraryDir, String... args) throws IOException {
      String java = ProcessHandle.current().info().command().orElse("java");
      String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
      List<String> cmd = new ArrayList<>(wrapper);
      cmd.addAll(List.of(java, "--enable-native-access=ALL-UNNAMED", "-Xmx512m",
          "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp));
      if (libraryDir != null) {
        cmd.add("-Djava.library.path=" + libraryDir);
      }
      cmd.add(CacheFaultMain.class.getName());
      cmd.addAll(List.of(args));
      ProcessBuilder pb;
      if (shellPrefix == null) {
        pb = new ProcessBuilder(cmd);
      } else {
        StringBuilder line = new StringBuilder(shellPrefix).append(" exec");
        for (String c : cmd) {
          line.append(" '").append(c.replace("'", "'\\''")).append('\'');
        }
        pb = new ProcessBuilder("bash", "-c", line.toString());
      }
      process = pb.redirectErrorStream(true).start();
      reader = Thread.ofVirtual().start(() -> {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
          for (String l = r.readLine(); l != null; l = r.readLine()) {
            lines.add(l);
          }
        } catch (IOException e) {
          // the process died
        }
      });
    }

    public void awaitLine(String prefix, long count) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (lines.stream().filter(l -> l.startsWith(prefix)).count() < count) {
        if (System.nanoTime() > deadline || !process.isAlive() && !reader.isAlive()) {
          throw new AssertionError("no '" + prefix + "' from the child; it said " + lines);
        }
        Thread.sleep(5);
      }
    }

    public int kill() throws InterruptedException {
      process.destroyForcibly(); // SIGKILL
      int code = process.waitFor();
      reader.join();
      return code;
    }

    public int await() throws InterruptedException {
      assertThat(process.waitFor(120, TimeUnit.SECONDS)).as("child finished").isTrue();
      reader.join();
      return process.exitValue();
    }

    List<Integer> committed() {
      return lines.stream().filter(l -> l.startsWith("committed ")).map(l -> Integer.parseInt(l.substring(10))).toList();
    }
  }

  public static void assertIntact(Path dir, List<Integer> committed, int size) throws Exception {
    try (CacheStore s = Fixtures.open(dir)) {
      VerifyReport r = s.verify(false);
      assertThat(r.problems()).as("verify after the fault").isEmpty();
      for (int n : committed) {
        assertThat(s.getArtifact(key(n, CPU))).as("committed entry " + n).hasValueSatisfying(
            a -> assertThat(a.bytes()).isEqualTo(bytes(n, size)));
      }
    }
  }

  @Test
  void killDuringALongSeriesOfWrites_losesNoCommittedEntry() throws Exception {
    Path dir = tmp.resolve("cache");
    Child c = new Child(null, "write", dir.toString(), "100000", "30000");
    c.awaitLine("committed ", 20 + random.nextInt(200));
    assertThat(c.kill()).isEqualTo(137);
    List<Integer> committed = c.committed();
    assertIntact(dir, committed, 30000);
    // and the cache keeps working: a writer can carry on where it stopped
    Child again = new Child(null, "write", dir.toString(), "5", "30000");
    assertThat(again.await()).isZero();
  }

  @Test
  void killDuringWritesOfChunkedValues_losesNoCommittedEntry_andLeavesNoOrphanChunks() throws Exception {
    Path dir = tmp.resolve("cache");
    int size = 300_000;
    Child c = new Child(null, "write", dir.toString(), "100000", Integer.toString(size), "4096"); // 74 chunks each
    c.awaitLine("committed ", 5 + random.nextInt(30));
    Thread.sleep(random.nextInt(20)); // anywhere in the next value's chunks
    assertThat(c.kill()).isEqualTo(137);
    assertIntact(dir, c.committed(), size);
    try (CacheStore s = Fixtures.open(dir)) {
      assertNoValueWithoutRecord(s);
    }
  }

  /** The chunks of a value whose writer was killed before its record was written go at the next writer's open. */
  @Test
  void killInTheMiddleOfABigChunkedValue_theNextWriterRemovesItsChunks() throws Exception {
    Path dir = tmp.resolve("cache");
    Child c = new Child(null, "half-a-value", dir.toString(), "200000", "1000");
    c.awaitLine("half", 1);
    c.kill();
    try (CacheStore r = CacheStore.open(dir, CacheStore.Mode.READ_ONLY, Duration.ZERO, m -> { })) {
      try (RocksDbStore.Cursor m = Internals.store(r).db.cursor(RocksDbStore.Cf.META, StoredValues.PENDING_PREFIX)) {
        assertThat(m.valid() && Keys.startsWith(m.key(), StoredValues.PENDING_PREFIX)).as("the killed writer's marker")
            .isTrue();
      }
      assertThat(Internals.store(r).db.get(RocksDbStore.Cf.ARTIFACTS, StoredValues.chunkKey(key(1, CPU).bytes(), 99)))
          .as("its 100th chunk").hasSize(1000);
      assertThat(r.artifactInfo(key(1, CPU))).isEmpty();
    }
    try (CacheStore s = Fixtures.open(dir)) {
      assertNoValueWithoutRecord(s);
      try (RocksDbStore.Cursor a = Internals.store(s).db.cursor(RocksDbStore.Cf.ARTIFACTS, null)) {
        assertThat(a.valid()).as("a chunk left").isFalse();
      }
      assertThat(s.verify(false).problems()).isEmpty();
      assertThat(s.graph(Fixtures.fp(1))).isPresent();
    }
  }

  @Test
  void killDuringAnImport_leavesAConsistentCache_andTheImportCanBeRepeated() throws Exception {
    Path source = tmp.resolve("source");
    Path bundle = tmp.resolve("b.tar.zst");
    int size = 400_000;
    try (CacheStore s = Fixtures.open(source)) {
      for (int n = 0; n < 300; n++) {
        Fixtures.graph(s, n);
        s.putArtifact(key(n, CPU), bytes(n, size), CompileInfo.of(1, ""));
      }
      s.exportBundle(bundle, ExportRequest.all());
    }
    Path dir = tmp.resolve("cache");
    try (CacheStore s = Fixtures.open(dir)) { // entries that were there before the import
      for (int n = 1000; n < 1010; n++) {
        Fixtures.graph(s, n);
        s.putArtifact(key(n, CPU), bytes(n, size), CompileInfo.of(1, ""));
      }
    }
    Child c = new Child(null, "import", dir.toString(), bundle.toString());
    c.awaitLine("started", 1);
    Thread.sleep(100 + random.nextInt(400)); // an import of this bundle takes longer, even without the write-ahead log
    c.kill();
    assertThat(c.lines).doesNotContain("done"); // it was killed mid-import, not after
    assertIntact(dir, java.util.stream.IntStream.range(1000, 1010).boxed().toList(), size);
    Child again = new Child(null, "import", dir.toString(), bundle.toString());
    assertThat(again.await()).as("second import: %s", again.lines).isZero();
    assertIntact(dir, java.util.stream.IntStream.range(0, 300).boxed().toList(), size);
  }

  /**
   * A reader after a writer was killed early in the first import into an empty directory sees what
   * that writer committed: the schema version (a logged, synced write) and whatever batches its
   * flushes persisted, exactly as the next writer will. (Issue #10: a secondary instance saw no
   * schema version, "not an xlac cache", until a writer happened to open the cache.)
   */
  @Test
  void killEarlyInTheFirstImportIntoAnEmptyDirectory_readersSeeWhatTheWriterCommitted() throws Exception {
    Path source = tmp.resolve("source");
    Path bundle = tmp.resolve("b.tar.zst");
    int size = 200_000;
    try (CacheStore s = Fixtures.open(source)) {
      for (int n = 0; n < 200; n++) {
        Fixtures.graph(s, n);
        s.putArtifact(key(n, CPU), bytes(n, size), CompileInfo.of(1, ""));
      }
      s.exportBundle(bundle, ExportRequest.all());
    }
    // Kills at several moments: as the database appears (before the schema version is written),
    // and 0.1 to 0.5 s into the import.
    for (int trial = 0; trial < 6; trial++) {
      Path dir = Files.createDirectories(tmp.resolve("cache" + trial));
      Child c = new Child(null, "import", dir.toString(), bundle.toString());
      if (trial == 0) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Files.exists(dir.resolve(RocksDbStore.DB_DIR).resolve("CURRENT")) && System.nanoTime() < deadline) {
          Thread.onSpinWait();
        }
      } else {
        c.awaitLine("started", 1);
        Thread.sleep(100L * trial - 50 + random.nextInt(100));
      }
      c.kill();
      assertThat(c.lines).as("killed mid-import, not after: %s", c.lines).doesNotContain("done");
      List<ListRow> read;
      try (CacheStore r = CacheStore.open(dir, CacheStore.Mode.READ_ONLY, Duration.ZERO, m -> { })) {
        int version = r.statistics().schemaVersion();
        assertThat(version).as("trial %d: a schema version, or none when the writer committed nothing", trial)
            .isIn(0, CacheStore.SCHEMA_VERSION);
        if (trial > 0) {
          assertThat(version).as("trial %d: the writer had written the schema version", trial)
              .isEqualTo(CacheStore.SCHEMA_VERSION);
        }
        read = r.list(ListQuery.all());
        assertThat(r.verify(false).problems()).isEmpty();
      }
      try (CacheStore w = Fixtures.open(dir)) {
        assertThat(read).as("trial %d: what the reader listed is what the next writer finds", trial)
            .isEqualTo(w.list(ListQuery.all()));
      }
    }
  }

  /**
   * Import batches skip the write-ahead log and become durable through flushes that are atomic
   * across the column families. With tiny memtables, flushes happen all through the import, and
   * the kill lands after several of them: what they persisted must be whole entries, with their
   * records, values, index entries and totals in step (verify), and no value without its record.
   */
  @Test
  void killAfterFlushesDuringAnImport_leavesWholeEntriesOnly() throws Exception {
    Path source = tmp.resolve("source");
    Path bundle = tmp.resolve("b.tar.zst");
    int size = 100_000;
    int count = 400;
    try (CacheStore s = Fixtures.open(source)) {
      for (int n = 0; n < count; n++) {
        Fixtures.graph(s, n);
        s.putArtifact(key(n, CPU), bytes(n, size), CompileInfo.of(1, "log " + n));
      }
      s.exportBundle(bundle, ExportRequest.all());
    }
    Path dir = tmp.resolve("cache");
    try (CacheStore s = Fixtures.open(dir)) {
      for (int n = 1000; n < 1010; n++) {
        Fixtures.graph(s, n);
        s.putArtifact(key(n, CPU), bytes(n, size), CompileInfo.of(1, ""));
      }
    }
    java.util.Set<String> blobs = new java.util.HashSet<>(blobFiles(dir));
    int wanted = blobs.size() + 3 + random.nextInt(20); // each flush of the artifacts family makes a new blob file
    Child c = new Child(null, "import-flushing", dir.toString(), bundle.toString());
    c.awaitLine("started", 1);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (blobs.size() < wanted && c.process.isAlive() && System.nanoTime() < deadline) {
      blobs.addAll(blobFiles(dir)); // names, not a count: compaction may delete files it has relocated
      Thread.sleep(2);
    }
    c.kill();
    assertThat(c.lines).as("killed mid-import, not after: %s", c.lines).doesNotContain("done");
    assertIntact(dir, java.util.stream.IntStream.range(1000, 1010).boxed().toList(), size);
    List<Integer> imported = new ArrayList<>();
    try (CacheStore s = Fixtures.open(dir)) {
      for (int n = 0; n < count; n++) {
        if (s.artifactInfo(key(n, CPU)).isPresent()) {
          imported.add(n);
        }
      }
      assertNoValueWithoutRecord(s);
    }
    assertThat(imported).as("entries the flushes persisted before the kill").isNotEmpty();
    assertIntact(dir, imported, size);
    Child again = new Child(null, "import", dir.toString(), bundle.toString());
    assertThat(again.await()).as("second import: %s", again.lines).isZero();
    assertIntact(dir, java.util.stream.IntStream.range(0, count).boxed().toList(), size);
  }

  /**
   * Recovery replays the write-ahead log on top of what was flushed. A logged batch (whose totals
   * count the unlogged entries before it) must therefore not reach the log while those entries are
   * only in memory: the logged write flushes them first.
   */
  @Test
  void killAfterALoggedWriteThatFollowsUnloggedOnes_keepsBoth() throws Exception {
    Path dir = tmp.resolve("cache");
    Child c = new Child(null, "unlogged-then-logged", dir.toString());
    c.awaitLine("committed 100", 1);
    c.kill();
    List<Integer> expected = new ArrayList<>(java.util.stream.IntStream.range(0, 50).boxed().toList());
    expected.add(100);
    assertIntact(dir, expected, 2000);
  }

  public static List<String> blobFiles(Path cache) throws IOException {
    try (var files = Files.list(cache.resolve(RocksDbStore.DB_DIR))) {
      return files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".blob")).toList();
    } catch (java.nio.file.NoSuchFileException e) {
      return List.of(); // a file deleted while listed
    }
  }

  /**
   * A value whose record a crash lost would be invisible to verify; look for one directly (a chunk
   * counts as its value's). After a writer's open no pending marker is left either.
   */
  public static void assertNoValueWithoutRecord(CacheStore s) {
    for (RocksDbStore.Cf[] pair : new RocksDbStore.Cf[][] {{RocksDbStore.Cf.GRAPHS, RocksDbStore.Cf.GRAPH_META},
        {RocksDbStore.Cf.ARTIFACTS, RocksDbStore.Cf.ARTIFACT_META}, {RocksDbStore.Cf.LOGS, RocksDbStore.Cf.ARTIFACT_META},
        {RocksDbStore.Cf.REQUESTS, RocksDbStore.Cf.REQUEST_META},
        {RocksDbStore.Cf.EXECUTABLES, RocksDbStore.Cf.REQUEST_META}}) {
      int keyBytes = pair[1] == RocksDbStore.Cf.ARTIFACT_META ? Keys.ARTIFACT : Keys.DIGEST;
      try (RocksDbStore.Cursor c = Internals.store(s).db.cursor(pair[0], null)) {
        for (; c.valid(); c.next()) {
          byte[] key = java.util.Arrays.copyOf(c.key(), keyBytes); // a chunk's key: its value's key and an index
          assertThat(Internals.store(s).db.get(pair[1], key)).as("record in %s of a value in %s", pair[1], pair[0]).isNotNull();
        }
      }
    }
    try (RocksDbStore.Cursor c = Internals.store(s).db.cursor(RocksDbStore.Cf.META, StoredValues.PENDING_PREFIX)) {
      assertThat(c.valid() && Keys.startsWith(c.key(), StoredValues.PENDING_PREFIX)).as("a pending marker left").isFalse();
    }
  }

  @Test
  void killDuringAPrune_keepsEverythingItWasNotRemoving() throws Exception {
    Path dir = tmp.resolve("cache");
    int size = 2_000;
    int count = 30_000;
    long keepBytes;
    List<Integer> newest = new ArrayList<>();
    try (CacheStore s = Fixtures.open(dir)) {
      Fixtures.bulk(s, 0, count, size);
      keepBytes = s.statistics().storedBytes() / 10;
      PruneResult plan = s.prune(new PruneRequest(java.util.OptionalLong.of(keepBytes), null, false, null, null, true,
          false));
      java.util.Set<Dev> removed = new java.util.HashSet<>();
      plan.removed().forEach(r -> removed.add(new Dev(r.fingerprint().value())));
      for (int n = 0; n < count; n++) {
        if (!removed.contains(new Dev(Fixtures.fp(n).value()))) {
          newest.add(n);
        }
      }
    }
    assertThat(newest).isNotEmpty();
    Child c = new Child(null, "prune", dir.toString(), Long.toString(keepBytes));
    c.awaitLine("started", 1);
    Thread.sleep(20 + random.nextInt(200));
    c.kill();
    assertThat(c.lines).as("killed mid-prune, not after").doesNotContain("done");
    assertIntact(dir, newest, size);
  }

  record Dev(String fp) {}

  @Test
  void aFullDisk_givesAClearErrorAndLeavesTheCacheIntact() throws Exception {
    Path dir = tmp.resolve("cache");
    // RocksDB unpacks a 17 MB native library at start-up; give the child one unpacked beforehand.
    Path lib = Files.createDirectories(tmp.resolve("lib"));
    try (var in = org.rocksdb.RocksDB.class.getResourceAsStream("/librocksdbjni-linux64.so")) {
      org.junit.jupiter.api.Assumptions.assumeTrue(in != null, "RocksDB ships no linux64 library for this platform");
      Files.copy(in, lib.resolve("librocksdbjni-linux64.so"));
    }
    // RLIMIT_FSIZE of 8 MiB: the write-ahead log reaches it after a few hundred kB entries, and the
    // write fails with EFBIG (SIGXFSZ is ignored, as the JVM does anyway).
    Child c = new Child("trap '' XFSZ; ulimit -f 8192;", lib, "write", dir.toString(), "1000", "300000");
    int code = c.await();
    assertThat(code).as("exit code; output %s", c.lines).isEqualTo(3);
    assertThat(c.lines).anySatisfy(l -> assertThat(l).startsWith("xlac: cache " + dir).contains("disk full"));
    assertThat(c.committed()).isNotEmpty();
    assertIntact(dir, c.committed(), 300000);
  }

  @Test
  void twoWritersAtOnce_oneWinsAndTheOtherIsToldWho() throws Exception {
    Path dir = tmp.resolve("cache");
    try (CacheStore s = Fixtures.open(dir)) {
      Fixtures.graph(s, 1);
    }
    Child a = new Child(null, "hold", dir.toString(), "3000");
    Child b = new Child(null, "hold", dir.toString(), "3000");
    int codeA = a.await();
    int codeB = b.await();
    assertThat(List.of(codeA, codeB)).containsExactlyInAnyOrder(0, 3);
    Child winner = codeA == 0 ? a : b;
    Child loser = codeA == 0 ? b : a;
    assertThat(loser.lines).anySatisfy(l -> assertThat(l)
        .contains("is locked by another xlac process (pid " + winner.process.pid())
        .contains(CacheFaultMain.class.getName() + " hold " + dir));
    assertThat(loser.lines).doesNotContain("locked");
    try (CacheStore s = Fixtures.open(dir)) {
      assertThat(s.verify(false).clean()).isTrue();
      assertThat(s.statistics().graphs()).isEqualTo(2);
    }
  }

  public static boolean exists(Path p) {
    return Files.exists(p);
  }
}
