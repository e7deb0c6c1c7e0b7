package dev.xlac.cache;

import java.util.ArrayList;
import java.util.List;

/**
 * What taking recorded requests into the cache did.
 *
 * @param added requests new to the cache
 * @param alreadyPresent requests the cache already held (kept as they were, not replaced)
 * @param rejected one line per record that was not taken in: the file (or the key) and the reason
 * @param leftInSpool records still in the spool when an ingest of a spool ended, not taken in: those left in place
 *     (too large, unreadable, written meanwhile) and those moved aside as {@code *.rejected}, from this ingest or
 *     earlier ones. Zero means the spool holds no record any more, so a caller may delete it; 0 from
 *     {@link CacheStore#putRequests}, which reads no spool.
 */
public record RequestIngest(int added, int alreadyPresent, List<String> rejected, int leftInSpool) {
  public RequestIngest {
    rejected = List.copyOf(rejected);
  }

  public RequestIngest(int added, int alreadyPresent, List<String> rejected) {
    this(added, alreadyPresent, rejected, 0);
  }

  /** This and {@code other} together (every count added). */
  public RequestIngest plus(RequestIngest other) {
    List<String> all = new ArrayList<>(rejected);
    all.addAll(other.rejected);
    return new RequestIngest(added + other.added, alreadyPresent + other.alreadyPresent, all, leftInSpool + other.leftInSpool);
  }
}
