package dev.xlac.cli.cache;

import dev.xlac.cache.CacheRemote;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RemoteSummary;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

@Command(name = "pull", mixinStandardHelpOptions = true,
    description = "Download from the cache's remote tier ('xlac cache config remote') the graphs named with all"
        + " their artifacts, or, without FINGERPRINTs, everything it holds, runtime entries included.",
    footer = {"%nEvery object is checked before it is stored (its SHA-256, the key it names, a graph's fingerprint"
        + " recomputed from its module, a runtime entry's request key from its sections); one that fails is named on"
        + " stderr and not stored. A cache with 'require-signed on' takes only objects signed by a key it trusts"
        + " ('xlac cache push --sign KEYFILE').",
        "%nExit codes: 0 done; 1 some objects were rejected; 2 no remote is set, or an unknown fingerprint; 3 the remote is unreachable or refuses access, or the cache is locked. Details:"
        + " docs/cache-remote.md."})
final class CachePullCommand implements Callable<Integer> {
  @Parameters(paramLabel = "FINGERPRINT", arity = "0..*",
      description = "Graphs to download: full fingerprints or unique prefixes (at least 6 hex digits) of the remote's.")
  List<String> fingerprints = new ArrayList<>();

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    RemoteSummary stats;
    try (CacheStore store = cache.openWritable(); CacheRemote remote = CacheRemote.forCommand(store, cache.notices())) {
      stats = remote.pull(store, fingerprints, cache.notices());
    }
    cache.out().println("Pulled from " + stats.remote() + ": " + stats.downloads());
    cache.out().flush();
    return stats.rejected() > 0 ? 1 : 0;
  }
}
