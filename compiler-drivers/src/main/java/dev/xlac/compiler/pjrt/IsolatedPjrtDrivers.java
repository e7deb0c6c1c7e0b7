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
 *
 * <p>The plugin identity text that recorded runtime requests are keyed with (made from what a PJRT client reports:
 * platform, devices, attributes, and from the host's CPU) is remembered beside the identity
 * ({@link #rememberedIdentityText}), keyed also by this machine and boot and by the environment that may choose the
 * devices ({@link #textKey}): a run over a cache whose requests are all compiled then starts no worker. A record is
 * only ever trusted to find nothing to compile.
 */
public final class IsolatedPjrtDrivers implements DriverFactory {
  private static final String PROBE_FORMAT = "xlac-pjrt-probe/1";
  private static final String TEXT_FORMAT = "xlac-pjrt-identity-text/1";
  /** A record is a header line, the payload's SHA-256 and the identity text: far less than this. */
  private static final long TEXT_RECORD_MAX_BYTES = 1 << 20;
  /**
   * Environment variables whose names hold one of these may change which devices a client sees, or how the plugin
   * loads and behaves (CUDA_VISIBLE_DEVICES, TPU_VISIBLE_CHIPS, NEURON_RT_VISIBLE_CORES, LD_LIBRARY_PATH, XLA_FLAGS,
   * ...): a record holds only for the same values.
   */
  private static final List<String> DEVICE_ENV_PARTS = List.of("VISIBLE", "DEVICE", "PJRT", "TPU", "CUDA", "ROCR",
      "ROCM", "HIP", "HSA_", "ZE_", "ONEAPI", "SYCL", "GPU", "NVIDIA", "NEURON", "XLA", "JAX", "LIBRARY_PATH",
      "LD_PRELOAD", "ACCELERATOR", "MEGASCALE");

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

  @Override
  public Optional<String> rememberedIdentityText(String context) {
    for (Path f : textFiles(context)) {
      Optional<String> text = readTextRecord(f);
      if (text.isPresent()) {
        return text;
      }
    }
    return Optional.empty();
  }

  @Override
  public void rememberIdentityText(String context, String identityText) {
    byte[] payload = identityText.getBytes(StandardCharsets.UTF_8);
    byte[] header = (TEXT_FORMAT + "\n" + sha256Hex(payload) + "\n").getBytes(StandardCharsets.US_ASCII);
    byte[] record = java.util.Arrays.copyOf(header, header.length + payload.length);
    System.arraycopy(payload, 0, record, header.length, payload.length);
    for (Path f : textFiles(context)) {
      try {
        Files.createDirectories(f.getParent());
        AtomicFiles.write(f, out -> {
          out.write(record);
          return true;
        });
      } catch (IOException | RuntimeException e) {
        // only a missed shortcut: the next run starts a worker to ask
      }
    }
  }

  /** The records' files for {@code context}, one per probe directory; none when the plugin file cannot be keyed. */
  private List<Path> textFiles(String context) {
    String key;
    try {
      key = textKey(probeKey() + "\n" + sha256Hex(context.getBytes(StandardCharsets.UTF_8)), System.getenv(),
          machine());
    } catch (RuntimeException e) {
      return List.of();
    }
    return probeDirs.stream().map(d -> d.resolve("pjrt-text-" + key + ".identity-text")).toList();
  }

  /**
   * The key of an identity-text record: the identity's key ({@code probeKey}: the plugin file, the options, the class
   * path) with the caller's context, this machine's lines ({@link #machine()}), and every environment variable whose
   * name holds one of {@link #DEVICE_ENV_PARTS} but xlac's own ({@code XLAC_*}, save {@code XLAC_RUNTIME_LIBRARY},
   * whose library reads the host CPU's lines), sorted; not the rest of the environment, which changes from run to
   * run.
   */
  static String textKey(String probeKey, Map<String, String> env, List<String> machine) {
    StringBuilder b = new StringBuilder(TEXT_FORMAT).append('\n').append(probeKey).append('\n');
    machine.forEach(line -> b.append(line).append('\n'));
    new TreeMap<>(env).forEach((name, value) -> {
      String upper = name.toUpperCase(java.util.Locale.ROOT);
      boolean xlacs = upper.startsWith("XLAC_") && !upper.equals("XLAC_RUNTIME_LIBRARY"); // that one: the CPU lines
      if (!xlacs && DEVICE_ENV_PARTS.stream().anyMatch(upper::contains)) {
        b.append(name).append('=').append(value).append('\0');
      }
    });
    return sha256Hex(b.toString().getBytes(StandardCharsets.UTF_8));
  }

  /**
   * This machine and this boot: {@code /etc/machine-id}, the kernel's boot id and host name, each empty when it
   * cannot be read. Devices come and go with a boot; a cache directory on shared storage is read by other machines.
   */
  static List<String> machine() {
    return List.of("machine-id=" + firstLine(Path.of("/etc/machine-id")),
        "boot-id=" + firstLine(Path.of("/proc/sys/kernel/random/boot_id")),
        "host=" + dev.xlac.core.os.HostName.kernel().orElse(""));
  }

  private static String firstLine(Path file) {
    try {
      return Files.readString(file, StandardCharsets.UTF_8).strip();
    } catch (IOException | RuntimeException e) {
      return "";
    }
  }

  /** A whole record this writer made (its SHA-256 checked), or empty. */
  private static Optional<String> readTextRecord(Path file) {
    try {
      if (!Files.isRegularFile(file, java.nio.file.LinkOption.NOFOLLOW_LINKS)
          || Files.size(file) > TEXT_RECORD_MAX_BYTES) {
        return Optional.empty();
      }
      byte[] record = Files.readAllBytes(file);
      String prefix = TEXT_FORMAT + "\n";
      int hashEnd = prefix.length() + 64;
      if (record.length < hashEnd + 1 || record[hashEnd] != '\n'
          || !new String(record, 0, prefix.length(), StandardCharsets.US_ASCII).equals(prefix)) {
        return Optional.empty();
      }
      String sha = new String(record, prefix.length(), 64, StandardCharsets.US_ASCII);
      byte[] payload = java.util.Arrays.copyOfRange(record, hashEnd + 1, record.length);
      return sha.equals(sha256Hex(payload)) ? Optional.of(new String(payload, StandardCharsets.UTF_8))
          : Optional.empty();
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
  }

  private static String sha256Hex(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
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
    return sha256Hex(key.getBytes(StandardCharsets.UTF_8));
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
