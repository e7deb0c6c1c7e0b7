package dev.xlac.cache.remote;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RemoteUnavailableException;
import dev.xlac.cache.layout.NeuronCacheLayout;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.FileTrees;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * {@code xlac cache materialize --layout neuron s3://BUCKET/PREFIX}: the Neuron compile cache tree
 * ({@link NeuronCacheLayout}) written into S3, where Neuron reads it with {@code NEURON_COMPILE_CACHE_URL=s3://...}:
 * the same keys as the files of the directory tree, {@code PREFIX/neuronxcc-<version>/MODULE_<hash>+<flags>/<file>}.
 *
 * <p>The tree is first written to a scratch directory by {@link NeuronCacheLayout#materialize} (every NEFF checked
 * against its SHA-256 on the way), then each file is uploaded with a conditional put, {@code model.done} after the
 * other files of its entry, so a reader that finds {@code model.done} finds a whole entry. A file already in S3 is
 * left as it is (counted as already there): entries are named by their graph and flags, so what is there holds the
 * same graph. No lock files are written.
 */
public final class NeuronRemoteLayout {
  private NeuronRemoteLayout() {}

  /** What was written: the local materialize's figures and the uploads. */
  public record Result(NeuronCacheLayout.MaterializeResult layout, RemoteStats uploads) {}

  /**
   * Where {@code s3://BUCKET/PREFIX} is: with {@code endpoint} when given, else the cache's remote endpoint when the
   * bucket is the remote's, else AWS.
   */
  public static dev.xlac.cache.RemoteSetting target(CacheStore store, String url, String endpoint) {
    dev.xlac.cache.RemoteSetting plain = dev.xlac.cache.RemoteSetting.parse(url, endpoint);
    if (endpoint != null) {
      return plain;
    }
    return store.remoteSetting().filter(r -> r.bucket().equals(plain.bucket()) && r.endpoint().isPresent())
        .map(r -> dev.xlac.cache.RemoteSetting.parse(url, r.endpoint().get().toString())).orElse(plain);
  }

  public static Result materialize(CacheStore store, RemoteTier tier, Path scratchParent, Consumer<String> problems)
      throws InterruptedException {
    Path scratch;
    try {
      scratch = Files.createTempDirectory(scratchParent, "xlac-neuron-s3-");
    } catch (IOException e) {
      throw XlacException.environment("cannot make a scratch directory in " + scratchParent + ": " + e.getMessage());
    }
    try {
      NeuronCacheLayout.MaterializeResult layout = NeuronCacheLayout.materialize(store, scratch, problems);
      RemoteStats stats = new RemoteStats(tier.setting().url());
      List<Path> files;
      try (Stream<Path> walk = Files.walk(scratch)) {
        files = new ArrayList<>(walk.filter(Files::isRegularFile).toList());
      } catch (IOException | UncheckedIOException e) {
        throw XlacException.environment("cannot read the scratch directory " + scratch + ": " + e.getMessage());
      }
      // model.done last in its entry: sort by directory, then done after everything else.
      files.sort(Comparator.comparing((Path p) -> p.getParent().toString())
          .thenComparing(p -> p.getFileName().toString().equals("model.done"))
          .thenComparing(Path::toString));
      for (Path f : files) {
        String key = scratch.relativize(f).toString().replace(java.io.File.separatorChar, '/');
        try {
          if (tier.putFileIfAbsent(key, f) == RemoteTier.Put.WRITTEN) {
            stats.uploaded.incrementAndGet();
            stats.uploadedBytes.addAndGet(Files.size(f));
          } else {
            stats.alreadyThere.incrementAndGet();
          }
        } catch (RemoteUnavailableException e) {
          throw XlacException.environment(e.getMessage());
        } catch (IOException e) {
          throw XlacException.environment("cannot read " + f + ": " + e.getMessage());
        }
      }
      return new Result(layout, stats);
    } finally {
      deleteTree(scratch);
    }
  }

  private static void deleteTree(Path dir) {
    try {
      FileTrees.deleteTree(dir);
    } catch (IOException e) {
      // a scratch directory left in the temporary directory; nothing else depends on it
    }
  }
}
