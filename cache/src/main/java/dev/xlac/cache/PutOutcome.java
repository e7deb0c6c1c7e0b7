package dev.xlac.cache;

/** What {@link CacheStore#putGraph} did. */
public enum PutOutcome {
  /** The graph was new. */
  ADDED,
  /** A graph with this fingerprint was already stored; its last-seen time and count were updated. */
  ALREADY_PRESENT
}
