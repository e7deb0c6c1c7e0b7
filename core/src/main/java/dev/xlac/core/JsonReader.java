package dev.xlac.core;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads one JSON text (RFC 8259) into the values {@link Json} writes: {@link Map}s (in order), {@link List}s,
 * strings, numbers ({@link Long} when integral and in range, else {@link Double}), booleans and null. For the small
 * answers of services xlac talks to (Ray's Jobs API) and for JSON given on a command line; a text that is not JSON
 * is an IllegalArgumentException naming the offset and what was expected there.
 */
public final class JsonReader {
  private static final int MAX_DEPTH = 64;
  private final String text;
  private int at;

  private JsonReader(String text) {
    this.text = text;
  }

  public static Object parse(String text) {
    JsonReader r = new JsonReader(text);
    r.space();
    Object v = r.value(0);
    r.space();
    if (r.at != text.length()) {
      throw r.error("the end of the text");
    }
    return v;
  }

  /** {@link #parse} of a text that must be an object. */
  @SuppressWarnings("unchecked")
  public static Map<String, Object> object(String text) {
    if (parse(text) instanceof Map<?, ?> m) {
      return (Map<String, Object>) m;
    }
    throw new IllegalArgumentException("not a JSON object");
  }

  private Object value(int depth) {
    if (depth > MAX_DEPTH) {
      throw new IllegalArgumentException("nested deeper than " + MAX_DEPTH + " at offset " + at);
    }
    if (at >= text.length()) {
      throw error("a value");
    }
    char c = text.charAt(at);
    return switch (c) {
      case '{' -> object(depth);
      case '[' -> array(depth);
      case '"' -> string();
      case 't' -> word("true", Boolean.TRUE);
      case 'f' -> word("false", Boolean.FALSE);
      case 'n' -> word("null", null);
      default -> {
        if (c == '-' || (c >= '0' && c <= '9')) {
          yield number();
        }
        throw error("a value");
      }
    };
  }

  private Map<String, Object> object(int depth) {
    Map<String, Object> m = new LinkedHashMap<>();
    at++;
    space();
    if (peek('}')) {
      at++;
      return m;
    }
    while (true) {
      space();
      if (!peek('"')) {
        throw error("a member name in quotes");
      }
      String name = string();
      space();
      expect(':');
      space();
      m.put(name, value(depth + 1));
      space();
      if (peek(',')) {
        at++;
      } else {
        expect('}');
        return m;
      }
    }
  }

  private List<Object> array(int depth) {
    List<Object> l = new ArrayList<>();
    at++;
    space();
    if (peek(']')) {
      at++;
      return l;
    }
    while (true) {
      space();
      l.add(value(depth + 1));
      space();
      if (peek(',')) {
        at++;
      } else {
        expect(']');
        return l;
      }
    }
  }

  private String string() {
    StringBuilder s = new StringBuilder();
    at++;
    while (true) {
      if (at >= text.length()) {
        throw error("the closing quote");
      }
      char c = text.charAt(at++);
      if (c == '"') {
        return s.toString();
      }
      if (c < 0x20) {
        throw new IllegalArgumentException("a control character in a string at offset " + (at - 1));
      }
      if (c != '\\') {
        s.append(c);
        continue;
      }
      if (at >= text.length()) {
        throw error("an escape");
      }
      char e = text.charAt(at++);
      switch (e) {
        case '"', '\\', '/' -> s.append(e);
        case 'b' -> s.append('\b');
        case 'f' -> s.append('\f');
        case 'n' -> s.append('\n');
        case 'r' -> s.append('\r');
        case 't' -> s.append('\t');
        case 'u' -> {
          if (at + 4 > text.length()) {
            throw error("four hex digits");
          }
          try {
            s.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
          } catch (NumberFormatException x) {
            throw error("four hex digits");
          }
          at += 4;
        }
        default -> {
          at--;
          throw error("an escape");
        }
      }
    }
  }

  private Object number() {
    int start = at;
    if (peek('-')) {
      at++;
    }
    int digits = digits();
    if (digits == 0 || (digits > 1 && text.charAt(at - digits) == '0')) {
      at = start;
      throw error("a number");
    }
    boolean integral = true;
    if (peek('.')) {
      at++;
      integral = false;
      if (digits() == 0) {
        throw error("a digit");
      }
    }
    if (peek('e') || peek('E')) {
      at++;
      integral = false;
      if (peek('+') || peek('-')) {
        at++;
      }
      if (digits() == 0) {
        throw error("a digit");
      }
    }
    String n = text.substring(start, at);
    if (integral) {
      try {
        return Long.parseLong(n);
      } catch (NumberFormatException tooLong) {
        // beyond a long: as a double, as JavaScript reads it
      }
    }
    return Double.parseDouble(n);
  }

  private int digits() {
    int n = 0;
    while (at < text.length() && text.charAt(at) >= '0' && text.charAt(at) <= '9') {
      at++;
      n++;
    }
    return n;
  }

  private Object word(String w, Object v) {
    if (!text.startsWith(w, at)) {
      throw error("a value");
    }
    at += w.length();
    return v;
  }

  private boolean peek(char c) {
    return at < text.length() && text.charAt(at) == c;
  }

  private void expect(char c) {
    if (!peek(c)) {
      throw error("'" + c + "'");
    }
    at++;
  }

  private void space() {
    while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) {
      at++;
    }
  }

  private IllegalArgumentException error(String expected) {
    return new IllegalArgumentException(at >= text.length() ? "the text ends where " + expected + " should be"
        : "expected " + expected + " at offset " + at);
  }
}
