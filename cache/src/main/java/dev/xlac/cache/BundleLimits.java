package dev.xlac.cache;

/**
 * What an imported bundle may hold; anything beyond is refused before anything is written.
 *
 * @param maxEntryBytes one graph or artifact (Java arrays end just below 2 GiB)
 * @param maxPendingLogBytes logs held in memory while waiting for their artifact entry
 * @param maxNeuronFlagsBytes one Neuron name's {@code compile_flags.json} text
 */
public record BundleLimits(long maxManifestBytes, int maxEntries, long maxEntryBytes, long maxLogBytes,
    long maxIdentityBytes, long maxPendingLogBytes, long maxNeuronFlagsBytes) {

  public static final BundleLimits DEFAULT = new BundleLimits(256L << 20, 4_000_000, Integer.MAX_VALUE - 64,
      256L << 20, 64L << 10, 512L << 20, 64L << 10);
}
