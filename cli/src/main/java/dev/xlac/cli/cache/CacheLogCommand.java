package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.GraphInfo;
import dev.xlac.cache.GraphLog;
import dev.xlac.cache.Quantities;
import dev.xlac.core.Sizes;
import dev.xlac.hlo.GraphFingerprint;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

@Command(name = "log", mixinStandardHelpOptions = true,
    description = "Show what the cache knows about one graph: where it came from, and per compiler the outcome and log.")
final class CacheLogCommand implements Callable<Integer> {
  @Parameters(paramLabel = "FINGERPRINT", description = "A fingerprint, or a unique prefix of at least 6 hex digits.")
  String fingerprint;

  @Mixin
  CacheOptions cache;

  @Override
  public Integer call() throws InterruptedException {
    GraphLog log;
    try (CacheStore store = cache.openReadOnly()) {
      GraphFingerprint fp = store.resolve(fingerprint);
      log = store.log(fp).orElseThrow();
    }
    PrintWriter out = cache.out();
    GraphInfo g = log.graph();
    out.printf("graph:       %s%n", g.fingerprint());
    out.printf("module:      %s%n", g.moduleName());
    out.printf("source:      %s%n", g.source());
    out.printf("seen:        %d times, first %s, last %s UTC%n", g.seenCount(), Tables.time(g.firstSeen()),
        Tables.time(g.lastSeen()));
    out.printf("hlo:         %s (%s stored)%n", Sizes.human(g.hloBytes()), Sizes.human(g.storedBytes()));
    if (log.artifacts().isEmpty()) {
      out.println("status:      pending (no compiler has produced anything for it)");
    }
    for (GraphLog.Entry e : log.artifacts()) {
      out.println();
      out.printf("compiler:    %s%n", e.info().key().compiler().describe());
      out.printf("status:      %s%s%n", e.info().status().jsonName(), e.info().failureKind() == null ? ""
          : " (" + e.info().failureKind() + ": " + e.info().failureMessage() + ")");
      out.printf("recorded:    %s UTC after %s%n", Tables.time(e.info().created()),
          Quantities.human(e.info().compileTime()));
      if (e.info().bytes() > 0) {
        out.printf("artifact:    %s%n", Sizes.human(e.info().bytes()));
      }
      if (!e.log().isEmpty()) {
        out.println("log:");
        e.log().lines().forEach(l -> out.println("  " + l));
      }
    }
    out.flush();
    return 0;
  }
}
