package dev.xlac.core.neuron;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class NeuronFilesTest {
  @Test
  void moduleAndVersionDirectories_needTheirPrefixAndMore() {
    assertThat(NeuronFiles.isModuleDirectory("MODULE_10512273093712187+d41d8cd9")).isTrue();
    assertThat(NeuronFiles.isModuleDirectory("MODULE_")).isFalse();
    assertThat(NeuronFiles.isModuleDirectory("module_1")).isFalse();
    assertThat(NeuronFiles.isVersionDirectory("neuronxcc-2.15.128.0+56dc5a86")).isTrue();
    assertThat(NeuronFiles.isVersionDirectory("neuronxcc-")).isFalse();
    assertThat(NeuronFiles.isVersionDirectory("MODULE_1")).isFalse();
  }
}
