package dev.xlac.cache;

import dev.xlac.cache.store.Pins;

/**
 * The entries a compile run uses, pinned until this is closed: see {@link CacheStore#pinForRun}.
 * Closing it enforces the cache's size limit at once; a second close does nothing.
 */
public final class RunPins implements AutoCloseable {
  private final Pins pins;

  RunPins(Pins pins) {
    this.pins = pins;
  }

  /** How many graphs are pinned so far. */
  int pinnedGraphs() {
    return pins.pinnedGraphs();
  }

  /** How many artifacts are pinned so far. */
  int pinnedArtifacts() {
    return pins.pinnedArtifacts();
  }

  @Override
  public void close() {
    pins.close();
  }
}
