package dev.xlac.runtime;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.core.io.PrivateFiles;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The PJRT proxy library ({@code libxlac_pjrt.so}) for this machine. The build packs it into this
 * module's jar as {@code dev/xlac/runtime/native/linux-<arch>/libxlac_pjrt.so}; {@link #path()} unpacks it
 * once into a directory named by its SHA-256 under the user cache directory, so that a framework can
 * {@code dlopen} it, and two xlac versions never overwrite each other's copy.
 */
public final class RuntimeLibrary {
  public static final String FILE = "libxlac_pjrt.so";
  /** Overrides the packed library (tests, or a library built by hand). */
  public static final String ENV = "XLAC_RUNTIME_LIBRARY";

  /** No proxy library is larger (the sanitized test build is about 1 MB); real plugins are tens of MB and up. */
  static final long MAX_PROXY_SIZE = 16L << 20;
  /**
   * The proxy's marker symbol (proxy.c), and a symbol every older proxy exports, as their names stand in the
   * library's symbol names.
   */
  private static final List<byte[]> MARKERS = List.of(
      "\0XlacPjrt_ThisIsTheProxy\0".getBytes(StandardCharsets.US_ASCII),
      "\0XlacPjrt_Counters\0".getBytes(StandardCharsets.US_ASCII));

  private static Path unpacked;

  private RuntimeLibrary() {}

  /**
   * The proxy .so: {@code $XLAC_RUNTIME_LIBRARY} when set, else the packed one unpacked into
   * {@code $XDG_CACHE_HOME/xlac/runtime/<sha256>/} (or {@code ~/.cache/xlac/runtime/<sha256>/}).
   *
   * @throws XlacException (ENVIRONMENT) when this build has no library for this machine, or it cannot be
   *     unpacked
   */
  public static synchronized Path path() {
    if (unpacked == null) {
      unpacked = path(System.getenv(), System.getProperty("os.name"), System.getProperty("os.arch"),
          System.getProperty("user.home"));
    }
    return unpacked;
  }

  /**
   * Whether {@code file} is xlac's runtime proxy, of this build or any other: it exports the proxy's marker symbol.
   * An {@code xlac run} inside another finds the outer run's proxy where the real plugin should be, and a proxy in
   * front of itself would wait for its own start for ever. Files larger than any proxy are not read; one that
   * cannot be read is not the proxy (reading the plugin fails later, with its own message).
   */
  public static boolean isProxy(Path file) {
    try {
      if (!Files.isRegularFile(file) || Files.size(file) > MAX_PROXY_SIZE) {
        return false;
      }
      byte[] bytes = Files.readAllBytes(file);
      return MARKERS.stream().anyMatch(marker -> contains(bytes, marker));
    } catch (IOException e) {
      return false;
    }
  }

  private static boolean contains(byte[] bytes, byte[] part) {
    outer:
    for (int i = 0; i + part.length <= bytes.length; i++) {
      for (int j = 0; j < part.length; j++) {
        if (bytes[i + j] != part[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  /** {@link #path()} for the given environment and machine (tests). */
  static Path path(Map<String, String> env, String osName, String osArch, String userHome) {
    String override = env.get(ENV);
    if (override != null && !override.isBlank()) {
      Path p = Path.of(override).toAbsolutePath();
      if (!Files.isRegularFile(p)) {
        throw XlacException.environment(ENV + " names " + p + ", which is not a file");
      }
      return p;
    }
    String resource = resource(osName, osArch);
    byte[] bytes;
    try (InputStream in = RuntimeLibrary.class.getResourceAsStream("/" + resource)) {
      if (in == null) {
        throw XlacException.environment("this xlac build has no PJRT runtime library for " + osName + " on "
            + osArch + " (" + resource + " is not in the runtime jar)");
      }
      bytes = in.readAllBytes();
    } catch (IOException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot read the PJRT runtime library from the jar: "
          + XlacException.reason(e), e);
    }
    String sha = packedSha256(resource).orElseGet(() -> HexFormat.of().formatHex(RequestKey.sha256().digest(bytes)));
    Path root = cacheRoot(env, userHome).orElseThrow(() -> XlacException.environment(
        "cannot find a cache directory for the PJRT runtime library: set XDG_CACHE_HOME or HOME"));
    Path target = root.resolve("runtime").resolve(sha).resolve(FILE);
    try {
      if (!matches(target, bytes)) {
        PrivateFiles.createDirectories(target.getParent()); // code the training process loads
        AtomicFiles.write(target, PosixFilePermissions.fromString("rwxr-xr-x"), out -> {
          out.write(bytes);
          return true;
        });
      }
    } catch (IOException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot unpack the PJRT runtime library to " + target + ": "
          + XlacException.reason(e), e);
    }
    return target;
  }

  /** The jar resource for a machine: {@code dev/xlac/runtime/native/linux-<uname -m>/libxlac_pjrt.so}. */
  static String resource(String osName, String osArch) {
    String os = osName == null ? "" : osName.toLowerCase(Locale.ROOT);
    String arch = switch (osArch == null ? "" : osArch) {
      case "amd64", "x86_64" -> "x86_64";
      case "aarch64", "arm64" -> "aarch64";
      default -> osArch;
    };
    return "dev/xlac/runtime/native/" + (os.startsWith("linux") ? "linux" : os.replace(' ', '_')) + "-" + arch
        + "/" + FILE;
  }

  static Optional<Path> cacheRoot(Map<String, String> env, String userHome) {
    return dev.xlac.core.io.UserCacheRoot.of(env, userHome);
  }


  /**
   * The SHA-256 the build wrote beside the library ({@code libxlac_pjrt.so.sha256}), so that a start does not
   * hash it; empty when there is none or it is not 64 hex digits. It only names the directory: the unpacked
   * copy is compared with the packed bytes themselves.
   */
  private static Optional<String> packedSha256(String resource) {
    try (InputStream in = RuntimeLibrary.class.getResourceAsStream("/" + resource + ".sha256")) {
      if (in == null) {
        return Optional.empty();
      }
      String sha = new String(in.readNBytes(64), java.nio.charset.StandardCharsets.US_ASCII);
      return sha.matches("[0-9a-f]{64}") ? Optional.of(sha) : Optional.empty();
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /** Whether the unpacked copy is whole: the same bytes as the packed library. */
  private static boolean matches(Path file, byte[] packed) {
    try {
      return Files.isRegularFile(file) && Files.size(file) == packed.length
          && Arrays.equals(Files.readAllBytes(file), packed);
    } catch (IOException e) {
      return false;
    }
  }
}
