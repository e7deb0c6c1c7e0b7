package dev.xlac.trace;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloReadException;
import dev.xlac.hlo.TestModules;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.HloProtos.HloProto;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DumpWatcherTest {
  @TempDir
  Path staging;

  private final List<CapturedModule> captured = new ArrayList<>();
  private final List<HloReadException> errors = new ArrayList<>();
  private final CaptureListener listener = new CaptureListener() {
    @Override
    public void captured(CapturedModule m) {
      captured.add(m);
    }

    @Override
    public void unreadable(HloReadException e) {
      errors.add(e);
    }
  };

  private static byte[] dumpBytes(HloModuleProto m) {
    return HloProto.newBuilder().setHloModule(m.toBuilder().setName("jit_step")).build().toByteArray();
  }

  @Test
  void halfWrittenFile_isReadOnceComplete_notBefore() throws Exception {
    DumpWatcher w = new DumpWatcher(staging, Frontend.JAX, null, listener);
    byte[] full = dumpBytes(TestModules.mulAdd(2f));
    Path f = staging.resolve("pid-41/module_0003.jit_step.before_optimizations.hlo.pb");
    Files.createDirectories(f.getParent());
    Files.write(f, Arrays.copyOf(full, full.length / 2));
    w.poll(false); // first sight: not yet known to be stable
    w.poll(false); // stable but truncated: the read fails and is retried later, not reported
    assertThat(captured).isEmpty();
    assertThat(errors).isEmpty();
    Files.write(f, full);
    Files.setLastModifiedTime(f, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() + 5000));
    w.poll(false); // changed since the last poll: wait
    assertThat(captured).isEmpty();
    w.poll(false);
    assertThat(captured).singleElement().satisfies(m -> {
      assertThat(m.moduleName()).isEqualTo("jit_step");
      assertThat(m.process()).isEqualTo("pid-41");
      assertThat(m.fingerprint()).isEqualTo(GraphFingerprint.of(m.module().graph()));
      assertThat(m.neuron()).isEmpty();
    });
    w.poll(true); // never handed over twice
    assertThat(captured).hasSize(1);
    assertThat(w.counts()).isEqualTo(new DumpWatcher.Counts(1, 0, 0));
  }

  @Test
  void lastPoll_readsUnstableFiles_andReportsUnreadableOnes() throws Exception {
    DumpWatcher w = new DumpWatcher(staging, Frontend.AUTO, null, listener);
    Files.write(staging.resolve("module_0000.jit_a.before_optimizations.hlo.pb"), dumpBytes(TestModules.mulAdd(1f)));
    byte[] full = dumpBytes(TestModules.mulAdd(3f));
    Files.write(staging.resolve("module_0001.jit_b.before_optimizations.hlo.pb"), Arrays.copyOf(full, full.length - 3));
    Files.writeString(staging.resolve("module_0001.jit_b.cpu_after_optimizations.txt"), "not an input");
    w.poll(true);
    assertThat(captured).singleElement().extracting(CapturedModule::process).isEqualTo(".");
    assertThat(errors).singleElement().extracting(HloReadException::getMessage).asString()
        .startsWith("cannot read " + staging.resolve("module_0001.jit_b.before_optimizations.hlo.pb"));
    assertThat(w.counts()).isEqualTo(new DumpWatcher.Counts(1, 0, 1));
  }

  @Test
  void moduleFilter_keepsMatchingNamesOnly() throws Exception {
    DumpWatcher w = new DumpWatcher(staging, Frontend.JAX, Pattern.compile("train"), listener);
    HloModuleProto m = TestModules.mulAdd(1f);
    TestModules.writeDump(staging, "module_0000.jit_train_step.before_optimizations.hlo.pb", m.toBuilder().setName("jit_train_step").build());
    TestModules.writeDump(staging, "module_0001.jit_sqrt.before_optimizations.hlo.pb", m.toBuilder().setName("jit_sqrt").build());
    w.poll(true);
    assertThat(captured).extracting(CapturedModule::moduleName).containsExactly("jit_train_step");
    assertThat(w.counts()).isEqualTo(new DumpWatcher.Counts(1, 1, 0));
  }

  @Test
  void neuron_harvestsModuleDirectoriesWithNameAndFlags() throws Exception {
    DumpWatcher w = new DumpWatcher(staging, Frontend.NEURON, null, listener);
    Path entry = staging.resolve("neuronxcc-2.21.0/MODULE_1234567890123456789+abcdef01");
    Files.createDirectories(entry);
    Files.write(entry.resolve("model.hlo_module.pb"), TestModules.mulAdd(5f).toBuilder().setName("SyncTensorsGraph.7").build().toByteArray());
    Files.writeString(entry.resolve("compile_flags.json"), "[\"--model-type=transformer\", \"-O1\"]");
    Path other = staging.resolve("neuronxcc-2.21.0/not-a-module");
    Files.createDirectories(other);
    Files.write(other.resolve("model.hlo_module.pb"), TestModules.mulAdd(6f).toByteArray());
    w.poll(true);
    assertThat(captured).singleElement().satisfies(m -> {
      assertThat(m.moduleName()).isEqualTo("SyncTensorsGraph.7");
      assertThat(m.neuron()).contains(new CapturedModule.NeuronModule("MODULE_1234567890123456789+abcdef01",
          "neuronxcc-2.21.0", List.of("--model-type=transformer", "-O1"),
          "[\"--model-type=transformer\", \"-O1\"]"));
    });
  }
}
