package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Why a graph is new, on real JAX runs through the real launcher: the decoder sample is dumped once
 * with its defaults, then rerun with one changed hyperparameter at a time (into the same cache, as a
 * user would), and the line after dump's summary must name that change. A renamed copy of the
 * script is the same program: nothing new, no line. The same changes to the PyTorch/XLA sample.
 * Last, a one-shot parallel-compile's --report carries the reason per new graph.
 */
class WhyNewE2ETest {
  @TempDir
  Path work;

  private static Map<String, String> cpu() {
    return Map.of("JAX_PLATFORMS", "cpu", "PJRT_DEVICE", "CPU");
  }

  private String cache() {
    return work.resolve("cache").toString();
  }

  private static String decoder() {
    return Launcher.root().resolve("samples/jax/decoder.py").toString();
  }

  private Launcher.Result dump(String script, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Launcher.root().resolve("xlac").toString(), "dump", "--cache", cache(),
        "--", Launcher.python(), script, "--steps", "1"));
    cmd.addAll(List.of(args));
    Launcher.Result r = Launcher.run(cmd, cpu(), 300);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).contains("done: decoder steps=1");
    return r;
  }

  /** The why-new line: the last line of stdout, right after dump's summary. */
  private static String whyLine(Launcher.Result r) {
    List<String> lines = r.out().lines().toList();
    assertThat(lines.get(lines.size() - 2)).as(r.out()).startsWith("dumped ");
    return lines.getLast();
  }

  @Test
  void decoder_rerunWithOneChangedHyperparameter_namesTheChange() throws Exception {
    Launcher.Result first = dump(decoder());
    assertThat(first.out()).contains(" new, 0 already in the cache").doesNotContain("new graph");

    Path renamed = Files.copy(Path.of(decoder()), work.resolve("my_renamed_decoder.py"));
    Launcher.Result same = dump(renamed.toString());
    assertThat(same.out()).as("a renamed script is the same program").contains(" 0 new, ")
        .doesNotContain("new graph");

    assertThat(whyLine(dump(decoder(), "--batch-size", "12"))).startsWith("5 new graphs: ")
        .containsPattern("\\d+ differ from cached graphs only in batch size \\(8 -> 12: [^)]*jit_train_step");

    assertThat(whyLine(dump(decoder(), "--seq-len", "32")))
        .as("the tokens are seq_len + 1 long: the graph's own sizes")
        .containsPattern("\\d+ differ from cached graphs (only )?in sequence length \\(65 -> 33: [^)]*jit_train_step");

    assertThat(whyLine(dump(decoder(), "--lr", "1e-3")))
        .isEqualTo("1 new graph: 1 differs from a cached graph only in 5 constants (0.003 -> 0.001: jit_train_step)");

    assertThat(whyLine(dump(decoder(), "--n-layers", "3"))).as("one more layer: 9 weights, their Adam m and v")
        .containsPattern("1 differs from a cached graph in 27 added entry parameters and \\d+ added instructions"
            + " \\(jit_train_step\\)");

    assertThat(whyLine(dump(decoder(), "--dtype", "bfloat16")))
        .as("the casts of the weights to bf16 (jit_convert_element_type) change the dtype too")
        .containsPattern("\\d+ differ from cached graphs in dtype \\(f32 -> bf16: [^)]*jit_convert_element_type x\\d+"
            + "[^)]*jit_train_step")
        .doesNotContain("other ways");
  }

  /**
   * The PyTorch/XLA sample, lazy tensors, one step: a token model (so that there is a sequence
   * length) with Python numbers inlined as constants (so that the learning rate is in the graph;
   * torch_xla passes numbers as device data by default). One baseline serves every change.
   */
  private Launcher.Result torchDump(String script, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Launcher.root().resolve("xlac").toString(), "dump", "--frontend",
        "torch-xla", "--cache", cache(), "--", Launcher.python(), script, "--steps", "1", "--inline-scalars",
        "--seq-len", "16"));
    cmd.addAll(List.of(args));
    Launcher.Result r = Launcher.run(cmd, cpu(), 300);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).contains("done: 2 steps");
    return r;
  }

  @Test
  void torchXla_rerunWithOneChangedHyperparameter_namesTheChange() throws Exception {
    Path samples = Launcher.root().resolve("samples/torch_xla");
    String script = samples.resolve("lazy_mark_step.py").toString();
    Launcher.Result first = torchDump(script);
    assertThat(first.out()).contains("3 new, 0 already in the cache").doesNotContain("new graph");

    assertThat(whyLine(torchDump(script, "--batch-size", "12"))).as("the token ids and their labels")
        .matches("\\d+ new graphs?: \\d+ differs? from (a )?cached graphs? only in batch size \\(16 -> 12:"
            + " SyncTensorsGraph\\.\\d+.*");

    assertThat(whyLine(torchDump(script, "--seq-len", "8"))).as("the token ids' second dimension")
        .matches("\\d+ new graphs?: \\d+ differs? from (a )?cached graphs? only in sequence length \\(16 -> 8:"
            + " SyncTensorsGraph\\.\\d+.*");

    assertThat(whyLine(torchDump(script, "--lr", "0.05"))).as("SGD's -lr, inlined")
        .matches("\\d+ new graphs?: \\d+ differs? from (a )?cached graphs? only in \\d+ constants \\(-0\\.1 -> -0\\.05:"
            + " SyncTensorsGraph\\.\\d+.*");

    assertThat(whyLine(torchDump(script, "--layers", "3")))
        .as("one more hidden layer: its weight and bias; the graphs are renamed (SyncTensorsGraph.N counts"
            + " nodes), so the relatives are found by structure")
        .startsWith("3 new graphs: ").doesNotContain("no relative")
        .containsPattern("differs? from (a )?cached graphs? in 2 added entry parameters and \\d+ added instructions"
            + " \\(SyncTensorsGraph\\.\\d+");

    assertThat(whyLine(torchDump(script, "--dtype", "bfloat16"))).doesNotContain("no relative")
        .matches("\\d+ new graphs?: \\d+ differs? from (a )?cached graphs? (only )?in dtype \\(f32 -> bf16:"
            + " SyncTensorsGraph\\.\\d+.*");

    Path dir = Files.createDirectories(work.resolve("renamed"));
    Files.copy(samples.resolve("common.py"), dir.resolve("common.py"));
    Path renamed = Files.copy(Path.of(script), dir.resolve("my_renamed_training.py"));
    Launcher.Result same = torchDump(renamed.toString());
    assertThat(same.out()).as("a renamed script is the same program").contains(" 0 new, 3 already in the cache")
        .doesNotContain("new graph");
  }

  @Test
  void oneShot_reportCarriesTheReasonPerNewGraph() throws Exception {
    // Dumped through the plugin, as the one-shot traces (the proxy stands in for JAX's CPU client under --plugin):
    // the plugin's own XLA turns JAX's StableHLO into the graphs, and another XLA build's graphs differ otherwise.
    Launcher.Result dumped = Launcher.run(List.of(Launcher.root().resolve("xlac").toString(), "dump", "--plugin",
        Launcher.cpuPlugin(), "--cache", cache(), "--", Launcher.python(), decoder(), "--steps", "1"), cpu(), 300);
    assertThat(dumped.exitCode()).as(dumped.err()).isZero();
    Path report = work.resolve("report.json");
    Launcher.Result r = Launcher.run(List.of(Launcher.root().resolve("xlac").toString(), "parallel-compile",
        "--cache", cache(), "--plugin", Launcher.cpuPlugin(), "--report", report.toString(), "--",
        Launcher.python(), decoder(), "--steps", "1", "--lr", "1e-3"), cpu(), 300);
    assertThat(r.exitCode()).as(r.err()).isZero();
    List<String> lines = r.out().lines().toList();
    assertThat(lines.get(lines.size() - 2)).startsWith("wall ");
    assertThat(lines.getLast())
        .isEqualTo("1 new graph: 1 differs from a cached graph only in 5 constants (0.003 -> 0.001: jit_train_step)");
    String json = Files.readString(report);
    assertThat(json).contains("\"reason\": \"5 constants (0.003 -> 0.001)\"").contains("\"relative\": \"hlo1:");
  }
}
