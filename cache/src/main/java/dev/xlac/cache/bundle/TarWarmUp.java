package dev.xlac.cache.bundle;

/**
 * Reading or writing a bundle's first tar header initialises Commons IO's {@code FileTimes} (Commons Compress keeps
 * each entry's times with it), whose set-up initialises the JDK's {@code BigDecimal}, and JDK 25's {@code BigDecimal}
 * computes 5^(2^16) when it is initialised: 12-18 ms of one core in every import and export, before the first entry is
 * read. {@link #start()} does that on a daemon thread, while the caller opens the cache on its own.
 */
public final class TarWarmUp {
  /** The class whose initialisation this does, as the tar code first initialises it. */
  static final String FILE_TIMES = "org.apache.commons.io.file.attribute.FileTimes";

  private TarWarmUp() {}

  /** Starts initialising it in the background; returns the thread (it ends on its own). */
  public static Thread start() {
    return Thread.ofPlatform().name("xlac-tar-warm-up").daemon().start(() -> {
      try {
        Class.forName(FILE_TIMES, true, TarWarmUp.class.getClassLoader());
      } catch (ClassNotFoundException | LinkageError e) {
        // only a head start: the tar code initialises it, and says what failed, itself
      }
    });
  }
}
