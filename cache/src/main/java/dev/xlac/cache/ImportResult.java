package dev.xlac.cache;

import java.nio.file.Path;

/**
 * What an import did ({@link CacheStore#importBundle}).
 *
 * @param payloadBytes the stored bytes of the graphs, logs and artifacts the bundle holds
 * @param signer the key that signed the bundle, or null
 * @param signerTrusted whether the cache or the request trusts that key
 * @param requestsAdded runtime entries (recorded PJRT requests with their executables) new to the cache
 * @param requestsPresent runtime entries the cache held already (kept as they were)
 */
public record ImportResult(Path file, long graphsAdded, long graphsPresent, long artifactsAdded, long artifactsPresent,
    long failuresAdded, long neuronNamesAdded, long payloadBytes, BundleKey signer, boolean signerTrusted,
    long requestsAdded, long requestsPresent) {}
