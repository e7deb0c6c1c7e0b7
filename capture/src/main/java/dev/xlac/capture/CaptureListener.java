package dev.xlac.capture;

import dev.xlac.hlo.HloReadException;

/**
 * Receives what a trace captures, as it is captured, on the tracer's watcher thread (one call at a
 * time). Implementations typically store the module (the CLI puts it into the cache).
 */
public interface CaptureListener {
  /** A module that passed the module filter. */
  void captured(CapturedModule module);

  /** A dump file that still could not be read when the command had ended. */
  default void unreadable(HloReadException error) {}
}
