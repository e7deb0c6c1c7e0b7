package dev.xlac.cache.bundle;

import dev.xlac.cache.ImportResult;
import dev.xlac.cache.Internals;
import static dev.xlac.cache.Fixtures.CPU;
import static dev.xlac.cache.store.ChunkedValuesTest.bigModule;
import static dev.xlac.cache.store.ChunkedValuesTest.keysOf;
import static dev.xlac.cache.store.ChunkedValuesTest.text;
import static dev.xlac.cache.Fixtures.TRN1;
import static dev.xlac.cache.Fixtures.bytes;
import static dev.xlac.cache.Fixtures.fp;
import static dev.xlac.cache.Fixtures.key;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.BundleLimits;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.ExportRequest;
import dev.xlac.cache.Fixtures;
import dev.xlac.cache.ImportLimit;
import dev.xlac.cache.ImportRequest;
import dev.xlac.cache.bundle.BundleTest.Entry;
import dev.xlac.cache.store.CacheFaultTest;
import dev.xlac.cache.store.StoreInternals;
import dev.xlac.cache.store.Keys;
import dev.xlac.cache.store.Records;
import dev.xlac.cache.store.RocksDbStore;
import dev.xlac.cache.store.RocksDbStore.Cf;
import dev.xlac.cache.store.StoredValues;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Import streams values larger than a chunk (made small here with
 * {@code StoreInternals.chunkBytes}) into the cache a piece at a time, and bounds what a
 * bundle may unpack to ({@link ImportLimit}). The real sizes (a 2e9-byte artifact in a small heap,
 * a bundle larger than a small filesystem) are tested through the CLI, in child JVMs
 * ({@code cli/.../CacheImportLargeBundleTest}).
 */
class BundleStreamingTest {
  private static final int CHUNK = 1000;

  @TempDir
  Path tmp;
  byte[] module;
  byte[] art;
  String log;
  String failureLog;
  Path bundle;

  @BeforeEach
  void aBundleWithLargeValues() throws Exception {
    StoreInternals.chunkBytes(CHUNK);
    module = bigModule(1); // its zstd form is several chunks
    art = bytes(4, 10_500);
    log = text(5, 20_000);
    failureLog = text(6, 30_000);
    bundle = tmp.resolve("large.tar.zst");
    try (CacheStore s = Fixtures.open(tmp.resolve("source"))) {
      s.putGraph(fp(1), "jit_g1", module, "test");
      s.putArtifact(key(1, CPU), art, CompileInfo.of(2, log));
      Fixtures.graph(s, 2);
      s.recordFailure(key(2, TRN1), "compile-error", "it failed", failureLog);
      s.exportBundle(bundle, ExportRequest.all());
    }
  }

  @AfterEach
  void realChunks() {
    StoreInternals.chunkBytes(0);
  }

  private static void assertNoPendingMarker(CacheStore s) {
    try (RocksDbStore.Cursor c = StoreInternals.db(Internals.store(s)).cursor(Cf.META, StoredValues.PENDING_PREFIX)) {
      assertThat(c.valid() && Keys.startsWith(c.key(), StoredValues.PENDING_PREFIX)).as("a pending marker left").isFalse();
    }
  }

  private void assertHoldsTheBundle(CacheStore t) throws IOException {
    assertThat(t.readGraph(fp(1))).hasValue(module);
    ByteArrayOutputStream streamed = new ByteArrayOutputStream();
    assertThat(t.readArtifact(key(1, CPU), streamed)).isTrue();
    assertThat(streamed.toByteArray()).isEqualTo(art);
    assertThat(t.log(key(1, CPU))).isEqualTo(log);
    assertThat(t.log(key(2, TRN1))).isEqualTo(failureLog);
    assertThat(t.verify(false).problems()).isEmpty();
    assertNoPendingMarker(t);
    // chunks only, no whole value beside them, and no chunk beyond the value's
    assertThat(keysOf(t, Cf.ARTIFACTS, key(1, CPU).bytes())).hasSize(11);
    assertThat(keysOf(t, Cf.LOGS, key(1, CPU).bytes())).hasSize(chunks(Internals.store(t).readArtifactRecord(key(1, CPU).bytes())
        .logStoredBytes()));
  }

  private static int chunks(long size) {
    return (int) ((size + CHUNK - 1) / CHUNK);
  }

  @Test
  void import_streamsGraphsArtifactsAndLogsLargerThanAChunk_byteIdentical() throws Exception {
    try (CacheStore t = Fixtures.open(tmp.resolve("target"))) {
      ImportResult r = t.importBundle(bundle);
      assertThat(r.graphsAdded()).isEqualTo(2);
      assertThat(r.artifactsAdded()).isEqualTo(1);
      assertThat(r.failuresAdded()).isEqualTo(1);
      assertHoldsTheBundle(t);
      // Again: nothing is written, nothing left behind.
      ImportResult again = t.importBundle(bundle);
      assertThat(again.graphsPresent()).isEqualTo(2);
      assertThat(again.artifactsPresent()).isEqualTo(2);
      assertThat(again.graphsAdded() + again.artifactsAdded() + again.failuresAdded()).isZero();
      assertHoldsTheBundle(t);
    }
  }

  @Test
  void import_aCompiledArtifactReplacingAFailureWithAChunkedLog_leavesNoChunkOfTheOldLog() throws Exception {
    try (CacheStore t = Fixtures.open(tmp.resolve("target"))) {
      t.putGraph(fp(1), "jit_g1", module, "test");
      t.recordFailure(key(1, CPU), "compile-error", "it failed here", text(9, 90_000)); // more chunks than the new log
      assertThat(keysOf(t, Cf.LOGS, key(1, CPU).bytes())).hasSizeGreaterThan(chunks(log.length() / 3));
      ImportResult r = t.importBundle(bundle);
      assertThat(r.artifactsAdded()).isEqualTo(1);
      assertHoldsTheBundle(t);
      assertThat(t.artifactInfo(key(1, CPU)).orElseThrow().status()).isEqualTo(EntryStatus.COMPILED);
    }
  }

  @Test
  void import_aStreamedEntryThatChangedBetweenThePasses_leavesNoChunkAndNoRecord() throws Exception {
    List<Entry> entries = Forgery.entries(bundle);
    List<Entry> changed = new ArrayList<>();
    for (Entry e : entries) {
      if (e.name().startsWith("artifacts/")) {
        byte[] d = e.data().clone();
        d[d.length - 10] ^= 1; // in the last chunk: the chunks before it are written when the change is found
        e = new Entry(e.name(), d, e.type(), null);
      }
      changed.add(e);
    }
    Path changedFile = Forgery.write(tmp.resolve("changed.tar.zst"), changed);
    try (CacheStore t = Fixtures.open(tmp.resolve("target"))) {
      BundleImporter swapping = new BundleImporter(Internals.store(t), BundleLimits.DEFAULT, BundleImporter.Trust.NONE, () -> {
        try {
          Files.copy(changedFile, bundle, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
      assertThatThrownBy(() -> swapping.importBundle(bundle)).isInstanceOf(XlacException.class)
          .hasMessageContaining("changed while being imported").hasMessageContaining("is not what was checked");
      assertThat(t.artifactInfo(key(1, CPU))).isEmpty();
      assertThat(keysOf(t, Cf.ARTIFACTS, key(1, CPU).bytes())).isEmpty();
      assertThat(keysOf(t, Cf.LOGS, key(1, CPU).bytes())).isEmpty();
      assertNoPendingMarker(t);
      assertThat(t.verify(false).problems()).isEmpty();
    }
  }

  @Test
  void import_aCompiledArtifactsLogAfterItsArtifact_isRefused() throws Exception {
    List<Entry> entries = new ArrayList<>(Forgery.entries(bundle));
    int logAt = -1;
    for (int i = 0; i < entries.size(); i++) {
      if (entries.get(i).name().equals("logs/" + Keys.hex(fp(1).digest()) + "." + CPU.digest() + ".log.zst")) {
        logAt = i;
      }
    }
    assertThat(logAt).isPositive();
    entries.add(logAt + 1, entries.remove(logAt)); // after its artifact
    Path swapped = Forgery.write(tmp.resolve("log-last.tar.zst"), entries);
    try (CacheStore t = Fixtures.open(tmp.resolve("target"))) {
      assertThatThrownBy(() -> t.importBundle(swapped)).isInstanceOf(XlacException.class)
          .hasMessageContaining("follows its artifact").hasMessageContaining("nothing was imported");
      assertThat(t.statistics().graphs()).isZero();
    }
  }

  @Test
  void import_withChunkedLogsBeyondThePendingLogLimit_imports() throws Exception {
    // Only logs stored whole wait in memory: a log of many chunks is written as it is read.
    BundleLimits small = new BundleLimits(1 << 20, 1000, 1 << 20, 1 << 20, 1 << 20, 4096, CHUNK, 4096);
    try (CacheStore t = Fixtures.open(tmp.resolve("target"))) {
      new BundleImporter(Internals.store(t), small).importBundle(bundle);
      assertHoldsTheBundle(t);
    }
  }

  /**
   * A kill -9 while an import streams large values (1 MiB artifacts in 64 KiB chunks, memtables of
   * 1 MiB so flushes persist chunks all along): the next writer finds whole entries only, each one's
   * bytes intact, no chunk without its record and no pending marker; the import, repeated, completes.
   */
  @Test
  void killWhileAnImportStreamsLargeValues_leavesWholeEntriesAndNoOrphanChunks() throws Exception {
    int chunk = 64 << 10;
    int size = 1 << 20;
    int count = 40;
    StoreInternals.chunkBytes(chunk);
    Path source = tmp.resolve("source-large");
    Path file = tmp.resolve("streamed.tar.zst");
    try (CacheStore s = Fixtures.open(source)) {
      for (int n = 0; n < count; n++) {
        Fixtures.graph(s, n);
        s.putArtifact(key(n, CPU), bytes(n, size), CompileInfo.of(1, text(n, 200_000))); // logs of several chunks
      }
      s.exportBundle(file, ExportRequest.all());
    }
    java.util.Random random = new java.util.Random();
    int imported = 0;
    for (int trial = 0; trial < 3; trial++) {
      Path dir = tmp.resolve("killed-" + trial);
      try (CacheStore s = Fixtures.open(dir)) {
        Fixtures.graph(s, 1000);
        s.putArtifact(key(1000, CPU), bytes(1000, size), CompileInfo.of(1, ""));
      }
      java.util.Set<String> blobs = new java.util.HashSet<>(CacheFaultTest.blobFiles(dir));
      int wanted = blobs.size() + 6 + random.nextInt(60); // the import makes about 160 blob files
      CacheFaultTest.Child c = new CacheFaultTest.Child(null, "import-streaming", dir.toString(), file.toString(),
          Integer.toString(chunk));
      c.awaitLine("started", 1);
      long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
      while (blobs.size() < wanted && c.process.isAlive() && System.nanoTime() < deadline) {
        blobs.addAll(CacheFaultTest.blobFiles(dir));
        Thread.sleep(2);
      }
      c.kill();
      assertThat(c.lines).as("killed mid-import, not after: %s", c.lines).doesNotContain("done");
      try (CacheStore s = Fixtures.open(dir)) { // a writer's open removes the chunks of values without a record
        CacheFaultTest.assertNoValueWithoutRecord(s);
        assertThat(s.verify(false).problems()).isEmpty();
        assertThat(s.getArtifact(key(1000, CPU))).hasValueSatisfying(a -> assertThat(a.bytes())
            .isEqualTo(bytes(1000, size)));
        int present = 0;
        for (int n = 0; n < count; n++) {
          if (s.artifactInfo(key(n, CPU)).isPresent()) {
            present++;
            int m = n;
            assertThat(s.getArtifact(key(n, CPU))).hasValueSatisfying(a -> assertThat(a.bytes()).isEqualTo(bytes(m, size)));
            assertThat(s.log(key(n, CPU))).isEqualTo(text(n, 200_000));
          }
        }
        imported += present;
      }
      CacheFaultTest.Child again = new CacheFaultTest.Child(null, "import-streaming", dir.toString(), file.toString(),
          Integer.toString(chunk));
      assertThat(again.await()).as("second import: %s", again.lines).isZero();
      try (CacheStore s = Fixtures.open(dir)) {
        assertThat(s.statistics().compiled()).isEqualTo(count + 1);
        assertThat(s.verify(false).problems()).isEmpty();
        CacheFaultTest.assertNoValueWithoutRecord(s);
      }
    }
    assertThat(imported).as("entries the killed imports had persisted, over the trials").isPositive();
  }

  @Test
  void getArtifact_ofAnArtifactOver2GiB_refusesAndSaysToStreamIt() throws Exception {
    // Values may exceed 2 GiB (chunks; a bundle imports them); one array cannot hold them.
    try (CacheStore s = Fixtures.open(tmp.resolve("target"))) {
      Fixtures.graph(s, 1);
      Internals.store(s).commit(true, txn -> {
        txn.putIdentity(CPU);
        txn.writeArtifact(key(1, CPU).bytes(), new Records.ArtifactRecord(EntryStatus.COMPILED, 3_000_000_000L,
            new byte[32], 1, 1, 1, null, null, 0, 0, null), null, null);
        return null;
      });
      assertThatThrownBy(() -> s.getArtifact(key(1, CPU))).isInstanceOf(XlacException.class)
          .hasMessageContaining("is 3000000000 bytes, more than one array can hold")
          .hasMessageContaining("read it as a stream");
    }
  }

  // ------------------------------------------------------------------ the limit on unpacked bytes

  private long unpackedBytes() throws IOException {
    List<Entry> entries = Forgery.entries(bundle);
    BundleManifest m = BundleManifest.parse(entries.getFirst().data(), BundleLimits.DEFAULT);
    return m.unpackedBytes(entries.getFirst().data().length, 0);
  }

  @Test
  void import_overTheLimitOnUnpackedBytes_isRefusedInOneLineByTheManifest() throws Exception {
    long total = unpackedBytes();
    assertThat(total).isGreaterThan(art.length + log.length() + failureLog.length()); // raw logs count
    try (CacheStore t = Fixtures.open(tmp.resolve("target"))) {
      ImportRequest request = ImportRequest.defaults().withMaxUnpacked(OptionalLong.of(total - 1));
      assertThatThrownBy(() -> t.importBundle(bundle, request)).isInstanceOf(XlacException.class)
          .hasMessageContaining("it unpacks to ").hasMessageContaining("(" + total + " bytes: its entries")
          .hasMessageContaining("over the limit on unpacked bytes").hasMessageContaining("given with --max-unpacked")
          .hasMessageContaining("nothing was imported").hasMessageNotContaining("\n")
          .extracting(e -> ((XlacException) e).exitCode()).isEqualTo(ExitCode.BAD_INPUT);
      assertThat(t.statistics().graphs()).isZero();
      assertThat(t.importBundle(bundle, ImportRequest.defaults().withMaxUnpacked(OptionalLong.of(total)))
          .graphsAdded()).isEqualTo(2);
    }
  }

  @Test
  void import_overTheCachesImportMaxUnpackedSetting_isRefused_unlessTheRequestRaisesIt() throws Exception {
    try (CacheStore t = Fixtures.open(tmp.resolve("target"))) {
      assertThat(t.importMaxUnpacked()).isEqualTo(ImportLimit.defaults());
      assertThat(ImportLimit.DEFAULT_BYTES).isEqualTo(1L << 40);
      t.setImportMaxUnpacked(ImportLimit.setting(OptionalLong.of(10_000)));
      assertThat(t.importMaxUnpacked().bytes()).hasValue(10_000);
      assertThatThrownBy(() -> t.importBundle(bundle)).isInstanceOf(XlacException.class)
          .hasMessageContaining("the cache's import-max-unpacked setting").hasMessageContaining("nothing was imported");
      assertThat(t.statistics().graphs()).isZero();
      assertThat(t.importBundle(bundle, ImportRequest.defaults().withMaxUnpacked(OptionalLong.empty())).graphsAdded())
          .isEqualTo(2);
      t.setImportMaxUnpacked(ImportLimit.setting(OptionalLong.empty()));
      assertThat(t.importMaxUnpacked().bytes()).isEmpty();
      t.setImportMaxUnpacked(ImportLimit.defaults());
      assertThat(t.importMaxUnpacked()).isEqualTo(ImportLimit.defaults());
    }
  }

  @Test
  void import_aManifestLargerThanTheLimit_isRefusedWhileReadingIt() throws Exception {
    try (CacheStore t = Fixtures.open(tmp.resolve("target"))) {
      ImportRequest request = ImportRequest.defaults().withMaxUnpacked(OptionalLong.of(100));
      assertThatThrownBy(() -> t.importBundle(bundle, request)).isInstanceOf(XlacException.class)
          .hasMessageContaining("it unpacks to more than 100 B (100 bytes), the limit on unpacked bytes")
          .hasMessageContaining("nothing was imported");
    }
  }

  @Test
  void manifestTotals_countEveryEntryAndTheDecompressedModulesAndLogs() throws Exception {
    List<Entry> entries = Forgery.entries(bundle);
    BundleManifest m = BundleManifest.parse(entries.getFirst().data(), BundleLimits.DEFAULT);
    long entryBytes = entries.stream().mapToLong(e -> e.data().length).sum();
    long raw = m.graphs.values().stream().mapToLong(BundleManifest.Graph::rawBytes).sum()
        + m.artifacts.values().stream().mapToLong(BundleManifest.Artifact::logRawBytes).sum();
    assertThat(m.unpackedBytes(entries.getFirst().data().length, 0)).isEqualTo(entryBytes + raw);
    assertThat(raw).isEqualTo(module.length + Fixtures.module(2).length + log.length() + failureLog.length());
  }
}
