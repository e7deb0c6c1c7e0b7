package dev.xlac.cache;

/**
 * What an imported bundle may hold; anything beyond is refused before anything is written. The
 * unpacked size of the whole bundle is limited separately ({@link ImportLimit}, and the free space
 * of the cache's filesystem).
 *
 * @param maxEntryBytes one stored graph or artifact. Values larger than a chunk are stored in
 *     chunks and imported a chunk at a time, so this is not bounded by Java's arrays (2 GiB): it is
 *     a sanity bound, 1 TiB, as large as the default {@link ImportLimit}
 * @param maxModuleBytes one graph's module, decompressed: a serialized protobuf message, which
 *     cannot exceed 2 GiB
 * @param maxPendingLogBytes logs held in memory while waiting for their artifact entry. Only logs
 *     stored whole (at most a chunk, 8 MiB, each) are held; larger ones are written to the cache as
 *     they are read, and do not count. The importer holds at most a sixteenth of its heap (but two
 *     chunks at least), if that is less
 * @param maxNeuronFlagsBytes one Neuron name's {@code compile_flags.json} text
 */
public record BundleLimits(long maxManifestBytes, int maxEntries, long maxEntryBytes, long maxModuleBytes,
    long maxLogBytes, long maxIdentityBytes, long maxPendingLogBytes, long maxNeuronFlagsBytes) {

  public static final BundleLimits DEFAULT = new BundleLimits(256L << 20, 4_000_000, 1L << 40, Integer.MAX_VALUE,
      256L << 20, 64L << 10, 64L << 20, 64L << 10);
}
