package dev.xlac.hlo;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.function.Function;

/**
 * Reads many module files in parallel on a bounded pool and applies a function to each (for
 * example, fingerprinting it), returning one outcome per file in input order. A file that fails
 * does not stop the others. In-flight work is bounded by a byte budget, so many large modules do
 * not exhaust the heap.
 */
public final class HloBatchReader {
  /** The result for one file: a value, or the error that names the file and the reason. */
  public record Outcome<T>(Path file, T value, XlacException error) {
    public boolean ok() {
      return error == null;
    }
  }

  private final HloModuleReader reader;
  private final int threads;
  private final long byteBudget;

  public HloBatchReader(HloModuleReader reader, int threads) {
    this.reader = reader;
    this.threads = Math.max(1, threads);
    // Hashing a module costs up to about 1.6x its file size at peak (bytes + index; a mapped file
    // only its index, about 0.6x); 3x leaves room for gzip and for callers that also build the
    // protobuf object model (LoadedModule.module()).
    this.byteBudget = Math.max(64L << 20, Runtime.getRuntime().maxMemory() / 3);
  }

  public static HloBatchReader withDefaults() {
    return new HloBatchReader(new HloModuleReader(), Math.min(4, Runtime.getRuntime().availableProcessors()));
  }

  public <T> List<Outcome<T>> read(List<Path> files, Function<LoadedModule, T> fn) throws InterruptedException {
    if (files.size() <= 1 || threads == 1) {
      List<Outcome<T>> out = new ArrayList<>(files.size());
      for (Path f : files) {
        out.add(readOne(f, fn));
      }
      return out;
    }
    int megabytes = (int) Math.min(Integer.MAX_VALUE, byteBudget >> 20);
    Semaphore budget = new Semaphore(megabytes);
    ExecutorService pool = Executors.newFixedThreadPool(Math.min(threads, files.size()), r -> {
      Thread t = new Thread(r, "xlac-hlo-reader");
      t.setDaemon(true);
      return t;
    });
    try {
      List<Future<Outcome<T>>> futures = new ArrayList<>(files.size());
      for (Path f : files) {
        futures.add(pool.submit(() -> {
          int cost = (int) Math.min(megabytes, 1 + sizeOf(f) * 3 / (1 << 20));
          budget.acquire(cost);
          try {
            return readOne(f, fn);
          } finally {
            budget.release(cost);
          }
        }));
      }
      List<Outcome<T>> out = new ArrayList<>(files.size());
      for (Future<Outcome<T>> future : futures) {
        try {
          out.add(future.get());
        } catch (ExecutionException e) {
          throw new XlacException(ExitCode.INTERNAL, "internal error: " + e.getCause(), e.getCause());
        }
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  private <T> Outcome<T> readOne(Path f, Function<LoadedModule, T> fn) {
    try {
      return new Outcome<>(f, fn.apply(reader.read(f)), null);
    } catch (XlacException e) {
      return new Outcome<>(f, null, e);
    } catch (RuntimeException | StackOverflowError e) {
      return new Outcome<>(f, null,
          new XlacException(ExitCode.INTERNAL, "internal error while reading " + f + ": " + XlacException.reason(e),
              e));
    }
  }

  private static long sizeOf(Path f) {
    try {
      return Files.size(f);
    } catch (Exception e) {
      return 0;
    }
  }
}
