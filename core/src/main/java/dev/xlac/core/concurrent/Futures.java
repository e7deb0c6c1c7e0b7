package dev.xlac.core.concurrent;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/** Waiting for work done on another thread as if it had been done on this one. */
public final class Futures {
  private Futures() {}

  /**
   * What {@code f} returned, or what it threw: an unchecked exception or error as it was (an
   * {@code XlacException} keeps its exit code and message), a checked one wrapped.
   */
  public static <T> T join(Future<T> f) throws InterruptedException {
    try {
      return f.get();
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      if (e.getCause() instanceof Error r) {
        throw r;
      }
      throw new IllegalStateException(e.getCause());
    }
  }
}
