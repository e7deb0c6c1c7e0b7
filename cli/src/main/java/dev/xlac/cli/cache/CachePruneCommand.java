package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompilerFilter;
import dev.xlac.cache.PruneRequest;
import dev.xlac.cache.PruneResult;
import dev.xlac.core.Json;
import dev.xlac.core.Sizes;
import dev.xlac.core.XlacException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "prune", mixinStandardHelpOptions = true,
    description = {"Remove entries, least recently used first, down to a bound, then compact so the disk usage"
        + " shrinks.",
        "Without --max-size, --older-than or a filter, prunes to the configured max-size."},
    footer = {"%nFilters (--failed, --compiler, --not-compiler) limit the candidates to matching artifacts; graphs"
        + " then stay. With filters and no bound, every matching entry is removed. Removing a graph removes its"
        + " artifacts.",
        "%nWith --json, one object with the keys dry_run, removed (array of objects with fingerprint, module,"
            + " compiler (null for a graph), status, bytes, last_access), bytes_freed, bytes_before, bytes_after,"
            + " disk_bytes_before, disk_bytes_after and disk_bytes_unreclaimed (removed data still on disk because"
            + " the disk had no room to rewrite the files it shares with entries that stay).",
        "%nPrune works on a full disk: the deletes are small, and what it cannot reclaim yet a later prune does."})
final class CachePruneCommand implements Callable<Integer> {
  @Option(names = "--max-size", paramLabel = "SIZE", converter = CacheOptions.SizeConverter.class,
      description = "Remove until the cache holds at most SIZE (e.g. 50G, 500MiB).")
  Long maxSize;

  @Option(names = "--older-than", paramLabel = "DURATION", converter = CacheOptions.DurationConverter.class,
      description = "Remove entries last used longer ago than DURATION (e.g. 30d, 12h).")
  Duration olderThan;

  @Option(names = "--failed", description = "Only recorded compile failures.")
  boolean failed;

  @ArgGroup(exclusive = true)
  CompilerChoice compilers;

  static final class CompilerChoice {
    @Option(names = "--compiler", paramLabel = "X", description = "Only artifacts of this compiler.")
    String compiler;

    @Option(names = "--not-compiler", paramLabel = "X", description = "Only artifacts of other compilers.")
    String notCompiler;
  }

  @Option(names = "--dry-run", description = "Print what would be removed; remove nothing.")
  boolean dryRun;

  @Option(names = "--json", description = "Print a JSON object.")
  boolean json;

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    CompilerFilter only = compilers == null || compilers.compiler == null ? null : CompilerFilter.parse(compilers.compiler);
    CompilerFilter not = compilers == null || compilers.notCompiler == null ? null
        : CompilerFilter.parse(compilers.notCompiler);
    PruneResult r;
    try (CacheStore store = dryRun ? cache.openReadOnly() : cache.openWritable()) {
      OptionalLong bound = maxSize == null ? OptionalLong.empty() : OptionalLong.of(maxSize);
      if (bound.isEmpty() && olderThan == null && !failed && only == null && not == null) {
        bound = store.maxSize();
        if (bound.isEmpty()) {
          throw XlacException.badInput("nothing to prune to: give --max-size, --older-than, --failed or --compiler,"
              + " or set a size limit with 'xlac cache config max-size SIZE'");
        }
      }
      r = store.prune(new PruneRequest(bound, olderThan, failed, only, not, dryRun, false));
    }
    PrintWriter out = cache.out();
    if (json) {
      out.println(Json.write(toJson(r)));
    } else {
      for (PruneResult.Removed x : r.removed()) {
        out.printf("%s %-12s  %-28s  %-20s  %-8s  %10s  %s%n", r.dryRun() ? "would remove" : "removed", x.fingerprint()
            .shortForm(), x.module(), x.isGraph() ? "(graph)" : x.compiler(), x.status().jsonName(),
            Sizes.human(x.bytes()), Tables.time(x.lastAccess()));
      }
      out.printf("%s %s and %s, %s %s (%s -> %s)%s%n", r.dryRun() ? "Would remove" : "Removed",
          Tables.plural(r.artifactsRemoved(), "artifact"), Tables.plural(r.graphsRemoved(), "graph"),
          r.dryRun() ? "freeing" : "freed", Sizes.human(r.bytesFreed()), Sizes.human(r.bytesBefore()),
          Sizes.human(r.bytesAfter()), r.dryRun() || r.diskAfter() < 0 ? ""
              : "; on disk " + Sizes.human(r.diskBefore()) + " -> " + Sizes.human(r.diskAfter()));
      if (!r.dryRun() && r.diskUnreclaimed() > 0) {
        out.printf("%s of removed data is still on disk, in files shared with entries that stay: rewriting them"
            + " needs %s free, and a prune run again then reclaims it%n",
            Sizes.human(r.diskUnreclaimed()), Sizes.human(r.roomNeeded()));
      }
    }
    out.flush();
    return 0;
  }

  static Map<String, Object> toJson(PruneResult r) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("dry_run", r.dryRun());
    m.put("removed", r.removed().stream().map(x -> {
      Map<String, Object> e = new LinkedHashMap<>();
      e.put("fingerprint", x.fingerprint().value());
      e.put("module", x.module());
      e.put("compiler", x.compiler());
      e.put("status", x.status().jsonName());
      e.put("bytes", x.bytes());
      e.put("last_access", Tables.iso(x.lastAccess()));
      return e;
    }).toList());
    m.put("bytes_freed", r.bytesFreed());
    m.put("bytes_before", r.bytesBefore());
    m.put("bytes_after", r.bytesAfter());
    m.put("disk_bytes_before", r.diskBefore());
    m.put("disk_bytes_after", r.dryRun() ? null : r.diskAfter());
    m.put("disk_bytes_unreclaimed", r.dryRun() ? null : r.diskUnreclaimed());
    return m;
  }
}
