package dev.xlac.cli.cache;

import dev.xlac.cache.BundleSigningKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompilerFilter;
import dev.xlac.cache.ExportRequest;
import dev.xlac.cache.ExportResult;
import dev.xlac.core.Sizes;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "export", mixinStandardHelpOptions = true,
    description = {"Write a portable bundle (tar + zstd) of graphs, artifacts and their metadata, with checksums,"
        + " for 'xlac cache import' on another machine.",
        "Works while another process writes to the cache."},
    footer = {"%nWith --compiler, the bundle holds that compiler's artifacts and the graphs they came from; without,"
        + " every graph (pending ones too) and artifact. A damaged entry stops the export: repair the cache first.",
        "%nWith --sign, the bundle is signed with a private key that 'xlac cache keygen' made. A machine that trusts"
        + " the matching public key then knows that the bundle holds exactly what this export wrote."})
final class CacheExportCommand implements Callable<Integer> {
  @Parameters(paramLabel = "FILE", description = "The bundle to write (e.g. warm-cache.tar.zst); replaced if it exists.")
  Path file;

  @Option(names = "--compiler", paramLabel = "X", description = "Only this compiler's artifacts (short name or digest prefix).")
  String compiler;

  @Option(names = "--since", paramLabel = "DURATION", converter = CacheOptions.DurationConverter.class,
      description = "Only artifacts made and graphs seen within DURATION (e.g. 7d).")
  Duration since;

  @Option(names = "--sign", paramLabel = "KEYFILE",
      description = "Sign the bundle with this private key (PREFIX.key from 'xlac cache keygen PREFIX').")
  Path sign;

  @Mixin
  CacheOptions cache;

  @Override
  public Integer call() throws InterruptedException {
    BundleSigningKey key = sign == null ? null : BundleSigningKey.read(sign); // a bad key file fails before any work
    CacheStore.warmUpBundles();
    ExportResult r;
    try (CacheStore store = cache.openReadOnly()) {
      r = store.exportBundle(file, new ExportRequest(compiler == null ? null : CompilerFilter.parse(compiler), since,
          key));
    }
    var out = cache.out();
    out.printf("Exported %s, %s%s and %s (%s) to %s (%s)%n", Tables.plural(r.graphs(), "graph"),
        Tables.plural(r.artifacts(), "artifact"),
        r.requests() > 0 ? ", " + Tables.plural(r.requests(), "runtime entry", "runtime entries") : "",
        Tables.plural(r.failures(), "failure"), Sizes.human(r.payloadBytes()), r.file(), Sizes.human(r.fileBytes()));
    if (key != null) {
      out.printf("Signed by key %s%n", key.publicKey().id());
    }
    out.flush();
    return 0;
  }
}
