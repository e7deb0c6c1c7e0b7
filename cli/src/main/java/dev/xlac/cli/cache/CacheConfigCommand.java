package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.Quantities;
import dev.xlac.core.Sizes;
import dev.xlac.core.XlacException;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

@Command(name = "config", mixinStandardHelpOptions = true,
    description = {"Show or set a cache setting. The only setting is max-size: the size the cache is trimmed to",
        "(least recently used first) after every write, as ccache does."},
    footer = {"%nExamples: 'xlac cache config max-size 50G', 'xlac cache config max-size none',",
        "'xlac cache config max-size' (prints it)."})
final class CacheConfigCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "KEY", description = "max-size")
  String key;

  @Parameters(index = "1", arity = "0..1", paramLabel = "VALUE", description = "A size (50G, 500MiB), or none.")
  String value;

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    if (!key.equals("max-size")) {
      throw XlacException.badInput("unknown cache setting '" + key + "' (known: max-size)");
    }
    var out = cache.out();
    if (value == null) {
      try (CacheStore store = cache.openReadOnly()) {
        out.println(describe(store.maxSize()));
      }
    } else {
      OptionalLong max;
      try {
        max = value.equals("none") ? OptionalLong.empty() : OptionalLong.of(Quantities.parseSize(value));
      } catch (IllegalArgumentException e) {
        throw XlacException.badInput(e.getMessage());
      }
      try (CacheStore store = cache.openWritable()) {
        store.setMaxSize(max);
      }
      out.println("max-size " + describe(max));
    }
    out.flush();
    return 0;
  }

  private static String describe(OptionalLong max) {
    return max.isEmpty() ? "none" : max.getAsLong() + " (" + Sizes.human(max.getAsLong()) + ")";
  }
}
