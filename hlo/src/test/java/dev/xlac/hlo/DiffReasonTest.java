package dev.xlac.hlo;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** A diff's reason in a few words, and the nearest relative by distance, on real JAX dumps. */
class DiffReasonTest {
  private static final HloModuleReader READER = HloModuleReader.forDiff();

  private static LoadedModule golden(String run, String module) {
    return READER.read(TestModules.golden(run).resolve(module + ".before_optimizations.hlo.pb"));
  }

  private static GraphDiff trainStep(String from, String to) {
    return GraphDiff.of(golden(from, "module_0048.jit_train_step"), golden(to, "module_0048.jit_train_step"));
  }

  @Test
  void batchSize_ofTheTrainStepsInputsAndLabels_isNamedWithItsValues() {
    DiffReason r = DiffReason.of(trainStep("mlp_run1", "mlp_batch64"));
    assertThat(r.text()).isEqualTo("batch size (32 -> 64)");
    assertThat(r.verdict()).startsWith("entry parameter 19: f32[32,32] -> f32[64,32] (dim 0: 32 -> 64)");
    assertThat(r.inVerdictsWords()).isFalse();
  }

  @Test
  void oneConstant_isNamedWithItsValues_andNothingElse() {
    DiffReason r = DiffReason.of(trainStep("mlp_run1", "mlp_const"));
    assertThat(r.text()).isEqualTo("a constant (1.5 -> 2.5)");
    assertThat(r.only()).isTrue();
  }

  @Test
  void unmatchedPrograms_sayTheVerdict_andAreFarthest() {
    GraphDiff unrelated = GraphDiff.of(golden("mlp_run1", "module_0044.jit_matmul"),
        golden("mlp_run1", "module_0048.jit_train_step"));
    DiffReason r = DiffReason.of(unrelated);
    assertThat(r.inVerdictsWords()).isTrue();
    assertThat(r.only()).isFalse();
    assertThat(DiffReason.closeUnderAnotherName(unrelated)).isFalse();
    GraphDiff batch = trainStep("mlp_run1", "mlp_batch64");
    GraphDiff constant = trainStep("mlp_run1", "mlp_const");
    assertThat(DiffReason.distance(trainStep("mlp_run1", "mlp_run2"))).as("the same program").isZero();
    assertThat(DiffReason.distance(constant)).isPositive().isLessThan(DiffReason.distance(batch));
    assertThat(DiffReason.distance(batch)).isLessThan(DiffReason.distance(unrelated));
    assertThat(DiffReason.closeUnderAnotherName(batch)).as("the same program up to shapes").isTrue();
  }

  @Test
  void nearestRelative_isTheOneFewestChangesAway_andSkipsWhatCannotBeRead() {
    NearestRelative<String> n = new NearestRelative<>(golden("mlp_batch64", "module_0048.jit_train_step"));
    assertThat(n.matched()).as("no candidate yet").isFalse();
    n.consider("unreadable", null, false);
    n.consider("other batch and constant", golden("mlp_const", "module_0048.jit_train_step"), false);
    n.consider("other batch", golden("mlp_run1", "module_0048.jit_train_step"), false);
    n.consider("unrelated, under another name", golden("mlp_run1", "module_0044.jit_matmul"), true);
    assertThat(n.candidate()).isEqualTo("other batch");
    assertThat(n.compared()).isEqualTo(3);
    assertThat(n.matched()).isTrue();
    assertThat(DiffReason.of(n.diff()).text()).isEqualTo("batch size (32 -> 64)");
  }

  @Test
  void aPlainDimension_isCalledWhatTheRunsEvidenceSays() {
    assertThat(DiffReason.evidencedAs("dimension 0 of parameter 2")).isEqualTo(DiffReason.BATCH);
    assertThat(DiffReason.evidencedAs("dimension 1 of 3 entry parameters")).isEqualTo(DiffReason.SEQUENCE);
    assertThat(DiffReason.evidencedAs("dimension 2 of parameter 0")).isNull();
    assertThat(DiffReason.evidencedAs("a constant")).isNull();
  }
}
