package dev.xlac.hlo;

import static dev.xlac.hlo.TestModules.golden;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The fingerprint's promises, checked on real JAX dumps (see golden/README.md for how they were made). */
class GoldenDumpsTest {

  /** Module name to fingerprint, for every compiler input under the folder. */
  private static Map<String, GraphFingerprint> fingerprints(Path dir) throws InterruptedException {
    DumpDirectoryReader.Scan scan = DumpDirectoryReader.scan(List.of(dir));
    assertThat(scan.errors()).isEmpty();
    Map<String, GraphFingerprint> out = new TreeMap<>();
    for (var o : HloBatchReader.withDefaults().read(scan.inputs(), m -> m)) {
      assertThat(o.ok()).as("%s: %s", o.file(), o.error()).isTrue();
      out.put(o.file().getFileName().toString().replaceFirst("^module_\\d+\\.", ""), o.value().fingerprint());
    }
    return out;
  }

  private static Set<GraphFingerprint> set(Path dir) throws InterruptedException {
    return Set.copyOf(fingerprints(dir).values());
  }

  private static GraphFingerprint trainStep(Path dir) throws InterruptedException {
    Map<String, GraphFingerprint> fps = fingerprints(dir);
    List<GraphFingerprint> steps = fps.entrySet().stream()
        .filter(e -> e.getKey().startsWith("jit_train_step.") || e.getKey().startsWith("jit_update_fn."))
        .map(Map.Entry::getValue).collect(Collectors.toList());
    assertThat(steps).as("train step module in %s", dir).hasSize(1);
    return steps.getFirst();
  }

  @Test
  void sameScriptInTwoProcesses_givesTheSameFingerprints() throws InterruptedException {
    Map<String, GraphFingerprint> run1 = fingerprints(golden("mlp_run1"));
    assertThat(run1).hasSizeGreaterThan(5);
    assertThat(set(golden("mlp_run2"))).isEqualTo(Set.copyOf(run1.values()));
  }

  @Test
  void renamedFunctionsAndShiftedSourceLines_giveTheSameFingerprints() throws InterruptedException {
    assertThat(set(golden("mlp_renamed"))).isEqualTo(set(golden("mlp_run1")));
    assertThat(trainStep(golden("mlp_renamed"))).isEqualTo(trainStep(golden("mlp_run1")));
  }

  @Test
  void changedBatchSize_changesTheTrainStep() throws InterruptedException {
    assertThat(trainStep(golden("mlp_batch64"))).isNotEqualTo(trainStep(golden("mlp_run1")));
  }

  @Test
  void changedConstant_changesOnlyTheTrainStep() throws InterruptedException {
    assertThat(trainStep(golden("mlp_const"))).isNotEqualTo(trainStep(golden("mlp_run1")));
    Set<GraphFingerprint> others = new java.util.HashSet<>(set(golden("mlp_const")));
    others.remove(trainStep(golden("mlp_const")));
    assertThat(set(golden("mlp_run1"))).containsAll(others);
  }

  @Test
  void gzippedDumpMatchesThePlainOne() throws InterruptedException {
    Map<String, GraphFingerprint> gz = fingerprints(golden("gz"));
    assertThat(gz).hasSize(1);
    assertThat(set(golden("mlp_run1"))).contains(gz.values().iterator().next());
  }

  @Test
  void snapshotIsReadAndHoldsTheOptimisedModule() throws Exception {
    Path file;
    try (var files = java.nio.file.Files.list(golden("snapshot"))) {
      file = files.filter(f -> f.toString().endsWith(".pb")).findFirst().orElseThrow();
    }
    LoadedModule snap = new HloModuleReader().read(file);
    assertThat(snap.kind()).isEqualTo(HloFileKind.HLO_SNAPSHOT);
    assertThat(snap.moduleName()).isEqualTo("jit__argmax");
    // XLA snapshots the executable's module, i.e. after optimisation: it has fusions, the input has none.
    assertThat(ModuleSummary.of(snap).opcodeCounts()).containsKey("fusion");
    Path input;
    try (var files = java.nio.file.Files.list(golden("mlp_run1"))) {
      input = files.filter(f -> f.toString().contains("jit__argmax.before")).findFirst().orElseThrow();
    }
    ModuleSummary before = ModuleSummary.of(new HloModuleReader().read(input));
    assertThat(before.opcodeCounts()).doesNotContainKey("fusion");
    assertThat(ModuleSummary.of(snap).parameters()).isEqualTo(before.parameters());
  }

  @Test
  void scanSkipsASnapshotWhenItsBeforeOptimizationsDumpIsThere(@org.junit.jupiter.api.io.TempDir Path dir)
      throws Exception {
    Path snap;
    try (var files = java.nio.file.Files.list(golden("snapshot"))) {
      snap = files.filter(f -> f.toString().endsWith(".pb")).findFirst().orElseThrow();
    }
    java.nio.file.Files.copy(snap, dir.resolve(snap.getFileName()));
    assertThat(DumpDirectoryReader.scan(List.of(dir)).inputs()).hasSize(1);
    try (var files = java.nio.file.Files.list(golden("mlp_run1"))) {
      Path input = files.filter(f -> f.toString().contains("jit__argmax.before")).findFirst().orElseThrow();
      java.nio.file.Files.copy(input, dir.resolve(input.getFileName()));
    }
    DumpDirectoryReader.Scan scan = DumpDirectoryReader.scan(List.of(dir));
    assertThat(scan.inputs()).singleElement().satisfies(p -> assertThat(p.toString()).contains("before_optimizations"));
    assertThat(scan.skippedFiles()).isEqualTo(1);
  }

  @Test
  void scanSkipsNonInputsAndFlagsTextDumps() {
    DumpDirectoryReader.Scan text = DumpDirectoryReader.scan(List.of(golden("text")));
    assertThat(text.inputs()).isEmpty();
    assertThat(text.textDumps()).hasSize(1);
    assertThat(text.notes()).anySatisfy(n -> assertThat(n).contains("--xla_dump_hlo_as_proto"));
  }
}
