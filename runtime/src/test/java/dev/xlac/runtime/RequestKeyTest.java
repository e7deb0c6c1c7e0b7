package dev.xlac.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RequestKeyTest {
  static final String IDENTITY = "xlac-pjrt-plugin/2\nplatform_name=cpu\nplatform_version=cpu\n"
      + "api_version=0.115\nplugin_sha256=0000000000000000000000000000000000000000000000000000000000000000\n"
      + "device_kind=cpu\nxla_flags=\nlibtpu_init_args=\nattribute=xla_version=i:2\n";
  static final byte[] MLIR = "mlir".getBytes(StandardCharsets.US_ASCII);

  static RequestKey jaxLikeKey(byte[] options) {
    return RequestKey.of(MLIR, "module @m {}".getBytes(StandardCharsets.US_ASCII), options,
        IDENTITY.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void textParsesBackAndEqualsByContent() {
    RequestKey k = jaxLikeKey(new byte[0]);
    assertThat(k.text()).startsWith("pjrt1:").hasSize(70).isEqualTo("pjrt1:" + k.hex());
    assertThat(RequestKey.parse(k.text())).isEqualTo(k).hasSameHashCodeAs(k);
    assertThat(RequestKey.parse(k.text().toUpperCase().replace("PJRT1", "pjrt1"))).isEqualTo(k);
    byte[] d = k.digest();
    d[0] ^= 1;
    assertThat(k.digest()).isNotEqualTo(d); // a copy, the key is immutable
    assertThat(new RequestKey(d)).isNotEqualTo(k);
  }

  @Test
  void parseRejectsWhatIsNotAKey() {
    for (String bad : new String[] {"", "pjrt1:", "pjrt2:" + "0".repeat(64), "pjrt1:" + "0".repeat(63),
        "pjrt1:" + "g".repeat(64), "0".repeat(70)}) {
      assertThatThrownBy(() -> RequestKey.parse(bad)).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("not a pjrt1 request key");
    }
    assertThatThrownBy(() -> new RequestKey(new byte[31])).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void jaxLikeKeyIsPinnedAndTheSameForBothMapOrders() {
    byte[] a = Proto.jaxLike(false);
    byte[] b = Proto.jaxLike(true);
    assertThat(a).isNotEqualTo(b);
    // the same digest as src/test/c/test_options.c pins: both sides hash the same bytes
    assertThat(jaxLikeKey(a).hex()).isEqualTo("8f07429e9c60bd04998dd74da510b4d18a572c089328e44f32ecbe446a4237c6");
    assertThat(jaxLikeKey(b)).isEqualTo(jaxLikeKey(a));
  }

  @Test
  void everyPartChangesTheKey() {
    byte[] p = "module @m {}".getBytes(StandardCharsets.US_ASCII);
    byte[] o = Proto.jaxLike(false);
    byte[] i = IDENTITY.getBytes(StandardCharsets.UTF_8);
    RequestKey k = RequestKey.of(MLIR, p, o, i);
    assertThat(RequestKey.of("hlo".getBytes(StandardCharsets.US_ASCII), p, o, i)).isNotEqualTo(k);
    assertThat(RequestKey.of(MLIR, "module @n {}".getBytes(StandardCharsets.US_ASCII), o, i)).isNotEqualTo(k);
    assertThat(RequestKey.of(MLIR, p, Proto.jaxLike(false), (IDENTITY + "attribute=x=b:true\n")
        .getBytes(StandardCharsets.UTF_8))).isNotEqualTo(k);
    // lengths are part of the key: moving a byte from one part to the next is another request
    assertThat(RequestKey.of("mlirm".getBytes(StandardCharsets.US_ASCII),
        "odule @m {}".getBytes(StandardCharsets.US_ASCII), o, i)).isNotEqualTo(k);
  }

  @Test
  void javaKeyEqualsTheProxysKey(@TempDir Path dir) throws Exception {
    Random random = new Random(12);
    for (int round = 0; round < 6; round++) {
      byte[] program = new byte[random.nextInt(200)];
      random.nextBytes(program);
      byte[] options = round % 2 == 0 ? Proto.jaxLike(round % 4 == 0) : program; // parsed and unparseable
      String identity = IDENTITY + "attribute=round=i:" + round + "\n";
      String c = KeyTool.key(dir, round == 5 ? "hlo" : "mlir", program, options, identity);
      RequestKey java = RequestKey.of((round == 5 ? "hlo" : "mlir").getBytes(StandardCharsets.US_ASCII), program,
          options, identity.getBytes(StandardCharsets.UTF_8));
      assertThat(java.text()).as("round %d", round).isEqualTo(c);
    }
  }
}
