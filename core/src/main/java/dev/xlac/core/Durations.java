package dev.xlac.core;

import java.time.Duration;

/** Durations as xlac's reports give them: seconds, and in JSON to the millisecond. */
public final class Durations {
  private Durations() {}

  /** {@code d} in seconds, to the nanosecond. */
  public static double seconds(Duration d) {
    return d.toNanos() / 1e9;
  }

  /** {@code seconds} to the millisecond, as the {@code --json} and {@code --report} fields carry them. */
  public static double round(double seconds) {
    return Math.round(seconds * 1000) / 1000.0;
  }
}
