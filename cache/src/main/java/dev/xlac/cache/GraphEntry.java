package dev.xlac.cache;

import dev.xlac.core.neuron.NeuronName;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.LoadedModule;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * One graph on its way into the cache: what {@link CacheStore#putGraph(GraphEntry)} stores in one
 * transaction, whichever source it came from (dump files, a running command, a Neuron compile cache).
 *
 * @param fingerprint the graph's fingerprint, its key in the cache
 * @param moduleName the HLO module's name, for the user
 * @param bytesIfNew the serialized HloModuleProto, asked for (at most once) only when the graph is not
 *     stored yet: for a mapped (large) file that is a second read, skipped for a graph seen before
 * @param source where it came from, for the user (a file name)
 * @param neuronName where the graph lives in a Neuron compile cache, when it does; recorded with it
 */
public record GraphEntry(GraphFingerprint fingerprint, String moduleName, Supplier<byte[]> bytesIfNew, String source,
    Optional<NeuronName> neuronName) {
  public GraphEntry {
    Objects.requireNonNull(fingerprint, "fingerprint");
    Objects.requireNonNull(moduleName, "moduleName");
    Objects.requireNonNull(bytesIfNew, "bytesIfNew");
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(neuronName, "neuronName");
  }

  /** A module read from a dump file, without a Neuron name; its source is the file's absolute path. */
  public static GraphEntry of(LoadedModule module) {
    return new GraphEntry(module.fingerprint(), module.moduleName(), module::moduleBytes,
        module.file().toAbsolutePath().toString(), Optional.empty());
  }

  /** This entry with {@code name} as its Neuron name. */
  public GraphEntry withNeuronName(NeuronName name) {
    return new GraphEntry(fingerprint, moduleName, bytesIfNew, source, Optional.of(name));
  }
}
