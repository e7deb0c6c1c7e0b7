package dev.xlac.cache.store;

import dev.xlac.cache.store.RocksDbStore.Cf;
import dev.xlac.cache.store.RocksDbStore.Cursor;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.OptionalLong;
import org.rocksdb.WriteBatch;

/**
 * The schema check of an open: the version on disk against {@link Store#SCHEMA_VERSION} and
 * {@link Store#OLDEST_READABLE_SCHEMA} (a newer or too old one is refused, naming both), a new
 * cache's first records, the upgrade of an older one opened for writing (only the version record
 * is rewritten), and the records every open reads (totals, max-size).
 */
final class Schema {
  private static final System.Logger LOG = System.getLogger("dev.xlac.cache.CacheStore");

  private Schema() {}

  /** What an open found: the schema version (0: no cache yet, read-only), the totals and the max-size. */
  record Found(int version, Totals totals, OptionalLong maxSize) {}

  static Found check(RocksDbStore db, Path dir, boolean writable, Clock clock) {
    byte[] v = db.get(Cf.META, Store.SCHEMA_KEY);
    if (v == null && !writable && !anyKey(db, Cf.GRAPH_META) && !anyKey(db, Cf.ARTIFACT_META)
        && !anyKey(db, Cf.REQUEST_META)) {
      // No database yet, or one whose first writer has not committed its first batch: an empty cache.
      return new Found(0, new Totals(), OptionalLong.empty());
    }
    if (v == null) {
      if (!writable || anyKey(db, Cf.GRAPH_META) || anyKey(db, Cf.ARTIFACT_META) || anyKey(db, Cf.REQUEST_META)) {
        throw new XlacException(ExitCode.ENVIRONMENT, "cache " + dir + " has no schema version; it is not an xlac cache");
      }
      Totals t = new Totals();
      t.countersSince = clock.millis();
      try (WriteBatch b = new WriteBatch()) {
        db.put(b, Cf.META, Store.SCHEMA_KEY, Integer.toString(Store.SCHEMA_VERSION).getBytes(StandardCharsets.US_ASCII));
        db.put(b, Cf.META, Store.TOTALS_KEY, Records.encode(t));
        db.write(b, true);
      }
      v = db.get(Cf.META, Store.SCHEMA_KEY);
    }
    int version;
    try {
      version = Integer.parseInt(new String(v, StandardCharsets.US_ASCII).strip());
    } catch (NumberFormatException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cache " + dir + " has an unreadable schema version; it is not an xlac cache");
    }
    if (version > Store.SCHEMA_VERSION) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cache " + dir + " uses schema version " + version
          + ", written by a newer xlac; this xlac understands version " + Store.SCHEMA_VERSION
          + " (upgrade xlac, or use another --cache directory)");
    }
    if (version < Store.OLDEST_READABLE_SCHEMA) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cache " + dir + " uses schema version " + version
          + ", which this xlac cannot read (it reads versions " + Store.OLDEST_READABLE_SCHEMA + " to " + Store.SCHEMA_VERSION
          + "); use another --cache directory");
    }
    int opened = version;
    if (version < Store.SCHEMA_VERSION && writable) {
      try (WriteBatch b = new WriteBatch()) {
        db.put(b, Cf.META, Store.SCHEMA_KEY, Integer.toString(Store.SCHEMA_VERSION).getBytes(StandardCharsets.US_ASCII));
        db.write(b, true);
      }
      LOG.log(System.Logger.Level.INFO, "cache " + dir + " upgraded from schema version " + version + " to "
          + Store.SCHEMA_VERSION);
      opened = Store.SCHEMA_VERSION;
    }
    return new Found(opened, totals(db), maxSize(db));
  }

  /** The totals record (zero when there is none yet). */
  static Totals totals(RocksDbStore db) {
    byte[] t = db.get(Cf.META, Store.TOTALS_KEY);
    return t == null ? new Totals() : Records.decodeTotals(t);
  }

  /** The max-size setting. */
  static OptionalLong maxSize(RocksDbStore db) {
    byte[] m = db.get(Cf.META, Store.MAX_SIZE_KEY);
    return m == null ? OptionalLong.empty() : OptionalLong.of(Long.parseLong(new String(m, StandardCharsets.US_ASCII)));
  }

  private static boolean anyKey(RocksDbStore db, Cf cf) {
    try (Cursor c = db.cursor(cf, null)) {
      return c.valid();
    }
  }
}
