package dev.xlac.cache;

import dev.xlac.cache.store.Store;
import dev.xlac.core.Sizes;
import java.nio.charset.StandardCharsets;
import java.util.OptionalLong;

/**
 * The most bytes a bundle may unpack to on import: the sizes of all its tar entries (manifest,
 * signature, identities, stored modules, artifacts, compressed logs) plus the decompressed sizes
 * of its modules and logs, which import decompresses to check them. Import checks it against the
 * manifest's figures before it reads any entry, and against the bytes as it reads them; a bundle
 * over it is refused, whole. The limit bounds what a bundle can cost (time, and the disk its
 * values and the scratch file of a large module take); the free space of the cache's filesystem
 * is checked as well, whatever the limit.
 *
 * <p>A cache has a setting ({@code xlac cache config import-max-unpacked SIZE|none|default}, in the
 * {@code meta} family as {@code config/import_max_unpacked}: a byte count or {@code none}; absent:
 * the default, {@value #DEFAULT_BYTES} bytes, 1 TiB), and one import can replace it
 * ({@code cache import --max-unpacked}, {@link ImportRequest#maxUnpacked()}): whoever runs an import
 * can change the setting too, so a per-import value may also raise it.
 *
 * @param bytes the limit; empty: none
 * @param source where it comes from, for messages
 */
public record ImportLimit(OptionalLong bytes, Source source) {
  /** 1 TiB: far above any real bundle, and low enough to stop a bomb before it costs hours. */
  public static final long DEFAULT_BYTES = 1L << 40;
  static final byte[] KEY = "config/import_max_unpacked".getBytes(StandardCharsets.US_ASCII);
  private static final String NONE = "none";

  /** Where a limit comes from. */
  public enum Source {
    /** No setting: {@link #DEFAULT_BYTES}. */
    DEFAULT,
    /** The cache's {@code import-max-unpacked} setting. */
    CACHE_SETTING,
    /** {@code cache import --max-unpacked}. */
    REQUEST
  }

  public ImportLimit {
    if (bytes.isPresent() && bytes.getAsLong() < 0) {
      throw new IllegalArgumentException("negative limit " + bytes.getAsLong());
    }
  }

  /** The default: {@value #DEFAULT_BYTES} bytes. */
  public static ImportLimit defaults() {
    return new ImportLimit(OptionalLong.of(DEFAULT_BYTES), Source.DEFAULT);
  }

  /** A cache setting of {@code bytes} (empty: none). */
  public static ImportLimit setting(OptionalLong bytes) {
    return new ImportLimit(bytes, Source.CACHE_SETTING);
  }

  /** One import's limit (empty: none), which replaces the cache's setting. */
  public static ImportLimit request(OptionalLong bytes) {
    return new ImportLimit(bytes, Source.REQUEST);
  }

  /** The limit as {@code cache config} shows it: {@code none}, or bytes and a readable size. */
  public String describe() {
    return bytes.isEmpty() ? NONE : bytes.getAsLong() + " (" + Sizes.human(bytes.getAsLong()) + ")";
  }

  /** Which limit refused a bundle, and how to change it. */
  public String why() {
    return switch (source) {
      case REQUEST -> "given with --max-unpacked";
      case CACHE_SETTING -> "the cache's import-max-unpacked setting; pass --max-unpacked SIZE to import it anyway";
      case DEFAULT -> "the default; pass --max-unpacked SIZE, or set 'xlac cache config import-max-unpacked SIZE|none'";
    };
  }

  static ImportLimit read(Store store) {
    byte[] v = store.meta(KEY);
    if (v == null) {
      return defaults();
    }
    String text = new String(v, StandardCharsets.US_ASCII);
    if (text.equals(NONE)) {
      return setting(OptionalLong.empty());
    }
    try {
      return setting(OptionalLong.of(Long.parseLong(text)));
    } catch (NumberFormatException e) {
      return defaults(); // not written by us: the default stands until the setting is written again
    }
  }

  /** Writes {@code limit} as the cache's setting; a {@link Source#DEFAULT} one removes the setting. */
  static void write(Store store, ImportLimit limit) {
    store.commit(true, txn -> {
      if (limit.source() == Source.DEFAULT) {
        txn.deleteMeta(KEY);
      } else {
        String text = limit.bytes().isEmpty() ? NONE : Long.toString(limit.bytes().getAsLong());
        txn.putMeta(KEY, text.getBytes(StandardCharsets.US_ASCII));
      }
      return null;
    });
  }
}
