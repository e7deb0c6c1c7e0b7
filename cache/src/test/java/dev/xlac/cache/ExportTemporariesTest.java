package dev.xlac.cache;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue #10: an export killed with -9 left {@code .NAME.tmp-PID[.N]} beside its target, and the next export kept it. */
class ExportTemporariesTest {
  @TempDir
  Path tmp;

  @Test
  void exportKilledWhileWriting_leavesItsTemporary_whichTheNextExportRemoves() throws Exception {
    Path dir = tmp.resolve("cache");
    try (CacheStore s = Fixtures.open(dir)) {
      Fixtures.bulk(s, 0, 60, 2 << 20); // 120 MB that zstd cannot shrink: the child writes for a while
    }
    Path bundle = tmp.resolve("out.tar.zst");
    String javaBin = ProcessHandle.current().info().command().orElse("java");
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    Process child = new ProcessBuilder(javaBin, "--enable-native-access=ALL-UNNAMED", "-Xmx512m", "-XX:+UseSerialGC",
        "-cp", cp, ExportKillMain.class.getName(), dir.toString(), bundle.toString())
        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    // the child's temporary: .out.tar.zst.tmp-PID.N (AtomicFiles gives each write of a process its own N)
    String prefix = ".out.tar.zst.tmp-" + child.pid() + ".";
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    Path left = null;
    while (left == null || !(Files.exists(left) && Files.size(left) > (1 << 20))) {
      try (var files = Files.list(tmp)) {
        left = files.filter(p -> p.getFileName().toString().startsWith(prefix)).findFirst().orElse(null);
      }
      assertThat(child.isAlive()).as("the exporting child is still writing").isTrue();
      assertThat(System.nanoTime()).as("the child started writing in time").isLessThan(deadline);
      Thread.sleep(2);
    }
    child.destroyForcibly(); // SIGKILL
    Path killed = left;
    assertThat(child.waitFor()).isEqualTo(137);
    assertThat(left).as("what the killed export left").exists();
    assertThat(bundle).doesNotExist();

    List<String> notices = new CopyOnWriteArrayList<>();
    try (CacheStore s = CacheStore.open(dir, CacheStore.Mode.READ_ONLY, Duration.ZERO, notices::add)) {
      s.exportBundle(bundle, new ExportRequest(null, null));
    }
    assertThat(left).as("removed by the next export").doesNotExist();
    assertThat(bundle).exists();
    assertThat(notices).anySatisfy(n -> assertThat(n).startsWith("removed " + killed).contains("left by an export"));
    try (var files = Files.list(tmp)) {
      assertThat(files.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("cache", "out.tar.zst");
    }
  }

  @Test
  void export_keepsTemporariesThatAreNotStaleOrNotItsOwn() throws Exception {
    Path dir = tmp.resolve("cache");
    try (CacheStore s = Fixtures.open(dir)) {
      Fixtures.bulk(s, 0, 2, 100);
    }
    // A live xlac process (its command line names xlac's main class) may be writing its temporary.
    Process xlac = new ProcessBuilder("sh", "-c", "sleep 60; true", "dev.xlac.cli.Main").start();
    Process other = new ProcessBuilder("sleep", "60").start();
    try {
      Path live = plant(".out.tar.zst.tmp-" + xlac.pid());
      Path reused = plant(".out.tar.zst.tmp-" + other.pid()); // the pid now belongs to something else
      Path otherBundle = plant(".other.tar.zst.tmp-999999999");
      Path notAPid = plant(".out.tar.zst.tmp-12ab");
      Path unrelated = plant("out.tar.zst.tmp-999999999");
      try (CacheStore s = Fixtures.open(dir)) {
        s.exportBundle(tmp.resolve("out.tar.zst"), new ExportRequest(null, null));
      }
      assertThat(live).exists();
      assertThat(reused).doesNotExist();
      assertThat(otherBundle).exists();
      assertThat(notAPid).exists();
      assertThat(unrelated).exists();
    } finally {
      xlac.destroyForcibly().waitFor();
      other.destroyForcibly().waitFor();
    }
  }

  private Path plant(String name) throws IOException {
    return Files.write(tmp.resolve(name), new byte[1000]);
  }
}
