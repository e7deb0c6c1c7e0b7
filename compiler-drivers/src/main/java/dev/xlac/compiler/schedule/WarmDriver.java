package dev.xlac.compiler.schedule;

import dev.xlac.compiler.CompilerDriver;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * One driver being opened ahead of need, on a daemon thread of its own, so that its start-up (a
 * worker JVM loading a plugin) overlaps the caller's other work. The driver is handed over once,
 * by {@link #take()}; until then this object owns it, and {@link #close()} closes it.
 *
 * <p>What the opening threw is rethrown unchanged by {@link #await()} and {@link #take()}, so a
 * driver that failed to start ahead of need fails exactly as a driver opened on demand does.
 * {@link #close()} does not wait for a slow start: it interrupts it (an {@code IsolatedPjrtDriver}
 * kills its worker on interrupt) and a driver that still arrives is closed by the opening thread.
 */
public final class WarmDriver<D extends CompilerDriver> implements AutoCloseable {
  /** How long {@link #close()} waits for an interrupted start to stop (killing a worker takes milliseconds). */
  private static final Duration STOP_WAIT = Duration.ofSeconds(10);

  private final Thread thread;
  private D driver;
  private Throwable failure;
  private boolean done;
  private boolean taken;
  private boolean closed;

  private WarmDriver(String name, Supplier<? extends D> open) {
    thread = Thread.ofPlatform().daemon().name(name).unstarted(() -> opened(open));
  }

  /** Starts opening a driver with {@code open} on a daemon thread named {@code name}. */
  public static <D extends CompilerDriver> WarmDriver<D> start(String name, Supplier<? extends D> open) {
    WarmDriver<D> w = new WarmDriver<>(name, open);
    w.thread.start();
    return w;
  }

  private void opened(Supplier<? extends D> open) {
    D d = null;
    Throwable t = null;
    try {
      d = open.get();
    } catch (Throwable e) {
      t = e;
    }
    boolean discard;
    synchronized (this) {
      discard = closed;
      if (!discard) {
        driver = d;
        failure = t;
      }
      done = true;
      notifyAll();
    }
    if (discard && d != null) {
      d.close(); // closed while starting: nobody will take it
    }
  }

  /**
   * Waits until the driver has started and returns it; it stays owned by this object. Rethrows
   * what opening it threw. An interrupt while waiting is an {@link XlacException} (ENVIRONMENT),
   * as an interrupted {@link DriverFactory#open()} throws, with the thread's interrupt status kept.
   */
  public D await() {
    synchronized (this) {
      if (waitUntilDone()) {
        return result();
      }
    }
    throw interrupted();
  }

  /**
   * {@link #await()}, then hands the driver over: the caller owns it from now on. Once only. An
   * interrupt while waiting closes this (stopping the start), since the caller holds it no more.
   */
  public D take() {
    synchronized (this) {
      if (taken) {
        throw new IllegalStateException("the pre-started driver was already taken");
      }
      if (waitUntilDone()) {
        taken = true;
        D d = result();
        driver = null;
        return d;
      }
    }
    close();
    throw interrupted();
  }

  /** False when interrupted (the interrupt status is set again). */
  private boolean waitUntilDone() {
    while (!done && !closed) {
      try {
        wait();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    if (closed) {
      throw new IllegalStateException("the pre-started driver was closed");
    }
    return true;
  }

  private static XlacException interrupted() {
    return new XlacException(ExitCode.ENVIRONMENT, "interrupted while the compiler was starting");
  }

  private D result() {
    if (failure instanceof RuntimeException r) {
      throw r;
    }
    if (failure instanceof Error e) {
      throw e;
    }
    if (failure != null) {
      throw new IllegalStateException(failure);
    }
    return driver;
  }

  /**
   * Closes the driver unless it was taken: one that has started is closed here; a start still in
   * progress is interrupted, and this waits only for it to stop (not for it to finish). Safe twice.
   */
  @Override
  public void close() {
    D d;
    boolean running;
    synchronized (this) {
      if (closed || taken) {
        return;
      }
      closed = true;
      running = !done;
      d = driver;
      driver = null;
      notifyAll();
    }
    if (d != null) {
      d.close();
    }
    if (running) {
      thread.interrupt();
      awaitStop();
    }
  }

  /**
   * Waits for the interrupted start to end, up to {@link #STOP_WAIT}, also when the caller is
   * interrupted itself (an interrupted {@link #take()} closes this); the caller's status is kept.
   * A start that ignores interrupts goes on; its driver is closed when it arrives.
   */
  private void awaitStop() {
    boolean interrupted = Thread.interrupted();
    long deadline = System.nanoTime() + STOP_WAIT.toNanos();
    try {
      while (thread.isAlive()) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return;
        }
        try {
          thread.join(Duration.ofNanos(left));
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
