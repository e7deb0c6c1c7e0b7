package dev.xlac.cache;

import java.util.List;

/**
 * What taking recorded requests into the cache did.
 *
 * @param added requests new to the cache
 * @param alreadyPresent requests the cache already held (kept as they were, not replaced)
 * @param rejected one line per record that was not taken in: the file and the reason
 */
public record RequestIngest(int added, int alreadyPresent, List<String> rejected) {
  public RequestIngest {
    rejected = List.copyOf(rejected);
  }

  /** This and {@code other} together. */
  public RequestIngest plus(RequestIngest other) {
    java.util.List<String> all = new java.util.ArrayList<>(rejected);
    all.addAll(other.rejected);
    return new RequestIngest(added + other.added, alreadyPresent + other.alreadyPresent, all);
  }
}
