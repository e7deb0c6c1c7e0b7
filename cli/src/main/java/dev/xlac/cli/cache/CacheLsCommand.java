package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompilerFilter;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.ListQuery;
import dev.xlac.cache.ListRow;
import dev.xlac.core.Json;
import dev.xlac.core.Sizes;
import java.io.PrintWriter;
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

  @Option(names = "--sort", paramLabel = "KEY",
      description = "Order: size (largest first), age (oldest first), access (least recently used first); default fingerprint.")
  String sort;

  @Mixin
  CacheOptions cache;

  @Override
  public Integer call() throws InterruptedException {
    ListQuery.Sort order = switch (sort == null ? "fingerprint" : sort) {
      case "fingerprint" -> ListQuery.Sort.FINGERPRINT;
      case "size" -> ListQuery.Sort.SIZE;
      case "age" -> ListQuery.Sort.AGE;
      case "access" -> ListQuery.Sort.ACCESS;
      default -> throw new picocli.CommandLine.ParameterException(cache.command.commandLine(),
          "--sort must be size, age or access, not '" + sort + "'");
    };
    List<ListRow> rows;
    try (CacheStore store = cache.openReadOnly()) {
      rows = store.list(new ListQuery(status, compiler == null ? null : CompilerFilter.parse(compiler), order));
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

  /**
   * The same text {@code Json.write} makes of a list of row maps, written row by row: a cache can
   * hold hundreds of thousands of rows, and this keeps {@code ls --json} well under a second.
   */
  static void writeJson(List<ListRow> rows, PrintWriter out) {
    if (rows.isEmpty()) {
      out.println("[]");
      return;
    }
    StringBuilder b = new StringBuilder(1 << 16);
    b.append('[');
    for (int i = 0; i < rows.size(); i++) {
      ListRow r = rows.get(i);
      boolean pending = r.status() == EntryStatus.PENDING;
      b.append("\n  {\n    \"fingerprint\": ");
      Json.quote(r.fingerprint().value(), b);
      b.append(",\n    \"module\": ");
      Json.quote(r.module() == null ? "" : r.module(), b);
      b.append(",\n    \"status\": \"").append(r.status().jsonName());
      b.append("\",\n    \"compiler\": ");
      if (r.compilerName() == null) {
        b.append("null");
      } else {
        Json.quote(r.compilerName(), b);
      }
      b.append(",\n    \"artifact_bytes\": ").append(pending ? "null" : Long.toString(r.artifactBytes()));
      b.append(",\n    \"hlo_bytes\": ").append(r.hloBytes());
      b.append(",\n    \"compile_seconds\": ").append(pending ? "null" : Double.toString(Tables.seconds(r.compileTime())));
      b.append(",\n    \"last_access\": \"").append(Tables.iso(r.lastAccess())).append("\"\n  }");
      if (i + 1 < rows.size()) {
        b.append(',');
      }
      if (b.length() > 60_000) {
        out.append(b);
        b.setLength(0);
      }
    }
    b.append("\n]");
    out.append(b);
    out.println();
  }

  private static String abbreviate(String s, int width) {
    String v = s == null || s.isEmpty() ? "-" : s;
    return v.length() <= width ? v : v.substring(0, width - 1) + "~";
  }
}
