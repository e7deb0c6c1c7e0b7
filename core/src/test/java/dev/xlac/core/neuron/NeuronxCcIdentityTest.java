package dev.xlac.core.neuron;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class NeuronxCcIdentityTest {

  @Test
  void splitFlags_followsShellQuoting() {
    assertThat(NeuronxCcIdentity.splitFlags("  --model-type transformer\t-O1  ")).containsExactly("--model-type",
        "transformer", "-O1");
    assertThat(NeuronxCcIdentity.splitFlags("--tensorizer-options='--a --b=2' \"--x=\\\"q\\\" y\" a\\ b ''"))
        .containsExactly("--tensorizer-options=--a --b=2", "--x=\"q\" y", "a b", "");
    assertThat(NeuronxCcIdentity.splitFlags("")).isEmpty();
  }

  @Test
  void splitFlags_unterminatedQuote_isBadInput() {
    assertThatThrownBy(() -> NeuronxCcIdentity.splitFlags("--a='x"))
        .isInstanceOfSatisfying(XlacException.class, e -> assertThat(e.exitCode()).isEqualTo(ExitCode.BAD_INPUT))
        .hasMessageContaining("unterminated single quote");
    assertThatThrownBy(() -> NeuronxCcIdentity.splitFlags("--a=\"x")).hasMessageContaining("unterminated double quote");
    assertThatThrownBy(() -> NeuronxCcIdentity.splitFlags("--a\\")).hasMessageContaining("backslash");
  }

  @Test
  void normalise_dropsWrapperAndDriverOwnedFlagsInBothForms_andKeepsOrder() {
    NeuronxCcIdentity.Flags f = NeuronxCcIdentity.normalise(List.of("-O2", "--cache_dir", "/c", "--auto-cast=none",
        "--log_level=WARNING", "--no_cache", "--retry_failed_compilation", "--log_level", "INFO", "--cache_dir=/d",
        "--framework=XLA", "--output", "x.neff", "--target", "inf2", "-O1", "--no_cache", "--model-type=transformer"));
    assertThat(f.kept()).containsExactly("-O2", "--auto-cast=none", "-O1", "--model-type=transformer");
    assertThat(f.target()).contains("inf2");
    assertThat(f.dropped()).contains("--cache_dir /c", "--log_level INFO", "--no_cache", "--output x.neff");
  }

  @Test
  void normalise_switchesDoNotSwallowTheNextWord() {
    assertThat(NeuronxCcIdentity.normalise(List.of("--no_cache", "transformer")).kept()).containsExactly("transformer");
    assertThat(NeuronxCcIdentity.normalise(List.of("--cache_dir", "-O1")).kept()).containsExactly("-O1");
  }

  @Test
  void normalise_unknownTarget_isBadInput() {
    assertThatThrownBy(() -> NeuronxCcIdentity.normalise(List.of("--target=trn9")))
        .isInstanceOf(XlacException.class).hasMessageContaining("'trn9' is not one of inf2, trn1, trn1n, trn2");
  }

  @Test
  void forCacheEntry_takesTheVersionFromTheDirectoryAndTheTargetFromTheFlags() {
    CompilerIdentity a = NeuronxCcIdentity.forCacheEntry("neuronxcc-2.15.128.0+56dc5a86",
        List.of("--model-type=transformer", "--target=trn2", "--cache_dir=/var/tmp/neuron-compile-cache"));
    assertThat(a).isEqualTo(new CompilerIdentity("neuronx-cc", "2.15.128.0+56dc5a86", "trn2",
        List.of("--model-type=transformer"), Map.of()));
    assertThat(NeuronxCcIdentity.forCacheEntry("neuronxcc-2.15.128.0+56dc5a86", List.of()).target()).isEqualTo("trn1");
    assertThatThrownBy(() -> NeuronxCcIdentity.forCacheEntry("pjrt-1.0", List.of()))
        .hasMessageContaining("not a Neuron cache version directory");
  }

  @Test
  void parseVersionOutput_prefersTheCompilerLine() {
    assertThat(NeuronxCcIdentity.parseVersionOutput(
        "\nNeuronX Compiler version 2.15.128.0+56dc5a86\n\nPython version 3.10.12\nNumPy version 1.25.2\n"))
        .contains("2.15.128.0+56dc5a86");
    assertThat(NeuronxCcIdentity.parseVersionOutput("neuronx-cc 2.16.1.0\n")).contains("2.16.1.0");
    assertThat(NeuronxCcIdentity.parseVersionOutput("Python version 3.10.12\nNeuronX Compiler version 2.1.0.76\n"))
        .contains("2.1.0.76");
    assertThat(NeuronxCcIdentity.parseVersionOutput("nothing here")).isEqualTo(Optional.empty());
  }

  @Test
  void versionDirectory_roundTrips() {
    assertThat(NeuronxCcIdentity.versionOfDirectory(NeuronxCcIdentity.versionDirectory("2.15.128.0+56dc5a86")))
        .contains("2.15.128.0+56dc5a86");
    assertThat(NeuronxCcIdentity.versionOfDirectory("neuronxcc-")).isEmpty();
    assertThat(NeuronxCcIdentity.versionOfDirectory("MODULE_1+2")).isEmpty();
  }
}
