package dev.xlac.pipeline;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * While open, a JVM shutdown (Ctrl-C, SIGTERM) cancels the run it is given and then waits, up to
 * 30 s, until this is closed: the thread that runs the compile keeps storing what is finished and
 * closes the cache before the JVM exits.
 */
final class ShutdownCancel implements AutoCloseable {
  private final CountDownLatch done = new CountDownLatch(1);
  private final Thread hook;
  private volatile Runnable cancel = () -> {};

  ShutdownCancel() {
    hook = new Thread(() -> {
      cancel.run();
      try {
        done.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "xlac-parallel-compile-interrupt");
    Runtime.getRuntime().addShutdownHook(hook);
  }

  /** What a shutdown cancels from now on. */
  void cancels(Runnable what) {
    cancel = what;
  }

  @Override
  public void close() {
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) {
      // the hook is running: it waits for `done`
    } finally {
      done.countDown();
    }
  }
}
