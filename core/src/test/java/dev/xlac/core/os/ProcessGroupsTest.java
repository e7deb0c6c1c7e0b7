package dev.xlac.core.os;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ProcessGroupsTest {
  @Test
  void setsid_isLookedUpOnce_inTheUsualPlacesFirst() {
    assertThat(ProcessGroups.setsid()).isSameAs(ProcessGroups.setsid());
    Path usual = Files.isExecutable(Path.of("/usr/bin/setsid")) ? Path.of("/usr/bin/setsid") : Path.of("/bin/setsid");
    if (Files.isExecutable(usual)) {
      assertThat(ProcessGroups.setsid()).contains(usual);
    } else {
      assertThat(ProcessGroups.setsid()).isEqualTo(Executables.onPath("setsid"));
    }
  }

  @Test
  void killTree_ofAGroupLeader_killsAGrandchildThatOutlivesItsParent() throws Exception {
    ChildProcesses.Family f = ChildProcesses.shellWithGrandchild(true);
    ProcessGroups.killTree(f.shell(), true);
    assertThat(f.shell().isAlive()).isFalse();
    assertThat(f.shell().exitValue()).isEqualTo(128 + Signals.SIGKILL);
    assertThat(ChildProcesses.runsAfterAWhile(f.grandchild())).as("the grandchild").isFalse();
  }

  @Test
  void killTree_withoutAGroup_killsTheDescendantsJavaSees() throws Exception {
    ChildProcesses.Family f = ChildProcesses.shellWithGrandchild(false);
    ProcessGroups.killTree(f.shell(), false);
    assertThat(f.shell().isAlive()).isFalse();
    assertThat(ChildProcesses.runsAfterAWhile(f.grandchild())).as("the grandchild").isFalse();
  }
}
