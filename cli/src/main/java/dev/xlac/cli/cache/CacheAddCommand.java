package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStore;
import dev.xlac.cli.InputReporter;
import dev.xlac.core.ExitCode;
import dev.xlac.pipeline.CacheIntake;
import dev.xlac.pipeline.PathSource;
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
        "Directories are searched for compiler inputs as 'xlac hash' does."},
    footer = "%nPrints one line: added, already present and skipped counts. Unreadable files are reported on"
        + " stderr; the others are still added, and the exit code is 2.")
final class CacheAddCommand implements Callable<Integer> {
  @Parameters(arity = "1..*", paramLabel = "PATH", description = "Dump files or directories.")
  List<Path> paths;

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    PrintWriter out = cache.out();
    PathSource.Result r;
    try (CacheStore store = cache.openWritable()) {
      r = CacheIntake.addPaths(store, paths);
    }
    // cache add's own order, as always: the notes, every path that could not be searched or read, the counts,
    // then "no HLO modules found".
    InputReporter report = new InputReporter(cache.err());
    report.report(r.notes(), List.of(), r.errors(), null);
    out.printf("added %d, already present %d, skipped %d%n", r.added(), r.alreadyPresent(), r.skipped());
    out.flush();
    return report.report(List.of(), List.of(), List.of(), r.noModules() ? r.paths() : null).code();
  }
}
