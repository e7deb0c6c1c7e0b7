package dev.xlac.cache;

import java.time.Instant;
import java.util.List;

/**
 * A cache's bundle trust settings ({@code xlac cache config require-signed}, {@code trust}): the
 * keys whose signed bundles it accepts, and whether it imports only bundles signed by one of them.
 * They live in the cache's own database, so whoever can write the cache directory can change them
 * (docs/bundles.md, "Trust model").
 */
public record TrustSettings(boolean requireSigned, List<TrustedKey> keys) {
  /** A trusted key, with the label it was added under (its file's name) and when. */
  public record TrustedKey(BundleKey key, String label, Instant added) {}

  public TrustSettings {
    keys = List.copyOf(keys);
  }

  /** The trusted key with this id, or null. */
  public TrustedKey find(String keyId) {
    return keys.stream().filter(k -> k.key().id().equals(keyId)).findFirst().orElse(null);
  }
}
