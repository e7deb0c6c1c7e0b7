package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStore;
import dev.xlac.core.Sizes;
import dev.xlac.hlo.GraphFingerprint;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

@Command(name = "rm", mixinStandardHelpOptions = true,
    description = "Remove graphs, with every artifact compiled from them.")
final class CacheRmCommand implements Callable<Integer> {
  @Parameters(arity = "1..*", paramLabel = "FINGERPRINT",
      description = "Fingerprints, or unique prefixes of at least 6 hex digits.")
  List<String> fingerprints;

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    long freed;
    List<GraphFingerprint> resolved = new ArrayList<>();
    try (CacheStore store = cache.openWritable()) {
      for (String f : fingerprints) {
        resolved.add(store.resolve(f)); // all or nothing: an unknown one stops before anything is removed
      }
      freed = store.remove(resolved);
    }
    var out = cache.out();
    resolved.forEach(f -> out.println("removed " + f));
    out.printf("Removed %s, freed %s%n", Tables.plural(resolved.size(), "graph"), Sizes.human(freed));
    out.flush();
    return 0;
  }
}
