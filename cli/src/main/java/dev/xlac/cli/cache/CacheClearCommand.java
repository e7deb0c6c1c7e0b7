package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStore;
import dev.xlac.core.Sizes;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

@Command(name = "clear", mixinStandardHelpOptions = true,
    description = "Remove every graph and artifact. The configuration (max-size) and the usage counters stay.")
final class CacheClearCommand implements Callable<Integer> {
  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    long freed;
    try (CacheStore store = cache.openWritable()) {
      freed = store.clear();
    }
    cache.out().println("Cleared the cache, freed " + Sizes.human(freed));
    cache.out().flush();
    return 0;
  }
}
