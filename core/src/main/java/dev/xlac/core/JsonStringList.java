package dev.xlac.core;

import java.util.ArrayList;
import java.util.List;

/** Reads and writes a JSON array of strings, the format of Neuron's {@code compile_flags.json}. Strict: anything else is refused. */
public final class JsonStringList {
  private final String text;
  private int pos;

  private JsonStringList(String text) {
    this.text = text;
  }

  /** @throws IllegalArgumentException with the reason, when {@code text} is not a JSON array of strings */
  public static List<String> parse(String text) {
    JsonStringList p = new JsonStringList(text);
    List<String> out = new ArrayList<>();
    p.blanks();
    p.expect('[');
    p.blanks();
    if (p.peek() == ']') {
      p.pos++;
    } else {
      while (true) {
        p.blanks();
        out.add(p.string());
        p.blanks();
        char c = p.next();
        if (c == ']') {
          break;
        }
        if (c != ',') {
          throw p.error("expected ',' or ']'");
        }
      }
    }
    p.blanks();
    if (p.pos != text.length()) {
      throw p.error("unexpected text after the array");
    }
    return out;
  }

  /** {@code ["--a", "b"]}: the compact form with a space after each comma. */
  public static String write(List<String> values) {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < values.size(); i++) {
      if (i > 0) {
        b.append(", ");
      }
      b.append(Json.write(values.get(i)));
    }
    return b.append(']').toString();
  }

  private String string() {
    expect('"');
    StringBuilder b = new StringBuilder();
    while (true) {
      char c = next();
      if (c == '"') {
        return b.toString();
      }
      if (c < 0x20) {
        throw error("control character in a string");
      }
      if (c != '\\') {
        b.append(c);
        continue;
      }
      char e = next();
      switch (e) {
        case '"', '\\', '/' -> b.append(e);
        case 'b' -> b.append('\b');
        case 'f' -> b.append('\f');
        case 'n' -> b.append('\n');
        case 'r' -> b.append('\r');
        case 't' -> b.append('\t');
        case 'u' -> {
          if (pos + 4 > text.length()) {
            throw error("truncated \\u escape");
          }
          try {
            b.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
          } catch (NumberFormatException x) {
            throw error("bad \\u escape");
          }
          pos += 4;
        }
        default -> throw error("bad escape \\" + e);
      }
    }
  }

  private void blanks() {
    while (pos < text.length() && " \t\r\n".indexOf(text.charAt(pos)) >= 0) {
      pos++;
    }
  }

  private char peek() {
    if (pos >= text.length()) {
      throw error("unexpected end");
    }
    return text.charAt(pos);
  }

  private char next() {
    char c = peek();
    pos++;
    return c;
  }

  private void expect(char c) {
    if (next() != c) {
      pos--;
      throw error("expected '" + c + "'");
    }
  }

  private IllegalArgumentException error(String why) {
    return new IllegalArgumentException("not a JSON list of strings: " + why + " at offset " + pos);
  }
}
