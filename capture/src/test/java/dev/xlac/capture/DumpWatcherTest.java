package dev.xlac.capture;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.hlo.GraphOracle;
import dev.xlac.hlo.HloReadException;
import dev.xlac.hlo.TestModules;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.HloProtos.HloProto;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
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
      assertThat(m.fingerprint()).isEqualTo(GraphOracle.fingerprint(GraphOracle.graph(m.module())));
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

  // --- The open-file rule, with real writer processes -------------------------------------------

  private final List<Process> started = new ArrayList<>();

  @AfterEach
  void stopWriters() throws InterruptedException {
    for (Process p : started) {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
    }
  }

  @TempDir
  Path parts;

  /**
   * A shell script that holds {@code target} open on fd 3 and writes {@code parts} into it one by
   * one (through {@code cat}, a child of the shell), each after a line on its stdin, printing a
   * line after each step; after the parts it closes the file, says "closed", and waits for a last
   * line. With {@code inAChild}, the script runs as the child of another shell (the command).
   */
  private final class Writer3 implements AutoCloseable {
    final Process process;
    final BufferedReader said;
    final Writer tell;

    Writer3(boolean inAChild, Path target, Path... parts) throws IOException {
      StringBuilder script = new StringBuilder("exec 3>\"$1\"; echo opened\n");
      for (int i = 0; i < parts.length; i++) {
        script.append("read go; cat \"$").append(i + 2).append("\" >&3; echo wrote\n");
      }
      script.append("read go; exec 3>&-; echo closed; read go\n");
      Path file = Files.writeString(Files.createTempFile(DumpWatcherTest.this.parts, "writer", ".sh"), script);
      List<String> argv = new ArrayList<>(inAChild ? List.of("sh", "-c", "sh \"$@\"; true", "sh") : List.of("sh"));
      argv.add(file.toString());
      argv.add(target.toString());
      for (Path p : parts) {
        argv.add(p.toString());
      }
      process = new ProcessBuilder(argv).redirectError(ProcessBuilder.Redirect.INHERIT).start();
      started.add(process);
      said = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
      tell = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
      expect("opened");
    }

    void step(String expected) throws IOException {
      tell.write("go\n");
      tell.flush();
      expect(expected);
    }

    private void expect(String line) throws IOException {
      assertThat(said.readLine()).isEqualTo(line);
    }

    @Override
    public void close() throws Exception {
      tell.close(); // the last read sees end of input and the shell exits
      assertThat(process.waitFor(10, TimeUnit.SECONDS)).isTrue();
    }
  }

  private Path part(String name, byte[] bytes) throws IOException {
    return Files.write(parts.resolve(name), bytes);
  }

  @Test
  void openFile_isNotCaptured_evenWhenStable_andIsCapturedAtTheFirstPollAfterClose() throws Exception {
    byte[] full = dumpBytes(TestModules.mulAdd(2f));
    Path first = part("first", Arrays.copyOf(full, full.length / 2));
    Path rest = part("rest", Arrays.copyOfRange(full, full.length / 2, full.length));
    Path f = Files.createDirectories(staging.resolve("pid-7")).resolve("module_0001.jit_step.before_optimizations.hlo.pb");
    try (Writer3 w = new Writer3(false, f, first, rest)) {
      DumpWatcher watcher = new DumpWatcher(staging, Frontend.JAX, null, listener,
          CommandProcesses.treeOf(w.process.toHandle()));
      watcher.poll(false); // created, empty, open
      w.step("wrote"); // half of the module, still open
      watcher.poll(false);
      watcher.poll(false);
      w.step("wrote"); // all of it, still open
      watcher.poll(false);
      watcher.poll(false);
      watcher.poll(false); // size and mtime held still across polls: the old rule would have read it
      assertThat(captured).isEmpty();
      assertThat(errors).isEmpty();
      w.step("closed"); // the writer is still alive, the file is closed
      watcher.poll(false);
      assertThat(captured).singleElement().satisfies(m -> {
        assertThat(m.moduleName()).isEqualTo("jit_step");
        assertThat(m.process()).isEqualTo("pid-7");
      });
      assertThat(watcher.counts()).isEqualTo(new DumpWatcher.Counts(1, 0, 0));
    }
  }

  @Test
  void closedFile_isCapturedAtItsFirstPoll() throws Exception {
    Path f = staging.resolve("module_0000.jit_a.before_optimizations.hlo.pb");
    try (Writer3 w = new Writer3(false, f, part("all", dumpBytes(TestModules.mulAdd(1f))))) {
      w.step("wrote");
      w.step("closed");
      DumpWatcher watcher = new DumpWatcher(staging, Frontend.JAX, null, listener,
          CommandProcesses.treeOf(w.process.toHandle()));
      watcher.poll(false); // first sight: the old rule would wait for a second poll
      assertThat(captured).hasSize(1);
    }
  }

  @Test
  void fileHeldOpenByAProcessOutsideTheCommand_doesNotBlockCapture() throws Exception {
    Path f = staging.resolve("module_0000.jit_a.before_optimizations.hlo.pb");
    Process command = new ProcessBuilder("sleep", "60").start();
    started.add(command);
    try (Writer3 outsider = new Writer3(false, f, part("all", dumpBytes(TestModules.mulAdd(1f))))) {
      outsider.step("wrote"); // complete, and still open in a process that is not the command's
      DumpWatcher watcher = new DumpWatcher(staging, Frontend.JAX, null, listener,
          CommandProcesses.treeOf(command.toHandle()));
      watcher.poll(false);
      assertThat(captured).hasSize(1);
      outsider.step("closed");
    }
  }

  @Test
  void writerInADescendantOfTheCommand_blocksCapture() throws Exception {
    Path f = staging.resolve("module_0000.jit_a.before_optimizations.hlo.pb");
    try (Writer3 w = new Writer3(true, f, part("all", dumpBytes(TestModules.mulAdd(1f))))) {
      DumpWatcher watcher = new DumpWatcher(staging, Frontend.JAX, null, listener,
          CommandProcesses.treeOf(w.process.toHandle()));
      w.step("wrote"); // complete, held open by the command's child only
      watcher.poll(false);
      watcher.poll(false);
      assertThat(captured).isEmpty();
      w.step("closed");
      watcher.poll(false);
      assertThat(captured).hasSize(1);
    }
  }

  @Test
  void commandThatEnded_fallsBackToTwoStablePolls() throws Exception {
    Process command = new ProcessBuilder("true").start();
    assertThat(command.waitFor(10, TimeUnit.SECONDS)).isTrue();
    TestModules.writeDump(staging, "module_0000.jit_a.before_optimizations.hlo.pb", TestModules.mulAdd(1f));
    DumpWatcher watcher = new DumpWatcher(staging, Frontend.JAX, null, listener,
        CommandProcesses.treeOf(command.toHandle()));
    watcher.poll(false);
    assertThat(captured).isEmpty(); // no proof that nothing writes it
    watcher.poll(false);
    assertThat(captured).hasSize(1);
  }

  @Test
  void neuron_waitsForClosedCompileFlags_elseTwoStablePolls() throws Exception {
    Process command = new ProcessBuilder("sleep", "60").start();
    started.add(command);
    DumpWatcher watcher = new DumpWatcher(staging, Frontend.NEURON, null, listener,
        CommandProcesses.treeOf(command.toHandle()));
    Path withFlags = Files.createDirectories(staging.resolve("neuronxcc-2.21.0/MODULE_1+a"));
    Files.write(withFlags.resolve("model.hlo_module.pb"), TestModules.mulAdd(1f).toByteArray());
    Files.writeString(withFlags.resolve("compile_flags.json"), "[\"-O1\"]");
    Path noFlags = Files.createDirectories(staging.resolve("neuronxcc-2.21.0/MODULE_2+a"));
    Files.write(noFlags.resolve("model.hlo_module.pb"), TestModules.mulAdd(2f).toByteArray());
    watcher.poll(false);
    assertThat(captured).extracting(m -> m.neuron().orElseThrow().moduleDir()).containsExactly("MODULE_1+a");
    watcher.poll(false); // compile_flags.json never came: the module is taken by the old rule
    assertThat(captured).extracting(m -> m.neuron().orElseThrow().moduleDir()).containsExactly("MODULE_1+a", "MODULE_2+a");
  }
}
