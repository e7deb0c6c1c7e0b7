package dev.xlac.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CanonicalOptionsTest {
  private static final HexFormat HEX = HexFormat.of();

  @Test
  void mapEntriesInAnyOrderGiveOneCanonicalForm() {
    byte[] a = Proto.jaxLike(false);
    byte[] b = Proto.jaxLike(true);
    assertThat(CanonicalOptions.canonical(b)).isEqualTo(CanonicalOptions.canonical(a));
  }

  @Test
  void oneofMemberWrittenLastWins(@TempDir Path dir) throws Exception {
    Proto boolThenString = new Proto().v(2, 1).s(1, "x");
    Proto stringThenBool = new Proto().s(1, "x").v(2, 1);
    Proto justString = new Proto().s(1, "x");
    byte[][] options = new byte[3][];
    Proto[] values = {boolThenString, stringThenBool, justString};
    for (int i = 0; i < 3; i++) {
      options[i] = new Proto().m(7, new Proto().s(1, "k").m(2, values[i])).toBytes();
    }
    assertThat(CanonicalOptions.canonical(options[0])).isNotEqualTo(CanonicalOptions.canonical(options[1]));
    assertThat(CanonicalOptions.canonical(options[0])).isEqualTo(CanonicalOptions.canonical(options[2]));
    for (byte[] o : options) {
      assertThat(HEX.formatHex(CanonicalOptions.canonical(o))).isEqualTo(KeyTool.canonicalHex(dir, o));
    }
  }

  @Test
  void twoRealJaxRunsGiveOneCanonicalForm() throws Exception {
    byte[] run1;
    byte[] run2;
    try (var a = getClass().getResourceAsStream("/jax-options/run1.bin");
        var b = getClass().getResourceAsStream("/jax-options/run2.bin")) {
      run1 = a.readAllBytes();
      run2 = b.readAllBytes();
    }
    assertThat(run1).hasSize(991).isNotEqualTo(run2);
    byte[] canonical = CanonicalOptions.canonical(run1);
    assertThat(canonical).isEqualTo(CanonicalOptions.canonical(run2));
    assertThat(canonical[0]).isNotEqualTo((byte) 0xff);
    // pinned by src/test/c/test_options.c too
    assertThat(HEX.formatHex(RequestKey.sha256().digest(canonical)))
        .isEqualTo("1183e113316cab6f27350669d865c6c0a4570e934abfe87e02de97763f6a73e9");
  }

  @Test
  void dumpOnlyDebugOptions_doNotChangeTheCanonicalForm() throws Exception {
    // The options of a JAX process started with XLA_FLAGS=--xla_dump_to=... (as under xlac dump) and of
    // one without: different bytes, one canonical form, so a request recorded while dumping is served.
    byte[] dumping;
    byte[] plain;
    try (var a = getClass().getResourceAsStream("/jax-options/dumping.bin");
        var b = getClass().getResourceAsStream("/jax-options/not-dumping.bin")) {
      dumping = a.readAllBytes();
      plain = b.readAllBytes();
    }
    assertThat(new String(dumping, java.nio.charset.StandardCharsets.ISO_8859_1)).contains("/tmp/somewhere/dumps");
    assertThat(CanonicalOptions.canonical(dumping)).isEqualTo(CanonicalOptions.canonical(plain));
  }

  @Test
  void droppedFieldsAreDropped_keptFieldsAreKept() {
    byte[] one = options(new Proto().s(109, "/tmp/one").v(113, 1));
    byte[] two = options(new Proto().s(109, "/tmp/two"));
    byte[] logging = options(new Proto().v(252, 1)); // xla_detailed_logging: kept
    assertThat(CanonicalOptions.canonical(one)).isEqualTo(CanonicalOptions.canonical(two));
    assertThat(CanonicalOptions.canonical(one)).isNotEqualTo(CanonicalOptions.canonical(logging));
    assertThat(CanonicalOptions.DEBUG_OPTIONS_DROPPED_FIELDS).contains(109, 113).doesNotContain(252, 357, 500);
  }

  @Test
  void differences_nameEachFieldThatChanged_byNameAndNumber_andNothingForTheSameCanonicalForm() throws Exception {
    byte[] run1;
    byte[] run2;
    try (var a = getClass().getResourceAsStream("/jax-options/run1.bin");
        var b = getClass().getResourceAsStream("/jax-options/run2.bin")) {
      run1 = a.readAllBytes();
      run2 = b.readAllBytes();
    }
    assertThat(CanonicalOptions.differences(run1, run2)).isEmpty(); // map order only
    byte[] replicas1 = new Proto().m(3, new Proto().v(4, 1).v(5, 1)).toBytes();
    byte[] replicas2 = new Proto().m(3, new Proto().v(4, 2).v(5, 1)).toBytes();
    assertThat(CanonicalOptions.differences(replicas1, replicas2))
        .containsExactly("executable_build_options.num_replicas (field 3.4)");
    assertThat(CanonicalOptions.differences(options(new Proto().v(252, 1)), options(new Proto().v(252, 0).v(31, 3))))
        .containsExactly("executable_build_options.debug_options.#31 (field 3.3.31)",
            "executable_build_options.debug_options.#252 (field 3.3.252)");
    assertThat(CanonicalOptions.differences(options(new Proto().s(109, "/tmp/a")), options(new Proto())))
        .as("a dropped field is no difference").isEmpty();
    byte[] mapA = options(new Proto().m(500, Proto.entry("xla_a", "1", false)).m(500, Proto.entry("xla_b", "2", false)));
    byte[] mapB = options(new Proto().m(500, Proto.entry("xla_b", "3", false)).m(500, Proto.entry("xla_a", "1", false)));
    assertThat(CanonicalOptions.differences(mapA, mapB))
        .containsExactly("executable_build_options.debug_options.xla_backend_extra_options[xla_b] (field 3.3.500)");
    assertThat(CanonicalOptions.differences(new byte[] {(byte) 0x80}, replicas1)).containsExactly("unparseable options");
  }

  private static byte[] options(Proto debugOptions) {
    return new Proto().m(3, new Proto().m(3, debugOptions)).toBytes();
  }

  @Test
  void everySingleByteChangeChangesTheKey() {
    byte[] a = Proto.jaxLike(false);
    RequestKey k = RequestKeyTest.jaxLikeKey(a);
    for (int i = 0; i < a.length; i++) {
      for (int bit : new int[] {0, 7}) {
        byte[] c = a.clone();
        c[i] ^= (byte) (1 << bit);
        assertThat(RequestKeyTest.jaxLikeKey(c)).as("bit %d of byte %d", bit, i).isNotEqualTo(k);
      }
    }
  }

  @Test
  void theLastEntryOfAKeyWins() {
    Proto old = new Proto().s(1, "k").m(2, new Proto().s(1, "old"));
    Proto fresh = new Proto().s(1, "k").m(2, new Proto().s(1, "new"));
    Proto other = new Proto().s(1, "j").m(2, new Proto().s(1, "v"));
    byte[] oldFirst = new Proto().m(7, old).m(7, other).m(7, fresh).toBytes();
    byte[] freshOnly = new Proto().m(7, fresh).m(7, other).toBytes();
    byte[] freshFirst = new Proto().m(7, fresh).m(7, other).m(7, old).toBytes();
    assertThat(CanonicalOptions.canonical(oldFirst)).isEqualTo(CanonicalOptions.canonical(freshOnly));
    assertThat(CanonicalOptions.canonical(freshFirst)).isNotEqualTo(CanonicalOptions.canonical(freshOnly));
  }

  @Test
  void mapKeyOfAnotherWireType_doesNotStandForAStringKey() {
    // [key varint 1 -> x, key "\x01" -> y] and [key "\x01" -> y] are different messages
    Proto stringKey = new Proto().bytes(1, new byte[] {1}).m(2, new Proto().s(1, "y"));
    byte[] both = new Proto().m(7, new Proto().v(1, 1).m(2, new Proto().s(1, "x"))).m(7, stringKey).toBytes();
    byte[] onlyString = new Proto().m(7, stringKey).toBytes();
    assertThat(CanonicalOptions.canonical(both)).isNotEqualTo(CanonicalOptions.canonical(onlyString));
    assertThat(CanonicalOptions.canonical(both)[0]).as("unparseable").isEqualTo((byte) 0xff);
  }

  @Test
  void unparseableOptionsKeepTheirBytesBehindAMarker() {
    byte[] bad = {0x1a, 0x7f, 0x08};
    assertThat(HEX.formatHex(CanonicalOptions.canonical(bad))).isEqualTo("ff1a7f08");
    assertThat(CanonicalOptions.canonical(new byte[] {0x0b, 0x0c})[0]).isEqualTo((byte) 0xff); // a group
    assertThat(CanonicalOptions.canonical(new byte[0])).isEmpty();
    assertThat(HEX.formatHex(CanonicalOptions.canonical(new byte[] {(byte) 0xa0, (byte) 0x80, 0x00, 0x01})))
        .isEqualTo("2001"); // tags re-encoded minimally
  }

  @Test
  void theMapFieldsOfDebugOptionsAreListed() {
    // xla/xla.proto: xla_gpu_analytical_latency_estimator_options = 357, xla_backend_extra_options = 500
    assertThat(CanonicalOptions.DEBUG_OPTIONS_MAP_FIELDS).containsExactly(357, 500);
    Proto e1 = Proto.entry("a", "1", false);
    Proto e2 = Proto.entry("b", "2", true);
    for (int field : CanonicalOptions.DEBUG_OPTIONS_MAP_FIELDS) {
      byte[] x = new Proto().m(3, new Proto().m(3, new Proto().m(field, e1).m(field, e2))).toBytes();
      byte[] y = new Proto().m(3, new Proto().m(3, new Proto().m(field, e2).m(field, e1))).toBytes();
      assertThat(CanonicalOptions.canonical(x)).as("field %d", field).isEqualTo(CanonicalOptions.canonical(y));
    }
    // a field that is not a map keeps its order: a repeated string is a list
    byte[] x = new Proto().m(3, new Proto().m(3, new Proto().s(30, "a").s(30, "b"))).toBytes();
    byte[] y = new Proto().m(3, new Proto().m(3, new Proto().s(30, "b").s(30, "a"))).toBytes();
    assertThat(CanonicalOptions.canonical(x)).isNotEqualTo(CanonicalOptions.canonical(y));
  }

  /** A random CompileOptionsProto-shaped message: the table's fields, maps with repeated and missing
   * keys, unknown fields of every wire type, fields out of order. */
  private static byte[] randomOptions(Random r) {
    String[] keys = {"a", "b", "ab", "", "xla_x", "\u00e9", "b"};
    Proto debug = new Proto();
    for (int i = r.nextInt(12); i > 0; i--) {
      switch (r.nextInt(6)) {
        case 0 -> debug.v(1 + r.nextInt(460), r.nextLong());
        case 1 -> debug.s(1 + r.nextInt(460), keys[r.nextInt(keys.length)]);
        case 2 -> debug.varint(((long) (1 + r.nextInt(460)) << 3) | 5).varint(0).varint(0).varint(0).varint(0);
        default -> {
          int field = r.nextBoolean() ? 357 : 500;
          Proto e = new Proto();
          if (r.nextInt(8) > 0) {
            e.s(1, keys[r.nextInt(keys.length)]);
          }
          if (r.nextInt(8) > 0) {
            e.s(2, keys[r.nextInt(keys.length)]);
          }
          if (r.nextInt(8) == 0) {
            e.v(3, 1);
          }
          debug.m(field, e);
        }
      }
    }
    Proto build = new Proto();
    for (int i = r.nextInt(6); i > 0; i--) {
      switch (r.nextInt(3)) {
        case 0 -> build.v(1 + r.nextInt(26), r.nextInt(3) - 1);
        case 1 -> build.m(3, debug);
        default -> build.s(13, keys[r.nextInt(keys.length)]);
      }
    }
    Proto out = new Proto();
    for (int i = r.nextInt(8); i > 0; i--) {
      switch (r.nextInt(4)) {
        case 0 -> out.v(1 + r.nextInt(11), r.nextInt(5));
        case 1 -> out.m(3, build);
        case 2 -> out.s(6, keys[r.nextInt(keys.length)]);
        default -> {
          Proto value = new Proto();
          switch (r.nextInt(4)) {
            case 0 -> value.s(1, keys[r.nextInt(keys.length)]);
            case 1 -> value.v(2, r.nextInt(2));
            case 2 -> value.v(3, r.nextLong());
            default -> value.varint((4 << 3) | 1).varint(0).varint(0).varint(0).varint(0).varint(0).varint(0)
                .varint(0).varint(0);
          }
          out.m(7, new Proto().s(1, keys[r.nextInt(keys.length)]).m(2, value));
        }
      }
    }
    byte[] bytes = out.toBytes();
    if (bytes.length > 0 && r.nextInt(6) == 0) {
      bytes[r.nextInt(bytes.length)] ^= (byte) (1 << r.nextInt(8));
    }
    return bytes;
  }

  @Test
  void javaAndCAgreeOnRandomOptions(@TempDir Path dir) throws Exception {
    Random r = new Random(2026);
    List<byte[]> inputs = new ArrayList<>();
    List<String> files = new ArrayList<>();
    files.add("canonical");
    for (int i = 0; i < 400; i++) {
      byte[] in = randomOptions(r);
      inputs.add(in);
      files.add(java.nio.file.Files.write(dir.resolve("o" + i), in).toString());
    }
    String[] c = KeyTool.run(files.toArray(String[]::new)).split("\n");
    assertThat(c).hasSize(inputs.size());
    int parsed = 0;
    for (int i = 0; i < inputs.size(); i++) {
      byte[] java = CanonicalOptions.canonical(inputs.get(i));
      assertThat(HEX.formatHex(java)).as("input %d: %s", i, HEX.formatHex(inputs.get(i))).isEqualTo(c[i]);
      parsed += java.length > 0 && java[0] != (byte) 0xff ? 1 : 0;
    }
    assertThat(parsed).as("most random inputs parse").isGreaterThan(200).isLessThan(400);
  }

  @Test
  void javaCanonicalFormEqualsTheProxys(@TempDir Path dir) throws Exception {
    List<byte[]> inputs = new ArrayList<>();
    inputs.add(new byte[0]);
    inputs.add(Proto.jaxLike(false));
    inputs.add(Proto.jaxLike(true));
    inputs.add(new byte[] {0x1a, 0x7f, 0x08});
    Random random = new Random(7);
    byte[] base = Proto.jaxLike(true);
    for (int i = 0; i < 12; i++) { // damaged variants: some still parse, some do not
      byte[] c = base.clone();
      c[random.nextInt(c.length)] ^= (byte) (1 << random.nextInt(8));
      inputs.add(c);
    }
    for (byte[] in : inputs) {
      assertThat(HEX.formatHex(CanonicalOptions.canonical(in))).as("options %s", HEX.formatHex(in))
          .isEqualTo(KeyTool.canonicalHex(dir, in));
    }
  }
}
