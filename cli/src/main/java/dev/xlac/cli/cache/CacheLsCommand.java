package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompilerFilter;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.ListQuery;
import dev.xlac.cache.ListRow;
import dev.xlac.core.Json;
import dev.xlac.core.Sizes;
import java.io.PrintWriter;
import java.time.Instant;
import java.time.LocalDate;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "ls", mixinStandardHelpOptions = true,
    description = {"List the cache: one row per graph and compiler it was compiled with; a graph compiled by",
        "nothing is one 'pending' row."},
    footer = {"%nColumns: short fingerprint, module, status, compiler (driver:target), artifact size, compile time,",
        "last access (UTC). With --json, one array of objects with the keys fingerprint, module, status,",
        "compiler, artifact_bytes, hlo_bytes, compile_seconds and last_access (ISO-8601); compiler,",
        "artifact_bytes and compile_seconds are null on pending rows."})
final class CacheLsCommand implements Callable<Integer> {
  @Option(names = "--json", description = "Print a JSON array.")
  boolean json;

  @Option(names = "--status", paramLabel = "STATUS", description = "Only rows with this status: pending, compiled, failed.")
  EntryStatus status;

  @Option(names = "--compiler", paramLabel = "X",
      description = "Only rows made by this compiler: a short name (pjrt:cpu), a driver, or a digest prefix.")
  String compiler;

  @Option(names = "--sort", paramLabel = "KEY", defaultValue = "fingerprint",
      description = "Order: size (largest first), age (oldest first), access (least recently used first); default fingerprint.")
  ListQuery.Sort sort;

  @Mixin
  CacheOptions cache;

  @Override
  public Integer call() throws InterruptedException {
    ListQuery query = new ListQuery(status, compiler == null ? null : CompilerFilter.parse(compiler), sort);
    PrintWriter out = cache.out();
    if (json) {
      // Rows are written as the scan makes them, so a 100,000-row listing is never held whole.
      try (CacheStore store = cache.openReadOnly()) {
        JsonRows w = new JsonRows(out);
        store.list(query, w::add);
        w.finish();
      }
    } else {
      List<ListRow> rows;
      try (CacheStore store = cache.openReadOnly()) {
        rows = store.list(query);
      }
      out.printf("%-12s  %-28s  %-8s  %-20s  %10s  %9s  %s%n", "FINGERPRINT", "MODULE", "STATUS", "COMPILER", "SIZE",
          "COMPILE", "LAST ACCESS");
      for (ListRow r : rows) {
        boolean pending = r.status() == EntryStatus.PENDING;
        out.printf("%-12s  %-28s  %-8s  %-20s  %10s  %9s  %s%n", r.fingerprint().shortForm(), abbreviate(r.module(), 28),
            r.status().jsonName(), pending ? "-" : r.compilerName(),
            r.status() == EntryStatus.COMPILED ? Sizes.human(r.artifactBytes()) : "-",
            pending ? "-" : dev.xlac.cache.Quantities.human(r.compileTime()), Tables.time(r.lastAccess()));
      }
    }
    out.flush();
    return 0;
  }

  private static final int CHUNK = 1 << 16;

  /**
   * Writes exactly the text {@code Json.write} makes of the rows as objects with the documented
   * keys (a test holds the two equal), but straight from the rows: no map, boxed number or date
   * formatter per row, which is most of the cost of a 100,000-row listing in a fresh JVM. Strings
   * are escaped by {@link Json#quote}; the text goes to {@code out} in 64 KiB chunks.
   */
  static void writeJson(List<ListRow> rows, PrintWriter out) {
    JsonRows w = new JsonRows(out);
    rows.forEach(w::add);
    w.finish();
  }

  /** {@link #writeJson} one row at a time. */
  static final class JsonRows {
    private final PrintWriter out;
    private final StringBuilder b = new StringBuilder(CHUNK + 4096);
    private final IsoSeconds iso = new IsoSeconds();
    private boolean any;

    JsonRows(PrintWriter out) {
      this.out = out;
    }

    void add(ListRow r) {
      b.append(any ? ",\n  {\n    \"fingerprint\": " : "[\n  {\n    \"fingerprint\": ");
      any = true;
      boolean pending = r.status() == EntryStatus.PENDING;
      Json.quote(r.fingerprint().value(), b);
      b.append(",\n    \"module\": ");
      Json.quote(r.module() == null ? "" : r.module(), b);
      b.append(",\n    \"status\": \"").append(r.status().jsonName());
      b.append("\",\n    \"compiler\": ");
      String compiler = r.compilerName();
      if (compiler == null) {
        b.append("null");
      } else {
        Json.quote(compiler, b);
      }
      b.append(",\n    \"artifact_bytes\": ");
      if (pending) {
        b.append("null");
      } else {
        b.append(r.artifactBytes());
      }
      b.append(",\n    \"hlo_bytes\": ").append(r.hloBytes());
      b.append(",\n    \"compile_seconds\": ");
      if (pending) {
        b.append("null");
      } else {
        b.append(Tables.seconds(r.compileTime())); // as Json writes a Double: Double.toString
      }
      b.append(",\n    \"last_access\": ");
      iso.appendQuoted(r.lastAccess(), b);
      b.append("\n  }");
      if (b.length() >= CHUNK) {
        out.append(b);
        b.setLength(0);
      }
    }

    void finish() {
      b.append(any ? "\n]" : "[]");
      out.append(b);
      out.println();
      b.setLength(0);
    }
  }

  /** {@link Tables#iso} for many instants: the date is formatted once per day, the time by hand. */
  private static final class IsoSeconds {
    private static final long YEAR_10000 = 253_402_300_800L;
    private long day = Long.MIN_VALUE;
    private String date;

    void appendQuoted(Instant t, StringBuilder b) {
      long s = t.getEpochSecond();
      if (s < 0 || s >= YEAR_10000) {
        Json.quote(Tables.iso(t), b); // outside 1970-9999 years print differently; not worth a fast path
        return;
      }
      if (s / 86_400 != day) {
        day = s / 86_400;
        date = LocalDate.ofEpochDay(day).toString();
      }
      int sec = (int) (s % 86_400);
      b.append('"').append(date).append('T');
      twoDigits(sec / 3600, b);
      twoDigits(sec / 60 % 60, b.append(':'));
      twoDigits(sec % 60, b.append(':'));
      b.append("Z\"");
    }

    private static void twoDigits(int v, StringBuilder b) {
      b.append((char) ('0' + v / 10)).append((char) ('0' + v % 10));
    }
  }

  private static String abbreviate(String s, int width) {
    String v = s == null || s.isEmpty() ? "-" : s;
    return v.length() <= width ? v : v.substring(0, width - 1) + "~";
  }
}
