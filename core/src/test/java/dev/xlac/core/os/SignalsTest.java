package dev.xlac.core.os;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class SignalsTest {
  @Test
  void kill_isBound() {
    assertThat(Signals.available()).isTrue();
  }

  @Test
  void killGroup_reachesEveryProcessOfTheGroup() throws Exception {
    ChildProcesses.Family f = ChildProcesses.shellWithGrandchild(true);
    try {
      assertThat(Signals.killGroup(f.shell().pid(), Signals.SIGTERM)).isTrue();
      assertThat(f.shell().waitFor(30, TimeUnit.SECONDS)).isTrue();
      assertThat(f.shell().exitValue()).isEqualTo(128 + Signals.SIGTERM);
      assertThat(ChildProcesses.runsAfterAWhile(f.grandchild())).as("the grandchild").isFalse();
    } finally {
      ProcessGroups.killTree(f.shell(), true);
    }
  }

  @Test
  void killGroup_ofAProcessLeadingNoGroup_signalsThatProcess() throws Exception {
    Process sleeper = new ProcessBuilder("sleep", "300").start(); // in the JVM's group: no group of its pid
    try {
      assertThat(Signals.killGroup(sleeper.pid(), Signals.SIGINT)).isTrue();
      assertThat(sleeper.waitFor(30, TimeUnit.SECONDS)).isTrue();
      assertThat(sleeper.exitValue()).isEqualTo(128 + Signals.SIGINT);
    } finally {
      sleeper.destroyForcibly();
    }
  }

  @Test
  void kill_signalsOneProcess_andNotItsGroup() throws Exception {
    ChildProcesses.Family f = ChildProcesses.shellWithGrandchild(true);
    try {
      assertThat(Signals.kill(f.grandchild(), Signals.SIGKILL)).isTrue();
      assertThat(ChildProcesses.runsAfterAWhile(f.grandchild())).isFalse();
      assertThat(f.shell().waitFor(30, TimeUnit.SECONDS)).as("the shell's wait returned").isTrue();
      assertThat(f.shell().exitValue()).isZero();
    } finally {
      ProcessGroups.killTree(f.shell(), true);
    }
  }

  @Test
  void kill_ofNoProcess_isFalse() throws Exception {
    Process done = new ProcessBuilder("true").start();
    done.waitFor();
    assertThat(Signals.kill(done.pid(), 0)).isFalse();
    assertThat(Signals.killGroup(done.pid(), 0)).isFalse();
    assertThat(Signals.kill(0, 0)).as("0 would mean the caller's own group").isFalse();
    assertThat(Signals.killGroup(-1, 0)).as("-1 would mean every process").isFalse();
    assertThat(Signals.kill(Long.MAX_VALUE, 0)).isFalse();
  }
}
