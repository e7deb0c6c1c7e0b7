package dev.xlac.cache.layout;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RequestIngest;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.runtime.RecordSpool;
import dev.xlac.runtime.RecordedRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Takes the runtime proxy's record spool (runtime/README.md "The record spool") into the cache: every record is
 * read and checked ({@link RecordSpool#read}), stored with {@link CacheStore#putRequests} in fsynced batches, and its
 * file deleted once its batch is durable. A record that is not whole and intact is rejected by name with the reason
 * and moved aside ({@code NAME.xpr.rejected}, which later ingests skip), while the others go in. Writes in progress
 * ({@code .tmp-*}) are left alone unless they are older than an hour (their writer died).
 *
 * <p>A process killed in the middle leaves the cache with whole batches and the spool with every file whose batch
 * was not committed (and perhaps some that were: the next ingest finds them present and deletes them). Two
 * processes may ingest one spool at once: a file the other took first is skipped.
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

  /** Ingests every record of {@code spool} into {@code store}; each rejected record is reported through {@code problems}. */
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
    long batchBytes = 0;
    for (Path f : files) {
      RecordedRequest r;
      try {
        r = RecordSpool.read(f);
      } catch (NoSuchFileException e) {
        continue; // another ingest took it
      } catch (XlacException e) {
        String line = e.getMessage() + "; moved aside as " + f.getFileName() + REJECTED_SUFFIX;
        moveAside(f);
        rejected.add(line);
        problems.accept(line);
        continue;
      } catch (IOException e) {
        String line = "record " + f + ": cannot be read (" + XlacException.reason(e) + "); left in place";
        rejected.add(line);
        problems.accept(line);
        continue;
      }
      batch.add(r);
      batchFiles.add(f);
      batchBytes += r.executable().length + r.program().length;
      if (batch.size() >= BATCH_RECORDS || batchBytes >= BATCH_BYTES) {
        total = total.plus(commit(store, spool, batch, batchFiles));
        batch.clear();
        batchFiles.clear();
        batchBytes = 0;
      }
    }
    if (!batch.isEmpty()) {
      total = total.plus(commit(store, spool, batch, batchFiles));
    }
    removeStaleTemporaries(spool, store);
    return total.plus(new RequestIngest(0, 0, rejected));
  }

  /** Stores one batch (fsynced), then deletes its files. */
  private static RequestIngest commit(CacheStore store, Path spool, List<RecordedRequest> batch, List<Path> files) {
    RequestIngest r = store.putRequests(List.copyOf(batch));
    for (Path f : files) {
      try {
        Files.deleteIfExists(f);
      } catch (IOException e) {
        // stored all the same; the next ingest finds it present and tries again
      }
    }
    AtomicFiles.syncDirectory(spool);
    return r;
  }

  private static void moveAside(Path f) {
    try {
      Files.move(f, f.resolveSibling(f.getFileName() + REJECTED_SUFFIX), StandardCopyOption.ATOMIC_MOVE,
          StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      // gone already (another ingest moved it), or not ours to move: reported all the same
    }
  }

  private static void removeStaleTemporaries(Path spool, CacheStore store) {
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
