package dev.xlac.cache.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Loading RocksDB's native library picks the glibc or musl build from the C library this JVM runs on, as
 * {@code /proc/self/maps} shows it, instead of RocksDB's own check, which starts {@code sh -c 'ldd /usr/bin/env | grep
 * -q musl'} in every command that opens a cache.
 */
class NativeLibcTest {
  @TempDir
  Path temp;

  @Test
  void muslFromMaps_readsTheMappedCLibrary() {
    String glibc = "7f1c2a000000-7f1c2a028000 r--p 00000000 08:01 1835 /usr/lib/x86_64-linux-gnu/libc.so.6";
    String oldGlibc = "7f1c2a000000-7f1c2a028000 r-xp 00000000 08:01 1835 /lib64/libc-2.17.so";
    String musl = "7f6e1d5a4000-7f6e1d5b8000 r--p 00000000 00:2f 1234 /lib/ld-musl-x86_64.so.1";
    String muslLibc = "7f6e1d5a4000-7f6e1d5b8000 r--p 00000000 00:2f 1234 /usr/lib/libc.musl-aarch64.so.1";
    String anon = "7ffd2b3e0000-7ffd2b401000 rw-p 00000000 00:00 0 [stack]";
    String other = "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 99 /usr/lib/jvm/x/bin/java";

    assertThat(RocksDbStore.muslFromMaps(List.of(other, glibc, anon))).isFalse();
    assertThat(RocksDbStore.muslFromMaps(List.of(oldGlibc))).isFalse();
    assertThat(RocksDbStore.muslFromMaps(List.of(other, musl, anon))).isTrue();
    assertThat(RocksDbStore.muslFromMaps(List.of(muslLibc))).isTrue();
    // A glibc library of some other program's name, or nothing at all: unknown, and RocksDB asks itself.
    assertThat(RocksDbStore.muslFromMaps(List.of(other, anon,
        "7f00-7f01 r--p 0 08:01 5 /opt/app/libc.so.6.backup"))).isNull();
    assertThat(RocksDbStore.muslFromMaps(List.of())).isNull();
  }

  @Test
  void loadingTheLibrary_startsNoProcess_andKnowsTheCLibrary() throws Exception {
    Path events = temp.resolve("events.txt");
    String java = ProcessHandle.current().info().command().orElse("java");
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1", "-cp", cp, Child.class.getName(), events.toString(), temp.toString())
        .redirectErrorStream(true).redirectOutput(temp.resolve("child.out").toFile());
    pb.environment().remove("ROCKSDB_MUSL_LIBC");
    Process p = pb.start();
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(Files.readString(temp.resolve("child.out"))).isZero();
    List<String> lines = Files.readAllLines(events);
    boolean musl = Files.readAllLines(Path.of("/proc/self/maps")).stream().anyMatch(l -> l.contains("ld-musl-"));
    assertThat(lines).containsExactly("musl " + musl, "processes started: 0");
  }

  /** Loads the library under a JFR recording of process starts; writes what it saw. */
  public static final class Child {
    public static void main(String[] args) throws IOException {
      Path out = Path.of(args[0]);
      List<String> started = new ArrayList<>();
      try (Recording r = new Recording()) {
        r.enable("jdk.ProcessStart");
        r.start();
        RocksDbStore.loadNative();
        r.stop();
        Path jfr = Path.of(args[1], "rec.jfr");
        r.dump(jfr);
        for (RecordedEvent e : RecordingFile.readAllEvents(jfr)) {
          started.add(e.getString("command"));
        }
      }
      List<String> lines = new ArrayList<>();
      lines.add("musl " + org.rocksdb.util.Environment.isMuslLibc());
      lines.add("processes started: " + started.size());
      lines.addAll(started);
      Files.write(out, lines, StandardCharsets.UTF_8);
    }
  }
}
