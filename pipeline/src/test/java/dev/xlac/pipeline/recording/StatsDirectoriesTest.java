package dev.xlac.pipeline.recording;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.core.io.FileTrees;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Regression (issue #22, 6): a run killed with kill -9 left its statistics directory in the temporary directory, and
 * nothing removed it. A later run removes those of dead runs of this host and user, and nothing else.
 */
class StatsDirectoriesTest {
  @TempDir
  Path tmp;

  private static final String PREFIX =
      StatsDirectories.PREFIX + StatsDirectories.HOST + "-" + StatsDirectories.NAMESPACE + "-";

  private static long deadPid() throws Exception {
    Process p = new ProcessBuilder("true").start();
    p.waitFor();
    return p.pid();
  }

  private Path dir(String name) throws Exception {
    Path d = Files.createDirectory(tmp.resolve(name));
    Files.writeString(d.resolve("stats-1.tsv"), "hit\n");
    return d;
  }

  @Test
  void killedRunsStatsDir_isRemovedByTheNextRun_andNothingElseIs() throws Exception {
    long me = ProcessHandle.current().pid();
    long myStart = StatsDirectories.startTicks(me);
    assertThat(myStart).isPositive();
    long dead = deadPid();
    Path own = dir(PREFIX + me + "-" + myStart + "-1");
    Path killed = dir(PREFIX + dead + "-" + myStart + "-2");
    Path killedRecording = dir(StatsDirectories.RECORD_PREFIX + StatsDirectories.HOST + "-"
        + StatsDirectories.NAMESPACE + "-" + dead + "-5-8");
    Path reused = dir(PREFIX + me + "-" + (myStart - 1) + "-3"); // this pid, but another process had it before
    Path otherHost = dir(StatsDirectories.PREFIX + "another_host-" + StatsDirectories.NAMESPACE + "-" + dead + "-5-4");
    Path oldName = dir(StatsDirectories.PREFIX + "123456789");
    Path target = dir("not-a-stats-dir");
    Path link = Files.createSymbolicLink(tmp.resolve(PREFIX + dead + "-5-5"), target);
    Path withSubdir = dir(PREFIX + dead + "-5-6");
    Files.createDirectory(withSubdir.resolve("sub"));
    Path others = dir(PREFIX + dead + "-5-7");
    boolean root = Files.getAttribute(tmp, "unix:uid").equals(0);
    if (root) {
      Files.setAttribute(others, "unix:uid", 12345);
    }

    assertThat(StatsDirectories.removeStale(own)).isEqualTo(3);

    assertThat(killed).doesNotExist();
    assertThat(killedRecording).as("a killed recording capture's").doesNotExist();
    assertThat(reused).doesNotExist();
    assertThat(own.resolve("stats-1.tsv")).as("a live run's").exists();
    assertThat(otherHost.resolve("stats-1.tsv")).as("another host's (a shared temporary directory)").exists();
    assertThat(oldName.resolve("stats-1.tsv")).as("one whose process cannot be told").exists();
    assertThat(link).as("a link is neither followed nor removed").exists();
    assertThat(Files.isSymbolicLink(link)).isTrue();
    assertThat(target.resolve("stats-1.tsv")).exists();
    assertThat(withSubdir.resolve("sub")).as("what is not a file stays, and keeps its directory").exists();
    if (root) {
      assertThat(others.resolve("stats-1.tsv")).as("another user's").exists();
    }
  }

  /**
   * Regression: two containers on one node share the host name and /tmp, not their PID namespaces; a run in one removed
   * the live statistics directory of a run in the other, whose pid it cannot see. Only this namespace's are removed.
   */
  @Test
  void otherContainersStatsDir_withAPidNotVisibleHere_isLeftAlone() throws Exception {
    assertThat(StatsDirectories.NAMESPACE).as("this test needs /proc/self/ns/pid").matches("ns[0-9]+");
    long dead = deadPid();
    String host = StatsDirectories.HOST + "-";
    long me = ProcessHandle.current().pid();
    Path own = dir(PREFIX + me + "-" + StatsDirectories.startTicks(me) + "-1");
    Path otherContainer = dir(StatsDirectories.PREFIX + host + "ns1" + StatsDirectories.NAMESPACE.substring(2) + "-"
        + dead + "-5-2");
    Path otherRecording = dir(StatsDirectories.RECORD_PREFIX + host + "ns1-" + dead + "-5-3");
    Path unknownNamespace = dir(StatsDirectories.PREFIX + host + StatsDirectories.UNKNOWN_NAMESPACE + "-" + dead + "-5-4");
    Path olderBuild = dir(StatsDirectories.PREFIX + host + dead + "-5-5"); // named without a namespace
    Path killedHere = dir(PREFIX + dead + "-5-6");

    assertThat(StatsDirectories.removeStale(own)).isEqualTo(1);

    assertThat(killedHere).doesNotExist();
    assertThat(own.resolve("stats-1.tsv")).exists();
    assertThat(otherContainer.resolve("stats-1.tsv")).as("another namespace's").exists();
    assertThat(otherRecording.resolve("stats-1.tsv")).as("another namespace's recording").exists();
    assertThat(unknownNamespace.resolve("stats-1.tsv")).as("an unknown namespace's").exists();
    assertThat(olderBuild.resolve("stats-1.tsv")).as("an older build's, without a namespace").exists();
  }

  @Test
  void aRunsOwnStatsDir_isNamedAfterItsProcess_soALaterRunCanTellItsDead() throws Exception {
    Path own = StatsDirectories.create();
    try {
      String name = own.getFileName().toString();
      long me = ProcessHandle.current().pid();
      assertThat(name).startsWith(PREFIX + me + "-" + StatsDirectories.startTicks(me) + "-");
      assertThat(StatsDirectories.staleName(name)).as("this process is alive").isFalse();
      assertThat(StatsDirectories.staleName(name.replace("-" + me + "-", "-" + deadPid() + "-"))).isTrue();
    } finally {
      FileTrees.deleteTreeQuietly(own);
    }
  }
}
