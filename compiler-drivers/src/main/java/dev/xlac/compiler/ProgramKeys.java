package dev.xlac.compiler;

import dev.xlac.core.ProgramKey;
import dev.xlac.hlo.GraphFingerprint;

/** A {@link ProgramKey} as its text travels to a worker process, read back there (for messages only). */
public final class ProgramKeys {
  private ProgramKeys() {}

  /** A graph fingerprint for {@code hlo1:...}; any other key keeps its text. */
  public static ProgramKey parse(String value) {
    return value.startsWith(GraphFingerprint.VERSION + ":") ? new GraphFingerprint(value) : new Text(value);
  }

  private record Text(String value) implements ProgramKey {}
}
