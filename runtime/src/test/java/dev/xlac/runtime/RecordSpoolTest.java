package dev.xlac.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.xlac.core.XlacException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RecordSpoolTest {
  @TempDir
  Path tmp;

  static final String IDENTITY = "xlac-pjrt-plugin/1\nplatform_name=cpu\nplatform_version=cpu\napi_version=0.75\n"
      + "plugin_sha256=" + "ab".repeat(32) + "\n";

  /** A record of a request whose program is {@code program}. */
  static RecordedRequest request(String program, byte[] executable) {
    byte[] format = "mlir".getBytes(StandardCharsets.UTF_8);
    byte[] code = program.getBytes(StandardCharsets.UTF_8);
    byte[] options = {0x1a, 0x02, 0x08, 0x01};
    byte[] identity = IDENTITY.getBytes(StandardCharsets.UTF_8);
    return new RecordedRequest(RequestKey.of(format, code, options, identity), format, code, options, IDENTITY,
        executable, 1_234_567L);
  }

  @Test
  void aWrittenRecord_readsBackWhole_withItsIdentityFields() throws Exception {
    RecordedRequest r = request("module @a {}", new byte[] {1, 2, 3, 4, 5});
    Path file = RecordSpool.write(tmp, r);
    assertThat(file.getFileName().toString()).isEqualTo(r.key().hex() + ".xpr");
    RecordedRequest back = RecordSpool.read(file);
    assertThat(back.key()).isEqualTo(r.key());
    assertThat(back.program()).isEqualTo(r.program());
    assertThat(back.options()).isEqualTo(r.options());
    assertThat(back.executable()).isEqualTo(r.executable());
    assertThat(back.compileNanos()).isEqualTo(1_234_567L);
    assertThat(back.pluginSha256()).isEqualTo("ab".repeat(32));
    assertThat(back.platformName()).isEqualTo("cpu");
    assertThat(back.formatName()).isEqualTo("mlir");
  }

  /** A FIFO where a record should be: opening it to read would wait for a writer for ever (issue 22). */
  @Test
  void fifoRecord_isRejectedInsteadOfHanging() throws Exception {
    Path fifo = tmp.resolve("ab".repeat(32) + ".xpr");
    assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();
    assertTimeoutPreemptively(Duration.ofSeconds(20), () -> assertThatThrownBy(() -> RecordSpool.read(fifo))
        .isInstanceOfSatisfying(XlacException.class, e -> assertThat(e.getMessage()).contains("not a regular file")));
    assertThat(RecordSpool.files(tmp)).isEmpty();
  }

  @Test
  void writtenRecords_areTheUsersOnly_whateverTheUmask() throws Exception {
    Path file = RecordSpool.write(tmp.resolve("new-spool"), request("p", new byte[] {1}));
    assertThat(Files.getPosixFilePermissions(file)).isEqualTo(PosixFilePermissions.fromString("rw-------"));
    assertThat(Files.getPosixFilePermissions(file.getParent())).isEqualTo(PosixFilePermissions.fromString("rwx------"));
  }

  @Test
  void theLayoutIsLittleEndian_asTheReadmeSays() {
    RecordedRequest r = request("p", new byte[] {9});
    byte[] b = RecordSpool.encode(r);
    ByteBuffer buf = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    assertThat(Arrays.copyOfRange(b, 0, 8)).isEqualTo("XLACPJR1".getBytes(StandardCharsets.US_ASCII));
    assertThat(Arrays.copyOfRange(b, 8, 40)).isEqualTo(r.key().digest());
    assertThat(buf.getLong(40)).isEqualTo(4); // "mlir"
    assertThat(buf.getLong(b.length - 40)).isEqualTo(1_234_567L);
  }

  @Test
  void aFlippedByte_isRejected_namingTheFileAndTheChecksum() throws Exception {
    Path file = RecordSpool.write(tmp, request("p", new byte[100]));
    byte[] b = Files.readAllBytes(file);
    b[120] ^= 1;
    Files.write(file, b);
    assertThatThrownBy(() -> RecordSpool.read(file)).isInstanceOf(XlacException.class)
        .hasMessageContaining(file.toString()).hasMessageContaining("SHA-256 does not match");
  }

  @Test
  void aTruncatedRecord_isRejected_asCutShort() throws Exception {
    Path file = RecordSpool.write(tmp, request("p", new byte[100]));
    byte[] b = Files.readAllBytes(file);
    Files.write(file, Arrays.copyOf(b, b.length - 50));
    assertThatThrownBy(() -> RecordSpool.read(file)).isInstanceOf(XlacException.class)
        .hasMessageContaining("cut short");
    Files.write(file, Arrays.copyOf(b, 20));
    assertThatThrownBy(() -> RecordSpool.read(file)).hasMessageContaining("cut short");
  }

  @Test
  void aHugeSectionLength_isRejected_withoutAllocatingIt() throws Exception {
    Path file = RecordSpool.write(tmp, request("p", new byte[1]));
    byte[] b = Files.readAllBytes(file);
    ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putLong(40, Long.MAX_VALUE / 2);
    Files.write(file, b);
    assertThatThrownBy(() -> RecordSpool.read(file)).hasMessageContaining("runs past the end");
  }

  @Test
  void aRecordWhoseKeyIsNotItsRequests_isRejected_evenWithAGoodChecksum() throws Exception {
    RecordedRequest r = request("p", new byte[3]);
    RecordedRequest other = request("q", new byte[3]);
    RecordedRequest lying = new RecordedRequest(other.key(), r.format(), r.program(), r.options(), r.identityText(),
        r.executable(), r.compileNanos());
    Path file = tmp.resolve("lying.xpr");
    Files.write(file, RecordSpool.encode(lying));
    assertThatThrownBy(() -> RecordSpool.read(file)).isInstanceOf(RecordSpool.KeyMismatchException.class)
        .hasMessageContaining("its key " + other.key().text() + " was computed differently from this xlac's key of"
            + " its request (" + r.key().text() + ")");
  }

  @Test
  void aWholeRecordWithASectionTooLargeForThisReader_isAnExceptionOfItsOwn_notBadInput() throws Exception {
    // magic, key, a 4-byte format, then a program section of 2^31 bytes: a sparse file, never read
    Path file = tmp.resolve("big.xpr");
    ByteBuffer h = ByteBuffer.allocate(8 + 32 + 8 + 4 + 8).order(ByteOrder.LITTLE_ENDIAN);
    h.put(RecordSpool.MAGIC).put(new byte[32]).putLong(4).put("mlir".getBytes(StandardCharsets.UTF_8)).putLong(1L << 31);
    try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(file.toFile(), "rw")) {
      raf.write(h.array());
      raf.setLength(h.capacity() + (1L << 31) + 4 * 8 + 8 + 32);
    }
    assertThatThrownBy(() -> RecordSpool.read(file)).isInstanceOf(RecordSpool.TooLargeException.class)
        .isNotInstanceOf(dev.xlac.core.XlacException.class)
        .hasMessage("record " + file + ": its program section (2147483648 bytes) is larger than this xlac can take in"
            + " (at most " + RecordSpool.MAX_SECTION + " bytes)");
  }

  @Test
  void aRecordFiledUnderAnotherKeysName_isRejected() throws Exception {
    RecordedRequest r = request("p", new byte[3]);
    Path file = tmp.resolve("0".repeat(64) + ".xpr");
    Files.write(file, RecordSpool.encode(r));
    assertThatThrownBy(() -> RecordSpool.read(file)).hasMessageContaining("not the one it is named after");
  }

  @Test
  void files_listsRecordsInKeyOrder_andIgnoresTemporaries() throws Exception {
    RecordedRequest a = request("a", new byte[1]);
    RecordedRequest b = request("b", new byte[1]);
    RecordSpool.write(tmp, a);
    RecordSpool.write(tmp, b);
    Files.writeString(tmp.resolve(".tmp-1-2-3"), "half");
    Files.writeString(tmp.resolve("notes.txt"), "x");
    assertThat(RecordSpool.files(tmp)).extracting(p -> p.getFileName().toString())
        .containsExactlyElementsOf(java.util.stream.Stream.of(a, b).map(x -> x.key().hex() + ".xpr").sorted()
            .toList());
    assertThat(RecordSpool.temporaries(tmp)).extracting(p -> p.getFileName().toString()).containsExactly(
        ".tmp-1-2-3");
    assertThat(RecordSpool.looksLikeSpool(tmp)).isTrue();
    assertThat(RecordSpool.looksLikeSpool(tmp.resolve("none"))).isFalse();
    Path empty = Files.createDirectory(tmp.resolve("empty"));
    assertThat(RecordSpool.looksLikeSpool(empty)).isFalse();
  }

  @Test
  void aNonUtf8Identity_isRejected() throws Exception {
    byte[] format = "hlo".getBytes(StandardCharsets.UTF_8);
    byte[] identity = {(byte) 0xff, (byte) 0xfe};
    RequestKey key = RequestKey.of(format, new byte[1], new byte[0], identity);
    // encode by hand: RecordedRequest holds the identity as text
    ByteBuffer b = ByteBuffer.allocate(8 + 32 + 5 * 8 + 3 + 1 + 2 + 1 + 8 + 32).order(ByteOrder.LITTLE_ENDIAN);
    b.put("XLACPJR1".getBytes(StandardCharsets.US_ASCII)).put(key.digest());
    for (byte[] s : new byte[][] {format, new byte[1], new byte[0], identity, new byte[1]}) {
      b.putLong(s.length).put(s);
    }
    b.putLong(5);
    var sha = RequestKey.sha256();
    sha.update(b.array(), 0, b.position());
    b.put(sha.digest());
    Path file = tmp.resolve("x.xpr");
    Files.write(file, b.array());
    assertThatThrownBy(() -> RecordSpool.read(file)).hasMessageContaining("not UTF-8");
  }
}
