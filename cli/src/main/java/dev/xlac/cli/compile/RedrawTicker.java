package dev.xlac.cli.compile;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/** Runs a redraw once a second on a daemon thread ("xlac-progress") until stopped. */
final class RedrawTicker {
  private final ScheduledExecutorService executor;
  private final ScheduledFuture<?> tick;

  RedrawTicker(Runnable redraw) {
    executor = Executors.newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon().name("xlac-progress")
        .unstarted(r));
    tick = executor.scheduleAtFixedRate(redraw, 1, 1, TimeUnit.SECONDS);
  }

  /** Stops without waiting for a redraw in progress (which may need a lock the caller holds). */
  void stop() {
    tick.cancel(false);
    executor.shutdownNow();
  }
}
