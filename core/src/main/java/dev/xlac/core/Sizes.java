package dev.xlac.core;

import java.util.Locale;

/** Human-readable byte counts, as users read them in ccache's and du's output. */
public final class Sizes {
  private Sizes() {}

  public static String human(long bytes) {
    if (bytes < 1024) {
      return bytes + " B";
    }
    String[] units = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = bytes;
    int u = -1;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
  }
}
