package dev.xlac.core.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AtomicFilesTest {
  @TempDir
  Path tmp;

  @Test
  void write_replacesTheTarget_andLeavesNoTemporary() throws Exception {
    Path target = tmp.resolve("a.json");
    Files.writeString(target, "old");
    AtomicFiles.writeString(target, "new");
    assertThat(target).hasContent("new");
    assertThat(siblings()).containsExactly("a.json");
  }

  @Test
  void aBodyThatGivesUp_leavesTheTargetAsItWas() throws Exception {
    Path target = tmp.resolve("a.json");
    Files.writeString(target, "old");
    boolean written = AtomicFiles.write(target, out -> {
      out.write("half".getBytes(StandardCharsets.UTF_8));
      return false;
    });
    assertThat(written).isFalse();
    assertThat(target).hasContent("old");
    assertThat(siblings()).containsExactly("a.json");
  }

  @Test
  void aBodyThatFails_leavesTheTargetAsItWas_andSaysWhy() throws Exception {
    Path target = tmp.resolve("a.json");
    assertThatThrownBy(() -> AtomicFiles.write(target, out -> {
      out.write(new byte[100_000]);
      throw new IOException("disk full");
    })).hasMessage("disk full");
    assertThat(target).doesNotExist();
    assertThat(siblings()).isEmpty();
  }

  @Test
  void permissions_areTheTemporarysFromTheStart() throws Exception {
    Path target = tmp.resolve("key.pem");
    List<String> seen = new ArrayList<>();
    AtomicFiles.write(target, PosixFilePermissions.fromString("rw-------"), out -> {
      try (Stream<Path> s = Files.list(tmp)) {
        for (Path p : s.toList()) {
          seen.add(PosixFilePermissions.toString(Files.getPosixFilePermissions(p)));
        }
      }
      out.write(1);
      return true;
    });
    assertThat(seen).containsExactly("rw-------");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(target))).isEqualTo("rw-------");
  }

  @Test
  void concurrentWriters_ofOneTarget_leaveOneWritersWholeBytes() throws Exception {
    Path target = tmp.resolve("probe.json");
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<?>> writes = new ArrayList<>();
      for (int i = 0; i < 64; i++) {
        byte[] bytes = new byte[200_000];
        Arrays.fill(bytes, (byte) i);
        writes.add(pool.submit(() -> {
          AtomicFiles.writeBytes(target, bytes);
          return null;
        }));
      }
      for (Future<?> f : writes) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    byte[] result = Files.readAllBytes(target);
    assertThat(result).hasSize(200_000);
    byte first = result[0];
    for (byte b : result) {
      assertThat(b).isEqualTo(first);
    }
    assertThat(siblings()).containsExactly("probe.json");
  }

  @Test
  void aWriterKilledMidWrite_leavesTheOldBytes_andTheNextWriteRemovesItsTemporary() throws Exception {
    Path target = tmp.resolve("layout.neff");
    Files.writeString(target, "old");
    Path started = tmp.resolve("started");
    Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), SlowWriter.class.getName(), target.toString(), started.toString())
        .redirectErrorStream(true).start();
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!Files.exists(started) && System.nanoTime() < deadline && child.isAlive()) {
        Thread.sleep(20);
      }
      assertThat(started).as("the child began writing").exists();
      child.destroyForcibly(); // SIGKILL
      assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
    } finally {
      child.destroyForcibly();
    }
    assertThat(target).hasContent("old");
    assertThat(siblings()).anyMatch(n -> n.startsWith(".layout.neff.tmp-" + child.pid() + "."));
    AtomicFiles.writeString(target, "new");
    assertThat(target).hasContent("new");
    assertThat(siblings()).containsExactlyInAnyOrder("layout.neff", "started");
  }

  @Test
  void aTemporaryNameThatExists_isSomeoneElses_leftAlone_andTheNextNameIsTaken() throws Exception {
    Path target = tmp.resolve("probe.json");
    String last = SiblingTemporaries.unique(target).getFileName().toString();
    long n = Long.parseLong(last.substring(last.lastIndexOf('.') + 1));
    String prefix = last.substring(0, last.lastIndexOf('.') + 1);
    List<Path> others = new ArrayList<>();
    for (long i = n + 1; i <= n + 3; i++) { // another writer's temporaries, by the names this process would take next
      others.add(Files.writeString(tmp.resolve(prefix + i), "theirs " + i));
    }
    AtomicFiles.writeString(target, "ours");
    assertThat(target).hasContent("ours");
    for (Path p : others) {
      assertThat(p).hasContent("theirs " + p.getFileName().toString().substring(prefix.length()));
    }
  }

  /** Writes part of a file through {@link AtomicFiles}, says so, then waits to be killed. */
  public static final class SlowWriter {
    public static void main(String[] args) throws Exception {
      AtomicFiles.write(Path.of(args[0]), out -> {
        out.write(new byte[1 << 20]);
        out.flush();
        Files.writeString(Path.of(args[1]), "yes");
        try {
          Thread.sleep(120_000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return true;
      });
    }
  }

  private List<String> siblings() throws IOException {
    try (Stream<Path> s = Files.list(tmp)) {
      return s.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }
}
