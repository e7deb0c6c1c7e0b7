package dev.xlac.cli.cache;

import dev.xlac.cache.CacheRepair;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.DamagedCacheException;
import dev.xlac.core.Sizes;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

@Command(name = "clear", mixinStandardHelpOptions = true,
    description = "Remove every graph and artifact, keeping the configuration (max-size, trust) and the usage"
        + " counters.",
    footer = "%nA cache whose database is too damaged to open is replaced by an empty one, keeping whatever"
        + " settings and counters can still be read.")
final class CacheClearCommand implements Callable<Integer> {
  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    long freed;
    try (CacheStore store = cache.openWritable()) {
      freed = store.clear();
    } catch (DamagedCacheException e) {
      CacheRepair.Cleared c = CacheRepair.clearDamaged(cache.directory(), cache.waitDuration(), cache.notices());
      cache.err().println("xlac: " + e.summary()
          + ": replaced it with an empty database" + (c.settingsKept() ? ", keeping its settings"
              : "; its settings (max-size, trust) could not be read and are unset"));
      cache.err().flush();
      freed = c.bytesFreed();
    }
    cache.out().println("Cleared the cache, freed " + Sizes.human(freed));
    cache.out().flush();
    return 0;
  }
}
