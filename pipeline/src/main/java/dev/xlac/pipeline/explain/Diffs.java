package dev.xlac.pipeline.explain;

import dev.xlac.cache.CacheStore;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.concurrent.Futures;
import dev.xlac.hlo.GraphDiff;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloFileKind;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * {@code xlac diff A B}: finds the two modules the user names and compares them
 * ({@link GraphDiff}). Each of A and B is a dump file of any kind xlac reads, or, when no such
 * file exists, a fingerprint or a unique prefix of at least 6 hex digits of a graph in the cache.
 * The cache is opened read-only, and only when an input needs it, so a diff works while another
 * process writes to the cache.
 */
public final class Diffs {
  private Diffs() {}

  /**
   * Reads A and B and compares them.
   *
   * @param cache opens the cache to look fingerprints up in (read-only), called only when an input needs it
   * @throws XlacException exit code 2 ({@link ExitCode#BAD_INPUT}) when an input cannot be read, is
   *     not in the cache or names more than one graph; the message names the input and the reason
   */
  public static GraphDiff diff(String a, String b, CacheStore.Opener cache) throws InterruptedException {
    return diff(a, b, cache, Runtime.getRuntime().availableProcessors() > 1);
  }

  /**
   * As {@link #diff(String, String, CacheStore.Opener)}; with {@code parallel}, B is read on a second thread while A
   * is read on this one, as {@code xlac hash A B} reads its two files. Either way A's error is the one
   * reported when both inputs are bad.
   */
  static GraphDiff diff(String a, String b, CacheStore.Opener cache, boolean parallel) throws InterruptedException {
    Inputs inputs = new Inputs(cache);
    try (inputs) {
      Input ia = inputs.find(a);
      Input ib;
      try {
        ib = inputs.find(b);
      } catch (RuntimeException e) {
        ia.load(); // A's own error, if it has one, comes first, as when A is read before B is looked at
        throw e;
      }
      if (!parallel) {
        return GraphDiff.of(ia.load(), ib.load());
      }
      try (ExecutorService second = Executors.newSingleThreadExecutor(Thread.ofPlatform().name("xlac-diff-read")
          .daemon().factory())) {
        Future<LoadedModule> fb = second.submit(ib::load);
        LoadedModule ma;
        try {
          ma = ia.load();
        } catch (RuntimeException e) {
          fb.cancel(true);
          throw e;
        }
        return GraphDiff.of(ma, Futures.join(fb));
      }
    }
  }

  /** Whether an argument is taken as a fingerprint (when no file of that name exists). */
  static boolean looksLikeFingerprint(String text) {
    return GraphFingerprint.prefixDigits(text) != null; // the rule CacheStore.resolve applies
  }

  /**
   * A graph of the cache read for diffing (with the part hashes {@link GraphDiff} needs), checked against its
   * fingerprint.
   *
   * @throws XlacException exit code 2 when its bytes cannot be read or do not have that fingerprint
   */
  static LoadedModule readForDiff(CacheStore store, GraphFingerprint fp) {
    byte[] bytes = store.readGraph(fp).orElseThrow(() -> new XlacException(ExitCode.BAD_INPUT,
        "graph " + fp.shortForm() + " in cache " + store.directory() + " cannot be read (it is damaged; "
            + "`xlac cache verify --repair` removes it)"));
    LoadedModule m = HloModuleReader.forDiff().parse(Path.of(fp.value()), HloFileKind.HLO_MODULE, bytes, bytes.length);
    if (!m.fingerprint().equals(fp)) {
      throw new XlacException(ExitCode.BAD_INPUT, "graph " + fp.shortForm() + " in cache " + store.directory()
          + " has fingerprint " + m.fingerprint().shortForm() + " when read (the cache entry is damaged)");
    }
    return m;
  }

  /** One side of a diff, found: a file, or a graph of the cache. Loading it reads and indexes it. */
  @FunctionalInterface
  private interface Input {
    LoadedModule load();
  }

  /** Opens the cache on first need and closes it at the end. */
  private static final class Inputs implements AutoCloseable {
    private final CacheStore.Opener cache;
    private CacheStore store;

    Inputs(CacheStore.Opener cache) {
      this.cache = cache;
    }

    Input find(String input) throws InterruptedException {
      Path file = Path.of(input);
      if (Files.exists(file) || !looksLikeFingerprint(input)) {
        return () -> HloModuleReader.forDiff().read(file);
      }
      if (store == null) {
        store = cache.open();
      }
      CacheStore opened = store;
      GraphFingerprint fp = opened.resolve(input);
      return () -> readForDiff(opened, fp);
    }

    @Override
    public void close() {
      if (store != null) {
        store.close();
      }
    }
  }
}
