package dev.xlac.cache.bundle;

import dev.xlac.cache.ImportLimit;
import dev.xlac.core.Sizes;

/** Counts the bytes an import unpacks as it reads them; past the {@link ImportLimit} it refuses the bundle. */
final class UnpackCounter {
  private final ImportLimit limit;
  private long count;

  UnpackCounter(ImportLimit limit) {
    this.limit = limit;
  }

  /** @throws IllegalArgumentException the refusal, when the count passes the limit */
  void add(long n) {
    count += n;
    if (limit.bytes().isPresent() && count > limit.bytes().getAsLong()) {
      throw new IllegalArgumentException("it unpacks to more than " + Sizes.human(limit.bytes().getAsLong()) + " ("
          + limit.bytes().getAsLong() + " bytes), the limit on unpacked bytes (" + limit.why() + ")");
    }
  }
}
