package dev.xlac.cli.cache;

import dev.xlac.cache.CacheRemote;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RemoteSetting;
import dev.xlac.cache.layout.NeuronCacheLayout;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.pipeline.run.RuntimeLayouts;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "materialize", mixinStandardHelpOptions = true,
    description = {"Write the cache's entries into a directory in a runtime's own cache layout, so that the runtime"
        + " finds them.",
        "--layout neuron writes neuronxcc-<version>/MODULE_<hash>+<flags hash>/ directories with the MODULE names"
            + " the graphs were imported under (Neuron's hash is unpublished, so names are never invented).",
        "--layout pjrt writes the runtime layout xlac's PJRT proxy serves from (entries/<hh>/<key>.xpx, one per"
            + " recorded compile request, and the manifest xlac-pjrt-layout): give it to 'xlac run --layout DIR'."},
    footer = {"%nneuron: compiled entries get model.neff and model.done, failed ones model.log, all of them"
        + " model.hlo_module.pb and compile_flags.json. Files are written atomically (temporary file, then rename);"
        + " files that already hold the same bytes are left alone, so running it again changes nothing. No lock"
        + " files are made. Graphs without a Neuron name are skipped and counted. Point NEURON_COMPILE_CACHE_URL"
        + " at DIR.",
        "%npjrt: incremental: entries whose header matches are kept (with --verify, only those whose executable"
            + " also matches its SHA-256), missing or different ones are written"
            + " atomically, files of requests no longer in the cache are removed, and the manifest is written last."
            + " With --plugin PATH, only that plugin's executables.",
        "%nWorks while another xlac process writes to the cache."})
final class CacheMaterializeCommand implements Callable<Integer> {
  enum Layout { neuron, pjrt }

  @Option(names = "--layout", required = true, paramLabel = "LAYOUT",
      description = "The layout to write: ${COMPLETION-CANDIDATES}.")
  Layout layout;

  @Parameters(paramLabel = "DIR", description = "Where to write (created if missing; existing entries are updated);"
      + " for --layout neuron also s3://BUCKET/PREFIX, the S3 layout Neuron reads with NEURON_COMPILE_CACHE_URL.")
  String target;

  @Option(names = "--endpoint", paramLabel = "URL",
      description = "neuron into s3://: an S3-compatible endpoint (default: the cache's remote endpoint when the"
          + " bucket is the remote's, else AWS).")
  String endpoint;

  Path dir;

  @Option(names = "--plugin", paramLabel = "PATH",
      description = "pjrt: only the executables of this PJRT plugin file (default: every plugin's).")
  Path plugin;

  @Option(names = "--verify",
      description = "pjrt: read every entry already in DIR whole and rewrite it unless its executable matches its"
          + " SHA-256 (default: trust an entry whose header matches; the proxy checks the SHA-256 before serving).")
  boolean verify;

  @Mixin
  CacheOptions cache;

  @Override
  public Integer call() throws InterruptedException {
    if (target.startsWith("s3://")) {
      return neuronS3();
    }
    if (endpoint != null) {
      throw XlacException.badInput("--endpoint is for an s3:// target");
    }
    dir = Path.of(target);
    if (layout == Layout.pjrt) {
      return pjrt();
    }
    if (plugin != null) {
      throw XlacException.badInput("--plugin is for --layout pjrt");
    }
    if (verify) {
      throw XlacException.badInput("--verify is for --layout pjrt");
    }
    PrintWriter err = cache.err();
    NeuronCacheLayout.MaterializeResult r;
    try (CacheStore store = cache.openReadOnly()) {
      r = NeuronCacheLayout.materialize(store, dir, cache.notices());
    }
    if (r.withoutName() > 0) {
      err.printf("xlac: %d graphs skipped: they have no Neuron MODULE name (they were not imported from a Neuron"
          + " cache, and xlac cannot compute Neuron's names)%n", r.withoutName());
      err.flush();
    }
    PrintWriter out = cache.out();
    out.printf("Materialized %d Neuron entries in %s (%d compiled, %d failed, %d pending): %d files written,"
        + " %d unchanged; %d graphs without a Neuron name skipped%n", r.compiled() + r.failed() + r.pending(), dir,
        r.compiled(), r.failed(), r.pending(), r.filesWritten(), r.filesUnchanged(), r.withoutName());
    out.flush();
    return r.problems() > 0 ? ExitCode.WORK_FAILED.code() : ExitCode.OK.code();
  }

  private int neuronS3() throws InterruptedException {
    if (layout != Layout.neuron || plugin != null || verify) {
      throw XlacException.badInput("an s3:// target takes --layout neuron (and neither --plugin nor --verify)");
    }
    CacheRemote.NeuronUpload r;
    try (CacheStore store = cache.openReadOnly()) {
      RemoteSetting target = CacheRemote.neuronTarget(store, this.target, endpoint);
      try (CacheRemote remote = CacheRemote.open(target, cache.notices())) {
        r = remote.materializeNeuron(store, Path.of(System.getProperty("java.io.tmpdir")), cache.notices());
      }
    }
    NeuronCacheLayout.MaterializeResult m = r.layout();
    PrintWriter out = cache.out();
    out.printf("Materialized %d Neuron entries in %s (%d compiled, %d failed, %d pending): %s; %d graphs without a"
        + " Neuron name skipped%n", m.compiled() + m.failed() + m.pending(), r.uploads().remote(), m.compiled(),
        m.failed(), m.pending(), r.uploads().uploads().replace("uploaded", "files uploaded"), m.withoutName());
    out.flush();
    return m.problems() > 0 ? ExitCode.WORK_FAILED.code() : ExitCode.OK.code();
  }

  private int pjrt() throws InterruptedException {
    RuntimeLayouts.Materialized r;
    try (CacheStore store = cache.openReadOnly()) {
      r = RuntimeLayouts.materialize(store, dir, plugin, cache.directory(), verify, cache.notices());
    }
    PrintWriter out = cache.out();
    out.printf("Materialized the PJRT runtime layout in %s: %d entries written, %d unchanged, %d removed%n", dir,
        r.written(), r.kept(), r.removed());
    out.flush();
    return r.problems() > 0 ? ExitCode.WORK_FAILED.code() : ExitCode.OK.code();
  }
}
