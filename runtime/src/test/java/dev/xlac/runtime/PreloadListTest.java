package dev.xlac.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PreloadListTest {
  private static final RequestKey A = RequestKey.parse("pjrt1:" + "a".repeat(64));
  private static final RequestKey B = RequestKey.parse("pjrt1:" + "b".repeat(64));

  @TempDir
  Path dir;

  @Test
  void file_isOnePerCommandAndDirectory() {
    Path layout = dir.resolve("layout");
    Path one = PreloadList.file(layout, Path.of("/w"), List.of("python", "train.py"));
    assertThat(one.getParent()).isEqualTo(layout.resolve("preload"));
    assertThat(one.getFileName().toString()).matches("[0-9a-f]{64}\\.keys");
    assertThat(PreloadList.file(layout, Path.of("/w"), List.of("python", "train.py"))).isEqualTo(one);
    assertThat(PreloadList.file(layout, Path.of("/v"), List.of("python", "train.py"))).isNotEqualTo(one);
    assertThat(PreloadList.file(layout, Path.of("/w"), List.of("python", "train.py", "--steps", "2")))
        .isNotEqualTo(one);
    assertThat(PreloadList.file(layout, Path.of("/w"), List.of("python", "tr", "ain.py"))).isNotEqualTo(
        PreloadList.file(layout, Path.of("/w"), List.of("python", "tra", "in.py")));
  }

  @Test
  void write_isPrivate_inOrder_withoutDuplicates_andOnlyWhenChanged() throws Exception {
    Path file = PreloadList.file(dir.resolve("layout"), dir, List.of("cmd"));
    assertThat(PreloadList.write(file, List.of())).as("nothing requested: nothing written").isFalse();
    assertThat(Files.exists(file)).isFalse();
    assertThat(PreloadList.write(file, List.of(B, A, B))).isTrue();
    assertThat(Files.readString(file)).isEqualTo("xlac-preload 1\n" + B.text() + "\n" + A.text() + "\n");
    assertThat(Files.getPosixFilePermissions(file)).isEqualTo(PosixFilePermissions.fromString("rw-------"));
    assertThat(Files.getPosixFilePermissions(file.getParent())).isEqualTo(PosixFilePermissions.fromString("rwx------"));
    assertThat(PreloadList.keys(file)).contains(List.of(B, A));
    assertThat(PreloadList.write(file, List.of(B, A))).as("unchanged: not written again").isFalse();
    assertThat(PreloadList.write(file, List.of(A))).isTrue();
    assertThat(PreloadList.keys(file)).contains(List.of(A));
  }

  @Test
  void keys_ofALinkOrAnotherFile_areNone() throws Exception {
    Path file = dir.resolve("x.keys");
    Files.writeString(file, "not a list\n");
    assertThat(PreloadList.keys(file)).isEmpty();
    Path real = dir.resolve("real.keys");
    Files.writeString(real, "xlac-preload 1\n" + A.text() + "\n");
    Path link = Files.createSymbolicLink(dir.resolve("link.keys"), real);
    assertThat(PreloadList.keys(link)).isEmpty();
    assertThat(PreloadList.keys(dir.resolve("none.keys"))).isEmpty();
  }
}
