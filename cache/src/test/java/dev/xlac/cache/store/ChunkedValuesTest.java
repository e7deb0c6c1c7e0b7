package dev.xlac.cache.store;

import dev.xlac.cache.Internals;
import static dev.xlac.cache.Fixtures.CPU;
import static dev.xlac.cache.Fixtures.bytes;
import static dev.xlac.cache.Fixtures.fp;
import static dev.xlac.cache.Fixtures.key;
import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.ExportRequest;
import dev.xlac.cache.Fixtures;
import dev.xlac.cache.VerifyReport;
import dev.xlac.cache.store.RocksDbStore.Cf;
import dev.xlac.core.neuron.NeuronName;
import java.io.ByteArrayOutputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.WriteBatch;

/**
 * Schema version 3: values larger than the chunk size are stored in chunks (made small here with
 * {@link StoredValues#chunkBytesForTests}), written chunk by chunk, read, streamed, probed, replaced
 * and removed like whole ones; and one real value over 8 MiB.
 */
public class ChunkedValuesTest {
  private static final int CHUNK = 1000;

  @TempDir
  Path tmp;

  @BeforeEach
  void smallChunks() {
    StoredValues.chunkBytesForTests = CHUNK;
  }

  @AfterEach
  void realChunks() {
    StoredValues.chunkBytesForTests = 0;
  }

  public static CacheStore open(Path dir, List<String> notices) throws InterruptedException {
    return CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO, notices::add);
  }

  /** The keys stored under {@code key} in {@code cf}: the key itself and its chunks. */
  public static List<byte[]> keysOf(CacheStore s, Cf cf, byte[] key) {
    List<byte[]> out = new ArrayList<>();
    try (RocksDbStore.Cursor c = Internals.store(s).db.cursor(cf, key)) {
      for (; c.valid() && Keys.startsWith(c.key(), key); c.next()) {
        out.add(c.key());
      }
    }
    return out;
  }

  public static String text(long seed, int length) {
    Random r = new Random(seed);
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < length; i++) {
      b.append((char) ('a' + r.nextInt(26)));
    }
    return b.toString();
  }

  /**
   * Graph {@code n}'s real module ({@link Fixtures#module}, so a bundle of it passes import's checks)
   * with 6,000 random letters of source metadata: the same fingerprint, a zstd form of several chunks.
   */
  public static byte[] bigModule(int n) throws Exception {
    var m = dev.xlac.hlo.proto.HloProtos.HloModuleProto.parseFrom(Fixtures.module(n)).toBuilder();
    var instruction = m.getComputationsBuilder(0).getInstructionsBuilder(0);
    instruction.setMetadata(instruction.getMetadata().toBuilder().setSourceFile(text(3, 6_000)));
    return m.build().toByteArray();
  }

  @Test
  void chunkedValues_roundTripThroughEveryReadAndABundle_andLeaveNothingWhenRemoved() throws Exception {
    Path dir = tmp.resolve("cache");
    byte[] module = bigModule(1); // its zstd form is chunked too
    byte[] art = bytes(4, 10_500);
    String log = text(5, 20_000);
    List<String> notices = new ArrayList<>();
    try (CacheStore s = open(dir, notices)) {
      s.putGraph(fp(1), "jit_g1", module, "test");
      s.putArtifact(key(1, CPU), art, CompileInfo.of(2, log));
      byte[] kb = key(1, CPU).bytes();
      assertThat(keysOf(s, Cf.ARTIFACTS, kb)).as("11 chunks, no whole value").hasSize(11)
          .allSatisfy(k -> assertThat(k).hasSize(Keys.ARTIFACT + 4));
      assertThat(keysOf(s, Cf.GRAPHS, fp(1).digest())).hasSizeGreaterThan(1);
      assertThat(keysOf(s, Cf.LOGS, kb)).hasSizeGreaterThan(1);

      assertThat(s.readGraph(fp(1))).hasValue(module);
      assertThat(s.getArtifact(key(1, CPU))).hasValueSatisfying(a -> assertThat(a.bytes()).isEqualTo(art));
      assertThat(s.lookup(key(1, CPU))).hasValueSatisfying(i -> assertThat(i.bytes()).isEqualTo(art.length));
      assertThat(s.log(key(1, CPU))).isEqualTo(log);
      ByteArrayOutputStream streamed = new ByteArrayOutputStream();
      assertThat(s.readArtifact(key(1, CPU), streamed)).isTrue();
      assertThat(streamed.toByteArray()).isEqualTo(art);
      assertThat(s.verify(false).problems()).isEmpty();
      s.exportBundle(tmp.resolve("b.tar.zst"), ExportRequest.all());

      // replaced by a shorter chunked value, then by a whole one: no chunk of the old value stays
      byte[] shorter = bytes(6, 3_500);
      s.putArtifact(key(1, CPU), shorter, CompileInfo.of(1, ""));
      assertThat(keysOf(s, Cf.ARTIFACTS, kb)).hasSize(4);
      assertThat(keysOf(s, Cf.LOGS, kb)).isEmpty();
      assertThat(s.getArtifact(key(1, CPU))).hasValueSatisfying(a -> assertThat(a.bytes()).isEqualTo(shorter));
      byte[] small = bytes(7, 900);
      s.putArtifact(key(1, CPU), small, CompileInfo.of(1, ""));
      assertThat(keysOf(s, Cf.ARTIFACTS, kb)).singleElement().isEqualTo(kb);
      assertThat(s.getArtifact(key(1, CPU))).hasValueSatisfying(a -> assertThat(a.bytes()).isEqualTo(small));
      s.putArtifact(key(1, CPU), art, CompileInfo.of(1, ""));
      assertThat(keysOf(s, Cf.ARTIFACTS, kb)).hasSize(11);
      assertThat(s.getArtifact(key(1, CPU))).hasValueSatisfying(a -> assertThat(a.bytes()).isEqualTo(art));
      assertThat(s.verify(false).problems()).isEmpty();

      s.remove(List.of(fp(1)));
      for (Cf cf : List.of(Cf.GRAPHS, Cf.ARTIFACTS, Cf.LOGS)) {
        try (RocksDbStore.Cursor c = Internals.store(s).db.cursor(cf, null)) {
          assertThat(c.valid()).as("a key left in %s", cf).isFalse();
        }
      }
      CacheFaultTest.assertNoValueWithoutRecord(s);
    }
    assertThat(notices).isEmpty();

    Path other = tmp.resolve("other");
    try (CacheStore s = open(other, notices)) {
      s.importBundle(tmp.resolve("b.tar.zst"));
      assertThat(s.readGraph(fp(1))).hasValue(module);
      assertThat(s.getArtifact(key(1, CPU))).hasValueSatisfying(a -> assertThat(a.bytes()).isEqualTo(art));
      assertThat(s.log(key(1, CPU))).isEqualTo(log);
      assertThat(s.verify(false).problems()).isEmpty();
    }
    try (CacheStore r = CacheStore.open(other, CacheStore.Mode.READ_ONLY, Duration.ZERO, notices::add)) {
      assertThat(r.getArtifact(key(1, CPU))).hasValueSatisfying(a -> assertThat(a.bytes()).isEqualTo(art));
    }
    assertThat(notices).isEmpty();
  }

  @Test
  void aMissingOrChangedChunk_isDamage_missingForEveryRead_changedForTheChecksum() throws Exception {
    List<String> notices = new ArrayList<>();
    byte[] art = bytes(4, 10_500);
    try (CacheStore s = open(tmp.resolve("cache"), notices)) {
      Fixtures.graph(s, 1);
      Fixtures.graph(s, 2);
      s.putArtifact(key(1, CPU), art, CompileInfo.of(1, ""));
      s.putArtifact(key(2, CPU), art, CompileInfo.of(1, ""));
      byte[] changed = bytes(9, CHUNK);
      try (WriteBatch b = new WriteBatch()) {
        Internals.store(s).db.delete(b, Cf.ARTIFACTS, StoredValues.chunkKey(key(1, CPU).bytes(), 5));
        Internals.store(s).db.put(b, Cf.ARTIFACTS, StoredValues.chunkKey(key(2, CPU).bytes(), 5), changed);
        Internals.store(s).db.write(b, true);
      }
      Internals.store(s).invalidateMemory();
      assertThat(s.lookup(key(1, CPU))).as("a chunk missing: not a hit").isEmpty();
      assertThat(s.getArtifact(key(1, CPU))).isEmpty();
      assertThat(s.lookup(key(2, CPU))).as("a changed chunk of the right length passes the CRC checks of a lookup")
          .isPresent();
      assertThat(s.getArtifact(key(2, CPU))).as("the SHA-256 catches it").isEmpty();
      assertThat(notices).hasSize(3);
      assertThat(notices.get(0)).contains("its bytes are missing", "compiled again");
      assertThat(notices.get(2)).contains("its bytes fail their checksum");
      VerifyReport r = s.verify(false);
      assertThat(r.problems()).extracting(VerifyReport.Problem::description)
          .containsExactlyInAnyOrder("its bytes are missing", "its bytes fail their checksum");
      s.verify(true);
      assertThat(s.verify(false).clean()).isTrue();
      CacheFaultTest.assertNoValueWithoutRecord(s);
    }
  }

  @Test
  void aValueWriterClosedWithoutItsRecord_removesItsChunksAndMarker() throws Exception {
    try (CacheStore s = open(tmp.resolve("cache"), new ArrayList<>())) {
      Fixtures.graph(s, 1);
      byte[] kb = key(1, CPU).bytes();
      try (StoredValues.ValueWriter w = Internals.store(s).values.writer(Cf.ARTIFACTS, kb, 10_000, true)) {
        w.write(bytes(1, 10_000), 0, 6_500);
        assertThat(keysOf(s, Cf.ARTIFACTS, kb)).hasSize(6);
      }
      assertThat(keysOf(s, Cf.ARTIFACTS, kb)).isEmpty();
      CacheFaultTest.assertNoValueWithoutRecord(s);
    }
  }

  /** What a bundle import will do with an entry it streams: write it in pieces, then commit the record. */
  @Test
  void aValueWrittenInPieces_isCommittedByTheRecordsBatch() throws Exception {
    byte[] art = bytes(8, 7_777);
    try (CacheStore s = open(tmp.resolve("cache"), new ArrayList<>())) {
      Fixtures.graph(s, 1);
      byte[] kb = key(1, CPU).bytes();
      try (StoredValues.ValueWriter w = Internals.store(s).values.writer(Cf.ARTIFACTS, kb, art.length, false)) {
        for (int off = 0; off < art.length; off += 333) {
          w.write(art, off, Math.min(333, art.length - off));
        }
        long now = Internals.store(s).clock().millis();
        Internals.store(s).commitUnlogged(txn -> {
          txn.putIdentity(CPU);
          txn.writeArtifact(kb, new Records.ArtifactRecord(EntryStatus.COMPILED, art.length, Checksums.sha256(art), 5,
              now, now, null, null, 0, 0, null), null, null);
          txn.commitValue(w);
          return null;
        });
      }
      Internals.store(s).flushUnlogged();
      assertThat(s.getArtifact(key(1, CPU))).hasValueSatisfying(a -> assertThat(a.bytes()).isEqualTo(art));
      assertThat(s.verify(false).problems()).isEmpty();
      CacheFaultTest.assertNoValueWithoutRecord(s);
    }
  }

  @Test
  void aValueOverEightMebibytes_isStoredInChunks_andReadWholeOrStreamed() throws Exception {
    StoredValues.chunkBytesForTests = 0;
    byte[] art = bytes(11, StoredValues.CHUNK_BYTES + 1_234_567);
    try (CacheStore s = open(tmp.resolve("cache"), new ArrayList<>())) {
      Fixtures.graph(s, 1);
      s.putArtifact(key(1, CPU), art, CompileInfo.of(1, ""));
      assertThat(keysOf(s, Cf.ARTIFACTS, key(1, CPU).bytes())).hasSize(2);
      Internals.store(s).invalidateMemory();
      assertThat(s.lookup(key(1, CPU))).isPresent();
      assertThat(s.getArtifact(key(1, CPU))).hasValueSatisfying(a -> assertThat(a.bytes()).isEqualTo(art));
      ByteArrayOutputStream streamed = new ByteArrayOutputStream();
      assertThat(s.readArtifact(key(1, CPU), streamed)).isTrue();
      assertThat(streamed.toByteArray()).isEqualTo(art);
      assertThat(s.verify(false).problems()).isEmpty();
      s.exportBundle(tmp.resolve("big.tar.zst"), ExportRequest.all());
    }
    try (CacheStore s = open(tmp.resolve("other"), new ArrayList<>())) {
      s.importBundle(tmp.resolve("big.tar.zst"));
      assertThat(s.getArtifact(key(1, CPU))).hasValueSatisfying(a -> assertThat(a.bytes()).isEqualTo(art));
    }
  }
  @Test
  void materialize_streamsAChunkedNeff_andLeavesAFileWithTheSameBytesAlone() throws Exception {
    NeuronName name = new NeuronName("neuronxcc-2.15.128.0+56dc5a86", "MODULE_1+abcdef01", "[\"--target=trn1\"]");
    ArtifactKey key = new ArtifactKey(fp(1), dev.xlac.core.neuron.NeuronxCcIdentity.forCacheEntry(name.versionDirectory(),
        name.compileFlags()));
    byte[] neff = bytes(12, 9_999);
    Path out = tmp.resolve("neuron");
    List<String> problems = new ArrayList<>();
    try (CacheStore s = open(tmp.resolve("cache"), problems)) {
      Fixtures.graph(s, 1);
      s.addNeuronName(fp(1), name);
      s.putArtifact(key, neff, CompileInfo.of(1, ""));
      assertThat(keysOf(s, Cf.ARTIFACTS, key.bytes())).hasSize(10);
      var first = dev.xlac.cache.layout.NeuronCacheLayout.materialize(s, out, problems::add);
      Path file = out.resolve(name.versionDirectory()).resolve(name.moduleDirectory()).resolve("model.neff");
      assertThat(first.compiled()).isEqualTo(1);
      assertThat(java.nio.file.Files.readAllBytes(file)).isEqualTo(neff);
      var again = dev.xlac.cache.layout.NeuronCacheLayout.materialize(s, out, problems::add);
      assertThat(again.filesWritten()).isZero();
      byte[] changed = neff.clone();
      changed[9_000] ^= 1;
      java.nio.file.Files.write(file, changed);
      var mended = dev.xlac.cache.layout.NeuronCacheLayout.materialize(s, out, problems::add);
      assertThat(mended.filesWritten()).isEqualTo(1);
      assertThat(java.nio.file.Files.readAllBytes(file)).isEqualTo(neff);
    }
    assertThat(problems).isEmpty();
  }
}
