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
    assertThat(jaxLikeKey(a).hex()).isEqualTo("62f800a3fc7afbca85119dd88e7e4306a1dee7b02b5de8bd1cb045b9310a8736");
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

  /** A key by the rule of xlac-pjrt-request/1 (the program as passed), as older xlac versions filed entries. */
  static RequestKey version1Key(byte[] format, byte[] program, byte[] options, byte[] identity) {
    java.security.MessageDigest sha = RequestKey.sha256();
    sha.update("xlac-pjrt-request/1\0".getBytes(StandardCharsets.US_ASCII));
    for (byte[] part : new byte[][] {format, program, CanonicalOptions.canonical(options), identity}) {
      sha.update(java.nio.ByteBuffer.allocate(8).putLong(part.length).array());
      sha.update(part);
    }
    return new RequestKey(sha.digest());
  }

  @Test
  void aVersion1Key_isAKeyOfItsRequest_butNotTheKeyTheProxyAsksFor() {
    byte[] hlo = "hlo".getBytes(StandardCharsets.US_ASCII);
    byte[] program = CanonicalProgramTest.module("yx", false, false);
    byte[] options = Proto.jaxLike(false);
    byte[] identity = IDENTITY.getBytes(StandardCharsets.UTF_8);
    RequestKey old = version1Key(hlo, program, options, identity);
    RequestKey now = RequestKey.of(hlo, program, options, identity);
    assertThat(old).isNotEqualTo(now);
    assertThat(old.isKeyOf(hlo, program, options, identity)).isTrue();
    assertThat(old.isVersion1KeyOf(hlo, program, options, identity)).isTrue();
    assertThat(now.isKeyOf(hlo, program, options, identity)).isTrue();
    assertThat(now.isVersion1KeyOf(hlo, program, options, identity)).isFalse();
    byte[] other = CanonicalProgramTest.module("xy", true, false);
    assertThat(old.isKeyOf(hlo, other, options, identity)).as("another program's bytes").isFalse();
    assertThat(jaxLikeKey(options).isKeyOf(hlo, program, options, identity)).isFalse();
  }
}
