package dev.xlac.cache.ops;

import dev.xlac.cache.BundleKey;
import dev.xlac.cache.TrustSettings;
import dev.xlac.cache.bundle.BundleManifest;
import dev.xlac.cache.store.Keys;
import dev.xlac.cache.store.RocksDbStore.Cursor;
import dev.xlac.cache.store.Store;
import dev.xlac.core.XlacException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * Reads and writes {@link TrustSettings} in the cache's {@code meta} family, beside the size
 * limit: {@code config/require_signed} (present: on) and one {@code config/trusted_key/<key id>}
 * record per key, holding {@code <added millis> TAB <label, escaped> TAB <base64 X.509 key>}.
 */
public final class TrustConfig {
  static final byte[] REQUIRE_SIGNED_KEY = "config/require_signed".getBytes(StandardCharsets.US_ASCII);
  public static final String TRUSTED_PREFIX = "config/trusted_key/";
  private static final byte[] TRUSTED = TRUSTED_PREFIX.getBytes(StandardCharsets.US_ASCII);

  private TrustConfig() {}

  public static TrustSettings read(Store store) {
    boolean required = store.meta(REQUIRE_SIGNED_KEY) != null;
    List<TrustSettings.TrustedKey> keys = new ArrayList<>();
    try (Cursor c = store.metaFrom(TRUSTED)) {
      for (; c.valid() && Keys.startsWith(c.key(), TRUSTED); c.next()) {
        String id = new String(c.key(), StandardCharsets.US_ASCII).substring(TRUSTED_PREFIX.length());
        keys.add(decode(store, id, c.value()));
      }
    }
    return new TrustSettings(required, keys);
  }

  private static TrustSettings.TrustedKey decode(Store store, String id, byte[] value) {
    String[] f = new String(value, StandardCharsets.UTF_8).split("\t", -1);
    try {
      if (f.length != 3) {
        throw new IllegalArgumentException("expected 3 fields");
      }
      BundleKey key = BundleKey.fromEncoded(Base64.getDecoder().decode(f[2]));
      if (!key.id().equals(id)) {
        throw new IllegalArgumentException("the key does not have the id it is filed under");
      }
      return new TrustSettings.TrustedKey(key, BundleManifest.unesc(f[1]), Instant.ofEpochMilli(Long.parseLong(f[0])));
    } catch (IllegalArgumentException e) {
      throw XlacException.environment("cache " + store.directory() + ": the trusted key record " + id + " is damaged ("
          + e.getMessage() + "); remove it with 'xlac cache config trust remove " + id + "' and add the key again");
    }
  }

  public static void setRequireSigned(Store store, boolean on) {
    store.commit(true, txn -> {
      if (on) {
        txn.putMeta(REQUIRE_SIGNED_KEY, "on".getBytes(StandardCharsets.US_ASCII));
      } else {
        txn.deleteMeta(REQUIRE_SIGNED_KEY);
      }
      return null;
    });
  }

  /** Adds {@code key}; false when it is trusted already (its label then stays). */
  public static boolean add(Store store, BundleKey key, String label) {
    if (read(store).find(key.id()) != null) {
      return false;
    }
    String value = store.clock().millis() + "\t" + BundleManifest.esc(label) + "\t"
        + Base64.getEncoder().encodeToString(key.encoded());
    store.commit(true, txn -> {
      txn.putMeta(recordKey(key.id()), value.getBytes(StandardCharsets.UTF_8));
      return null;
    });
    return true;
  }

  /**
   * Removes the key with this id, or the one whose id starts with it (at least 8 hex digits);
   * returns it, or null when its record was damaged (it is removed all the same).
   */
  public static TrustSettings.TrustedKey remove(Store store, String idOrPrefix) {
    String p = idOrPrefix.strip().toLowerCase(java.util.Locale.ROOT);
    if (!p.matches("[0-9a-f]{8,64}")) {
      throw XlacException.badInput("not a key id: '" + BundleManifest.printable(idOrPrefix)
          + "' (give the 64 hex digits 'xlac cache config trust list' shows, or at least 8 of them)");
    }
    // Matched by the records' keys, not their values: a damaged record (which read() refuses, advising
    // this command) must be removable too.
    List<String> matches = new ArrayList<>();
    List<byte[]> values = new ArrayList<>();
    try (Cursor c = store.metaFrom(TRUSTED)) {
      for (; c.valid() && Keys.startsWith(c.key(), TRUSTED); c.next()) {
        String id = new String(c.key(), StandardCharsets.US_ASCII).substring(TRUSTED_PREFIX.length());
        if (id.startsWith(p)) {
          matches.add(id);
          values.add(c.value());
        }
      }
    }
    if (matches.isEmpty()) {
      throw XlacException.badInput("no trusted key has id " + p + " (see 'xlac cache config trust list')");
    }
    if (matches.size() > 1) {
      throw XlacException.badInput("key id " + p + " is ambiguous: " + matches.size() + " trusted keys start with it;"
          + " give more digits");
    }
    String id = matches.getFirst();
    TrustSettings.TrustedKey gone;
    try {
      gone = decode(store, id, values.getFirst());
    } catch (XlacException e) {
      gone = null; // damaged: removed all the same
    }
    store.commit(true, txn -> {
      txn.deleteMeta(recordKey(id));
      return null;
    });
    return gone;
  }

  private static byte[] recordKey(String id) {
    return (TRUSTED_PREFIX + id).getBytes(StandardCharsets.US_ASCII);
  }
}
