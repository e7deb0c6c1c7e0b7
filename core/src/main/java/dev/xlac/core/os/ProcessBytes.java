package dev.xlac.core.os;

import dev.xlac.core.XlacException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.Charset;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The bytes this process was started with, as the kernel keeps them ({@code /proc/self/cmdline},
 * {@code /proc/self/environ}), and whether Java's strings stand for them faithfully.
 * <p>The JVM decodes its arguments and environment with the locale's character set
 * ({@code sun.jnu.encoding}) and replaces what it cannot decode: bytes that are not valid UTF-8
 * become U+FFFD, and in the C locale every non-ASCII byte does. File names and child processes'
 * arguments are encoded back with the same character set, so a string that does not encode back to
 * the bytes it came from names a different file, or hands a child a different argument. Such a
 * string is refused, never used.
 */
public final class ProcessBytes {
  private ProcessBytes() {}

  /** The character set the JVM decodes arguments and encodes file names with. */
  public static Charset charset() {
    for (String property : new String[] {"sun.jnu.encoding", "native.encoding"}) {
      String name = System.getProperty(property);
      if (name != null && Charset.isSupported(name)) {
        return Charset.forName(name);
      }
    }
    return Charset.defaultCharset();
  }

  /**
   * The last {@code count} arguments this process was started with (those after the main class), as
   * bytes; empty where the kernel does not tell (no {@code /proc}).
   */
  public static Optional<List<byte[]>> lastArguments(int count) {
    List<byte[]> all = read(Path.of("/proc/self/cmdline"));
    if (all == null || all.size() < count) {
      return Optional.empty();
    }
    return Optional.of(List.copyOf(all.subList(all.size() - count, all.size())));
  }

  /** The bytes of environment variable {@code name} as this process got it; empty if unset or unknown. */
  public static Optional<byte[]> environmentValue(String name) {
    List<byte[]> all = read(Path.of("/proc/self/environ"));
    byte[] prefix = (name + "=").getBytes(StandardCharsets.US_ASCII);
    for (byte[] entry : all == null ? List.<byte[]>of() : all) {
      if (entry.length >= prefix.length && Arrays.equals(entry, 0, prefix.length, prefix, 0, prefix.length)) {
        return Optional.of(Arrays.copyOfRange(entry, prefix.length, entry.length));
      }
    }
    return Optional.empty();
  }

  /**
   * Refuses environment variable {@code name} (exit 2) when its value, as Java reads it, is not what the
   * process got: it would name another file.
   */
  public static void requireFaithfulEnvironment(String name) {
    String value = System.getenv(name);
    if (value == null) {
      return;
    }
    environmentValue(name).filter(raw -> !faithful(value, raw)).ifPresent(raw -> {
      throw XlacException.badInput("$" + name + " ('" + escaped(raw) + "') " + whyUnfaithful(raw)
          + (validUtf8(raw) ? "" : "; xlac refuses it rather than use a different name"));
    });
  }

  /** Whether {@code decoded}, encoded as the JVM encodes file names and arguments, gives back {@code raw}. */
  public static boolean faithful(String decoded, byte[] raw) {
    return faithful(decoded, raw, charset());
  }

  static boolean faithful(String decoded, byte[] raw, Charset charset) {
    try {
      ByteBuffer b = charset.newEncoder().onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT).encode(CharBuffer.wrap(decoded));
      byte[] encoded = new byte[b.remaining()];
      b.get(encoded);
      return Arrays.equals(encoded, raw);
    } catch (CharacterCodingException e) {
      return false;
    }
  }

  /** Why bytes are not faithfully represented: "is not valid UTF-8", or the JVM's character set lacks them. */
  public static String whyUnfaithful(byte[] raw) {
    Charset cs = charset();
    if (cs.equals(StandardCharsets.UTF_8) || !validUtf8(raw)) {
      return "is not valid UTF-8";
    }
    return "cannot be represented in this JVM's file-name encoding (" + cs.name()
        + "); run xlac in a UTF-8 locale (e.g. LC_ALL=C.UTF-8, as the ./xlac launcher does)";
  }

  public static boolean validUtf8(byte[] raw) {
    try {
      StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(raw));
      return true;
    } catch (CharacterCodingException e) {
      return false;
    }
  }

  /**
   * {@code raw} for a one-line message: valid UTF-8 as text, every other byte, control characters and
   * backslashes as {@code \xNN} (a backslash as {@code \\}).
   */
  public static String escaped(byte[] raw) {
    StringBuilder s = new StringBuilder();
    int i = 0;
    while (i < raw.length) {
      int b = raw[i] & 0xff;
      int n = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
      if (n > 1 && i + n <= raw.length && validUtf8(Arrays.copyOfRange(raw, i, i + n))) {
        s.append(new String(raw, i, n, StandardCharsets.UTF_8));
        i += n;
        continue;
      }
      if (b == '\\') {
        s.append("\\\\");
      } else if (b >= 0x20 && b < 0x7f) {
        s.append((char) b);
      } else {
        s.append(String.format("\\x%02x", b));
      }
      i++;
    }
    return s.toString();
  }

  /** NUL-terminated entries of a /proc file; null if it cannot be read. */
  private static List<byte[]> read(Path file) {
    byte[] all;
    try {
      all = Files.readAllBytes(file);
    } catch (IOException | UnsupportedOperationException | SecurityException e) {
      return null;
    }
    List<byte[]> entries = new ArrayList<>();
    int start = 0;
    for (int i = 0; i < all.length; i++) {
      if (all[i] == 0) {
        entries.add(Arrays.copyOfRange(all, start, i));
        start = i + 1;
      }
    }
    if (start < all.length) {
      entries.add(Arrays.copyOfRange(all, start, all.length));
    }
    return entries;
  }
}
