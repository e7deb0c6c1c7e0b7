package dev.xlac.runtime;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** Writes protobuf wire bytes by hand, for tests. */
final class Proto {
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();

  Proto varint(long v) {
    while ((v & ~0x7fL) != 0) {
      out.write((int) ((v & 0x7f) | 0x80));
      v >>>= 7;
    }
    out.write((int) v);
    return this;
  }

  Proto v(int field, long value) {
    return varint((long) field << 3).varint(value);
  }

  Proto bytes(int field, byte[] value) {
    varint(((long) field << 3) | 2).varint(value.length);
    out.writeBytes(value);
    return this;
  }

  Proto s(int field, String value) {
    return bytes(field, value.getBytes(StandardCharsets.UTF_8));
  }

  Proto m(int field, Proto message) {
    return bytes(field, message.toBytes());
  }

  byte[] toBytes() {
    return out.toByteArray();
  }

  /** A map<string,string> entry, key first or value first. */
  static Proto entry(String key, String value, boolean valueFirst) {
    return valueFirst ? new Proto().s(2, value).s(1, key) : new Proto().s(1, key).s(2, value);
  }

  /**
   * The JAX-like CompileOptionsProto of src/test/c/test_options.c ({@code jax_like}): two orders of the
   * same options, byte for byte as the C test builds them.
   */
  static byte[] jaxLike(boolean order) {
    String[] k357 = {"nccl_op_launch_us", "nic_speed_gbps", "chunk_prep_us"};
    String[] v357 = {"55", "40", "1"};
    Proto debug = new Proto();
    if (order) {
      debug.v(2, 0);
    }
    debug.s(109, "");
    debug.v(31, 3);
    for (int i = 0; i < 3; i++) {
      int j = order ? 2 - i : i;
      debug.m(357, entry(k357[j], v357[j], order && j == 1));
    }
    debug.m(500, entry(order ? "xla_b" : "xla_a", order ? "2" : "1", false));
    debug.m(500, entry(order ? "xla_a" : "xla_b", order ? "1" : "2", false));
    if (!order) {
      debug.v(2, 0);
    }
    debug.v(140, 1);
    Proto build = new Proto();
    if (order) {
      build.v(4, 1);
    }
    build.v(1, -1);
    build.m(3, debug);
    if (!order) {
      build.v(4, 1);
    }
    build.v(5, 1);
    Proto e1 = new Proto().s(1, "xla_cpu_flag").m(2, new Proto().s(1, "x"));
    Proto e2 = new Proto().s(1, "xla_gpu_flag").m(2, new Proto().v(2, 1));
    Proto out = new Proto();
    if (order) {
      out.m(7, e2);
    }
    out.m(3, build);
    out.m(7, e1);
    if (!order) {
      out.m(7, e2);
    }
    out.v(4, 0);
    return out.toBytes();
  }
}
