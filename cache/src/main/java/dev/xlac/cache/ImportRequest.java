package dev.xlac.cache;

import java.util.List;
import java.util.OptionalLong;

/**
 * How {@code cache import} treats a bundle, beyond the cache's own settings.
 *
 * @param trust keys trusted for this import ({@code --trust PUBKEY}) besides the cache's
 *     {@link TrustSettings}; when any is given, the bundle must be signed by a trusted key, as with
 *     {@code require-signed on}
 * @param maxUnpacked the limit on unpacked bytes for this import ({@code --max-unpacked}), which
 *     replaces the cache's {@link ImportLimit}; null: the cache's
 */
public record ImportRequest(List<BundleKey> trust, ImportLimit maxUnpacked) {
  public ImportRequest {
    trust = List.copyOf(trust);
  }

  /** Trusting {@code trust} besides the cache's keys, with the cache's limit on unpacked bytes. */
  public ImportRequest(List<BundleKey> trust) {
    this(trust, null);
  }

  /** The cache's own settings only. */
  public static ImportRequest defaults() {
    return new ImportRequest(List.of());
  }

  /** This request with a limit on unpacked bytes of its own ({@code --max-unpacked}; empty: none). */
  public ImportRequest withMaxUnpacked(OptionalLong bytes) {
    return new ImportRequest(trust, ImportLimit.request(bytes));
  }
}
