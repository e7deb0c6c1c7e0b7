package dev.xlac.cli.compile;

import java.util.Locale;

/** The live progress line on a terminal: a bar, done/total, failures, elapsed time and ETA. */
final class ProgressLine {
  private static final int BAR = 24;

  private ProgressLine() {}

  /**
   * The line, starting with a carriage return and erase-line, so it replaces the one drawn before.
   * While {@code capturing}, graphs keep arriving: the count is marked and no ETA is given.
   */
  static String of(int done, int total, int failed, boolean capturing, double elapsedSeconds) {
    int filled = total == 0 ? 0 : BAR * done / total;
    String eta = done == 0 || capturing ? "--:--" : clock(elapsedSeconds / done * (total - done));
    return String.format(Locale.ROOT, "\r\033[K[%s%s] %d/%d done%s, %d failed, elapsed %s, eta %s", "#".repeat(filled),
        "-".repeat(BAR - filled), done, total, capturing ? " (capturing)" : "", failed, clock(elapsedSeconds), eta);
  }

  /** {@code m:ss}, or {@code h:mm:ss} from an hour on. */
  static String clock(double seconds) {
    long s = Math.round(seconds);
    return s >= 3600 ? String.format(Locale.ROOT, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60)
        : String.format(Locale.ROOT, "%d:%02d", s / 60, s % 60);
  }
}
