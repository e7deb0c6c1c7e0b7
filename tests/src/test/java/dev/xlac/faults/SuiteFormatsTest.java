package dev.xlac.faults;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.luben.zstd.ZstdInputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The suite's own tar and zstd writers: what they write reads back, so a refusal is about the attack. */
class SuiteFormatsTest {
  @Test
  void rleZstdFrame_decodesToItsBytesAndZeros() throws Exception {
    ByteArrayOutputStream frame = new ByteArrayOutputStream();
    byte[] head = "head".repeat(50_000).getBytes(StandardCharsets.US_ASCII);
    try (RleZstdOutputStream out = new RleZstdOutputStream(frame)) {
      out.write(head);
      out.writeZeros(300_001);
      out.write('!');
    }
    byte[] back = new ZstdInputStream(new ByteArrayInputStream(frame.toByteArray())).readAllBytes();
    assertThat(back).hasSize(head.length + 300_002);
    assertThat(new String(back, 0, head.length, StandardCharsets.US_ASCII)).isEqualTo(new String(head,
        StandardCharsets.US_ASCII));
    assertThat(back[head.length + 300_001]).isEqualTo((byte) '!');
    assertThat(frame.size()).isLessThan(head.length + 100);
  }

  @Test
  void tar_roundTripsLongNamesAndLinks() throws Exception {
    String longName = "artifacts/" + "ab".repeat(32) + "." + "cd".repeat(32) + ".bin";
    List<Tar.Entry> entries = List.of(Tar.Entry.file("xlac-bundle.manifest", "m\n".getBytes(StandardCharsets.UTF_8)),
        Tar.Entry.file(longName, new byte[777]), new Tar.Entry("graphs/x", Tar.SYMLINK, 0, new byte[0], "/etc/passwd"));
    List<Tar.Entry> back = Tar.read(new ByteArrayInputStream(Tar.toBytes(entries)));
    assertThat(back).extracting(Tar.Entry::name).containsExactly("xlac-bundle.manifest", longName, "graphs/x");
    assertThat(back.get(1).data()).hasSize(777);
    assertThat(back.get(2).type()).isEqualTo(Tar.SYMLINK);
    assertThat(back.get(2).linkName()).isEqualTo("/etc/passwd");
  }
}
