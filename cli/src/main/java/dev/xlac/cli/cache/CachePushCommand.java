package dev.xlac.cli.cache;

import dev.xlac.cache.BundleSigningKey;
import dev.xlac.cache.CacheRemote;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RemoteSummary;
import dev.xlac.hlo.GraphFingerprint;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "push", mixinStandardHelpOptions = true,
    description = "Upload the cache to its remote tier ('xlac cache config remote'): the graphs named with their"
        + " compiled artifacts, or, without FINGERPRINTs, every graph, artifact and runtime entry.",
    footer = {"%nObjects the remote has already are not sent again; each upload is a conditional put, so nodes pushing"
        + " the same entries at once never overwrite each other. Failed compiles stay local. Reads the cache only, so it"
        + " works while another xlac process writes to it. An object already there is not replaced (to sign what"
        + " write-through uploaded unsigned, push to another prefix), unless --repair finds it damaged.",
        "%nExit codes: 0 done; 1 some local entries were damaged and not sent (named on stderr); 2 no remote is set;"
        + " 3 the remote is unreachable or refuses access. Details: docs/cache-remote.md."})
final class CachePushCommand implements Callable<Integer> {
  @Parameters(paramLabel = "FINGERPRINT", arity = "0..*",
      description = "Graphs to upload: full fingerprints or unique prefixes of at least 6 hex digits.")
  List<String> fingerprints = new ArrayList<>();

  @Option(names = "--sign", paramLabel = "KEYFILE",
      description = "Sign every object with this private key (from 'xlac cache keygen'), so that caches with"
          + " 'require-signed on' that trust its public key take them.")
  Path sign;

  @Option(names = "--repair",
      description = "Read and check every object the remote has already; replace each damaged one (bad checksum,"
          + " not an xlac object, under the wrong key) with this cache's entry, by a put conditioned on the damaged"
          + " object's ETag (If-Match).")
  boolean repair;

  @Mixin
  CacheOptions cache;

  @Override
  public Integer call() throws InterruptedException {
    Optional<BundleSigningKey> signer = sign == null ? Optional.empty() : Optional.of(BundleSigningKey.read(sign));
    RemoteSummary stats;
    try (CacheStore store = cache.openReadOnly(); CacheRemote remote = CacheRemote.forCommand(store, cache.notices())) {
      List<GraphFingerprint> graphs = fingerprints.stream().map(store::resolve).toList();
      stats = remote.push(store, graphs, cache.notices(), signer, repair);
    }
    cache.out().println("Pushed to " + stats.remote() + ": " + stats.uploads());
    cache.out().flush();
    return stats.failed() > 0 ? 1 : 0;
  }
}
