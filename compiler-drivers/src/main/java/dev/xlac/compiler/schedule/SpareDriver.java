package dev.xlac.compiler.schedule;

import dev.xlac.compiler.CompilerDriver;
import java.util.function.Supplier;

/**
 * A factory's spare: at most one {@link WarmDriver}, started ahead of need (by {@link DriverFactory#prestart()}, or
 * by a probe that needs a driver to ask) and handed to the next {@link DriverFactory#open()}. The holder's lock is
 * never held while a driver starts or is waited for, so a slow start blocks nobody who only asks for the spare.
 *
 * <p>The one holder of {@code DriverFactory.of}'s factories and {@code IsolatedPjrtDrivers}.
 */
public final class SpareDriver<D extends CompilerDriver> implements AutoCloseable {
  private final String threadName;
  private final Supplier<? extends D> open;
  private WarmDriver<D> spare; // guarded by this

  /**
   * @param threadName the name of the thread a spare starts on
   * @param open opens a driver (it runs on that thread)
   */
  public SpareDriver(String threadName, Supplier<? extends D> open) {
    this.threadName = threadName;
    this.open = open;
  }

  /** The spare, started now when there is none; it stays held (use {@link #forget} or {@link #take} to own it). */
  public synchronized WarmDriver<D> startIfNone() {
    if (spare == null) {
      spare = WarmDriver.start(threadName, open);
    }
    return spare;
  }

  /** The spare, now owned by the caller; null when there is none. */
  public synchronized WarmDriver<D> take() {
    WarmDriver<D> s = spare;
    spare = null;
    return s;
  }

  /** Forgets {@code s} if it is still the spare (the caller owns it now); a newer spare stays. */
  public synchronized void forget(WarmDriver<D> s) {
    if (spare == s) {
      spare = null;
    }
  }

  /** Stops a spare nobody took, without waiting for one still starting (it is interrupted; see {@link WarmDriver}). */
  @Override
  public void close() {
    WarmDriver<D> s = take();
    if (s != null) {
      s.close();
    }
  }
}
