package dev.xlac.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.XlacException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LayoutEntryTest {
  @TempDir
  Path tmp;

  static byte[] sha(byte[] b) throws Exception {
    return MessageDigest.getInstance("SHA-256").digest(b);
  }

  static RequestKey key(int n) {
    byte[] d = new byte[32];
    d[0] = (byte) n;
    d[31] = 7;
    return new RequestKey(d);
  }

  @Test
  void anEntry_hasTheReadmesHeader_andItsBytes() throws Exception {
    byte[] exe = "serialized executable".getBytes(StandardCharsets.UTF_8);
    LayoutEntry.write(tmp, key(0xab), sha(exe), exe.length, 42L, out -> out.write(exe));
    Path file = LayoutEntry.path(tmp, key(0xab));
    assertThat(tmp.relativize(file).toString()).isEqualTo("entries/ab/" + key(0xab).hex() + ".xpx");
    byte[] b = Files.readAllBytes(file);
    assertThat(b).hasSize(96 + exe.length);
    ByteBuffer h = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    assertThat(Arrays.copyOfRange(b, 0, 8)).isEqualTo("XLACPJX1".getBytes(StandardCharsets.US_ASCII));
    assertThat(Arrays.copyOfRange(b, 8, 40)).isEqualTo(key(0xab).digest());
    assertThat(h.getLong(40)).isEqualTo(exe.length);
    assertThat(Arrays.copyOfRange(b, 48, 80)).isEqualTo(sha(exe));
    assertThat(h.getLong(80)).isEqualTo(42L);
    assertThat(h.getLong(88)).isZero();
    assertThat(Arrays.copyOfRange(b, 96, b.length)).isEqualTo(exe);
    assertThat(LayoutEntry.headerMatches(file, key(0xab), sha(exe), exe.length)).isTrue();
    assertThat(LayoutEntry.matches(file, key(0xab), sha(exe), exe.length)).isTrue();
    assertThat(LayoutEntry.headerMatches(file, key(0xac), sha(exe), exe.length)).isFalse();
  }

  @Test
  void bytesThatDoNotMatchTheirChecksum_neverReachTheEntrysName() throws Exception {
    byte[] exe = new byte[1000];
    byte[] good = sha(exe);
    byte[] old = "old".getBytes(StandardCharsets.UTF_8);
    LayoutEntry.write(tmp, key(1), sha(old), old.length, 1, out -> out.write(old));
    byte[] bad = exe.clone();
    bad[500] = 1;
    assertThatThrownBy(() -> LayoutEntry.write(tmp, key(1), good, exe.length, 1, out -> out.write(bad)))
        .isInstanceOf(IOException.class).hasMessageContaining("does not match its SHA-256");
    assertThatThrownBy(() -> LayoutEntry.write(tmp, key(1), good, exe.length, 1, out -> out.write(exe, 0, 10)))
        .hasMessageContaining("came to 10 bytes");
    assertThatThrownBy(() -> LayoutEntry.write(tmp, key(1), good, exe.length, 1, out -> {
      out.write(exe, 0, 10);
      throw new IOException("No space left on device");
    })).hasMessageContaining("No space left");
    Path file = LayoutEntry.path(tmp, key(1));
    assertThat(LayoutEntry.matches(file, key(1), sha(old), old.length)).isTrue();
    try (Stream<Path> s = Files.list(file.getParent())) {
      assertThat(s.map(p -> p.getFileName().toString())).containsExactly(file.getFileName().toString());
    }
  }

  @Test
  void damage_isSeenByTheHeaderCheck_orTheFullCheck() throws Exception {
    byte[] exe = new byte[300];
    LayoutEntry.write(tmp, key(2), sha(exe), exe.length, 1, out -> out.write(exe));
    Path file = LayoutEntry.path(tmp, key(2));
    byte[] b = Files.readAllBytes(file);
    byte[] body = b.clone();
    body[200] ^= 1;
    Files.write(file, body);
    assertThat(LayoutEntry.headerMatches(file, key(2), sha(exe), exe.length)).isTrue();
    assertThat(LayoutEntry.matches(file, key(2), sha(exe), exe.length)).isFalse();
    Files.write(file, Arrays.copyOf(b, b.length - 1));
    assertThat(LayoutEntry.headerMatches(file, key(2), sha(exe), exe.length)).isFalse();
    byte[] head = b.clone();
    head[50] ^= 1;
    Files.write(file, head);
    assertThat(LayoutEntry.headerMatches(file, key(2), sha(exe), exe.length)).isFalse();
    assertThat(LayoutEntry.headerMatches(tmp.resolve("none"), key(2), sha(exe), exe.length)).isFalse();
  }

  @Test
  void theManifest_roundTrips_andAnotherVersionIsRefusedByName() throws Exception {
    assertThat(LayoutManifest.read(tmp)).isEmpty();
    LayoutManifest.write(tmp, Set.of("cd".repeat(32), "ab".repeat(32)));
    assertThat(Files.readString(tmp.resolve("xlac-pjrt-layout")))
        .isEqualTo("xlac-pjrt-layout 1\nplugin " + "ab".repeat(32) + "\nplugin " + "cd".repeat(32) + "\n");
    assertThat(LayoutManifest.read(tmp)).contains(Set.of("ab".repeat(32), "cd".repeat(32)));
    Files.writeString(tmp.resolve("xlac-pjrt-layout"), "xlac-pjrt-layout 2\n");
    assertThatThrownBy(() -> LayoutManifest.read(tmp)).isInstanceOf(XlacException.class)
        .hasMessageContaining("xlac-pjrt-layout").hasMessageContaining("version 1");
    Files.writeString(tmp.resolve("xlac-pjrt-layout"), "xlac-pjrt-layout 1\nplugin zz\n");
    assertThatThrownBy(() -> LayoutManifest.read(tmp)).hasMessageContaining("line 2");
  }
}
