package dev.xlac.hlo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.hlo.DumpFileName.Role;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class DumpFileNameTest {

  @Test
  void compilerInputsAreRecognisedWithTheirModuleNames() {
    DumpFileName a = DumpFileName.of("module_0048.jit_train_step.before_optimizations.hlo.pb");
    assertThat(a.role()).isEqualTo(Role.COMPILER_INPUT);
    assertThat(a.kind()).contains(HloFileKind.HLO_PROTO);
    assertThat(a.moduleName()).contains("jit_train_step");
    assertThat(a.gzipped()).isFalse();

    DumpFileName ts = DumpFileName.of("1700000000123.module_0003.SyncTensorsGraph.12.before_optimizations.hlo.pb.gz");
    assertThat(ts.role()).isEqualTo(Role.COMPILER_INPUT);
    assertThat(ts.moduleName()).contains("SyncTensorsGraph.12");
    assertThat(ts.gzipped()).isTrue();

    assertThat(DumpFileName.of("module_0001.before_optimizations.hlo.pb").moduleName()).isEqualTo(Optional.empty());
  }

  @Test
  void snapshotsInBothNamingSchemes() {
    assertThat(DumpFileName.of("module_0046.jit__argmax.snapshot.-95955036.pb").kind()).contains(HloFileKind.HLO_SNAPSHOT);
    assertThat(DumpFileName.of("module_0046.jit__argmax.snapshot.12.pb").moduleName()).contains("jit__argmax");
    assertThat(DumpFileName.of("17.module_0001.jit_f.execution_0003.hlo_snapshot.pb").kind())
        .contains(HloFileKind.HLO_SNAPSHOT);
  }

  @Test
  void neuronModulesAndPlainProtos() {
    assertThat(DumpFileName.of("model.hlo_module.pb").kind()).contains(HloFileKind.HLO_MODULE);
    assertThat(DumpFileName.of("my_graph.hlo.pb").kind()).contains(HloFileKind.HLO_PROTO);
  }

  @Test
  void otherDumpFilesAreSkipped() {
    for (String name : new String[] {
        "module_0000.jit_stage.cpu_after_optimizations.hlo.pb",
        "module_0000.jit_stage.sm_9.0_gpu_after_optimizations.hlo.pb",
        "module_0000.jit_stage.cpu_after_optimizations-memory-usage-report.pb",
        "module_0000.jit_stage.cpu_after_optimizations-buffer-assignment.txt",
        "module_0000.jit_stage.0012.cpu-pipeline.after_dce.before_cse.hlo.pb",
        "module_0000.jit_stage.debug_options",
        "model.neff", "compile_flags.json", "model.done"}) {
      assertThat(DumpFileName.of(name).role()).as(name).isEqualTo(Role.OTHER);
    }
  }

  @Test
  void textCompilerInputsAreFlagged() {
    assertThat(DumpFileName.of("module_0048.jit_train_step.before_optimizations.txt").role()).isEqualTo(Role.TEXT_INPUT);
  }

  @Test
  void beforeOptimizationsProtos_areTheDumpsCompilerInputs() {
    for (String name : new String[] {
        "module_0048.jit_train_step.before_optimizations.hlo.pb",
        "1700000000123.module_0003.SyncTensorsGraph.12.before_optimizations.hlo.pb.gz",
        "graph.before_optimizations.hlo.pb"}) {
      assertThat(DumpFileName.of(name).isBeforeOptimizationsProto()).as(name).isTrue();
    }
    for (String name : new String[] {
        "module_0048.jit_train_step.before_optimizations.txt",
        "module_0046.jit__argmax.snapshot.12.pb",
        "module_0046.jit__argmax.before_optimizations.snapshot.12.pb",
        "module_0000.jit_stage.cpu_after_optimizations.hlo.pb",
        "module_0001.jit_f.before_optimizations.hlo_module.pb",
        "my_graph.hlo.pb", "model.hlo_module.pb"}) {
      assertThat(DumpFileName.of(name).isBeforeOptimizationsProto()).as(name).isFalse();
    }
  }
}
