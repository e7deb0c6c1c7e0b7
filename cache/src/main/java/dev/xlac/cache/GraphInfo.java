package dev.xlac.cache;

import dev.xlac.core.neuron.NeuronName;
import dev.xlac.hlo.GraphFingerprint;
import java.time.Instant;
import java.util.List;

/**
 * What the cache knows about a stored graph.
 *
 * @param source the file it was first added from (or where a bundle said it came from)
 * @param seenCount how many times it was added
 * @param hloBytes size of the serialized HloModuleProto
 * @param storedBytes size of its compressed copy in the cache
 * @param neuronNames where the graph lives in Neuron compile caches it was imported from (often none)
 */
public record GraphInfo(GraphFingerprint fingerprint, String moduleName, String source, Instant firstSeen,
    Instant lastSeen, long seenCount, long hloBytes, long storedBytes, Instant lastAccess, List<NeuronName> neuronNames) {}
