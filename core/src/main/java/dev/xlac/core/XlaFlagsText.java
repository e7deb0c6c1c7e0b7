package dev.xlac.core;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code XLA_FLAGS} as XLA reads it (openxla/xla {@code xla/parse_flags_from_env.cc}): a value whose first non-blank
 * character is not {@code -} names a file of flags; the text is split into words, a word starts with {@code -},
 * {@code --name="..."} and {@code --name='...'} are one word without the quotes (in double quotes a backslash takes
 * the next character as it is), any other word ends at a space, tab, CR or LF, and the first word that does not start
 * with {@code -} ends the flags. The proxy's C twin is {@code xkeyed_xla_flags} (runtime/src/main/c/key.c).
 */
public final class XlaFlagsText {
  private XlaFlagsText() {}

  /** Whether XLA takes {@code value} as the name of a file of flags (not null, not empty, not starting with {@code -}). */
  public static boolean namesFile(String value) {
    if (value == null || value.isEmpty()) {
      return false;
    }
    int i = 0;
    while (i < value.length() && blank(value.charAt(i))) {
      i++;
    }
    return i == value.length() || value.charAt(i) != '-';
  }

  /**
   * The words XLA reads from {@code value}: from the value, or from the file it names (relative to the working
   * directory). None for null or empty.
   *
   * @throws IOException when the value names a file that cannot be read (XLA then stops the process)
   */
  public static List<String> words(String value) throws IOException {
    if (value == null || value.isEmpty()) {
      return List.of();
    }
    if (!namesFile(value)) {
      return words(value.getBytes(StandardCharsets.UTF_8));
    }
    try {
      return words(Files.readAllBytes(Path.of(value)));
    } catch (InvalidPathException e) {
      throw new NoSuchFileException(value);
    }
  }

  /** The words XLA makes of a flags text, each cut at a NUL as XLA's {@code strdup} cuts it. */
  public static List<String> words(byte[] f) {
    List<String> words = new ArrayList<>();
    int n = f.length;
    int b = 0;
    while (b < n && blank(f[b])) {
      b++;
    }
    while (b < n && f[b] == '-') {
      int e = b;
      while (e < n && nameChar(f[e])) {
        e++;
      }
      ByteArrayOutputStream word = new ByteArrayOutputStream();
      // XLA tests the quote with strchr, which also finds a NUL
      if (e + 1 < n && f[e] == '=' && (f[e + 1] == '"' || f[e + 1] == '\'' || f[e + 1] == 0)) {
        byte quote = f[e + 1];
        word.write(f, b, e + 1 - b); // the name and its '='
        for (e += 2; e < n && f[e] != quote; e++) {
          if (quote == '"' && f[e] == '\\' && e + 1 < n) {
            e++;
          }
          word.write(f[e]);
        }
        if (e < n) {
          e++; // the closing quote
        }
      } else {
        while (e < n && !blank(f[e])) {
          e++;
        }
        word.write(f, b, e - b);
      }
      byte[] w = word.toByteArray();
      int end = 0;
      while (end < w.length && w[end] != 0) {
        end++;
      }
      words.add(new String(w, 0, end, StandardCharsets.UTF_8));
      while (e < n && blank(f[e])) {
        e++;
      }
      b = e;
    }
    return words;
  }

  /**
   * A word written so that XLA reads it back as this one word: as it is, or, when it holds a blank or its value
   * starts with a quote, as {@code --name="value"} with {@code \} and {@code "} escaped.
   */
  public static String quoted(String word) {
    int eq = word.indexOf('=');
    boolean needs = word.chars().anyMatch(c -> blank(c))
        || (eq >= 0 && eq + 1 < word.length() && (word.charAt(eq + 1) == '"' || word.charAt(eq + 1) == '\''));
    if (!needs || eq < 0) {
      return word;
    }
    return word.substring(0, eq + 1) + '"' + word.substring(eq + 1).replace("\\", "\\\\").replace("\"", "\\\"")
        + '"';
  }

  private static boolean blank(int c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
  }

  private static boolean nameChar(byte c) {
    return c == 0 || c == '-' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')
        || (c >= 'A' && c <= 'Z');
  }
}
