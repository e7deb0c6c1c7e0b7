package dev.xlac.cache;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.RocksDbStore.Cf;
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
}
