package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompilerFilter;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.ListQuery;
import dev.xlac.cache.ListRow;
import dev.xlac.core.Json;
import dev.xlac.core.Sizes;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "ls", mixinStandardHelpOptions = true,
    description = "List the cache: one row per graph and compiler it was compiled with; a graph compiled by"
        + " nothing is one 'pending' row.",
    footer = "%nColumns: short fingerprint, module, status, compiler (driver:target), artifact size, compile time,"
        + " last access (UTC). With --json, one array of objects with the keys fingerprint, module, status,"
        + " compiler, artifact_bytes, hlo_bytes, compile_seconds and last_access (ISO-8601); compiler,"
        + " artifact_bytes and compile_seconds are null on pending rows.")
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
    List<ListRow> rows;
    try (CacheStore store = cache.openReadOnly()) {
      rows = store.list(new ListQuery(status, compiler == null ? null : CompilerFilter.parse(compiler), sort));
    }
    PrintWriter out = cache.out();
    if (json) {
      writeJson(rows, out);
    } else {
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

  /** Rows become JSON objects one at a time, so a listing of 100,000 rows is never held as text. */
  static void writeJson(List<ListRow> rows, PrintWriter out) {
    Iterable<Map<String, Object>> objects = () -> rows.stream().map(CacheLsCommand::toJson).iterator();
    Json.write(objects, out);
    out.println();
  }

  private static Map<String, Object> toJson(ListRow r) {
    boolean pending = r.status() == EntryStatus.PENDING;
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("fingerprint", r.fingerprint().value());
    m.put("module", r.module() == null ? "" : r.module());
    m.put("status", r.status().jsonName());
    m.put("compiler", r.compilerName());
    m.put("artifact_bytes", pending ? null : r.artifactBytes());
    m.put("hlo_bytes", r.hloBytes());
    m.put("compile_seconds", pending ? null : Tables.seconds(r.compileTime()));
    m.put("last_access", Tables.iso(r.lastAccess()));
    return m;
  }

  private static String abbreviate(String s, int width) {
    String v = s == null || s.isEmpty() ? "-" : s;
    return v.length() <= width ? v : v.substring(0, width - 1) + "~";
  }
}
