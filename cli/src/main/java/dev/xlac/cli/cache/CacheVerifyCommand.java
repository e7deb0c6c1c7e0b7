package dev.xlac.cli.cache;

import dev.xlac.cache.CacheRepair;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RepairReport;
import dev.xlac.cache.VerifyReport;
import dev.xlac.core.ExitCode;
import dev.xlac.core.Sizes;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "verify", mixinStandardHelpOptions = true,
    description = "Check every stored graph, artifact and log against its checksum, the database's files, and the"
        + " indexes against the records.",
    footer = "%nExit code 1 when problems were found and not repaired. With --repair (which needs the write lock),"
        + " values RocksDB cannot read are recovered from the blob files where possible, damaged entries are dropped"
        + " (a damaged graph with its artifacts) and the indexes rebuilt; a database that cannot be opened, or whose"
        + " files are damaged beyond that, is rebuilt from what can be read, and the damaged one is kept beside it."
        + " What was lost is listed. Exit code 0 when the cache verifies clean afterwards.")
final class CacheVerifyCommand implements Callable<Integer> {
  @Option(names = "--repair", description = "Repair: recover or drop damaged entries, rebuild the indexes, or rebuild"
      + " the database from what can be read.")
  boolean repair;

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    PrintWriter out = cache.out();
    if (repair) {
      RepairReport r = CacheRepair.repair(cache.directory(), cache.waitDuration(), cache.notices());
      printRepair(out, r);
      out.flush();
      return (r.clean() ? ExitCode.OK : ExitCode.WORK_FAILED).code();
    }
    VerifyReport r;
    try (CacheStore store = cache.openReadOnly()) {
      r = store.verify(false);
    }
    printProblems(out, r);
    out.printf("Checked %s and %s (%s): %s%n", Tables.plural(r.graphsChecked(), "graph"),
        Tables.plural(r.artifactsChecked(), "artifact"), Sizes.human(r.bytesChecked()),
        r.clean() ? "all good" : Tables.plural(r.problems().size(), "problem") + "; run 'xlac cache verify --repair'");
    out.flush();
    return (r.clean() ? ExitCode.OK : ExitCode.WORK_FAILED).code();
  }

  private static void printProblems(PrintWriter out, VerifyReport r) {
    for (VerifyReport.Problem p : r.problems()) {
      String what = p.action() != null ? p.action() : p.damage() ? "damaged" : "inconsistent";
      out.printf("%s %s: %s%n", what, p.entry(), p.description());
    }
  }

  private static void printRepair(PrintWriter out, RepairReport r) {
    if (r.found() != null) {
      printProblems(out, r.found());
    }
    if (r.rebuilt()) {
      out.printf("Rebuilt the database from what could still be read (%s)%n", r.rebuildReason());
    }
    RepairReport.Salvage s = r.salvage();
    if (s != null) {
      out.printf("Salvaged %s%s and %s%s%s%s%s%n", Tables.plural(s.graphsKept(), "graph"),
          s.graphsRestored() == 0 ? "" : " (" + s.graphsRestored() + " restored from their modules)",
          Tables.plural(s.artifactsKept(), "artifact"),
          s.artifactsRestored() == 0 ? "" : " (" + s.artifactsRestored() + " restored from their bytes, compile time"
              + " unknown)",
          s.valuesFromBlobFiles() == 0 ? "" : "; " + s.valuesFromBlobFiles() + " of them read back from the blob files",
          s.logsLost() == 0 ? "" : "; " + Tables.plural(s.logsLost(), "compile log") + " lost",
          s.settingsKept() ? "; settings kept" : "; the settings could not be read (max-size and trust are unset)");
    }
    java.util.Set<String> dropped = new java.util.HashSet<>();
    if (r.found() != null) {
      r.found().problems().stream().filter(p -> "dropped".equals(p.action())).forEach(p -> dropped.add(p.entry()));
    }
    for (RepairReport.LostEntry l : r.lost()) {
      if (!dropped.contains(l.entry())) { // said already
        out.printf("lost %s: %s%n", l.entry(), l.why());
      }
    }
    if (r.emptyReason() != null) {
      out.printf("Could not rebuild the database (%s): the cache starts empty%n", r.emptyReason());
    }
    if (r.brokenDatabase() != null) {
      out.printf("The damaged database is in %s (%s): delete it when you no longer need it%n", r.brokenDatabase(),
          Sizes.human(r.brokenBytes()));
    }
    VerifyReport a = r.after();
    long problems = r.found() == null ? 0 : r.found().problems().size();
    String lost = r.lost().isEmpty() ? "" : "; " + Tables.plural(r.lost().size(), "entry", "entries") + " lost";
    if (r.clean()) {
      out.printf("Checked %s and %s (%s): %s%n", Tables.plural(a.graphsChecked(), "graph"),
          Tables.plural(a.artifactsChecked(), "artifact"), Sizes.human(a.bytesChecked()),
          problems == 0 && !r.rebuilt() ? "all good" : (r.rebuilt() ? "rebuilt" : Tables.plural(problems, "problem")
              + ", repaired") + lost + "; the cache verifies clean");
    } else {
      printProblems(out, a);
      out.printf("Checked %s and %s (%s): %s still wrong after the repair%s%n", Tables.plural(a.graphsChecked(), "graph"),
          Tables.plural(a.artifactsChecked(), "artifact"), Sizes.human(a.bytesChecked()),
          Tables.plural(a.problems().size(), "problem"), lost);
    }
  }
}
