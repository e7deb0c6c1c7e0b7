package dev.xlac.cache.store;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The usage counters (hits, misses, compile time saved, damaged reads) counted since the last batch:
 * lookups count here without writing, and the next batch folds them into the totals record it
 * writes ({@link #drainInto}), giving them back if that write fails ({@link Drained#restore}).
 */
final class UsageCounters {
  private final AtomicLong hits = new AtomicLong();
  private final AtomicLong misses = new AtomicLong();
  private final AtomicLong savedMillis = new AtomicLong();
  private final AtomicLong damaged = new AtomicLong();

  /** What one {@link #drainInto} took, to give back when its batch was not written. */
  final class Drained {
    private final long h;
    private final long m;
    private final long s;
    private final long d;

    private Drained(long h, long m, long s, long d) {
      this.h = h;
      this.m = m;
      this.s = s;
      this.d = d;
    }

    void restore() {
      hits.addAndGet(h);
      misses.addAndGet(m);
      savedMillis.addAndGet(s);
      damaged.addAndGet(d);
    }
  }

  void lookup(boolean hit, long saved) {
    if (hit) {
      hits.incrementAndGet();
      savedMillis.addAndGet(saved);
    } else {
      misses.incrementAndGet();
    }
  }

  void damagedRead() {
    damaged.incrementAndGet();
  }

  /** Whether a counter that a close must save is not zero. */
  boolean any() {
    return (hits.get() | misses.get() | damaged.get()) != 0;
  }

  /** Sets them to zero. */
  void zero() {
    hits.set(0);
    misses.set(0);
    savedMillis.set(0);
    damaged.set(0);
  }

  /** Moves the counters into {@code t} (and zeroes them here). */
  Drained drainInto(Totals t) {
    Drained taken = new Drained(hits.getAndSet(0), misses.getAndSet(0), savedMillis.getAndSet(0), damaged.getAndSet(0));
    t.hits += taken.h;
    t.misses += taken.m;
    t.savedMillis += taken.s;
    t.damagedReads += taken.d;
    return taken;
  }

  /** Adds the counters to {@code t}, leaving them here. */
  void addTo(Totals t) {
    t.hits += hits.get();
    t.misses += misses.get();
    t.savedMillis += savedMillis.get();
    t.damagedReads += damaged.get();
  }
}
