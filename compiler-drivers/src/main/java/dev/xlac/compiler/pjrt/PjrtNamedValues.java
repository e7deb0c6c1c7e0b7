package dev.xlac.compiler.pjrt;

import static dev.xlac.compiler.pjrt.PjrtStructs.NAMED_VALUE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * {@code PJRT_NamedValue} arrays: plugin attributes (read) and client create options (written).
 *
 * <p>Options arrive as {@code key=value} strings, so the C type is inferred from the value: a
 * decimal integer is {@code kInt64} (the CPU plugin's {@code cpu_device_count} needs that),
 * {@code true}/{@code false} is {@code kBool}, anything else is {@code kString}.
 */
@SuppressWarnings("restricted") // the FFM layer: dlopen, downcalls, pointers from the plugin
final class PjrtNamedValues {
  private static final Pattern INT64 = Pattern.compile("-?[0-9]{1,18}");
  /** As the runtime proxy (key.c): a larger element is not a PJRT_NamedValue. */
  private static final long MAX_NAMED_VALUE_SIZE = 1024;
  private static final long MAX_ATTRIBUTES = 1 << 16;

  private PjrtNamedValues() {}

  /** The plugin's attributes, in its order, as strings (lists as {@code [1, 2]}). */
  static Map<String, String> readAttributes(PjrtApi api) {
    Map<String, String> out = new LinkedHashMap<>();
    for (PjrtPluginFacts.Attribute a : readTypedAttributes(api)) {
      out.put(a.name(), switch (a.value()) {
        case null -> "(unknown type)";
        case long[] list -> Arrays.toString(list);
        default -> a.value().toString();
      });
    }
    return Collections.unmodifiableMap(out);
  }

  /** The plugin's attributes with their PJRT types and values, in its order. */
  static List<PjrtPluginFacts.Attribute> readTypedAttributes(PjrtApi api) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment a = PjrtStructs.PLUGIN_ATTRIBUTES.allocate(arena);
      api.check(PjrtApi.Slot.PLUGIN_ATTRIBUTES, a, ExitCode.ENVIRONMENT);
      MemorySegment array = a.get(ADDRESS, PjrtStructs.PLUGIN_ATTRIBUTES.offset("attributes"));
      long count = a.get(JAVA_LONG, PjrtStructs.PLUGIN_ATTRIBUTES.offset("num_attributes"));
      if (array.address() == 0 || count <= 0) {
        return List.of();
      }
      // A C array of the plugin's PJRT_NamedValue: a plugin built against a newer header may have grown it, so
      // its elements lie their struct_size (rounded up to the struct's alignment) apart, not ours.
      long declared = array.reinterpret(8).get(JAVA_LONG, 0);
      long stride = (declared + 7) / 8 * 8;
      if (declared < NAMED_VALUE.size() || declared > MAX_NAMED_VALUE_SIZE || count > MAX_ATTRIBUTES) {
        throw XlacException.environment("the PJRT plugin's attributes have an unexpected layout (" + count
            + " of " + declared + " bytes each; xlac reads " + NAMED_VALUE.size() + ")");
      }
      MemorySegment values = array.reinterpret(count * stride);
      List<PjrtPluginFacts.Attribute> out = new ArrayList<>();
      for (long i = 0; i < count; i++) {
        MemorySegment v = values.asSlice(i * stride, NAMED_VALUE.size());
        if (v.get(JAVA_LONG, 0) != declared) {
          throw XlacException.environment("the PJRT plugin's attributes disagree on their size (" + declared + " and "
              + v.get(JAVA_LONG, 0) + " bytes)");
        }
        String name = PjrtApi.string(v.get(ADDRESS, NAMED_VALUE.offset("name")),
            v.get(JAVA_LONG, NAMED_VALUE.offset("name_size")));
        long at = NAMED_VALUE.offset("value");
        long size = v.get(JAVA_LONG, NAMED_VALUE.offset("value_size"));
        int type = v.get(JAVA_INT, NAMED_VALUE.offset("type"));
        Object value = switch (type) {
          case PjrtStructs.NAMED_VALUE_STRING -> PjrtApi.string(v.get(ADDRESS, at), size);
          case PjrtStructs.NAMED_VALUE_INT64 -> v.get(JAVA_LONG, at);
          case PjrtStructs.NAMED_VALUE_INT64_LIST -> {
            MemorySegment list = v.get(ADDRESS, at);
            yield list.address() != 0 && size > 0 ? list.reinterpret(size * 8).toArray(JAVA_LONG) : new long[0];
          }
          case PjrtStructs.NAMED_VALUE_FLOAT -> v.get(JAVA_FLOAT, at);
          case PjrtStructs.NAMED_VALUE_BOOL -> v.get(JAVA_BYTE, at) != 0;
          default -> null;
        };
        out.add(new PjrtPluginFacts.Attribute(name, type, value));
      }
      return List.copyOf(out);
    }
  }

  /** Writes {@code options} as a PJRT_NamedValue array in {@code arena}; NULL when empty. */
  static MemorySegment write(Arena arena, Map<String, String> options) {
    if (options.isEmpty()) {
      return MemorySegment.NULL;
    }
    MemorySegment array = arena.allocate(NAMED_VALUE.size() * options.size(), 8);
    long i = 0;
    for (Map.Entry<String, String> e : options.entrySet()) {
      MemorySegment v = array.asSlice(i++ * NAMED_VALUE.size(), NAMED_VALUE.size());
      v.set(JAVA_LONG, 0, NAMED_VALUE.size());
      byte[] name = e.getKey().getBytes(StandardCharsets.UTF_8);
      v.set(ADDRESS, NAMED_VALUE.offset("name"), arena.allocateFrom(JAVA_BYTE, name));
      v.set(JAVA_LONG, NAMED_VALUE.offset("name_size"), name.length);
      String value = e.getValue();
      long at = NAMED_VALUE.offset("value");
      if (INT64.matcher(value).matches()) {
        v.set(JAVA_INT, NAMED_VALUE.offset("type"), PjrtStructs.NAMED_VALUE_INT64);
        v.set(JAVA_LONG, at, Long.parseLong(value));
        v.set(JAVA_LONG, NAMED_VALUE.offset("value_size"), 1);
      } else if (value.equals("true") || value.equals("false")) {
        v.set(JAVA_INT, NAMED_VALUE.offset("type"), PjrtStructs.NAMED_VALUE_BOOL);
        v.set(JAVA_BYTE, at, (byte) (value.equals("true") ? 1 : 0));
        v.set(JAVA_LONG, NAMED_VALUE.offset("value_size"), 1);
      } else {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        v.set(JAVA_INT, NAMED_VALUE.offset("type"), PjrtStructs.NAMED_VALUE_STRING);
        v.set(ADDRESS, at, arena.allocateFrom(JAVA_BYTE, bytes));
        v.set(JAVA_LONG, NAMED_VALUE.offset("value_size"), bytes.length);
      }
    }
    return array;
  }
}
