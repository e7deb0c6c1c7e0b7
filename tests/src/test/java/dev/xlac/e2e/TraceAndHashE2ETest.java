package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fingerprint's promises on live JAX runs, through the real launcher: the same script in two
 * processes, a renamed copy with shifted source lines, and a changed batch size.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TraceAndHashE2ETest {
  @TempDir
  static Path work;

  private Path mlp;
  private Map<String, String> run1;

  @BeforeAll
  void traceOnce() throws Exception {
    mlp = Launcher.root().resolve("samples/jax/mlp.py");
    Launcher.traceJax(mlp, work.resolve("run1"), "--steps", "2");
    run1 = hash(work.resolve("run1"));
  }

  /** File name without the module number, to fingerprint, from `xlac hash` output. */
  private static Map<String, String> hash(Path dir) throws Exception {
    Launcher.Result r = Launcher.xlac("hash", dir.toString());
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).doesNotContain("cannot read");
    Map<String, String> out = new TreeMap<>();
    for (String line : r.out().lines().toList()) {
      String[] parts = line.split("  ");
      assertThat(parts).hasSize(3);
      assertThat(parts[0]).matches("hlo1:[0-9a-f]{64}");
      out.put(Path.of(parts[2]).getFileName().toString().replaceFirst("^module_\\d+\\.", ""), parts[0]);
    }
    return out;
  }

  private static String trainStep(Map<String, String> fps, String fn) {
    return fps.entrySet().stream().filter(e -> e.getKey().startsWith("jit_" + fn + ".")).map(Map.Entry::getValue)
        .findFirst().orElseThrow(() -> new AssertionError("no jit_" + fn + " module in " + fps.keySet()));
  }

  @Test
  void secondProcess_givesTheSameFingerprints() throws Exception {
    Launcher.traceJax(mlp, work.resolve("run2"), "--steps", "2");
    assertThat(run1).hasSizeGreaterThan(5);
    assertThat(hash(work.resolve("run2"))).isEqualTo(run1);
  }

  @Test
  void renamedFunctionsAndShiftedLines_giveTheSameSet() throws Exception {
    // A copy of the sample under another file name, its functions renamed and its lines shifted.
    String src = Files.readString(mlp);
    String renamed = "# shifted\n# by\n# five\n# comment\n# lines\n" + src.replace("train_step", "update_fn");
    assertThat(renamed).isNotEqualTo(src);
    Path copy = work.resolve("renamed_copy.py");
    Files.writeString(copy, renamed);
    Map<String, String> fps = hash(traced(copy, "renamed"));
    assertThat(Set.copyOf(fps.values())).isEqualTo(Set.copyOf(run1.values()));
    assertThat(trainStep(fps, "update_fn")).isEqualTo(trainStep(run1, "train_step"));
  }

  @Test
  void changedBatchSize_changesTheTrainStep() throws Exception {
    Launcher.traceJax(mlp, work.resolve("batch64"), "--steps", "2", "--batch-size", "64");
    assertThat(trainStep(hash(work.resolve("batch64")), "train_step")).isNotEqualTo(trainStep(run1, "train_step"));
  }

  @Test
  void decoderSample_tracesAndEveryGraphHashes() throws Exception {
    Path dumps = work.resolve("decoder");
    Launcher.traceJax(Launcher.root().resolve("samples/jax/decoder.py"), dumps, "--steps", "2");
    Launcher.Result r = Launcher.xlac("hash", "--json", dumps.toString());
    assertThat(r.exitCode()).as(r.err()).isZero();
    List<String> kinds = r.out().lines().filter(l -> l.contains("\"kind\"")).collect(Collectors.toList());
    assertThat(kinds).isNotEmpty().allSatisfy(k -> assertThat(k).contains("hlo_proto"));
    assertThat(r.out()).contains("jit_train_step");
  }

  private Path traced(Path script, String name) throws Exception {
    Path dumps = work.resolve(name);
    Launcher.traceJax(script, dumps, "--steps", "2");
    return dumps;
  }
}
