package dev.xlac.cache.bundle;

import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.function.Function;

/**
 * Runs a list of reads in order on a thread of its own, ahead of a consumer that takes the
 * results in the same order: the export reads and checks values (RocksDB, SHA-256) on one core
 * while the caller tars and compresses on the other. At most {@code budgetBytes} of results wait
 * at a time, except that one result larger than the budget may wait alone.
 *
 * <p>A read that throws ends the read-ahead: the consumer gets that exception (unchanged, if it is
 * unchecked) from the {@link #next()} that would have returned the value, and never a later
 * value. {@link #close()} stops the reader and waits for it, so no read outlives the caller's
 * use of the store.
 *
 * @param <T> what is read
 * @param <R> one result
 */
final class ReadAhead<T, R> implements Iterator<R>, AutoCloseable {
  private final Iterator<T> items;
  private final int count;
  private final Function<T, R> read;
  private final Function<R, Long> size;
  private final long budgetBytes;
  private final ArrayDeque<Slot<R>> ready = new ArrayDeque<>();
  private final Thread reader;
  private long waitingBytes;
  private int taken;
  private boolean closed;

  private record Slot<R>(R value, long bytes, RuntimeException failure) {}

  ReadAhead(List<T> items, Function<T, R> read, Function<R, Long> size, long budgetBytes, String threadName) {
    this.items = List.copyOf(items).iterator();
    this.count = items.size();
    this.read = read;
    this.size = size;
    this.budgetBytes = budgetBytes;
    this.reader = Thread.ofPlatform().daemon().name(threadName).unstarted(this::readAll);
    reader.start();
  }

  private void readAll() {
    while (items.hasNext()) {
      Slot<R> slot;
      try {
        R value = read.apply(items.next());
        slot = new Slot<>(value, size.apply(value), null);
      } catch (RuntimeException e) {
        slot = new Slot<>(null, 0, e);
      }
      synchronized (this) {
        while (!closed && !ready.isEmpty() && waitingBytes + slot.bytes > budgetBytes) {
          try {
            wait();
          } catch (InterruptedException e) {
            return; // closed
          }
        }
        if (closed) {
          return;
        }
        ready.add(slot);
        waitingBytes += slot.bytes;
        notifyAll();
        if (slot.failure != null) {
          return;
        }
      }
    }
  }

  @Override
  public boolean hasNext() {
    return taken < count;
  }

  /** The next result in order, waiting for it; rethrows the failure of its read. */
  @Override
  public synchronized R next() {
    if (!hasNext() || closed) {
      throw new NoSuchElementException();
    }
    while (ready.isEmpty()) {
      try {
        wait();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for a read", e);
      }
    }
    Slot<R> slot = ready.poll();
    waitingBytes -= slot.bytes;
    taken++;
    notifyAll();
    if (slot.failure != null) {
      taken = count;
      throw slot.failure;
    }
    return slot.value;
  }

  /** Stops the reader (a read in progress finishes first) and waits for it. Safe twice. */
  @Override
  public void close() {
    synchronized (this) {
      closed = true;
      ready.clear();
      notifyAll();
    }
    boolean interrupted = false;
    while (reader.isAlive()) {
      try {
        reader.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
