package dev.xlac.cache;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses the sizes and durations users type ({@code 50G}, {@code 512MiB}, {@code 7d}, {@code 1h30m})
 * and formats durations for tables. Size suffixes follow ccache: K, M, G, T are powers of 1000 and
 * Ki, Mi, Gi, Ti powers of 1024; a trailing B is allowed.
 */
public final class Quantities {
  private static final Pattern SIZE = Pattern.compile("(?i)^\\s*(\\d+(?:\\.\\d+)?)\\s*([kmgtp]i?)?b?\\s*$");
  private static final Pattern DURATION_PART = Pattern.compile("(?i)(\\d+)(ms|s|m|h|d|w)");

  private Quantities() {}

  /** A byte count; an {@link IllegalArgumentException} with a one-line reason when it is not one. */
  public static long parseSize(String text) {
    Matcher m = SIZE.matcher(text);
    if (!m.matches()) {
      throw new IllegalArgumentException("not a size: '" + text + "' (examples: 500M, 50G, 2GiB, 1048576)");
    }
    double value = Double.parseDouble(m.group(1));
    String unit = m.group(2) == null ? "" : m.group(2).toLowerCase(Locale.ROOT);
    double factor = switch (unit) {
      case "" -> 1;
      case "k" -> 1e3;
      case "m" -> 1e6;
      case "g" -> 1e9;
      case "t" -> 1e12;
      case "p" -> 1e15;
      case "ki" -> 1L << 10;
      case "mi" -> 1L << 20;
      case "gi" -> 1L << 30;
      case "ti" -> 1L << 40;
      case "pi" -> 1L << 50;
      default -> throw new IllegalArgumentException("not a size unit: " + unit);
    };
    double bytes = value * factor;
    if (bytes >= Long.MAX_VALUE) {
      throw new IllegalArgumentException("size too large: '" + text + "'");
    }
    return (long) bytes;
  }

  /** A duration such as {@code 30s}, {@code 15m}, {@code 12h}, {@code 7d}, {@code 2w}, {@code 1h30m} or ISO-8601 {@code PT2H}. */
  public static Duration parseDuration(String text) {
    String t = text.strip();
    if (t.toUpperCase(Locale.ROOT).startsWith("P")) {
      try {
        Duration d = Duration.parse(t.toUpperCase(Locale.ROOT));
        d.toMillis();
        return d;
      } catch (ArithmeticException e) {
        throw new IllegalArgumentException("duration too long: '" + text + "'");
      } catch (java.time.format.DateTimeParseException e) {
        throw new IllegalArgumentException("not a duration: '" + text + "'");
      }
    }
    Matcher m = DURATION_PART.matcher(t);
    Duration total = Duration.ZERO;
    int end = 0;
    while (m.find()) {
      if (m.start() != end) {
        break;
      }
      try {
        long n = Long.parseLong(m.group(1));
        total = total.plus(switch (m.group(2).toLowerCase(Locale.ROOT)) {
          case "ms" -> Duration.ofMillis(n);
          case "s" -> Duration.ofSeconds(n);
          case "m" -> Duration.ofMinutes(n);
          case "h" -> Duration.ofHours(n);
          case "d" -> Duration.ofDays(n);
          default -> Duration.ofDays(Math.multiplyExact(7, n));
        });
        total.toMillis(); // what every user of a duration calls; it must not overflow either
      } catch (NumberFormatException | ArithmeticException e) {
        throw new IllegalArgumentException("duration too long: '" + text + "'");
      }
      end = m.end();
    }
    if (end == 0 || end != t.length()) {
      throw new IllegalArgumentException("not a duration: '" + text + "' (examples: 90s, 30m, 12h, 7d, 2w, 1h30m)");
    }
    return total;
  }

  /** A short human form: {@code 0.4s}, {@code 12s}, {@code 3m 05s}, {@code 2h 03m}, {@code 4d 02h}. */
  public static String human(Duration d) {
    long ms = d.toMillis();
    if (ms < 10_000) {
      return String.format(Locale.ROOT, "%.1fs", ms / 1000.0);
    }
    long s = ms / 1000;
    if (s < 60) {
      return s + "s";
    }
    if (s < 3600) {
      return String.format(Locale.ROOT, "%dm %02ds", s / 60, s % 60);
    }
    if (s < 86400) {
      return String.format(Locale.ROOT, "%dh %02dm", s / 3600, (s % 3600) / 60);
    }
    return String.format(Locale.ROOT, "%dd %02dh", s / 86400, (s % 86400) / 3600);
  }
}
