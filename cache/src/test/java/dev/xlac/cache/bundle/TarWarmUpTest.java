package dev.xlac.cache.bundle;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TarWarmUpTest {
  @TempDir
  Path temp;

  /**
   * In a fresh JVM (the JVM's own class-initialisation log): the warm-up thread initialises the class a tar entry's
   * times use, and with it the JDK's BigDecimal, so the tar code that follows finds both ready.
   */
  @Test
  void theWarmUpThreadInitialisesWhatATarEntrysTimesNeed() throws Exception {
    Path log = temp.resolve("init.log");
    String java = ProcessHandle.current().info().command().orElse("java");
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    Process p = new ProcessBuilder(java, "-Xlog:class+init=info:file=" + log, "-cp", cp, Child.class.getName())
        .redirectErrorStream(true).redirectOutput(temp.resolve("child.out").toFile()).start();
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(Files.readString(temp.resolve("child.out"))).isZero();
    String lines = Files.readString(log);
    assertThat(lines).containsPattern(
        "Initializing 'org/apache/commons/io/file/attribute/FileTimes'.*by thread \"xlac-tar-warm-up\"");
    assertThat(lines).containsPattern("Initializing 'java/math/BigDecimal'.*by thread \"xlac-tar-warm-up\"");
  }

  /** Warms up, then does what a bundle's first tar header does with the entry's time. */
  public static final class Child {
    public static void main(String[] args) throws Exception {
      Thread t = TarWarmUp.start();
      t.join();
      TarArchiveEntry entry = new TarArchiveEntry("a");
      entry.setModTime(java.nio.file.attribute.FileTime.fromMillis(1_000));
      if (entry.getLastModifiedTime().toMillis() != 1_000 || !t.isDaemon()) {
        System.exit(1);
      }
    }
  }
}
