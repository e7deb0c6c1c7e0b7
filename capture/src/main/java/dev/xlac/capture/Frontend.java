package dev.xlac.capture;

import java.util.Map;

/**
 * Which framework's environment {@code xlac dump} gives the traced command. JAX and PyTorch/XLA
 * both dump through XLA's {@code XLA_FLAGS}; Neuron extracts graphs into its compile cache.
 */
public enum Frontend {
  /** Neuron when the environment already selects it ({@code PJRT_DEVICE=NEURON}), else XLA dumps for JAX and PyTorch/XLA at once. */
  AUTO("auto"),
  /** XLA dumps, plus JAX's switch that lets every module be dumped, however small. */
  JAX("jax"),
  /** XLA dumps (PyTorch/XLA reads {@code XLA_FLAGS} like JAX does). */
  TORCH_XLA("torch-xla"),
  /** Neuron's graph-extraction mode: graphs are written to a staging compile cache, not compiled. */
  NEURON("neuron");

  private final String cliName;

  Frontend(String cliName) {
    this.cliName = cliName;
  }

  public String cliName() {
    return cliName;
  }

  /** Parses the {@code --frontend} value; null when unknown. */
  public static Frontend parse(String text) {
    for (Frontend f : values()) {
      if (f.cliName.equalsIgnoreCase(text) || f.name().equalsIgnoreCase(text)) {
        return f;
      }
    }
    return null;
  }

  /** Resolves {@link #AUTO} against the command's environment; the others stay as they are. */
  public Frontend resolve(Map<String, String> env) {
    if (this != AUTO) {
      return this;
    }
    return "NEURON".equalsIgnoreCase(env.getOrDefault("PJRT_DEVICE", "")) ? NEURON : AUTO;
  }
}
