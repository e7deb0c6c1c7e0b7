package dev.xlac.runtime;

import dev.xlac.core.IdentityTextEscapes;
import dev.xlac.core.XlaFlagsText;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

/**
 * The plugin identity text that the request key covers (runtime/README.md, {@code xlac-pjrt-plugin/3}):
 * the real plugin's platform name and version, its PJRT C API version, the SHA-256 of its file, the
 * kinds of the compile's client's addressable devices, for a CPU plugin the host CPU, the {@code XLA_FLAGS} and
 * {@code LIBTPU_INIT_ARGS} the plugin sees, and its attributes, one per line. Built exactly as the
 * proxy builds it ({@code src/main/c/key.c}).
 */
public final class PluginIdentityText {
  private PluginIdentityText() {}

  public static final String HEADER = "xlac-pjrt-plugin/3";

  /** One {@code PJRT_Plugin_Attributes} entry; {@link #typedValue()} is its {@code <type>:<value>}. */
  public record Attribute(String name, String typedValue) {
    public static Attribute string(String name, String value) {
      return new Attribute(name, "s:" + escape(value));
    }

    public static Attribute int64(String name, long value) {
      return new Attribute(name, "i:" + value);
    }

    public static Attribute int64List(String name, long... values) {
      return new Attribute(name, "l:" + LongStream.of(values).mapToObj(Long::toString)
          .collect(Collectors.joining(",")));
    }

    public static Attribute float32(String name, float value) {
      return new Attribute(name, "f:" + formatFloat(value));
    }

    public static Attribute bool(String name, boolean value) {
      return new Attribute(name, "b:" + value);
    }
  }

  /**
   * {@code XLA_FLAGS} as the key sees it (runtime/README.md): the flags XLA reads, from the value or, when its first
   * non-blank character is not {@code -}, from the file it names (read now, relative to the working directory),
   * split into words exactly as XLA's {@code ParseArgvFromString} splits them (quoted values are one word, without
   * their quotes), without the words that only steer dumping ({@code --xla_dump_*}) or name a local path
   * ({@code --xla_force_host_platform_device_count}, {@code --xla_gpu_cuda_data_dir}), the same ones
   * {@link CanonicalOptions#DEBUG_OPTIONS_DROPPED_FIELDS} drops; each word with {@code \} as {@code \\} and a space
   * as {@code \s}, joined by one space. The proxy does the same in C ({@code xkeyed_xla_flags}).
   */
  public static String keyedXlaFlags(String xlaFlags) {
    if (XlaFlagsText.namesFile(xlaFlags) && !xlaFlags.contains("\0")) {
      Path file = Path.of(xlaFlags);
      if (Files.exists(file) && !Files.isRegularFile(file)) {
        // a pipe or a device: the proxy does not read it (that would take the flags from XLA), and keys for
        // its own process only; so no key made here can match a run's
        return "?flags file that is not a regular file " + xlaFlags + " not read, keyed for process "
            + ProcessHandle.current().pid() + " at " + System.nanoTime();
      }
    }
    List<String> words;
    try {
      words = XlaFlagsText.words(xlaFlags);
    } catch (IOException e) {
      return "?unreadable flags file " + xlaFlags; // XLA stops the process; no word XLA reads starts with '?'
    }
    StringBuilder b = new StringBuilder();
    for (String word : words) {
      String name = word.replaceFirst("^-+", "");
      int eq = name.indexOf('=');
      name = eq < 0 ? name : name.substring(0, eq);
      if (name.startsWith("xla_dump_") || name.equals("xla_force_host_platform_device_count")
          || name.equals("xla_gpu_cuda_data_dir")) {
        continue;
      }
      if (!b.isEmpty()) {
        b.append(' ');
      }
      b.append(word.replace("\\", "\\\\").replace(" ", "\\s"));
    }
    return b.toString();
  }

  /**
   * The host CPU lines of the identity for a plugin of {@code platformName}: this machine's ({@link HostCpu}) for
   * {@code cpu}, whose compiler emits code for the host's instruction set, else none ("").
   *
   * @throws dev.xlac.core.XlacException (ENVIRONMENT) for {@code cpu} when the runtime library cannot be loaded
   */
  public static String hostCpuLines(String platformName) {
    return platformName.equals("cpu") ? HostCpu.lines() : "";
  }

  /**
   * The identity text. {@code deviceKinds} has one entry per addressable device of the client (its
   * {@code PJRT_DeviceDescription_Kind}), in any order; the text has one line per distinct kind, sorted by UTF-8
   * bytes. {@code hostCpuLines} are {@link #hostCpuLines}'s. {@code xlaFlags} is {@link #keyedXlaFlags}'s, and
   * {@code libtpuInitArgs} the variable as the plugin's process had it ("" when unset). Attributes are sorted by
   * name (bytewise, UTF-8; equal names keep their order).
   */
  public static String of(String platformName, String platformVersion, int apiMajor, int apiMinor,
      String pluginSha256, List<String> deviceKinds, String hostCpuLines, String xlaFlags, String libtpuInitArgs,
      List<Attribute> attributes) {
    StringBuilder b = new StringBuilder(HEADER).append('\n');
    b.append("platform_name=").append(escape(platformName)).append('\n');
    b.append("platform_version=").append(escape(platformVersion)).append('\n');
    b.append("api_version=").append(apiMajor).append('.').append(apiMinor).append('\n');
    b.append("plugin_sha256=").append(pluginSha256).append('\n');
    deviceKinds.stream().map(k -> k.getBytes(StandardCharsets.UTF_8)).sorted(Arrays::compareUnsigned)
        .map(k -> new String(k, StandardCharsets.UTF_8)).distinct()
        .forEach(k -> b.append("device_kind=").append(escape(k)).append('\n'));
    b.append(hostCpuLines);
    b.append("xla_flags=").append(escape(xlaFlags)).append('\n');
    b.append("libtpu_init_args=").append(escape(libtpuInitArgs)).append('\n');
    List<Attribute> sorted = new ArrayList<>(attributes);
    sorted.sort(Comparator.comparing(a -> a.name().getBytes(StandardCharsets.UTF_8), Arrays::compareUnsigned));
    for (Attribute a : sorted) {
      b.append("attribute=").append(escape(a.name())).append('=').append(a.typedValue()).append('\n');
    }
    return b.toString();
  }

  /** The value of the first {@code name=} line of an identity text, unescaped (e.g. {@code plugin_sha256}). */
  public static Optional<String> field(String identityText, String name) {
    for (String line : identityText.split("\n")) {
      if (line.startsWith(name + "=")) {
        return Optional.of(unescape(line.substring(name.length() + 1)));
      }
    }
    return Optional.empty();
  }

  /**
   * The lines that differ between two identity texts, by name (a line is taken by its name, as {@link #field} does):
   * {@code xla_flags}, {@code plugin_sha256}, {@code device_kind}, {@code attribute xla_version}; a line that one
   * text has and the other lacks differs too. The header (the text's version) is {@code version}. In the order of
   * {@code a}'s lines, then {@code b}'s own.
   */
  public static List<String> differingLines(String a, String b) {
    java.util.Map<String, List<String>> la = linesByName(a);
    java.util.Map<String, List<String>> lb = linesByName(b);
    java.util.LinkedHashSet<String> names = new java.util.LinkedHashSet<>(la.keySet());
    names.addAll(lb.keySet());
    List<String> out = new ArrayList<>();
    for (String n : names) {
      if (!java.util.Objects.equals(la.get(n), lb.get(n))) {
        out.add(n);
      }
    }
    return out;
  }

  private static java.util.Map<String, List<String>> linesByName(String text) {
    java.util.Map<String, List<String>> m = new java.util.LinkedHashMap<>();
    for (String line : text.split("\n")) {
      if (line.isEmpty()) {
        continue;
      }
      int eq = line.indexOf('=');
      String name = eq < 0 ? "version" : line.substring(0, eq);
      if (name.equals("attribute")) { // attribute=<name>=<type>:<value>: one line per attribute name
        int second = line.indexOf('=', eq + 1);
        name = "attribute " + (second < 0 ? line.substring(eq + 1) : line.substring(eq + 1, second));
      }
      m.computeIfAbsent(name, k -> new ArrayList<>()).add(line);
    }
    return m;
  }

  /**
   * The value of {@code XLAC_PJRT_PLUGIN_SHA256} for a plugin file whose SHA-256 is known:
   * {@code HEX:SIZE:MTIME_NS:DEV:INO}, so the proxy can trust the hash while the file is unchanged.
   */
  public static String sha256Env(Path plugin, String sha256Hex) throws IOException {
    long size = Files.size(plugin);
    FileTime mtime = Files.getLastModifiedTime(plugin);
    Object dev = Files.getAttribute(plugin, "unix:dev");
    Object ino = Files.getAttribute(plugin, "unix:ino");
    return sha256Env(sha256Hex, size, mtime.to(TimeUnit.NANOSECONDS), ((Number) dev).longValue(),
        ((Number) ino).longValue());
  }

  /** {@code XLAC_PJRT_PLUGIN_SHA256} from a hash and the {@code stat} it was taken for. */
  public static String sha256Env(String sha256Hex, long size, long mtimeNanos, long dev, long ino) {
    return sha256Hex.toLowerCase(Locale.ROOT) + ":" + size + ":" + mtimeNanos + ":" + Long.toUnsignedString(dev)
        + ":" + Long.toUnsignedString(ino);
  }

  /** {@code \} as {@code \\}, a newline as {@code \n}, a NUL as {@code \0}. */
  static String escape(String s) {
    return IdentityTextEscapes.escape(s, '\0', '0');
  }

  static String unescape(String s) {
    return IdentityTextEscapes.unescape(s, '\0', '0');
  }

  /** A float as C's {@code printf("%.9g", (double) value)} writes it in the C locale. */
  static String formatFloat(float value) {
    double d = value;
    if (Double.isNaN(d)) {
      return (Double.doubleToRawLongBits(d) < 0 ? "-" : "") + "nan";
    }
    if (Double.isInfinite(d)) {
      return d < 0 ? "-inf" : "inf";
    }
    if (d == 0) {
      return 1 / d < 0 ? "-0" : "0";
    }
    BigDecimal r = new BigDecimal(d).round(new MathContext(9, RoundingMode.HALF_EVEN));
    int exponent = r.precision() - r.scale() - 1;
    if (exponent >= -4 && exponent < 9) {
      return r.stripTrailingZeros().toPlainString();
    }
    BigDecimal mantissa = r.movePointLeft(exponent).stripTrailingZeros();
    String m = mantissa.scale() <= 0 ? mantissa.toBigInteger().toString() : mantissa.toPlainString();
    int e = Math.abs(exponent);
    return m + "e" + (exponent < 0 ? "-" : "+") + (e < 10 ? "0" : "") + e;
  }
}
