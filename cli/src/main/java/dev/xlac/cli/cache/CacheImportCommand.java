package dev.xlac.cli.cache;

import dev.xlac.cache.BundleKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.ImportRequest;
import dev.xlac.cache.ImportResult;
import dev.xlac.cache.layout.NeuronCacheLayout;
import dev.xlac.core.ExitCode;
import dev.xlac.core.Sizes;
import dev.xlac.core.XlacException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "import", mixinStandardHelpOptions = true,
    description = {"Merge a bundle made by 'xlac cache export', or an AWS Neuron compile cache, into the cache.",
        "The whole bundle is checked first (format version, signature, entry names and types, sizes, checksums,"
            + " and each graph's fingerprint against its module); if anything is wrong, nothing is imported.",
        "With --neuron-cache DIR, import an AWS Neuron compile cache instead (neuronxcc-<version>/MODULE_*/)."},
    footer = {"%nMerging is idempotent: importing the same bundle again changes nothing. Entries already in the"
        + " cache are kept, except that a recorded failure gives way to a compiled artifact.",
        "%nNeuron entries come in by state: model.neff + model.done = compiled, model.log without a NEFF ="
            + " failed, the graph alone = pending. Each bad entry gets one line on stderr and is skipped; the others"
            + " are imported, and the exit code is 2.",
        "%nA signed bundle's signature is always checked. An unsigned bundle, or one signed by a key that is not"
        + " trusted, is refused when the cache requires signed bundles ('xlac cache config require-signed on') or"
        + " when --trust is given. Details, and the trust model: docs/bundles.md.",
        "%nA bundle that unpacks to more than the limit (--max-unpacked, else 'xlac cache config import-max-unpacked',"
        + " else 1 TiB), or whose new values do not fit into the free space of the cache's filesystem, is refused"
        + " before anything is written (exit codes 2 and 3). Entries of any size are imported a piece at a time."})
final class CacheImportCommand implements Callable<Integer> {
  @Parameters(arity = "0..1", paramLabel = "FILE", description = "The bundle.")
  Path file;

  @Option(names = "--neuron-cache", paramLabel = "DIR",
      description = "Import a Neuron compile cache directory (e.g. /var/tmp/neuron-compile-cache) instead of a bundle.")
  Path neuronCache;

  @Option(names = "--trust", paramLabel = "PUBKEY",
      description = "Accept bundles signed by this public key (PREFIX.pub), besides the keys the cache trusts, and"
          + " refuse any other bundle. Can be given more than once.")
  List<Path> trust = new ArrayList<>();

  @Option(names = "--max-unpacked", paramLabel = "SIZE",
      description = "Refuse a bundle that unpacks to more than SIZE (500G, 2TiB; none: no limit): its entries plus the"
          + " modules and logs decompressed to check them. Replaces the cache's import-max-unpacked setting.")
  String maxUnpacked;

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    if ((file == null) == (neuronCache == null)) {
      throw XlacException.badInput("cache import takes a bundle FILE or --neuron-cache DIR (exactly one)");
    }
    if (neuronCache != null && !trust.isEmpty()) {
      throw XlacException.badInput("--trust applies to bundles; a Neuron cache directory is not signed");
    }
    if (neuronCache != null && maxUnpacked != null) {
      throw XlacException.badInput("--max-unpacked applies to bundles, not to a Neuron cache directory");
    }
    return neuronCache != null ? importNeuron() : importBundle();
  }

  private int importBundle() throws InterruptedException {
    ImportRequest request = new ImportRequest(trust.stream().map(BundleKey::read).toList());
    if (maxUnpacked != null) {
      request = request.withMaxUnpacked(CacheConfigCommand.sizeOrNone(maxUnpacked, "--max-unpacked"));
    }
    CacheStore.warmUpBundles();
    ImportResult r;
    try (CacheStore store = cache.openWritable()) {
      r = store.importBundle(file, request);
    }
    if (r.signer() != null && !r.signerTrusted()) {
      cache.notices().accept("the bundle is signed by key " + r.signer().id() + ", which this cache does not trust;"
          + " it was imported because signatures are not required ('xlac cache config require-signed on')");
    }
    var out = cache.out();
    out.printf("Imported %s: graphs added %d (already present %d), artifacts added %d (already present %d),"
        + " failures added %d%s%n", Sizes.human(r.payloadBytes()), r.graphsAdded(), r.graphsPresent(), r.artifactsAdded(),
        r.artifactsPresent(), r.failuresAdded(),
        (r.neuronNamesAdded() > 0 ? ", Neuron names added " + r.neuronNamesAdded() : "")
        + (r.requestsAdded() + r.requestsPresent() > 0 ? ", runtime entries added " + r.requestsAdded()
            + " (already present " + r.requestsPresent() + ")" : ""));
    if (r.signerTrusted()) {
      out.printf("Signed by trusted key %s%n", r.signer().id());
    }
    out.flush();
    return 0;
  }

  private int importNeuron() throws InterruptedException {
    NeuronCacheLayout.IngestResult r;
    try (CacheStore store = cache.openWritable()) {
      r = NeuronCacheLayout.ingest(neuronCache, store, cache.notices());
    }
    PrintWriter out = cache.out();
    out.printf("Imported Neuron cache %s: %d entries (%d compiled, %d failed, %d pending), graphs added %d;"
        + " %d bad entries skipped, %d stale locks ignored%n", neuronCache, r.entries(), r.compiled(), r.failed(),
        r.pending(), r.graphsAdded(), r.bad(), r.staleLocks());
    out.flush();
    return r.bad() > 0 ? ExitCode.BAD_INPUT.code() : ExitCode.OK.code();
  }
}
