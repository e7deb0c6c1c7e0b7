package dev.xlac.compiler.pjrt;

import dev.xlac.compiler.CompilerDriver;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.schedule.SpareDriver;
import dev.xlac.compiler.schedule.WarmDriver;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.AtomicFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Makes {@link IsolatedPjrtDriver}s for a scheduler: one worker JVM per driver, all with the same
 * plugin and options.
 *
 * <p>The identity includes the plugin's SHA-256, which only a loaded plugin reports, and loading
 * one costs a JVM and a plugin start (and hashing a 200 MB file). So the identity is remembered in
 * probe directories, keyed by the plugin file's real path, size, modification and change times and
 * inode, the options and the class path (the way ccache checks a compiler by its mtime). The
 * first directory with a readable record answers; a new record is written to every directory that
 * takes it (typically the cache's own and the per-user {@link #userProbeDir()}, so a new cache
 * directory does not re-hash an unchanged plugin). Without a record, the first driver is started
 * to ask it and kept for the first {@link #open()}. A driver whose identity differs from the
 * remembered one (the file was replaced in a way the key missed) is refused with ENVIRONMENT and
 * the records are deleted, so no artifact is ever stored under a wrong identity.
 *
 * <p>That kept driver is the <em>spare</em> ({@link SpareDriver}): {@link #prestart()} starts it
 * before anyone asks, and a probe without a record waits for a spare already starting instead of
 * starting a second worker. {@link #close()} stops a spare nobody took, killing it if it is still
 * starting.
 */
public final class IsolatedPjrtDrivers implements DriverFactory {
  private static final String PROBE_FORMAT = "xlac-pjrt-probe/1";

  private final Path plugin;
  private final Map<String, String> clientOptions;
  private final PjrtCompileOptions compileOptions;
  private final Duration timeout;
  private final List<Path> probeDirs;
  private List<Path> probeFiles = List.of();
  private CompilerIdentity identity;
  private final SpareDriver<IsolatedPjrtDriver> spare = new SpareDriver<>("xlac-pjrt-spare", this::start);
  private boolean fromRecord;

  /**
   * @param timeout per compile ({@link Duration#ZERO}: none)
   * @param probeDirs where identities are remembered, read in this order; empty to always ask the
   *     plugin
   */
  public IsolatedPjrtDrivers(Path plugin, Map<String, String> clientOptions, PjrtCompileOptions compileOptions,
      Duration timeout, List<Path> probeDirs) {
    this.plugin = plugin.toAbsolutePath();
    this.clientOptions = new TreeMap<>(clientOptions);
    this.compileOptions = compileOptions;
    this.timeout = timeout;
    this.probeDirs = List.copyOf(probeDirs);
  }

  /**
   * The per-user probe directory, {@code $XDG_CACHE_HOME/xlac/probes} or else
   * {@code ~/.cache/xlac/probes}; empty when neither variable nor {@code user.home} names one.
   */
  public static Optional<Path> userProbeDir(Map<String, String> env) {
    String xdg = env.get("XDG_CACHE_HOME");
    if (xdg != null && !xdg.isBlank() && Path.of(xdg).isAbsolute()) {
      return Optional.of(Path.of(xdg, "xlac", "probes"));
    }
    String home = env.getOrDefault("HOME", System.getProperty("user.home"));
    if (home == null || home.isBlank() || !Path.of(home).isAbsolute()) {
      return Optional.empty();
    }
    return Optional.of(Path.of(home, ".cache", "xlac", "probes"));
  }

  @Override
  public synchronized CompilerIdentity identity() {
    if (identity == null) {
      String key = probeKey(); // also checks that the plugin file is there
      probeFiles = probeDirs.stream().map(d -> d.resolve("pjrt-" + key + ".identity")).toList();
      identity = readRecord();
      fromRecord = identity != null;
      if (identity == null) {
        WarmDriver<IsolatedPjrtDriver> s = spare.startIfNone();
        try {
          identity = s.await().identity();
        } catch (RuntimeException e) {
          spare.forget(s); // as before: a later call starts a fresh worker to ask
          s.close(); // nothing to close after a failed start; stops it when this thread was interrupted
          throw e;
        }
        writeRecord(identity);
      }
    }
    return identity;
  }

  /**
   * Records {@code id} as this plugin's identity in every probe directory, as a first probe would have, without
   * loading the plugin, and takes it as this factory's identity; a later run's factory reads the record. For a caller
   * that knows the identity already.
   */
  public synchronized void remember(CompilerIdentity id) {
    String key = probeKey(); // also checks that the plugin file is there
    probeFiles = probeDirs.stream().map(d -> d.resolve("pjrt-" + key + ".identity")).toList();
    writeRecord(id);
    identity = id;
    fromRecord = true;
  }

  /** Whether {@link #identity()} came from a record, without starting the plugin. */
  public synchronized boolean identityFromRecord() {
    identity();
    return fromRecord;
  }

  /** Starts the worker of the next {@link #open()} now, in the background, unless a spare is held or starting. */
  @Override
  public void prestart() {
    spare.startIfNone();
  }

  @Override
  public synchronized CompilerDriver open() {
    CompilerIdentity expected = identity();
    WarmDriver<IsolatedPjrtDriver> s = spare.take();
    // A spare that failed to start throws here what start() would have thrown.
    IsolatedPjrtDriver d = s != null ? s.take() : start();
    if (!d.identity().equals(expected)) { // a pre-started spare is checked too: its identity may be a record's
      d.close();
      deleteRecord();
      throw new XlacException(ExitCode.ENVIRONMENT, "the PJRT plugin " + plugin + " now reports "
          + d.identity().describe() + " instead of " + expected.describe()
          + " (it changed since its identity was recorded); run again");
    }
    return d;
  }

  /** Stops a spare that no {@link #open()} took; does not wait for one still starting (it is killed). */
  @Override
  public void close() {
    spare.close();
  }

  private IsolatedPjrtDriver start() {
    return IsolatedPjrtDriver.start(plugin, clientOptions, compileOptions, timeout);
  }

  private String probeKey() {
    BasicFileAttributes a;
    Object ino;
    Object ctime;
    Path real;
    try {
      real = plugin.toRealPath();
      a = Files.readAttributes(real, BasicFileAttributes.class);
      Map<String, Object> unix = unixAttributes(real);
      ino = unix.get("ino");
      ctime = unix.get("ctime");
    } catch (IOException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot use PJRT plugin " + plugin + ": "
          + XlacException.reason(e), e);
    }
    if (!a.isRegularFile()) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot use PJRT plugin " + plugin + ": not a regular file");
    }
    String key = PROBE_FORMAT + "\n" + real + "\n" + a.size() + "\n" + a.lastModifiedTime().toInstant() + "\n" + ctime
        + "\n" + ino + "\n" + clientOptions + "\n" + compileOptions.asMap() + "\n" + System.getProperty("java.class.path");
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
          .digest(key.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Map<String, Object> unixAttributes(Path p) throws IOException {
    try {
      return Files.readAttributes(p, "unix:ino,ctime");
    } catch (UnsupportedOperationException | IllegalArgumentException e) {
      return Map.of();
    }
  }

  private CompilerIdentity readRecord() {
    for (int i = 0; i < probeFiles.size(); i++) {
      CompilerIdentity id = readRecord(probeFiles.get(i));
      if (id != null) {
        if (i > 0) {
          writeRecord(probeFiles.subList(0, i), id); // e.g. a new cache learns it from the user's record
        }
        return id;
      }
    }
    return null;
  }

  private static CompilerIdentity readRecord(Path probeFile) {
    if (!Files.isRegularFile(probeFile)) {
      return null;
    }
    try {
      return CompilerIdentity.decode(Files.readString(probeFile, StandardCharsets.UTF_8));
    } catch (IOException | RuntimeException e) {
      return null; // unreadable or damaged: ask the plugin again
    }
  }

  private void writeRecord(CompilerIdentity id) {
    writeRecord(probeFiles, id);
  }

  private static void writeRecord(List<Path> files, CompilerIdentity id) {
    files.forEach(f -> writeRecord(f, id));
  }

  /** Replaces the record atomically ({@link AtomicFiles}): a reader sees the old record, the new one, or none. */
  private static void writeRecord(Path probeFile, CompilerIdentity id) {
    try {
      Files.createDirectories(probeFile.getParent());
      AtomicFiles.writeString(probeFile, id.encode());
    } catch (IOException e) {
      // only a missed shortcut: the next run asks the plugin again
    }
  }

  private void deleteRecord() {
    for (Path f : probeFiles) {
      try {
        Files.deleteIfExists(f);
      } catch (IOException e) {
        // the record stays wrong only until it is next checked
      }
    }
  }
}
