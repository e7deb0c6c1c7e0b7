package dev.xlac.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The AOT cache holds only what its training ran: a command that failed there would start slow ever after. */
class CliTrainingTest {
  @Test
  void training_runsEveryCommandThrough_includingTheRealGraphsOfHashInspectAndDiff() throws Exception {
    assertThat(CliTraining.failures()).isEmpty();
  }
}
