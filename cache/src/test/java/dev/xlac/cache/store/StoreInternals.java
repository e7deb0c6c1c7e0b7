package dev.xlac.cache.store;

import dev.xlac.cache.ArtifactKey;
import java.util.function.Consumer;

/**
 * Test-only doors into a {@link Store}, for tests outside the store package that inject damage or
 * write in bulk: its RocksDB instance and value store, and its package-private operations.
 * Production code has no public door to RocksDB.
 */
public final class StoreInternals {
  private StoreInternals() {}

  public static RocksDbStore db(Store s) {
    return s.db;
  }

  public static StoredValues values(Store s) {
    return s.values;
  }

  /** A batch that skips the write-ahead log. */
  public static <T> T commitUnlogged(Store s, Store.TxnBody<T> body) {
    return s.commitUnlogged(body);
  }

  /** The meta key of the schema version. */
  public static byte[] schemaKey() {
    return Store.SCHEMA_KEY;
  }

  public static void beforeLoad(Store s, Consumer<ArtifactKey> hook) {
    s.memory.beforeLoad = hook;
  }

  /** Values larger than {@code bytes} are stored in chunks of that size (0: the real size), for every store. */
  public static void chunkBytes(int bytes) {
    StoredValues.chunkBytesForTests = bytes;
  }
}
