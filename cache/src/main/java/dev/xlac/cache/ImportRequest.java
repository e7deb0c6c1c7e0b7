package dev.xlac.cache;

import java.util.List;

/**
 * How {@code cache import} treats a bundle's signature, beyond the cache's own {@link TrustSettings}.
 *
 * @param trust keys trusted for this import ({@code --trust PUBKEY}) besides the cache's; when any
 *     is given, the bundle must be signed by a trusted key, as with {@code require-signed on}
 */
public record ImportRequest(List<BundleKey> trust) {
  public ImportRequest {
    trust = List.copyOf(trust);
  }

  /** The cache's own settings only. */
  public static ImportRequest defaults() {
    return new ImportRequest(List.of());
  }
}
