package dev.xlac.trace;

import java.util.ArrayList;
import java.util.List;

/** Parses the one JSON shape Neuron's {@code compile_flags.json} has: an array of strings. */
final class JsonStringList {
  private JsonStringList() {}

  static List<String> parse(String text) {
    int[] i = {skip(text, 0)};
    expect(text, i, '[');
    List<String> out = new ArrayList<>();
    i[0] = skip(text, i[0]);
    if (peek(text, i[0]) == ']') {
      i[0]++;
    } else {
      while (true) {
        i[0] = skip(text, i[0]);
        out.add(string(text, i));
        i[0] = skip(text, i[0]);
        char c = peek(text, i[0]);
        i[0]++;
        if (c == ']') {
          break;
        }
        if (c != ',') {
          throw new IllegalArgumentException("expected ',' or ']' at offset " + (i[0] - 1));
        }
      }
    }
    if (skip(text, i[0]) != text.length()) {
      throw new IllegalArgumentException("trailing text at offset " + i[0]);
    }
    return List.copyOf(out);
  }

  private static String string(String s, int[] i) {
    expect(s, i, '"');
    StringBuilder b = new StringBuilder();
    while (true) {
      char c = peek(s, i[0]++);
      if (c == '"') {
        return b.toString();
      }
      if (c != '\\') {
        b.append(c);
        continue;
      }
      char e = peek(s, i[0]++);
      switch (e) {
        case '"', '\\', '/' -> b.append(e);
        case 'b' -> b.append('\b');
        case 'f' -> b.append('\f');
        case 'n' -> b.append('\n');
        case 'r' -> b.append('\r');
        case 't' -> b.append('\t');
        case 'u' -> {
          if (i[0] + 4 > s.length()) {
            throw new IllegalArgumentException("truncated \\u escape");
          }
          b.append((char) Integer.parseInt(s.substring(i[0], i[0] + 4), 16));
          i[0] += 4;
        }
        default -> throw new IllegalArgumentException("bad escape \\" + e);
      }
    }
  }

  private static void expect(String s, int[] i, char c) {
    if (peek(s, i[0]) != c) {
      throw new IllegalArgumentException("expected '" + c + "' at offset " + i[0]);
    }
    i[0]++;
  }

  private static char peek(String s, int i) {
    if (i >= s.length()) {
      throw new IllegalArgumentException("unexpected end");
    }
    return s.charAt(i);
  }

  private static int skip(String s, int i) {
    while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
      i++;
    }
    return i;
  }
}
