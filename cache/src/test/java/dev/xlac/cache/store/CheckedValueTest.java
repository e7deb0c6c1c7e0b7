package dev.xlac.cache.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.Fixtures;
import dev.xlac.cache.store.RocksDbStore.Cf;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.WriteBatch;

/** {@link CheckedValue#read} over a real RocksDB: each outcome a stored value can have. */
class CheckedValueTest {
  private static final byte[] KEY = "k".getBytes(StandardCharsets.UTF_8);
  private static final byte[] SMALL = "a small value".getBytes(StandardCharsets.UTF_8);

  @TempDir
  Path dir;

  private RocksDbStore db;
  private StoredValues values;

  @BeforeEach
  void open() {
    db = RocksDbStore.open(dir, true);
    values = new StoredValues(db);
  }

  @AfterEach
  void close() {
    db.close();
  }

  private void store(Cf cf, byte[] key, byte[] value) {
    try (WriteBatch b = new WriteBatch()) {
      db.put(b, cf, key, value);
      db.write(b, true);
    }
  }

  @Test
  void read_matchingValue_isOkWithItsBytes() {
    store(Cf.ARTIFACTS, KEY, SMALL);

    CheckedValue r = CheckedValue.read(values, Cf.ARTIFACTS, KEY, SMALL.length, Checksums.sha256(SMALL));

    assertThat(r).isInstanceOfSatisfying(CheckedValue.Ok.class, ok -> assertThat(ok.bytes()).isEqualTo(SMALL));
  }

  @Test
  void read_blobSizedValue_isOk() {
    byte[] large = new byte[(int) RocksDbStore.MIN_BLOB_BYTES * 2];
    Arrays.fill(large, (byte) 7);
    store(Cf.GRAPHS, KEY, large);
    db.flushAll(); // into a blob file

    CheckedValue r = CheckedValue.read(values, Cf.GRAPHS, KEY, large.length, Checksums.sha256(large));

    assertThat(r).isInstanceOfSatisfying(CheckedValue.Ok.class, ok -> assertThat(ok.bytes()).isEqualTo(large));
  }

  @Test
  void read_absentKey_isMissing() {
    store(Cf.ARTIFACTS, KEY, SMALL);

    assertThat(CheckedValue.read(values, Cf.ARTIFACTS, "other".getBytes(StandardCharsets.UTF_8), SMALL.length,
        Checksums.sha256(SMALL))).isInstanceOf(CheckedValue.Missing.class);
    // another family, same key
    assertThat(CheckedValue.read(values, Cf.LOGS, KEY, SMALL.length, Checksums.sha256(SMALL)))
        .isInstanceOf(CheckedValue.Missing.class);
  }

  @Test
  void read_otherSizeThanRecorded_isMismatch_evenWithTheRightChecksum() {
    store(Cf.ARTIFACTS, KEY, SMALL);

    assertThat(CheckedValue.read(values, Cf.ARTIFACTS, KEY, SMALL.length + 1, Checksums.sha256(SMALL)))
        .isInstanceOf(CheckedValue.Mismatch.class);
  }

  @Test
  void read_otherChecksumThanRecorded_isMismatch() {
    store(Cf.ARTIFACTS, KEY, SMALL);
    byte[] wrong = Checksums.sha256(SMALL);
    wrong[0] ^= 1;

    assertThat(CheckedValue.read(values, Cf.ARTIFACTS, KEY, SMALL.length, wrong)).isInstanceOf(CheckedValue.Mismatch.class);
    assertThat(CheckedValue.read(values, Cf.ARTIFACTS, KEY, SMALL.length, null)).isInstanceOf(CheckedValue.Mismatch.class);
  }

  @Test
  void read_withoutARecordedSize_checksOnlyTheChecksum() {
    store(Cf.GRAPHS, KEY, SMALL);

    assertThat(CheckedValue.read(values, Cf.GRAPHS, KEY, CheckedValue.ANY_SIZE, Checksums.sha256(SMALL)))
        .isInstanceOf(CheckedValue.Ok.class);
    assertThat(CheckedValue.read(values, Cf.GRAPHS, KEY, CheckedValue.ANY_SIZE, Checksums.sha256(new byte[] {1})))
        .isInstanceOf(CheckedValue.Mismatch.class);
  }
  @Test
  void read_chunkedValue_isOkWithItsChunksJoined_andAChunkMissingIsMissing() {
    byte[] value = Fixtures.bytes(1, 2500);
    try (WriteBatch b = new WriteBatch()) {
      for (int i = 0; i < 3; i++) {
        db.put(b, Cf.ARTIFACTS, StoredValues.chunkKey(KEY, i), Arrays.copyOfRange(value, i * 1000, Math.min(2500, i * 1000 + 1000)));
      }
      db.write(b, true);
    }
    byte[] sha = Checksums.sha256(value);
    assertThat(CheckedValue.read(values, Cf.ARTIFACTS, KEY, value.length, sha))
        .isInstanceOfSatisfying(CheckedValue.Ok.class, ok -> assertThat(ok.bytes()).isEqualTo(value));
    assertThat(CheckedValue.read(values, Cf.ARTIFACTS, KEY, CheckedValue.ANY_SIZE, sha)).isInstanceOf(CheckedValue.Ok.class);
    assertThat(CheckedValue.probe(values, Cf.ARTIFACTS, KEY, value.length, sha)).isInstanceOf(CheckedValue.Ok.class);
    assertThat(CheckedValue.read(values, Cf.ARTIFACTS, KEY, value.length - 1, sha)).isInstanceOf(CheckedValue.Mismatch.class);
    assertThat(CheckedValue.probe(values, Cf.ARTIFACTS, KEY, value.length + 1, sha)).isInstanceOf(CheckedValue.Missing.class);

    try (WriteBatch b = new WriteBatch()) {
      db.delete(b, Cf.ARTIFACTS, StoredValues.chunkKey(KEY, 1));
      db.write(b, true);
    }
    assertThat(CheckedValue.read(values, Cf.ARTIFACTS, KEY, value.length, sha)).isInstanceOf(CheckedValue.Missing.class);
    assertThat(CheckedValue.probe(values, Cf.ARTIFACTS, KEY, value.length, sha)).isInstanceOf(CheckedValue.Missing.class);
  }

  @Test
  void stream_writesTheValue_andTellsAtTheEndWhetherItMatched() throws Exception {
    store(Cf.ARTIFACTS, KEY, SMALL);
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    assertThat(CheckedValue.stream(values, Cf.ARTIFACTS, KEY, SMALL.length, Checksums.sha256(SMALL), out))
        .isInstanceOf(CheckedValue.Ok.class);
    assertThat(out.toByteArray()).isEqualTo(SMALL);
    byte[] wrong = Checksums.sha256(SMALL);
    wrong[3] ^= 1;
    assertThat(CheckedValue.stream(values, Cf.ARTIFACTS, KEY, SMALL.length, wrong, java.io.OutputStream.nullOutputStream()))
        .isInstanceOf(CheckedValue.Mismatch.class);
    assertThat(CheckedValue.stream(values, Cf.ARTIFACTS, "x".getBytes(StandardCharsets.UTF_8), 1, wrong,
        java.io.OutputStream.nullOutputStream())).isInstanceOf(CheckedValue.Missing.class);
  }

  private byte[] blob(long seed) {
    byte[] large = Fixtures.bytes(seed, (int) RocksDbStore.MIN_BLOB_BYTES * 2);
    store(Cf.ARTIFACTS, KEY, large);
    db.flushAll(); // into a blob file
    return large;
  }

  private java.util.List<Path> blobFiles() throws Exception {
    try (var files = java.nio.file.Files.list(dir.resolve(RocksDbStore.DB_DIR))) {
      return files.filter(p -> p.toString().endsWith(".blob")).toList();
    }
  }

  @Test
  void probeAndRead_ofABlobWithAFlippedByte_areCorrupt_withoutAnyHashing() throws Exception {
    byte[] large = blob(2);
    Path file = blobFiles().getFirst();
    try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(file.toFile(), "rw")) {
      f.seek(f.length() / 2);
      int b = f.read();
      f.seek(f.length() / 2);
      f.write(b ^ 1);
    }
    assertThat(CheckedValue.probe(values, Cf.ARTIFACTS, KEY, large.length, null)).isInstanceOf(CheckedValue.Corrupt.class);
    assertThat(CheckedValue.read(values, Cf.ARTIFACTS, KEY, large.length, Checksums.sha256(large)))
        .isInstanceOf(CheckedValue.Corrupt.class);
  }

  @Test
  void probeAndRead_ofABlobWhoseFileIsDeleted_areMissing_notAnEnvironmentError() throws Exception {
    byte[] large = blob(3);
    java.nio.file.Files.delete(blobFiles().getFirst());
    assertThat(CheckedValue.probe(values, Cf.ARTIFACTS, KEY, large.length, null)).isInstanceOf(CheckedValue.Missing.class);
    assertThat(CheckedValue.read(values, Cf.ARTIFACTS, KEY, large.length, Checksums.sha256(large)))
        .isInstanceOf(CheckedValue.Missing.class);
  }
}
