package dev.xlac.compiler.pjrt;

import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;

/**
 * Open/closed state of one native owner. Operations run under the read lock, so several may run at
 * once (PJRT objects are thread-safe) while {@code close} waits for them and then runs alone;
 * anything called after close fails with an {@link IllegalStateException} naming the object
 * instead of touching freed native memory.
 */
final class Lifecycle {
  private final ReadWriteLock lock = new ReentrantReadWriteLock();
  private final String what;
  private boolean closed;

  Lifecycle(String what) {
    this.what = what;
  }

  <T> T use(Supplier<T> operation) {
    lock.readLock().lock();
    try {
      if (closed) {
        throw new IllegalStateException(what + " is closed");
      }
      return operation.get();
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Runs {@code release} once, after in-flight operations end; later calls do nothing. */
  void close(Runnable release) {
    lock.writeLock().lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      release.run();
    } finally {
      lock.writeLock().unlock();
    }
  }

  boolean isClosed() {
    lock.readLock().lock();
    try {
      return closed;
    } finally {
      lock.readLock().unlock();
    }
  }
}
