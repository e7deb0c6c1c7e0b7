package dev.xlac.cli.cache;

import dev.xlac.cache.CacheLocation;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.Quantities;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.Consumer;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;

/**
 * The shared {@code --cache DIR} option (a picocli mixin), the command's output streams, and how
 * commands open the cache. Commands that write mix in {@link Writer}, which adds
 * {@code --wait[=DURATION]}.
 */
public final class CacheOptions {
  @Option(names = "--cache", paramLabel = "DIR",
      description = "The cache directory (default: $XLAC_CACHE_DIR, else ~/.cache/xlac).")
  Path dir;

  @Spec(Spec.Target.MIXEE)
  CommandSpec command;

  /** The writers of a command made without picocli ({@link Writer#of}); null when picocli made it. */
  private PrintWriter directOut;
  private PrintWriter directErr;

  public Path directory() {
    return CacheLocation.resolve(dir);
  }

  public PrintWriter out() {
    return command == null ? directOut : command.commandLine().getOut();
  }

  PrintWriter err() {
    return command == null ? directErr : command.commandLine().getErr();
  }

  /** Opens the cache for reading; works while another process writes to it. */
  public CacheStore openReadOnly() throws InterruptedException {
    return CacheStore.open(directory(), CacheStore.Mode.READ_ONLY, Duration.ZERO, notices());
  }

  /** Opens the cache for writing; {@code wait}: how long to wait for another writer (null: forever). */
  CacheStore openWritable(Duration wait) throws InterruptedException {
    return CacheStore.open(directory(), CacheStore.Mode.READ_WRITE, wait, notices());
  }

  /** {@code --cache} and {@code --wait}, for commands that write. */
  public static final class Writer {
    @Mixin
    CacheOptions cache;

    @Mixin
    WaitOption wait;

    /**
     * {@code --cache DIR} (null: the default) and no {@code --wait}, as picocli would set them, for a command
     * parsed without picocli; the command prints to {@code out} and {@code err}.
     */
    public static Writer of(Path dir, PrintWriter out, PrintWriter err) {
      Writer w = new Writer();
      w.cache = new CacheOptions();
      w.cache.dir = dir;
      w.cache.directOut = out;
      w.cache.directErr = err;
      w.wait = new WaitOption();
      return w;
    }

    /** The cache directory, without opening it. */
    public Path directory() {
      return cache.directory();
    }

    public PrintWriter out() {
      return cache.out();
    }

    public PrintWriter err() {
      return cache.err();
    }

    Consumer<String> notices() {
      return cache.notices();
    }

    public CacheStore openReadOnly() throws InterruptedException {
      return cache.openReadOnly();
    }

    /** How long to wait for another writer, as {@code --wait} says (null: as long as it takes). */
    public java.time.Duration waitDuration() {
      return wait.duration();
    }

    /** Opens the cache for writing, waiting for another writer as {@code --wait} says. */
    public CacheStore openWritable() throws InterruptedException {
      return cache.openWritable(wait.duration());
    }

    /** Takes the cache's writer lock without opening it, waiting for another writer as {@code --wait} says. */
    public CacheStore.WriterLock lockWritable() throws InterruptedException {
      return CacheStore.lock(cache.directory(), wait.duration(), cache.notices());
    }
  }

  /** One {@code xlac: ...} line on stderr per message, flushed at once. */
  Consumer<String> notices() {
    PrintWriter err = err();
    return m -> {
      err.println("xlac: " + m);
      err.flush();
    };
  }

  /** {@code --wait[=DURATION]}: wait for another writer (forever without a duration). */
  public static final class WaitOption {
    @Option(names = "--wait", arity = "0..1", paramLabel = "DURATION", fallbackValue = "forever",
        converter = WaitConverter.class,
        description = "If another xlac process is writing to the cache, wait for it (at most DURATION, e.g. 10m)"
            + " instead of failing at once.")
    Duration wait = Duration.ZERO;

    /** Null means forever. */
    Duration duration() {
      return wait;
    }
  }

  static final class WaitConverter implements ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
      return value.equals("forever") ? null : DurationConverter.parse(value);
    }
  }

  /**
   * Converters throw picocli's {@link TypeConversionException}, whose message picocli prints as it is
   * ("Invalid value for option '--since': not a duration: ..."); any other exception it prints with its
   * class name and the Java type it wanted.
   */
  public static final class DurationConverter implements ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
      return parse(value);
    }

    static Duration parse(String value) {
      try {
        return Quantities.parseDuration(value);
      } catch (IllegalArgumentException e) {
        throw new TypeConversionException(e.getMessage());
      }
    }
  }

  public static final class SizeConverter implements ITypeConverter<Long> {
    @Override
    public Long convert(String value) {
      try {
        return Quantities.parseSize(value);
      } catch (IllegalArgumentException e) {
        throw new TypeConversionException(e.getMessage());
      }
    }
  }
}
