package dev.xlac.cache;

import java.util.Locale;

/**
 * The state of a graph for one compiler. A graph that no compiler has produced anything for is
 * {@code PENDING}; an artifact record is either {@code COMPILED} (it holds bytes) or {@code FAILED}
 * (it holds the failure and its log).
 */
public enum EntryStatus {
  PENDING,
  COMPILED,
  FAILED;

  /** The stable lower-case name used in tables and {@code --json}. */
  public String jsonName() {
    return name().toLowerCase(Locale.ROOT);
  }

  public byte code() {
    return (byte) ordinal();
  }

  public static EntryStatus ofCode(byte code) {
    if (code < 0 || code >= values().length) {
      throw new IllegalArgumentException("unknown entry status code " + code);
    }
    return values()[code];
  }
}
