package dev.xlac.cli.cache;

import dev.xlac.cache.CacheRemote;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompilerFilter;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.ListQuery;
import dev.xlac.cache.ListRow;
import dev.xlac.cache.RequestInfo;
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
    footer = {"%nColumns: short fingerprint, module, status, compiler (driver:target), artifact size, compile time,"
        + " last access (UTC). With --json, one array of objects with the keys fingerprint, module, status,"
        + " compiler, artifact_bytes, hlo_bytes, compile_seconds and last_access (ISO-8601); compiler,"
        + " artifact_bytes and compile_seconds are null on pending rows.",
        "%n--runtime lists the executables recorded for 'xlac run' instead, one row per request key: short key,"
            + " platform, program format, executable size, compile time, hits, last access. With --json the keys are"
            + " key, platform, format, plugin_sha256, program_bytes, executable_bytes, compile_seconds, hits, created"
            + " and last_access.",
        "%n--remote lists the objects of the remote tier: kind (graph, artifact, runtime), name (short fingerprint;"
            + " fingerprint/compiler id for artifacts; request key), size, last modified. With --json the keys are kind,"
            + " name, key, bytes and last_modified."})
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

  @Option(names = "--runtime", description = "List the runtime entries (executables recorded for 'xlac run').")
  boolean runtime;

  @Option(names = "--remote", description = "List the objects of the cache's remote tier ('xlac cache config remote').")
  boolean remote;

  @Mixin
  CacheOptions cache;

  @Override
  public Integer call() throws InterruptedException {
    if (runtime) {
      return runtime();
    }
    if (remote) {
      return remote();
    }
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

  private int remote() throws InterruptedException {
    List<CacheRemote.Row> rows;
    try (CacheStore store = cache.openReadOnly(); CacheRemote remote = CacheRemote.forCommand(store, cache.notices())) {
      rows = remote.list();
    }
    PrintWriter out = cache.out();
    if (json) {
      Iterable<Map<String, Object>> objects = () -> rows.stream().map(r -> {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", r.kind());
        m.put("name", r.name());
        m.put("key", r.key());
        m.put("bytes", r.bytes());
        m.put("last_modified", r.lastModified() == null ? null : Tables.iso(r.lastModified()));
        return m;
      }).iterator();
      Json.write(objects, out);
      out.println();
    } else {
      out.printf("%-8s  %-25s  %10s  %s%n", "KIND", "NAME", "SIZE", "MODIFIED");
      for (CacheRemote.Row r : rows) {
        String name = r.name().length() <= 25 ? r.name() : r.name().contains("/")
            ? r.name().substring(0, 12) + "/" + r.name().substring(r.name().indexOf('/') + 1).substring(0, 12)
            : r.name().substring(0, 12);
        out.printf("%-8s  %-25s  %10s  %s%n", r.kind(), name, Sizes.human(r.bytes()),
            r.lastModified() == null ? "-" : Tables.time(r.lastModified()));
      }
    }
    out.flush();
    return 0;
  }

  private int runtime() throws InterruptedException {
    List<RequestInfo> rows;
    try (CacheStore store = cache.openReadOnly()) {
      rows = store.requests();
    }
    PrintWriter out = cache.out();
    if (json) {
      Iterable<Map<String, Object>> objects = () -> rows.stream().map(CacheLsCommand::toJson).iterator();
      Json.write(objects, out);
      out.println();
    } else {
      out.printf("%-18s  %-8s  %-6s  %10s  %9s  %6s  %s%n", "KEY", "PLATFORM", "FORMAT", "SIZE", "COMPILE", "HITS",
          "LAST ACCESS");
      for (RequestInfo r : rows) {
        out.printf("%-18s  %-8s  %-6s  %10s  %9s  %6d  %s%n", r.key().text().substring(0, 18), r.platformName(),
            r.format(), Sizes.human(r.executableBytes()), dev.xlac.cache.Quantities.human(r.compileTime()), r.hits(),
            Tables.time(r.lastAccess()));
      }
    }
    out.flush();
    return 0;
  }

  private static Map<String, Object> toJson(RequestInfo r) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("key", r.key().text());
    m.put("platform", r.platformName());
    m.put("format", r.format());
    m.put("plugin_sha256", r.pluginSha256());
    m.put("program_bytes", r.programBytes());
    m.put("executable_bytes", r.executableBytes());
    m.put("compile_seconds", Tables.seconds(r.compileTime()));
    m.put("hits", r.hits());
    m.put("created", Tables.iso(r.created()));
    m.put("last_access", Tables.iso(r.lastAccess()));
    return m;
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
