package dev.xlac.hlo;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Reads many module files in parallel on one bounded pool and applies a function to each (for
 * example, fingerprinting it), handing back one outcome per file in input order. A file that
 * fails does not stop the others. In-flight work is bounded by a byte budget, so many large
 * modules do not exhaust the heap, and outcomes waiting for their turn by a window of files, so a
 * long list streams through ({@link #readEach}) instead of being held whole.
 */
public final class HloBatchReader {
  /** The result for one file: a value, or the error that names the file and the reason. */
  public record Outcome<T>(Path file, T value, XlacException error) {
    public boolean ok() {
      return error == null;
    }
  }

  /** How many files may be read ahead of the one the consumer waits for. */
  static final int WINDOW = 64;

  private final HloModuleReader reader;
  private final int threads;
  private final long byteBudget;

  public HloBatchReader(HloModuleReader reader, int threads) {
    // Hashing a module costs up to about 1.6x its file size at peak (bytes + index; a mapped file
    // only its index, about 0.6x); 3x leaves room for gzip and for callers that also build the
    // protobuf object model (LoadedModule.module()).
    this(reader, threads, Math.max(64L << 20, Runtime.getRuntime().maxMemory() / 3));
  }

  /** {@code byteBudget}: the bytes that the reads in flight may cost together (each file counts 3x its size). */
  HloBatchReader(HloModuleReader reader, int threads, long byteBudget) {
    this.reader = reader;
    this.threads = Math.max(1, threads);
    this.byteBudget = byteBudget;
  }

  public static HloBatchReader withDefaults() {
    return new HloBatchReader(new HloModuleReader(), Math.min(4, Runtime.getRuntime().availableProcessors()));
  }

  /** Reads the files and returns their outcomes, in input order ({@link #readEach}, collected). */
  public <T> List<Outcome<T>> read(List<Path> files, Function<LoadedModule, T> fn) throws InterruptedException {
    List<Outcome<T>> out = new ArrayList<>(files.size());
    readEach(files, fn, out::add);
    return out;
  }

  /**
   * Reads the files on one pool and hands each outcome to {@code consumer} on the calling thread,
   * in input order, as soon as it and those before it are done. {@code fn} runs on the pool's
   * threads. An exception from {@code fn} or the consumer stops the reading and is thrown here.
   */
  public <T> void readEach(List<Path> files, Function<LoadedModule, T> fn, Consumer<? super Outcome<T>> consumer)
      throws InterruptedException {
    if (files.size() <= 1 || threads == 1) {
      for (Path f : files) {
        consumer.accept(readOne(f, fn));
      }
      return;
    }
    int megabytes = (int) Math.max(1, Math.min(Integer.MAX_VALUE, byteBudget >> 20));
    Semaphore budget = new Semaphore(megabytes);
    ExecutorService pool = Executors.newFixedThreadPool(Math.min(threads, files.size()), r -> {
      Thread t = new Thread(r, "xlac-hlo-reader");
      t.setDaemon(true);
      return t;
    });
    try {
      ArrayDeque<Future<Outcome<T>>> pending = new ArrayDeque<>(Math.min(WINDOW, files.size()));
      int next = 0;
      while (next < files.size() || !pending.isEmpty()) {
        while (next < files.size() && pending.size() < WINDOW) {
          Path f = files.get(next++);
          pending.add(pool.submit(() -> {
            int cost = (int) Math.min(megabytes, 1 + sizeOf(f) * 3 / (1 << 20));
            budget.acquire(cost);
            try {
              return readOne(f, fn);
            } finally {
              budget.release(cost);
            }
          }));
        }
        Outcome<T> outcome;
        try {
          outcome = pending.removeFirst().get();
        } catch (ExecutionException e) {
          if (e.getCause() instanceof RuntimeException r) { // from fn: as the one-thread path throws it
            throw r;
          }
          throw new XlacException(ExitCode.INTERNAL, "internal error: " + e.getCause(), e.getCause());
        }
        consumer.accept(outcome);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * The file's outcome: its read's error is the file's, and so is one of reading it again inside {@code fn} (a mapped
   * module's bytes, read when they are stored: the file changed or went away meanwhile); any other exception from
   * {@code fn} is not (a cache that cannot be written, or is damaged, would fail every file alike), so it is thrown,
   * and stops the reading.
   */
  private <T> Outcome<T> readOne(Path f, Function<LoadedModule, T> fn) {
    LoadedModule m;
    try {
      m = reader.read(f);
    } catch (XlacException e) {
      return new Outcome<>(f, null, e);
    } catch (RuntimeException | StackOverflowError e) {
      return new Outcome<>(f, null,
          new XlacException(ExitCode.INTERNAL, "internal error while reading " + f + ": " + XlacException.reason(e),
              e));
    }
    try {
      return new Outcome<>(f, fn.apply(m), null);
    } catch (HloReadException e) {
      return new Outcome<>(f, null, e);
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
