package dev.xlac.core.os;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ExitStatusTest {
  @Test
  void signal_is128PlusN_forLinuxsSignals() {
    assertThat(ExitStatus.signal(128 + 9)).hasValue(9);
    assertThat(ExitStatus.signal(129)).hasValue(1);
    assertThat(ExitStatus.signal(0)).isEmpty();
    assertThat(ExitStatus.signal(70)).isEmpty();
    assertThat(ExitStatus.signal(128)).isEmpty();
    assertThat(ExitStatus.signal(193)).isEmpty();
    assertThat(ExitStatus.signal(255)).isEmpty();
  }

  /** The PJRT driver took 192 for an exit code, one short of the signal range the neuronx-cc driver used. */
  @Test
  void signal_status192IsSignal64_SIGRTMAX() {
    assertThat(ExitStatus.signal(192)).hasValue(64);
    assertThat(ExitStatus.describe(192)).isEqualTo("died with signal 64");
  }

  @Test
  void signalName_namesLinuxsSignals() {
    assertThat(ExitStatus.signalName(6)).isEqualTo("SIGABRT");
    assertThat(ExitStatus.signalName(9)).isEqualTo("SIGKILL");
    assertThat(ExitStatus.signalName(11)).isEqualTo("SIGSEGV");
    assertThat(ExitStatus.signalName(15)).isEqualTo("SIGTERM");
    assertThat(ExitStatus.signalName(31)).isEqualTo("SIGSYS");
    assertThat(ExitStatus.signalName(34)).isEqualTo("signal 34");
    assertThat(ExitStatus.signalName(Signals.SIGKILL)).isEqualTo("SIGKILL");
    assertThat(ExitStatus.signalName(Signals.SIGINT)).isEqualTo("SIGINT");
    assertThat(ExitStatus.signalName(Signals.SIGHUP)).isEqualTo("SIGHUP");
  }

  @Test
  void describe_wordsSignalsAndExitCodes() {
    assertThat(ExitStatus.describe(128 + 11)).isEqualTo("died with SIGSEGV (signal 11)");
    assertThat(ExitStatus.describe(128 + 6)).isEqualTo("died with SIGABRT (signal 6)");
    assertThat(ExitStatus.describe(128 + 40)).isEqualTo("died with signal 40");
    assertThat(ExitStatus.describe(3)).isEqualTo("exited with code 3");
    assertThat(ExitStatus.describe(0)).isEqualTo("exited with code 0");
  }

  @Test
  void describe_ofARealChildKilledBySignal() throws Exception {
    Process p = new ProcessBuilder("sh", "-c", "kill -ABRT $$").start();
    assertThat(ExitStatus.describe(p.waitFor())).isEqualTo("died with SIGABRT (signal 6)");
  }
}
