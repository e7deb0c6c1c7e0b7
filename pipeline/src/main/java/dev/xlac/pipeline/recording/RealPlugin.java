package dev.xlac.pipeline.recording;

import dev.xlac.compiler.pjrt.PjrtPluginCheck;
import dev.xlac.compiler.pjrt.PluginFileDigest;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.PrivateFiles;
import dev.xlac.runtime.PluginIdentityText;
import dev.xlac.runtime.RuntimeLibrary;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The real PJRT plugin behind xlac's runtime proxy, checked ({@link PjrtPluginCheck}) and hashed.
 * Both are remembered in a small file per plugin (a memo), keyed by the file's real path and its
 * {@code stat} (size, modification time in nanoseconds, device, inode): an unchanged 200 MB plugin
 * is neither loaded nor hashed again, so {@code xlac run} starts the command at once.
 *
 * @param path the plugin's real path (links resolved)
 * @param sha256 the lowercase hex SHA-256 of the file
 * @param apiVersion its PJRT C API version, e.g. {@code 0.115}
 */
public record RealPlugin(Path path, String sha256, String apiVersion, long size, long mtimeNanos, long dev,
    long ino) {
  private static final String MEMO_FORMAT = "xlac-plugin-memo 1";

  /** {@code HEX:SIZE:MTIME_NS:DEV:INO}, what the proxy takes in {@code XLAC_PJRT_PLUGIN_SHA256}. */
  public String proxyValue() {
    return PluginIdentityText.sha256Env(sha256, size, mtimeNanos, dev, ino);
  }

  /**
   * Checks and hashes {@code plugin}, or takes both from its memo in {@code memoDir} when the file's
   * {@code stat} still matches. An {@link XlacException} with exit code 3 and one line naming the
   * plugin when it is missing, unreadable or not a usable PJRT plugin.
   *
   * @param fresh set to true by this call when the plugin was checked and hashed now (no usable memo)
   */
  public static RealPlugin identify(Path plugin, Path memoDir, boolean[] fresh) {
    Path real;
    Stat stat;
    try {
      real = plugin.toRealPath();
      stat = Stat.of(real);
    } catch (NoSuchFileException e) {
      throw XlacException.environment("cannot use PJRT plugin " + plugin.toAbsolutePath() + ": no such file");
    } catch (IOException e) {
      throw XlacException.environment("cannot use PJRT plugin " + plugin.toAbsolutePath() + ": "
          + XlacException.reason(e));
    }
    if (RuntimeLibrary.isProxy(real)) { // before the memo: an older xlac may have remembered it
      throw XlacException.environment("cannot use PJRT plugin " + plugin.toAbsolutePath() + ": it is xlac's runtime"
          + " proxy, not a real plugin (an xlac run inside another xlac run?); name the real plugin with --plugin PATH"
          + " or $XLAC_PJRT_PLUGIN");
    }
    if (memoDir != null) {
      Optional<RealPlugin> memo = readMemo(memoFile(memoDir, real), real, stat);
      if (memo.isPresent()) {
        return memo.get();
      }
    }
    String api = PjrtPluginCheck.check(plugin); // named as given in its messages
    String sha = PluginFileDigest.sha256(real);
    if (fresh != null) {
      fresh[0] = true;
    }
    return new RealPlugin(real, sha, api, stat.size, stat.mtimeNanos, stat.dev, stat.ino);
  }

  /**
   * A plugin whose hash and check are already known (from elsewhere), with the file's {@code stat} now:
   * for a memo written ahead (the launcher's AOT training run).
   */
  public static RealPlugin known(Path plugin, String sha256, String apiVersion) throws IOException {
    Path real = plugin.toRealPath();
    Stat stat = Stat.of(real);
    return new RealPlugin(real, sha256, apiVersion, stat.size, stat.mtimeNanos, stat.dev, stat.ino);
  }

  /**
   * The plugin a launch plan named ({@code value}: {@link #proxyValue()}, as the fast start gave the command), at
   * {@code plugin} (links resolved where it still resolves), with its API version from the memo when the memo names
   * it; empty when {@code value} is malformed. Neither checks nor hashes the file: it may be gone by now.
   */
  public static Optional<RealPlugin> named(Path plugin, Path memoDir, String value) {
    String[] f = value == null ? new String[0] : value.split(":", -1);
    if (f.length != 5 || !f[0].matches("[0-9a-f]{64}")) {
      return Optional.empty();
    }
    Stat stat;
    try {
      stat = new Stat(Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]), Long.parseLong(f[4]));
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
    Path real;
    try {
      real = plugin.toRealPath();
    } catch (IOException e) {
      real = plugin.toAbsolutePath();
    }
    String api = memoDir == null ? "" : readMemo(memoFile(memoDir, real), real, stat)
        .filter(m -> m.sha256().equals(f[0])).map(RealPlugin::apiVersion).orElse("");
    return Optional.of(new RealPlugin(real, f[0], api, stat.size, stat.mtimeNanos, stat.dev, stat.ino));
  }

  /** Whether the file at {@link #path()} still has the {@code stat} this plugin was identified with. */
  public boolean unchanged() {
    try {
      return Stat.of(path).equals(new Stat(size, mtimeNanos, dev, ino));
    } catch (IOException e) {
      return false;
    }
  }

  /** Where {@code xlac run} keeps the plugin memos of the cache in {@code cacheDir}. */
  public static Path memoDir(Path cacheDir) {
    return cacheDir.resolve("runtime").resolve("plugins");
  }

  /** Writes this plugin's memo into {@code memoDir} (atomically); a failure only costs a re-check next time. */
  public void remember(Path memoDir) {
    String text = String.join("\n", MEMO_FORMAT, "path " + path, "stat " + size + " " + mtimeNanos + " " + dev + " "
        + ino, "sha256 " + sha256, "api " + apiVersion, "");
    try {
      PrivateFiles.createDirectories(memoDir);
      PrivateFiles.writeString(memoFile(memoDir, path), text);
    } catch (IOException | RuntimeException e) {
      // best effort: the memo only saves time
    }
  }

  public static Path memoFile(Path memoDir, Path real) {
    return memoDir.resolve(sha256(real.toString().getBytes(StandardCharsets.UTF_8)).substring(0, 32) + ".plugin");
  }

  private static Optional<RealPlugin> readMemo(Path file, Path real, Stat stat) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      return Optional.empty();
    }
    if (lines.size() != 5 || !lines.get(0).equals(MEMO_FORMAT) || !lines.get(1).equals("path " + real)
        || !lines.get(2).equals("stat " + stat.size + " " + stat.mtimeNanos + " " + stat.dev + " " + stat.ino)
        || !lines.get(3).matches("sha256 [0-9a-f]{64}") || !lines.get(4).matches("api \\d+\\.\\d+")) {
      return Optional.empty();
    }
    return Optional.of(new RealPlugin(real, lines.get(3).substring(7), lines.get(4).substring(4), stat.size,
        stat.mtimeNanos, stat.dev, stat.ino));
  }

  private static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The {@code stat} fields the memo and the proxy compare. */
  private record Stat(long size, long mtimeNanos, long dev, long ino) {
    static Stat of(Path real) throws IOException {
      var a = Files.readAttributes(real, "unix:size,lastModifiedTime,dev,ino", LinkOption.NOFOLLOW_LINKS);
      if (!Files.isRegularFile(real)) {
        throw new IOException("not a regular file");
      }
      return new Stat((Long) a.get("size"), ((FileTime) a.get("lastModifiedTime")).to(TimeUnit.NANOSECONDS),
          (Long) a.get("dev"), (Long) a.get("ino"));
    }
  }
}
