package dev.xlac.core.neuron;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class NeuronLogsTest {
  @Test
  void firstErrorLine_findsNeuronxCcsAndPythonsErrorLines() {
    assertThat(NeuronLogs.firstErrorLine("INFO: start\n  [ERROR] [NCC_E123] tensor too big  \nERROR: later"))
        .hasValue("[ERROR] [NCC_E123] tensor too big");
    assertThat(NeuronLogs.firstErrorLine("usage: neuronx-cc\nneuronx-cc: error: unrecognized arguments: --x"))
        .hasValue("neuronx-cc: error: unrecognized arguments: --x");
    assertThat(NeuronLogs.firstErrorLine("step [F137] out of memory")).hasValue("step [F137] out of memory");
  }

  @Test
  void firstErrorLine_skipsLinesThatSayThereWereNoErrors() {
    assertThat(NeuronLogs.firstErrorLine("Compiler status PASS: 0 errors\nERROR: real one")).hasValue("ERROR: real one");
    assertThat(NeuronLogs.firstErrorLine("done, no errors\nall well")).isEmpty();
    assertThat(NeuronLogs.firstErrorLine("an errorless line with Error in it")).isEmpty();
  }

  @Test
  void firstErrorLine_isCapped() {
    String line = NeuronLogs.firstErrorLine("ERROR " + "x".repeat(1000)).orElseThrow();
    assertThat(line).hasSize(NeuronLogs.MAX_LINE).endsWith("...");
  }
}
