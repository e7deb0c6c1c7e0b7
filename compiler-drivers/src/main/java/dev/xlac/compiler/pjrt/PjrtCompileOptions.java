package dev.xlac.compiler.pjrt;

import dev.xlac.core.XlacException;
import java.io.ByteArrayOutputStream;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The compile options xlac passes to {@code PJRT_Client_Compile}, serialized by hand as an
 * {@code xla.CompileOptionsProto} (xla/pjrt/proto/compile_options.proto):
 * {@code executable_build_options = 3} holding an {@code ExecutableBuildOptionsProto} with
 * {@code device_ordinal = 1}, {@code num_replicas = 4}, {@code num_partitions = 5}. Three int64
 * fields do not justify compiling XLA's whole proto tree into xlac.
 *
 * @param deviceOrdinal -1 (the default) lets the client choose
 */
public record PjrtCompileOptions(long deviceOrdinal, long numReplicas, long numPartitions) {
  public static final PjrtCompileOptions DEFAULT = new PjrtCompileOptions(-1, 1, 1);

  public PjrtCompileOptions {
    if (deviceOrdinal < -1 || numReplicas < 1 || numPartitions < 1) {
      throw XlacException.badInput("bad PJRT compile options: device_ordinal=" + deviceOrdinal
          + " num_replicas=" + numReplicas + " num_partitions=" + numPartitions);
    }
  }

  /** These options with {@code key=value} overrides; keys are the proto field names. */
  public PjrtCompileOptions with(Map<String, String> overrides) {
    long ordinal = deviceOrdinal;
    long replicas = numReplicas;
    long partitions = numPartitions;
    for (Map.Entry<String, String> e : overrides.entrySet()) {
      long v = parse(e.getKey(), e.getValue());
      switch (e.getKey()) {
        case "device_ordinal" -> ordinal = v;
        case "num_replicas" -> replicas = v;
        case "num_partitions" -> partitions = v;
        default -> throw XlacException.badInput("unknown PJRT compile option '" + e.getKey()
            + "' (known: device_ordinal, num_replicas, num_partitions)");
      }
    }
    return new PjrtCompileOptions(ordinal, replicas, partitions);
  }

  private static long parse(String key, String value) {
    try {
      return Long.parseLong(value.strip());
    } catch (NumberFormatException e) {
      throw XlacException.badInput("PJRT compile option " + key + " needs an integer, not '" + value + "'");
    }
  }

  /** The options by proto field name, for the compiler identity. */
  public Map<String, String> asMap() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("device_ordinal", Long.toString(deviceOrdinal));
    m.put("num_replicas", Long.toString(numReplicas));
    m.put("num_partitions", Long.toString(numPartitions));
    return m;
  }

  /** The serialized CompileOptionsProto. */
  public byte[] toProto() {
    ByteArrayOutputStream build = new ByteArrayOutputStream();
    int64Field(build, 1, deviceOrdinal); // written even when 0: proto3 would drop it, and 0 differs from -1
    int64Field(build, 4, numReplicas);
    int64Field(build, 5, numPartitions);
    byte[] buildOptions = build.toByteArray();

    ByteArrayOutputStream out = new ByteArrayOutputStream();
    varint(out, (3 << 3) | 2); // executable_build_options, length-delimited
    varint(out, buildOptions.length);
    out.writeBytes(buildOptions);
    return out.toByteArray();
  }

  private static void int64Field(ByteArrayOutputStream out, int field, long value) {
    varint(out, ((long) field << 3)); // wire type 0
    varint(out, value);
  }

  /** Base-128 varint; negative int64 values take ten bytes, as protobuf encodes them. */
  private static void varint(ByteArrayOutputStream out, long value) {
    long v = value;
    while ((v & ~0x7FL) != 0) {
      out.write((int) ((v & 0x7F) | 0x80));
      v >>>= 7;
    }
    out.write((int) v);
  }
}
