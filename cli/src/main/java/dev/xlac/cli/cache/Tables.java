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
    long secs = t.getEpochSecond();
    if (secs < 0 || secs >= YEAR_10000) {
      return t.truncatedTo(ChronoUnit.SECONDS).toString(); // Instant's own form for years outside 1970-9999
    }
    // The days-to-civil conversion (proleptic Gregorian, UTC) by hand: ls --json writes one per
    // row, and in a fresh JVM DateTimeFormatter costs about 0.8 us a call (80 ms per 100,000 rows).
    long days = secs / 86_400;
    int sod = (int) (secs % 86_400);
    long z = days + 719_468;
    long era = z / 146_097;
    long doe = z - era * 146_097;
    long yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long mp = (5 * doy + 2) / 153;
    int day = (int) (doy - (153 * mp + 2) / 5 + 1);
    int month = (int) (mp < 10 ? mp + 3 : mp - 9);
    long year = yoe + era * 400 + (month <= 2 ? 1 : 0);
    char[] c = "0000-00-00T00:00:00Z".toCharArray();
    digits(c, 0, (int) year, 4);
    digits(c, 5, month, 2);
    digits(c, 8, day, 2);
    digits(c, 11, sod / 3600, 2);
    digits(c, 14, sod / 60 % 60, 2);
    digits(c, 17, sod % 60, 2);
    return new String(c);
  }

  private static final long YEAR_10000 = 253_402_300_800L;

  private static void digits(char[] c, int at, int value, int width) {
    for (int i = at + width - 1; i >= at; i--, value /= 10) {
      c[i] = (char) ('0' + value % 10);
    }
  }

  static double seconds(Duration d) {
    return d.toMillis() / 1000.0;
  }

  static String plural(long n, String word) {
    return n + " " + word + (n == 1 ? "" : "s");
  }

  static String plural(long n, String word, String words) {
    return n + " " + (n == 1 ? word : words);
  }
}
