package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStatistics;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.Quantities;
import dev.xlac.core.Json;
import dev.xlac.core.Sizes;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "stat", mixinStandardHelpOptions = true,
    description = "Show the cache's statistics, as 'ccache -s' does: contents, sizes, hits and misses, time saved.",
    footer = {"%nHits and misses are counted by processes that write to the cache. The disk reserve is space the"
        + " cache keeps so that it can be pruned or cleared on a full disk.",
        "%nWith --json, one object with the keys directory, schema_version, graphs, pending_graphs, compiled,"
            + " failed, stored_bytes, raw_bytes, hlo_raw_bytes, hlo_stored_bytes, artifact_bytes, runtime_entries,"
            + " runtime_bytes, runtime_hits, runtime_seconds_saved, pending_runtime_hit_records, disk_bytes,"
            + " max_size_bytes (null if none), hits, misses, compile_seconds_saved, cleanups, damaged_reads,"
            + " counters_since (ISO-8601), disk_reserve_bytes (0 if none) and disk_reserve_note (why there is none,"
            + " else null)."})
final class CacheStatCommand implements Callable<Integer> {
  @Option(names = "--json", description = "Print a JSON object.")
  boolean json;

  @Option(names = "--zero", description = "Set the usage counters (hits, misses, time saved, cleanups) to zero.")
  boolean zero;

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    PrintWriter out = cache.out();
    if (zero) {
      try (CacheStore store = cache.openWritable()) {
        store.zeroStatistics();
      }
      out.println("Statistics zeroed");
      out.flush();
      return 0;
    }
    CacheStatistics s;
    try (CacheStore store = cache.openReadOnly()) {
      s = store.statistics();
    }
    if (json) {
      out.println(Json.write(toJson(s)));
    } else {
      long lookups = s.hits() + s.misses();
      row(out, "Cache directory", s.directory().toString());
      row(out, "Schema version", s.schemaVersion() == 0 ? "none (no cache yet)" : Integer.toString(s.schemaVersion()));
      row(out, "Graphs", s.graphs() + " (" + s.pendingGraphs() + " pending)");
      row(out, "Artifacts", s.compiled() + " compiled, " + s.failed() + " failed");
      row(out, "Hits", s.hits() + " / " + lookups + " lookups"
          + (lookups == 0 ? "" : String.format(Locale.ROOT, " (%.2f %%)", 100.0 * s.hits() / lookups)));
      row(out, "Misses", Long.toString(s.misses()));
      row(out, "Compile time saved", Quantities.human(s.timeSaved()));
      row(out, "Stored", Sizes.human(s.storedBytes()) + " (uncompressed " + Sizes.human(s.rawBytes()) + ")");
      row(out, "  HLO graphs", Sizes.human(s.hloStoredBytes()) + " (uncompressed " + Sizes.human(s.hloRawBytes()) + ")");
      row(out, "  Artifacts", Sizes.human(s.artifactBytes()));
      row(out, "  Runtime", Sizes.human(s.runtimeBytes()));
      row(out, "Runtime entries", s.runtimeEntries() + " recorded executables, " + s.runtimeHits()
          + " compiles served (xlac run), " + Quantities.human(s.runtimeTimeSaved()) + " saved");
      if (s.pendingRuntimeHitRecords() > 0) {
        long n = s.pendingRuntimeHitRecords();
        row(out, "  Not yet counted", "the hits of " + n + (n == 1 ? " run" : " runs") + " (the next command that"
            + " writes to the cache counts them)");
      }
      row(out, "On disk", Sizes.human(s.diskBytes()));
      row(out, "Max size", s.maxSize().isEmpty() ? "not set" : Sizes.human(s.maxSize().getAsLong())
          + String.format(Locale.ROOT, " (%.1f %% used)", 100.0 * s.storedBytes() / Math.max(1, s.maxSize().getAsLong())));
      row(out, "Cleanups", Long.toString(s.cleanups()));
      row(out, "Damaged reads", Long.toString(s.damagedReads()));
      row(out, "Counters since", Tables.time(s.countersSince()) + " UTC");
      row(out, "Disk reserve", s.diskReserveBytes() > 0 ? Sizes.human(s.diskReserveBytes())
          : "none (" + s.diskReserveNote() + ")");
    }
    out.flush();
    return 0;
  }

  private static void row(PrintWriter out, String name, String value) {
    out.printf("%-20s %s%n", name + ":", value);
  }

  static Map<String, Object> toJson(CacheStatistics s) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("directory", s.directory().toString());
    m.put("schema_version", s.schemaVersion() == 0 ? null : s.schemaVersion());
    m.put("graphs", s.graphs());
    m.put("pending_graphs", s.pendingGraphs());
    m.put("compiled", s.compiled());
    m.put("failed", s.failed());
    m.put("stored_bytes", s.storedBytes());
    m.put("raw_bytes", s.rawBytes());
    m.put("hlo_raw_bytes", s.hloRawBytes());
    m.put("hlo_stored_bytes", s.hloStoredBytes());
    m.put("artifact_bytes", s.artifactBytes());
    m.put("runtime_entries", s.runtimeEntries());
    m.put("runtime_bytes", s.runtimeBytes());
    m.put("runtime_hits", s.runtimeHits());
    m.put("runtime_seconds_saved", Tables.seconds(s.runtimeTimeSaved()));
    m.put("pending_runtime_hit_records", s.pendingRuntimeHitRecords());
    m.put("disk_bytes", s.diskBytes());
    m.put("max_size_bytes", s.maxSize().isPresent() ? s.maxSize().getAsLong() : null);
    m.put("hits", s.hits());
    m.put("misses", s.misses());
    m.put("compile_seconds_saved", Tables.seconds(s.timeSaved()));
    m.put("cleanups", s.cleanups());
    m.put("damaged_reads", s.damagedReads());
    m.put("counters_since", Tables.iso(s.countersSince()));
    m.put("disk_reserve_bytes", s.diskReserveBytes());
    m.put("disk_reserve_note", s.diskReserveBytes() > 0 ? null : s.diskReserveNote());
    return m;
  }
}
