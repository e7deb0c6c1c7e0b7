package dev.xlac.core;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Everything about a compiler that can change the artifact it makes from a graph: the driver, the
 * compiler's version, the target, the normalised flags and the compile options. Together with the
 * graph fingerprint it forms the artifact key, so the same graph compiled for trn1 and for the CPU
 * is two entries. Lives in the core package because both the cache and the drivers need it.
 *
 * @param driver short driver name, e.g. {@code pjrt} or {@code neuronx-cc}
 * @param compilerVersion e.g. the PJRT platform name and version, or {@code neuronx-cc --version}
 * @param target e.g. {@code cpu}, {@code trn1}
 * @param flags normalised compiler flags, in a canonical order chosen by the driver
 * @param options compile options (replicas, partitions, ...), sorted by key
 */
public record CompilerIdentity(String driver, String compilerVersion, String target, List<String> flags,
    Map<String, String> options) {

  public CompilerIdentity {
    require(driver, "driver");
    require(compilerVersion, "compilerVersion");
    require(target, "target");
    flags = List.copyOf(flags);
    options = java.util.Collections.unmodifiableMap(new TreeMap<>(options));
  }

  private static void require(String v, String what) {
    if (v == null || v.isBlank() || v.contains("\n")) {
      throw new IllegalArgumentException("compiler identity needs a one-line " + what);
    }
  }

  /** A stable, line-based encoding (also what the digest is computed over). */
  public String encode() {
    StringBuilder b = new StringBuilder("xlac-compiler-identity/1\n");
    b.append("driver=").append(driver).append('\n');
    b.append("version=").append(compilerVersion).append('\n');
    b.append("target=").append(target).append('\n');
    for (String f : flags) {
      b.append("flag=").append(escape(f)).append('\n');
    }
    for (Map.Entry<String, String> e : options.entrySet()) {
      b.append("option=").append(escape(e.getKey())).append('=').append(escape(e.getValue())).append('\n');
    }
    return b.toString();
  }

  /** Parses {@link #encode()}'s output. */
  public static CompilerIdentity decode(String text) {
    String[] lines = text.split("\n");
    if (lines.length == 0 || !lines[0].equals("xlac-compiler-identity/1")) {
      throw new IllegalArgumentException("not an xlac compiler identity");
    }
    String driver = null;
    String version = null;
    String target = null;
    List<String> flags = new ArrayList<>();
    Map<String, String> options = new TreeMap<>();
    for (int i = 1; i < lines.length; i++) {
      String l = lines[i];
      int eq = l.indexOf('=');
      if (eq < 0) {
        throw new IllegalArgumentException("bad compiler identity line: " + l);
      }
      String k = l.substring(0, eq);
      String v = l.substring(eq + 1);
      switch (k) {
        case "driver" -> driver = v;
        case "version" -> version = v;
        case "target" -> target = v;
        case "flag" -> flags.add(unescape(v));
        case "option" -> {
          int split = findUnescaped(v, '=');
          options.put(unescape(v.substring(0, split)), unescape(v.substring(split + 1)));
        }
        default -> throw new IllegalArgumentException("unknown compiler identity field: " + k);
      }
    }
    return new CompilerIdentity(driver, version, target, flags, options);
  }

  /** Hex SHA-256 of {@link #encode()}: the compiler half of an artifact key. */
  public String digest() {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      return HexFormat.of().formatHex(sha.digest(encode().getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** What users see and filter by ({@code --compiler}): {@code driver:target}, e.g. {@code pjrt:cpu}. */
  public String shortName() {
    return driver + ":" + target;
  }

  /** A one-line description: short name, version, and flags if any. */
  public String describe() {
    return shortName() + " (" + compilerVersion + ")" + (flags.isEmpty() ? "" : " " + String.join(" ", flags));
  }

  private static String escape(String s) {
    return IdentityTextEscapes.escape(s, '=', 'e');
  }

  private static String unescape(String s) {
    return IdentityTextEscapes.unescape(s, '=', 'e');
  }

  private static int findUnescaped(String s, char target) {
    for (int i = 0; i < s.length(); i++) {
      if (s.charAt(i) == '\\') {
        i++;
      } else if (s.charAt(i) == target) {
        return i;
      }
    }
    throw new IllegalArgumentException("bad compiler identity option: " + s);
  }
}
