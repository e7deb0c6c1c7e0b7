package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.VerifyReport;
import dev.xlac.core.ExitCode;
import dev.xlac.core.Sizes;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "verify", mixinStandardHelpOptions = true,
    description = "Check every stored graph, artifact and log against its checksum, and the indexes against the records.",
    footer = {"%nExit code 1 when problems were found and not repaired. With --repair, damaged entries are dropped",
        "(a damaged graph with its artifacts) and the indexes rebuilt; this needs the write lock."})
final class CacheVerifyCommand implements Callable<Integer> {
  @Option(names = "--repair", description = "Drop damaged entries and rebuild the indexes.")
  boolean repair;

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    VerifyReport r;
    try (CacheStore store = repair ? cache.openWritable() : cache.openReadOnly()) {
      r = store.verify(repair);
    }
    PrintWriter out = cache.out();
    for (VerifyReport.Problem p : r.problems()) {
      out.printf("%s %s: %s%n", p.damage() ? (r.repaired() ? "dropped" : "damaged") : (r.repaired() ? "rebuilt"
          : "inconsistent"), p.entry(), p.description());
    }
    out.printf("Checked %s and %s (%s): %s%s%n", Tables.plural(r.graphsChecked(), "graph"),
        Tables.plural(r.artifactsChecked(), "artifact"), Sizes.human(r.bytesChecked()),
        r.clean() ? "all good" : Tables.plural(r.problems().size(), "problem"),
        r.repaired() ? ", repaired" : r.clean() ? "" : "; run 'xlac cache verify --repair'");
    out.flush();
    return (r.clean() || r.repaired() ? ExitCode.OK : ExitCode.WORK_FAILED).code();
  }
}
