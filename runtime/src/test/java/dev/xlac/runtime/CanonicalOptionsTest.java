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
        .isEqualTo("996e714a3b557fa1558bd5682b4a77e8ee2a41da1941991194404518cbd24440");
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
