package dev.xlac.core.io;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SiblingTemporariesTest {
  @TempDir
  Path tmp;

  @Test
  void of_isTheTargetsHiddenSibling_namedAfterThisProcess() {
    assertThat(SiblingTemporaries.of(tmp.resolve("b.tar.zst")))
        .isEqualTo(tmp.resolve(".b.tar.zst.tmp-" + ProcessHandle.current().pid()));
  }

  @Test
  void removeStale_removesThoseOfDeadProcesses_only_andNeverItsOwn() throws Exception {
    Process dead = new ProcessBuilder("true").start();
    dead.waitFor();
    Path target = tmp.resolve("b.tar.zst");
    Path stale = Files.write(tmp.resolve(".b.tar.zst.tmp-" + dead.pid()), new byte[10]);
    Path own = Files.write(SiblingTemporaries.of(target), new byte[3]);
    Path dir = Files.createDirectory(tmp.resolve(".b.tar.zst.tmp-999999998"));
    List<SiblingTemporaries.Removed> removed = SiblingTemporaries.removeStale(target);
    assertThat(removed).containsExactly(new SiblingTemporaries.Removed(stale, 10));
    assertThat(stale).doesNotExist();
    assertThat(own).exists();
    assertThat(dir).as("not a regular file").exists();
  }

  @Test
  void unique_givesEachWriteItsOwnName_andItsStaleOnesAreRemovedToo() throws Exception {
    Path target = tmp.resolve("probe.json");
    Path a = SiblingTemporaries.unique(target);
    Path b = SiblingTemporaries.unique(target);
    assertThat(a).isNotEqualTo(b);
    assertThat(a.getFileName().toString()).startsWith(".probe.json.tmp-" + ProcessHandle.current().pid() + ".");
    Process dead = new ProcessBuilder("true").start();
    dead.waitFor();
    Path stale = Files.write(tmp.resolve(".probe.json.tmp-" + dead.pid() + ".3"), new byte[4]);
    assertThat(SiblingTemporaries.removeStale(target)).containsExactly(new SiblingTemporaries.Removed(stale, 4));
  }

  @Test
  void removeStale_ofATargetInAMissingDirectory_removesNothing() {
    assertThat(SiblingTemporaries.removeStale(tmp.resolve("no/such/b.tar.zst"))).isEmpty();
  }

  @Test
  void pidOf_acceptsOnlyTheExactPattern() {
    String prefix = ".b.tar.zst.tmp-";
    assertThat(SiblingTemporaries.pidOf(Path.of(".b.tar.zst.tmp-123"), prefix)).isEqualTo(123);
    assertThat(SiblingTemporaries.pidOf(Path.of(".b.tar.zst.tmp-"), prefix)).isEqualTo(-1);
    assertThat(SiblingTemporaries.pidOf(Path.of(".b.tar.zst.tmp-12x"), prefix)).isEqualTo(-1);
    assertThat(SiblingTemporaries.pidOf(Path.of(".b.tar.zst.tmp-1234567890123456789"), prefix)).isEqualTo(-1);
    assertThat(SiblingTemporaries.pidOf(Path.of("b.tar.zst.tmp-123"), prefix)).isEqualTo(-1);
    assertThat(SiblingTemporaries.pidOf(Path.of(".b.tar.zst.tmp-123.7"), prefix)).isEqualTo(123);
    assertThat(SiblingTemporaries.pidOf(Path.of(".b.tar.zst.tmp-123."), prefix)).isEqualTo(-1);
    assertThat(SiblingTemporaries.pidOf(Path.of(".b.tar.zst.tmp-123.x"), prefix)).isEqualTo(-1);
  }
}
