package dev.xlac.cache.layout;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RequestIngest;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.runtime.RecordSpool;
import dev.xlac.runtime.RecordedRequest;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Takes the runtime proxy's record spool (runtime/README.md "The record spool") into the cache: every record is
 * read and checked ({@link RecordSpool#read}), stored with {@link CacheStore#putRequests} in fsynced batches, and its
 * file deleted once its batch is durable and the cache holds its request. A record that is not whole and intact, or
 * whose key was computed differently from this xlac's, is rejected by name with the reason and moved aside
 * ({@code NAME.xpr.rejected}, or {@code NAME.xpr.<n>.rejected} when that name is taken; later ingests skip them),
 * while the others go in. A record too large for this xlac, or that cannot be read, is reported and left in place.
 * Writes in progress ({@code .tmp-*}) are left alone unless they are older than an hour (their writer died).
 * {@link RequestIngest#leftInSpool()} counts what is still in the spool at the end, so that a caller knows whether
 * deleting the spool would lose a recording.
 *
 * <p>A process killed in the middle leaves the cache with whole batches and the spool with every file whose batch
 * was not committed (and perhaps some that were: the next ingest finds them present and deletes them). Two
 * processes may ingest one spool at once (the cache's writer lock lets one write at a time): a file the other took
 * first is skipped.
 */
public final class PjrtRecordSpool {
  /** A batch goes to the cache once it holds this many records... */
  static final int BATCH_RECORDS = 32;
  /**
   * ... or this many bytes of executables and programs: a batch holds at most this and one record more in memory,
   * so an executable of hundreds of MB goes in a batch of its own (or with a few small ones).
   */
  static final long BATCH_BYTES = 64L << 20;
  /** A write in progress older than this was left by a writer that died. */
  static final Duration STALE_TEMPORARY = Duration.ofHours(1);
  public static final String REJECTED_SUFFIX = ".rejected";

  private PjrtRecordSpool() {}

  /** Ingests every record of {@code spool} into {@code store}; each record not taken in is reported through {@code problems}. */
  public static RequestIngest ingest(Path spool, CacheStore store, Consumer<String> problems) {
    List<Path> files;
    try {
      files = RecordSpool.files(spool);
    } catch (IOException e) {
      throw XlacException.badInput("cannot read record spool " + spool + ": " + XlacException.reason(e));
    }
    RequestIngest total = new RequestIngest(0, 0, List.of());
    List<RecordedRequest> batch = new ArrayList<>();
    List<Path> batchFiles = new ArrayList<>();
    List<String> rejected = new ArrayList<>();
    Consumer<String> reject = line -> {
      rejected.add(line);
      problems.accept(line);
    };
    long batchBytes = 0;
    for (Path f : files) {
      RecordedRequest r;
      try {
        r = RecordSpool.read(f);
      } catch (NoSuchFileException e) {
        continue; // another ingest took it
      } catch (RecordSpool.TooLargeException e) {
        reject.accept(e.getMessage() + "; left in the spool");
        continue;
      } catch (XlacException e) {
        reject.accept(e.getMessage() + moveAside(f));
        continue;
      } catch (IOException e) {
        reject.accept("record " + f + ": cannot be read (" + XlacException.reason(e) + "); left in the spool");
        continue;
      }
      Optional<String> problem = CacheStore.requestProblem(r);
      if (problem.isPresent()) {
        reject.accept("record " + f + ": " + problem.get() + "; left in the spool");
        continue;
      }
      batch.add(r);
      batchFiles.add(f);
      batchBytes += r.executable().length + r.program().length;
      if (batch.size() >= BATCH_RECORDS || batchBytes >= BATCH_BYTES) {
        total = total.plus(commit(store, spool, batch, batchFiles, reject));
        batch.clear();
        batchFiles.clear();
        batchBytes = 0;
      }
    }
    if (!batch.isEmpty()) {
      total = total.plus(commit(store, spool, batch, batchFiles, reject));
    }
    removeStaleTemporaries(spool);
    return new RequestIngest(total.added(), total.alreadyPresent(), rejected, leftInSpool(spool));
  }

  /**
   * Stores one batch (fsynced), then deletes the files whose requests the cache now holds. One it does not hold
   * (rejected by {@code putRequests}) stays in the spool, reported.
   */
  private static RequestIngest commit(CacheStore store, Path spool, List<RecordedRequest> batch, List<Path> files,
      Consumer<String> reject) {
    RequestIngest r = store.putRequests(List.copyOf(batch));
    for (int i = 0; i < batch.size(); i++) {
      Path f = files.get(i);
      if (store.requestInfo(batch.get(i).key()).isEmpty()) {
        String key = batch.get(i).key().text();
        String why = r.rejected().stream().filter(l -> l.contains(key)).findFirst().orElse("not taken in");
        reject.accept("record " + f + ": " + why + "; left in the spool");
        continue;
      }
      try {
        Files.deleteIfExists(f);
      } catch (IOException e) {
        // stored all the same; the next ingest finds it present and tries again
      }
    }
    AtomicFiles.syncDirectory(spool);
    return new RequestIngest(r.added(), r.alreadyPresent(), List.of());
  }

  /**
   * Moves a rejected record aside under a name no other file has, and returns the words that say where. A good
   * record that a writer renamed into the name meanwhile (so that the move took it instead) is moved back.
   */
  private static String moveAside(Path f) {
    String name = f.getFileName().toString();
    for (int n = 1; n < 1000; n++) {
      Path aside = f.resolveSibling(n == 1 ? name + REJECTED_SUFFIX : name + "." + n + REJECTED_SUFFIX);
      if (Files.exists(aside, LinkOption.NOFOLLOW_LINKS)) {
        continue; // an atomic rename would replace it
      }
      try {
        Files.move(f, aside, StandardCopyOption.ATOMIC_MOVE);
      } catch (IOException e) {
        // gone already (another ingest moved it), or not ours to move
        return Files.exists(f, LinkOption.NOFOLLOW_LINKS) ? "; left in the spool" : "";
      }
      if (readable(aside)) {
        try {
          Files.move(aside, f, StandardCopyOption.ATOMIC_MOVE);
          return "; a whole record took its place meanwhile and stays";
        } catch (IOException e) {
          // a newer one took the name again: this one stays aside, whole, for a later ingest to find
        }
      }
      return "; moved aside as " + aside.getFileName();
    }
    return "; left in the spool";
  }

  private static boolean readable(Path f) {
    try {
      RecordSpool.read(f);
      return true;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /** Records still in the spool, whole or moved aside. */
  private static int leftInSpool(Path spool) {
    int n = 0;
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(spool)) {
      for (Path p : entries) {
        String name = p.getFileName().toString();
        if (!name.startsWith(".") && (name.endsWith(RecordSpool.SUFFIX)
            || name.contains(RecordSpool.SUFFIX + ".") && name.endsWith(REJECTED_SUFFIX))) {
          n++;
        }
      }
    } catch (IOException e) {
      return Integer.MAX_VALUE; // cannot tell: not safe to delete
    }
    return n;
  }

  private static void removeStaleTemporaries(Path spool) {
    long cutoff = System.currentTimeMillis() - STALE_TEMPORARY.toMillis();
    try {
      for (Path t : RecordSpool.temporaries(spool)) {
        try {
          FileTime modified = Files.getLastModifiedTime(t);
          if (modified.toMillis() < cutoff) {
            Files.deleteIfExists(t);
          }
        } catch (IOException e) {
          // gone, or not ours: left as it is
        }
      }
    } catch (IOException e) {
      // the spool cannot be listed any more: nothing to clean up
    }
  }
}
