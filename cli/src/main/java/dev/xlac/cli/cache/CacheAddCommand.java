package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RequestIngest;
import dev.xlac.cli.InputReporter;
import dev.xlac.core.ExitCode;
import dev.xlac.pipeline.sources.CacheIntake;
import dev.xlac.pipeline.sources.PathSource;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

@Command(name = "add", mixinStandardHelpOptions = true,
    description = {"Add the HLO modules in dump files or directories to the cache as pending graphs, deduplicated"
        + " by fingerprint.",
        "Directories are searched for compiler inputs as 'xlac hash' does. A directory holding *.xpr records (a"
            + " record spool of xlac's runtime proxy, XLAC_PJRT_RECORD) is taken whole, as runtime requests: its"
            + " records go into the cache and are deleted from it."},
    footer = "%nPrints one line per kind: added, already present and skipped (or rejected) counts. Unreadable files"
        + " and rejected records are reported on stderr; the others are still added, and the exit code is 2.")
final class CacheAddCommand implements Callable<Integer> {
  @Parameters(arity = "1..*", paramLabel = "PATH", description = "Dump files or directories.")
  List<Path> paths;

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    PrintWriter out = cache.out();
    CacheIntake.Added added;
    try (CacheStore store = cache.openWritable()) {
      added = CacheIntake.add(store, paths, cache.notices());
    }
    ExitCode code = ExitCode.OK;
    if (added.requests() != null) {
      RequestIngest q = added.requests();
      out.printf("runtime requests: added %d, already present %d, rejected %d%n", q.added(), q.alreadyPresent(),
          q.rejected().size());
      out.flush();
      code = q.rejected().isEmpty() ? ExitCode.OK : ExitCode.BAD_INPUT;
    }
    PathSource.Result r = added.graphs();
    if (r == null) {
      return code.code();
    }
    // cache add's own order, as always: the notes, every path that could not be searched or read, the counts,
    // then "no HLO modules found".
    InputReporter report = new InputReporter(cache.err());
    report.report(r.notes(), List.of(), r.errors(), null);
    out.printf("added %d, already present %d, skipped %d%n", r.added(), r.alreadyPresent(), r.skipped());
    out.flush();
    ExitCode graphs = report.report(List.of(), List.of(), List.of(), r.noModules() ? r.paths() : null);
    return (graphs != ExitCode.OK ? graphs : code).code();
  }
}
