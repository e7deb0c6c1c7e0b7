package dev.xlac.core.neuron;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.JsonStringList;
import java.util.List;
import org.junit.jupiter.api.Test;

class NeuronNameTest {
  @Test
  void jsonStringList_parsesStrictly_andWritesBack() {
    assertThat(JsonStringList.parse(" [ \"a\\\"b\" , \"\\u00e9\\n\" ] ")).containsExactly("a\"b", "\u00e9\n");
    assertThat(JsonStringList.parse("[]")).isEmpty();
    assertThatThrownBy(() -> JsonStringList.parse("[1]")).hasMessageContaining("expected '\"'");
    assertThatThrownBy(() -> JsonStringList.parse("[\"a\"] x")).hasMessageContaining("after the array");
    assertThat(JsonStringList.parse(JsonStringList.write(List.of("--a=\"x\"", "b")))).containsExactly("--a=\"x\"", "b");
  }

  @Test
  void compileFlags_parsesTheJson_andIsEmptyWithoutIt() {
    assertThat(new NeuronName("neuronxcc-2.15.1", "MODULE_1+a", "[\"--target=trn2\", \"-O1\"]").compileFlags())
        .containsExactly("--target=trn2", "-O1");
    assertThat(new NeuronName("neuronxcc-2.15.1", "MODULE_1+a", null).compileFlags()).isEmpty();
    assertThatThrownBy(() -> new NeuronName("neuronxcc-2.15.1", "MODULE_1+a", "{}").compileFlags())
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void names_areSinglePathElements() {
    for (String bad : List.of("", ".", "..", "a/b", "a\\b", "a\nb", "a\0b")) {
      assertThatThrownBy(() -> new NeuronName(bad, "MODULE_1", null)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> new NeuronName("neuronxcc-1.0", bad, null)).isInstanceOf(IllegalArgumentException.class);
    }
  }
}
