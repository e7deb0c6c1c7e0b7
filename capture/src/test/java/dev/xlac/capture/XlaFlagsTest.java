package dev.xlac.capture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.JsonStringList;
import dev.xlac.core.XlaFlagsText;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class XlaFlagsTest {
  private static final Path DIR = Path.of("/stage/main");

  @Test
  void merge_addsDumpFlagsToNoFlags() {
    XlaFlags.Merged m = XlaFlags.merge(null, DIR);
    assertThat(m.flags()).isEqualTo("--xla_dump_to=/stage/main --xla_dump_hlo_as_proto");
    assertThat(m.replacedDumpTo()).isEmpty();
    assertThat(m.notes()).isEmpty();
  }

  @Test
  void merge_keepsEveryUserFlagInOrder() {
    XlaFlags.Merged m = XlaFlags.merge("  --xla_cpu_use_thunk_runtime=false\t--xla_dump_hlo_as_text --xla_force_host_platform_device_count=2 ", DIR);
    assertThat(m.flags()).isEqualTo("--xla_cpu_use_thunk_runtime=false --xla_dump_hlo_as_text "
        + "--xla_force_host_platform_device_count=2 --xla_dump_to=/stage/main --xla_dump_hlo_as_proto");
  }

  @Test
  void merge_replacesTheUsersDumpDirectoryAndSaysSo() {
    XlaFlags.Merged m = XlaFlags.merge("--xla_dump_to=/home/me/dumps --xla_dump_hlo_module_re=train", DIR);
    assertThat(m.flags()).isEqualTo("--xla_dump_hlo_module_re=train --xla_dump_to=/stage/main --xla_dump_hlo_as_proto");
    assertThat(m.replacedDumpTo()).contains("/home/me/dumps");
    assertThat(m.notes()).singleElement().asString().contains("--xla_dump_to=/home/me/dumps")
        .contains("--keep-dumps /home/me/dumps");
  }

  @Test
  void merge_doesNotRepeatProtoFlag_butOverridesProtoOff() {
    assertThat(XlaFlags.merge("--xla_dump_hlo_as_proto=true", DIR).flags())
        .isEqualTo("--xla_dump_hlo_as_proto=true --xla_dump_to=/stage/main");
    XlaFlags.Merged off = XlaFlags.merge("--xla_dump_hlo_as_proto=false", DIR);
    assertThat(off.flags()).isEqualTo("--xla_dump_to=/stage/main --xla_dump_hlo_as_proto");
    assertThat(off.notes()).hasSize(1);
  }

  @Test
  void merge_keepsQuotedValuesWhole_andFindsNoDumpFlagInsideThem() throws Exception {
    XlaFlags.Merged m = XlaFlags.merge("--xla_foo=\"a  b\" --xla_bar='x --xla_dump_to=/y' --xla_baz=\"'q'\"", DIR);
    assertThat(m.flags()).isEqualTo("--xla_foo=\"a  b\" --xla_bar=\"x --xla_dump_to=/y\" --xla_baz=\"'q'\""
        + " --xla_dump_to=/stage/main --xla_dump_hlo_as_proto");
    assertThat(m.replacedDumpTo()).isEmpty();
    // XLA reads the user's words back unchanged
    assertThat(XlaFlagsText.words(m.flags())).containsExactly("--xla_foo=a  b", "--xla_bar=x --xla_dump_to=/y",
        "--xla_baz='q'", "--xla_dump_to=/stage/main", "--xla_dump_hlo_as_proto");
    assertThat(XlaFlagsText.words(XlaFlags.merge(null, Path.of("/a b")).flags()).getFirst())
        .isEqualTo("--xla_dump_to=/a b");
  }

  @Test
  void merge_takesTheFlagsOfTheFileXlaFlagsNames(@TempDir Path dir) throws Exception {
    Path file = Files.writeString(dir.resolve("flags"), "--xla_cpu_x=1\n--xla_dump_to=/mine\n");
    XlaFlags.Merged m = XlaFlags.merge(file.toString(), DIR);
    assertThat(m.flags()).isEqualTo("--xla_cpu_x=1 --xla_dump_to=/stage/main --xla_dump_hlo_as_proto");
    assertThat(m.replacedDumpTo()).contains("/mine");
    XlaFlags.Merged missing = XlaFlags.merge(dir.resolve("missing").toString(), DIR);
    assertThat(missing.flags()).isEqualTo("--xla_dump_to=/stage/main --xla_dump_hlo_as_proto");
    assertThat(missing.notes()).singleElement().asString().startsWith("XLA_FLAGS names the file " + dir);
  }

  @Test
  void frontend_parseAndResolve() {
    assertThat(Frontend.parse("torch-xla")).isEqualTo(Frontend.TORCH_XLA);
    assertThat(Frontend.parse("JAX")).isEqualTo(Frontend.JAX);
    assertThat(Frontend.parse("tensorflow")).isNull();
    assertThat(Frontend.AUTO.resolve(java.util.Map.of("PJRT_DEVICE", "NEURON"))).isEqualTo(Frontend.NEURON);
    assertThat(Frontend.AUTO.resolve(java.util.Map.of("PJRT_DEVICE", "CPU"))).isEqualTo(Frontend.AUTO);
    assertThat(Frontend.JAX.resolve(java.util.Map.of("PJRT_DEVICE", "NEURON"))).isEqualTo(Frontend.JAX);
  }

  @Test
  void jsonStringList_parsesNeuronCompileFlags() {
    assertThat(JsonStringList.parse(" [\"--model-type=transformer\", \"-O1\", \"a\\\"b\\u0041\"]\n"))
        .isEqualTo(List.of("--model-type=transformer", "-O1", "a\"bA"));
    assertThat(JsonStringList.parse("[]")).isEmpty();
    assertThatThrownBy(() -> JsonStringList.parse("[\"a\" \"b\"]")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> JsonStringList.parse("{\"a\": 1}")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> JsonStringList.parse("[\"a\"")).isInstanceOf(IllegalArgumentException.class);
  }
}
