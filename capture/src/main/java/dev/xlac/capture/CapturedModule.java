package dev.xlac.capture;

import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.LoadedModule;
import java.util.List;
import java.util.Optional;

/**
 * One compiler-input module the traced command produced.
 *
 * @param module the module as read and validated from its dump file
 * @param process the dump directory of the process that wrote it, relative to the staging
 *     directory ({@code pid-1234}; {@code main} for a process that is not Python; for Neuron the
 *     {@code neuronxcc-*} directory)
 * @param neuron for the Neuron frontend, the cache entry it came from
 */
public record CapturedModule(LoadedModule module, String process, Optional<NeuronModule> neuron) {

  /**
   * A graph as Neuron's compile cache names it. The MODULE name is kept exactly as captured: its
   * graph hash is computed by an unpublished method and is never recomputed.
   *
   * @param moduleDir {@code MODULE_<graph hash>+<flags hash>}
   * @param compilerDir {@code neuronxcc-<compiler version>}
   * @param compileFlags the list in {@code compile_flags.json}; empty when the file is absent
   * @param compileFlagsJson that file's text exactly as read, so it can be written back byte for
   *     byte; null when the file is absent
   */
  public record NeuronModule(String moduleDir, String compilerDir, List<String> compileFlags, String compileFlagsJson) {}

  public String moduleName() {
    return module.moduleName();
  }

  /** Its fingerprint, as computed when the file was read. */
  public GraphFingerprint fingerprint() {
    return module.fingerprint();
  }
}
