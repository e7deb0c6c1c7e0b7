package dev.xlac.cache.layout.archfixture;

import dev.xlac.cache.store.Store;
import org.rocksdb.RocksDB;

/**
 * A layout-side class that reaches past the facade into the store and into RocksDB: what {@code CacheRulesTest}'s
 * layout and RocksDB rules must report. Test sources only; never part of the product.
 */
public final class ReachesPast {
  private ReachesPast() {}

  /** The wrong way twice over. */
  public static String describe(Store store, RocksDB db) {
    return store + " " + db;
  }
}
