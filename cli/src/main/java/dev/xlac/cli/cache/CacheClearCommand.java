package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStore;
import dev.xlac.core.Sizes;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Spec;

@Command(name = "clear", mixinStandardHelpOptions = true,
    description = "Remove every graph and artifact. The configuration (max-size) and the usage counters stay.")
final class CacheClearCommand implements Callable<Integer> {
  @Mixin
  CacheOptions cache;

  @Mixin
  CacheOptions.WaitOption wait;

  @Spec
  picocli.CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException {
    long freed;
    try (CacheStore store = cache.openWritable(spec.commandLine().getErr(), wait)) {
      freed = store.clear();
    }
    spec.commandLine().getOut().println("Cleared the cache, freed " + Sizes.human(freed));
    spec.commandLine().getOut().flush();
    return 0;
  }
}
