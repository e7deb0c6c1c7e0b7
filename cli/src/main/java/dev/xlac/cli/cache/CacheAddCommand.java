package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.GraphIngest;
import dev.xlac.cli.InputReporter;
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
    GraphIngest.Result r;
    try (CacheStore store = cache.openWritable()) {
      r = GraphIngest.ingest(store, paths);
    }
    InputReporter report = new InputReporter(cache.err());
    report.notes(r.notes());
    report.errors(r.errors());
    out.printf("added %d, already present %d, skipped %d%n", r.added(), r.alreadyPresent(), r.skipped());
    out.flush();
    if (r.added() + r.alreadyPresent() == 0 && r.errors().isEmpty()) {
      report.noModulesFound(paths);
    }
    return report.exitCode().code();
  }
}
