package dev.xlac.core.neuron;

import dev.xlac.core.JsonStringList;
import java.util.List;
import java.util.Objects;

/**
 * Where a graph lives in an AWS Neuron compile cache: {@code <versionDirectory>/<moduleDirectory>/},
 * for example {@code neuronxcc-2.15.128.0+56dc5a86/MODULE_10512273093712187+d41d8cd9}. Neuron's
 * MODULE names are computed by an unpublished method, so they are kept exactly as captured and
 * never recomputed; a graph can have several (one per compiler version and flag set).
 *
 * @param compileFlagsJson the entry's {@code compile_flags.json} exactly as read (so it is written
 *     back byte for byte), or null when the entry had none
 */
public record NeuronName(String versionDirectory, String moduleDirectory, String compileFlagsJson) {
  public NeuronName {
    requireSimpleName(versionDirectory, "version directory");
    requireSimpleName(moduleDirectory, "MODULE directory");
  }

  /** A single path element: not empty, no separator, not {@code .} or {@code ..}, no control characters. */
  private static void requireSimpleName(String name, String what) {
    Objects.requireNonNull(name, what);
    if (name.isEmpty() || name.equals(".") || name.equals("..") || name.contains("/") || name.contains("\\")
        || name.chars().anyMatch(c -> c < 0x20)) {
      throw new IllegalArgumentException("not a Neuron cache " + what + " name: '" + name + "'");
    }
  }

  /**
   * The flags of {@code compile_flags.json}; empty when the entry had none.
   *
   * @throws IllegalArgumentException when the text is not a JSON list of strings
   */
  public List<String> compileFlags() {
    return compileFlagsJson == null ? List.of() : JsonStringList.parse(compileFlagsJson);
  }

  /** Both names, so they can be compared as a location. */
  public boolean sameLocation(NeuronName other) {
    return versionDirectory.equals(other.versionDirectory) && moduleDirectory.equals(other.moduleDirectory);
  }

  /** {@code neuronxcc-<version>/MODULE_<hash>+<flaghash>}. */
  public String path() {
    return versionDirectory + "/" + moduleDirectory;
  }
}
