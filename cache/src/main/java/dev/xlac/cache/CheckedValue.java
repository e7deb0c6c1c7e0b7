package dev.xlac.cache;

import dev.xlac.cache.RocksDbStore.Cf;
import dev.xlac.cache.RocksDbStore.DamagedValueException;

/**
 * One read of a stored value checked against what its record says it is: the cache's promise that
 * it never hands back a wrong or damaged value rests on this. Each caller turns the outcome into its
 * own reaction (a miss, a verify problem, a failed export); this only says which outcome it was.
 */
sealed interface CheckedValue {
  /** For a record that holds no size: only the SHA-256 is checked. */
  long ANY_SIZE = -1;

  /** Present, of the expected size, with the expected SHA-256. */
  record Ok(byte[] bytes) implements CheckedValue {}

  /** No value under the key. */
  record Missing() implements CheckedValue {}

  /** Present, but of another size or another SHA-256 than its record says. */
  record Mismatch() implements CheckedValue {}

  /** RocksDB's own block or blob checksum failed; {@code detail} is RocksDB's message. */
  record Corrupt(String detail) implements CheckedValue {}

  /**
   * Reads {@code key} of {@code cf} and checks it. A null {@code expectedSha256} matches nothing.
   * Failures that are not damage (I/O, a closed store) still throw, as {@link RocksDbStore#get} does.
   */
  static CheckedValue read(RocksDbStore db, Cf cf, byte[] key, long expectedSize, byte[] expectedSha256) {
    byte[] v;
    try {
      v = db.get(cf, key);
    } catch (DamagedValueException e) {
      return new Corrupt(e.getMessage());
    }
    if (v == null) {
      return new Missing();
    }
    if ((expectedSize != ANY_SIZE && v.length != expectedSize) || !Checksums.matches(v, expectedSha256)) {
      return new Mismatch();
    }
    return new Ok(v);
  }
}
