package dev.xlac.core;

/**
 * The content key of one program a compile run works on: a graph's fingerprint ({@code hlo1:...}, module
 * {@code hlo}) or a recorded runtime request's key ({@code pjrt1:...}, module {@code runtime}). The scheduler,
 * its results and the reports name work by it, whatever it is.
 */
public interface ProgramKey {
  /** The full key, with its version prefix, e.g. {@code hlo1:<64 hex>} or {@code pjrt1:<64 hex>}. */
  String value();

  /** The first 12 hex digits, as shown in tables. */
  default String shortForm() {
    String v = value();
    return v.substring(v.indexOf(':') + 1, v.indexOf(':') + 13);
  }

  /** {@code jit_step (0123456789ab)}: how messages and progress lines name the program. */
  default String describe(String name) {
    return name + " (" + shortForm() + ")";
  }
}
