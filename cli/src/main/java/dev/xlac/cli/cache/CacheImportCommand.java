package dev.xlac.cli.cache;

import dev.xlac.cache.BundleImporter;
import dev.xlac.cache.CacheStore;
import dev.xlac.core.Sizes;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

@Command(name = "import", mixinStandardHelpOptions = true,
    description = {"Merge a bundle made by 'xlac cache export' into the cache. The whole bundle is checked first",
        "(format version, entry names and types, sizes, checksums); if anything is wrong nothing is imported."},
    footer = {"%nMerging is idempotent: importing the same bundle again changes nothing. Entries already in the",
        "cache are kept, except that a recorded failure gives way to a compiled artifact."})
final class CacheImportCommand implements Callable<Integer> {
  @Parameters(paramLabel = "FILE", description = "The bundle.")
  Path file;

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    BundleImporter.Result r;
    try (CacheStore store = cache.openWritable()) {
      r = store.importBundle(file);
    }
    var out = cache.out();
    out.printf("Imported %s: graphs added %d (already present %d), artifacts added %d (already present %d),"
        + " failures added %d%n", Sizes.human(r.payloadBytes()), r.graphsAdded(), r.graphsPresent(), r.artifactsAdded(),
        r.artifactsPresent(), r.failuresAdded());
    out.flush();
    return 0;
  }
}
