package dev.xlac.cli.cache;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.Locale;

/** Formatting shared by the cache commands' text output. */
final class Tables {
  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm", Locale.ROOT)
      .withZone(ZoneOffset.UTC);

  private Tables() {}

  /** UTC minutes, as tables show them. */
  static String time(Instant t) {
    return TIME.format(t);
  }

  /** ISO-8601 in UTC with seconds, as --json writes it. */
  static String iso(Instant t) {
    return t.truncatedTo(ChronoUnit.SECONDS).toString();
  }

  static double seconds(Duration d) {
    return d.toMillis() / 1000.0;
  }

  static String plural(long n, String word) {
    return n + " " + word + (n == 1 ? "" : "s");
  }
}
