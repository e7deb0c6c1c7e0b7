package dev.xlac.capture;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.PrivateFiles;
import dev.xlac.core.io.UserCacheRoot;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * xlac's Python hooks for a command it traces or puts its PJRT proxy in front of ({@code run/} in this module's
 * resources: a {@code sitecustomize.py} that installs {@code _xlac_dump}, {@code _xlac_jax} and
 * {@code _xlac_torch_xla}, each acting only when its variables are set, then chains to the sitecustomize it
 * shadows). They are unpacked into {@code USER_CACHE/python/<sha256>/} ({@link UserCacheRoot};
 * the hash of all of them), so that the directory, and the {@code PYTHONPATH} that names it, is the same for every
 * run of one xlac build (a launch plan of the fast start holds it), and two builds never share one. Each use
 * compares the files with the packed ones and rewrites any that differ: they run inside the user's training
 * process. The directories are private (0700, files 0600).
 */
public final class PythonHooks {
  /** The hook files, in {@code run/}; a name that is not packed is skipped. */
  static final String[] FILES = {"sitecustomize.py", "_xlac_after_import.py", "_xlac_dump.py", "_xlac_jax.py",
      "_xlac_torch_xla.py"};

  private static Map<String, byte[]> packed;

  private PythonHooks() {}

  /**
   * The directory to put first on the command's {@code PYTHONPATH}, its files checked (and written where they
   * are missing or differ).
   *
   * @param env the user's environment (where {@code XDG_CACHE_HOME} and {@code HOME} are read)
   * @throws XlacException (ENVIRONMENT) when there is no user cache directory or the files cannot be written
   */
  /**
   * {@code pythonPath} (the command's {@code PYTHONPATH}, or null) with the hooks' directory first, once.
   *
   * @param env the user's environment, as for {@link #directory}
   */
  public static String firstOn(String pythonPath, Map<String, String> env) {
    String hooks = entry(directory(env));
    if (pythonPath == null || pythonPath.isEmpty()) {
      return hooks;
    }
    if (pythonPath.equals(hooks) || pythonPath.startsWith(hooks + java.io.File.pathSeparator)) {
      return pythonPath; // a traced command that records: the trace put them there already
    }
    return hooks + java.io.File.pathSeparator + pythonPath;
  }

  public static Path directory(Map<String, String> env) {
    Map<String, byte[]> files = packed();
    String name = hash(files);
    java.util.Optional<Path> root = UserCacheRoot.of(env, System.getProperty("user.home"));
    IOException failed = null;
    if (root.isPresent()) {
      try {
        return written(root.get().resolve("python").resolve(name), files);
      } catch (IOException e) {
        failed = e; // a read-only home (HPC nodes, containers): the temporary directory instead
      }
    }
    // This user's own, named by the uid: stable across runs (a launch plan holds it), never another user's.
    Path tmp = Path.of(System.getProperty("java.io.tmpdir"), "xlac-python-" + uid()).resolve(name);
    try {
      return written(tmp, files);
    } catch (IOException e) {
      String first = failed == null ? "" : root.get().resolve("python") + " (" + XlacException.reason(failed)
          + ") nor to ";
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot write xlac's Python hooks to " + first + tmp + " ("
          + XlacException.reason(e) + "); set XDG_CACHE_HOME to a directory you can write", e);
    }
  }

  /** {@code dir} holding exactly the packed files, private; its own and its parent's owner checked. */
  private static Path written(Path dir, Map<String, byte[]> files) throws IOException {
    PrivateFiles.createDirectories(dir);
    Object me = Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    for (Path d : new Path[] {dir.getParent(), dir}) {
      Map<String, Object> a = Files.readAttributes(d, "unix:uid,mode,isDirectory", LinkOption.NOFOLLOW_LINKS);
      if (!Boolean.TRUE.equals(a.get("isDirectory")) || !me.equals(a.get("uid"))) {
        throw new IOException(d + " is not a directory of this user's");
      }
      if ((((Integer) a.get("mode")) & 0022) != 0) {
        throw new IOException(d + " can be written by other users");
      }
    }
    for (Map.Entry<String, byte[]> f : files.entrySet()) {
      Path target = dir.resolve(f.getKey());
      if (!same(target, f.getValue())) {
        PrivateFiles.writeBytes(target, f.getValue());
      }
    }
    return dir;
  }

  private static String uid() {
    try {
      return String.valueOf(Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
    } catch (IOException | RuntimeException e) {
      return System.getProperty("user.name", "user");
    }
  }

  /** The hooks' directory as it goes on {@code PYTHONPATH}: a path holding its separator would be two entries. */
  private static String entry(Path dir) {
    String s = dir.toString();
    if (s.contains(java.io.File.pathSeparator)) {
      throw XlacException.environment("cannot put xlac's Python hooks in " + dir + " on PYTHONPATH: its path holds '"
          + java.io.File.pathSeparator + "' (set XDG_CACHE_HOME to a directory without it)");
    }
    return s;
  }

  /** The hook files in {@code directory} (one of {@link #directory}), for a launch plan to check. */
  public static java.util.List<Path> files(Path directory) {
    return packed().keySet().stream().map(directory::resolve).toList();
  }

  private static synchronized Map<String, byte[]> packed() {
    if (packed == null) {
      Map<String, byte[]> files = new LinkedHashMap<>();
      for (String name : FILES) {
        try (InputStream in = PythonHooks.class.getResourceAsStream("run/" + name)) {
          if (in != null) {
            files.put(name, in.readAllBytes());
          }
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
      if (!files.containsKey("sitecustomize.py")) {
        throw new IllegalStateException("run/sitecustomize.py is missing from xlac's jar");
      }
      packed = files;
    }
    return packed;
  }

  private static String hash(Map<String, byte[]> files) {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      for (Map.Entry<String, byte[]> f : files.entrySet()) {
        sha.update(f.getKey().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        sha.update((byte) 0);
        sha.update(Long.toString(f.getValue().length).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        sha.update((byte) 0);
        sha.update(f.getValue());
      }
      return HexFormat.of().formatHex(sha.digest());
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A regular file (not a link) holding exactly {@code bytes}. */
  private static boolean same(Path file, byte[] bytes) {
    try {
      return Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS) && Files.size(file) == bytes.length
          && Arrays.equals(Files.readAllBytes(file), bytes);
    } catch (IOException e) {
      return false;
    }
  }
}
