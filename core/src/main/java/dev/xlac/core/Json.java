package dev.xlac.core;

import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * A small JSON writer for xlac's stable {@code --json} outputs and reports. Values are
 * {@link Map}s (insertion order is kept), {@link List}s, strings, numbers, booleans and null.
 */
public final class Json {
  private Json() {}

  public static String write(Object value) {
    StringBuilder out = new StringBuilder();
    write(value, out, 0, true, null);
    return out.toString();
  }

  /**
   * Streams the same text {@link #write(Object)} returns into {@code sink}, handing it over in
   * chunks between the elements of a top-level array. With a lazy {@link Iterable}, a large output
   * (a cache listing of 100,000 rows) never exists whole in memory.
   */
  public static void write(Object value, Appendable sink) {
    StringBuilder out = new StringBuilder(CHUNK + 1024);
    write(value, out, 0, true, sink);
    drain(out, sink);
  }

  private static final int CHUNK = 1 << 16;

  private static void drain(StringBuilder out, Appendable sink) {
    try {
      sink.append(out);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    out.setLength(0);
  }

  private static void write(Object value, StringBuilder out, int depth, boolean pretty, Appendable sink) {
    switch (value) {
      case null -> out.append("null");
      case String s -> quote(s, out);
      case Boolean b -> out.append(b);
      case Double d when d.isNaN() || d.isInfinite() -> out.append("null");
      case Float f when f.isNaN() || f.isInfinite() -> out.append("null");
      case Number n -> out.append(n);
      case Map<?, ?> map -> {
        if (map.isEmpty()) {
          out.append("{}");
          return;
        }
        out.append('{');
        Iterator<? extends Map.Entry<?, ?>> it = map.entrySet().iterator();
        while (it.hasNext()) {
          Map.Entry<?, ?> e = it.next();
          newline(out, depth + 1, pretty);
          quote(String.valueOf(e.getKey()), out);
          out.append(pretty ? ": " : ":");
          write(e.getValue(), out, depth + 1, pretty, null);
          if (it.hasNext()) {
            out.append(',');
          }
        }
        newline(out, depth, pretty);
        out.append('}');
      }
      case Iterable<?> list -> {
        Iterator<?> it = list.iterator();
        if (!it.hasNext()) {
          out.append("[]");
          return;
        }
        out.append('[');
        while (it.hasNext()) {
          newline(out, depth + 1, pretty);
          write(it.next(), out, depth + 1, pretty, null);
          if (it.hasNext()) {
            out.append(',');
          }
          if (sink != null && out.length() > CHUNK) {
            drain(out, sink);
          }
        }
        newline(out, depth, pretty);
        out.append(']');
      }
      default -> quote(value.toString(), out);
    }
  }

  private static void newline(StringBuilder out, int depth, boolean pretty) {
    if (pretty) {
      out.append('\n');
      out.append("  ".repeat(depth));
    }
  }

  public static void quote(String s, StringBuilder out) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }
}
