package dev.xlac.cache;

import java.nio.file.Path;

/**
 * What an import did ({@link CacheStore#importBundle}).
 *
 * @param payloadBytes the stored bytes of the graphs, logs and artifacts the bundle holds
 * @param signer the key that signed the bundle, or null
 * @param signerTrusted whether the cache or the request trusts that key
 */
public record ImportResult(Path file, long graphsAdded, long graphsPresent, long artifactsAdded, long artifactsPresent,
    long failuresAdded, long neuronNamesAdded, long payloadBytes, BundleKey signer, boolean signerTrusted) {}
