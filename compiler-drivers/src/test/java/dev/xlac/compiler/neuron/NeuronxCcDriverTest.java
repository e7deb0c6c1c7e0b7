package dev.xlac.compiler.neuron;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.FailureKind;
import dev.xlac.core.XlacException;
import dev.xlac.core.neuron.NeuronxCcIdentity;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.TestModules;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** NeuronxCcDriver against the stand-in compiler under tests/neuronx-cc-standin (the real one cannot be installed here). */
class NeuronxCcDriverTest {
  static final Path STANDIN = Path.of(System.getProperty("xlac.neuronxCcStandin",
      "../tests/neuronx-cc-standin/neuronx-cc")).toAbsolutePath().normalize();
  static final String STANDIN_VERSION = "2.99.1.0+0standin";

  @TempDir Path tmp;

  private NeuronxCcDriver open(List<String> flags, Duration timeout) {
    return NeuronxCcDriver.open(STANDIN, "trn1", flags, timeout, tmp.resolve("work"));
  }

  /** A small real module whose name carries the stand-in's behaviour marker. */
  static CompileRequest request(String mode) {
    HloModuleProto m = TestModules.mulAdd(mode.hashCode()).toBuilder().setName("jit_step XLAC_STANDIN:" + mode).build();
    return new CompileRequest(GraphFingerprint.of(m), m.getName(), m.toByteArray());
  }

  private List<Path> workDirs() throws IOException {
    try (Stream<Path> s = Files.list(tmp.resolve("work"))) {
      return s.toList();
    }
  }

  @Test
  void identity_isVersionTargetAndNormalisedFlags() {
    try (NeuronxCcDriver d = open(List.of("--cache_dir", "/var/tmp/c", "-O1", "--log_level=INFO", "--no_cache",
        "--model-type=transformer", "--retry_failed_compilation", "--target=trn1"), Duration.ZERO)) {
      CompilerIdentity id = d.identity();
      assertThat(id.driver()).isEqualTo("neuronx-cc");
      assertThat(id.compilerVersion()).isEqualTo(STANDIN_VERSION);
      assertThat(id.target()).isEqualTo("trn1");
      assertThat(id.flags()).containsExactly("-O1", "--model-type=transformer");
      assertThat(d.commandLine()).containsExactly(STANDIN.toString(), "compile", "--framework=XLA", "model.hlo_module.pb",
          "--target=trn1", "--output=model.neff", "-O1", "--model-type=transformer");
    }
  }

  @Test
  void identity_equalsTheNeuronCacheEntryIdentityForTheSameVersionAndFlags() {
    List<String> compileFlags = List.of("--target=trn2", "--model-type=transformer", "-O1");
    try (NeuronxCcDriver d = NeuronxCcDriver.open(STANDIN, null, List.of("--cache_dir=/c", "--model-type=transformer",
        "--target", "trn2", "-O1"), Duration.ZERO, tmp)) {
      assertThat(d.identity()).isEqualTo(NeuronxCcIdentity.forCacheEntry("neuronxcc-" + STANDIN_VERSION, compileFlags));
      assertThat(d.identity().digest())
          .isNotEqualTo(NeuronxCcIdentity.forCacheEntry("neuronxcc-" + STANDIN_VERSION, List.of("-O1")).digest());
    }
  }

  @Test
  void flags_explicitFlagsWinOverNeuronCcFlags_andEnvironmentIsTheFallback() {
    Map<String, String> env = Map.of("NEURON_CC_FLAGS", "--model-type 'transformer' --cache_dir=/x -O2");
    try (NeuronxCcDriver fromEnv = open(NeuronxCcIdentity.chooseFlags(null, env), Duration.ZERO);
        NeuronxCcDriver explicit = open(NeuronxCcIdentity.chooseFlags("-O1", env), Duration.ZERO);
        NeuronxCcDriver none = open(NeuronxCcIdentity.chooseFlags("", env), Duration.ZERO)) {
      assertThat(fromEnv.identity().flags()).containsExactly("--model-type", "transformer", "-O2");
      assertThat(explicit.identity().flags()).containsExactly("-O1");
      assertThat(none.identity().flags()).isEmpty();
    }
  }

  @Test
  void open_aTargetContradictingTheFlags_isBadInput() {
    assertThatThrownBy(() -> open(List.of("--target=inf2"), Duration.ZERO))
        .isInstanceOfSatisfying(XlacException.class, e -> assertThat(e.exitCode()).isEqualTo(ExitCode.BAD_INPUT))
        .hasMessageContaining("--target=inf2");
  }

  @Test
  void compile_realGoldenGraph_returnsTheNeffAndRemovesItsWorkDirectory() throws Exception {
    Path dump;
    try (Stream<Path> s = Files.list(TestModules.golden("mlp_run1"))) {
      dump = s.filter(p -> p.toString().endsWith(".before_optimizations.hlo.pb")).sorted().findFirst().orElseThrow();
    }
    LoadedModule module = new HloModuleReader().read(dump);
    CompileRequest req = CompileRequest.of(module);
    try (NeuronxCcDriver d = open(List.of("-O1"), Duration.ofMinutes(2))) {
      CompileOutcome out = d.compile(req);
      assertThat(out).isInstanceOf(CompileOutcome.Success.class);
      String neff = new String(((CompileOutcome.Success) out).artifact(), java.nio.charset.StandardCharsets.UTF_8);
      assertThat(neff).startsWith("NEFF-STANDIN").contains("target=trn1", "flags=-O1",
          "input-sha256=" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(req.hloModule())));
      assertThat(out.log()).contains("Compilation Successfully Completed", "--- log-neuron-cc.txt ---");
      assertThat(((CompileOutcome.Success) out).phases()).containsKeys("write", "compile", "read");
      assertThat(workDirs()).isEmpty();
    }
  }

  @Test
  void compile_exit70_isCompileErrorNamingTheFirstErrorLine() throws IOException {
    try (NeuronxCcDriver d = open(List.of(), Duration.ofMinutes(2))) {
      CompileOutcome out = d.compile(request("compile-error"));
      assertThat(out).isInstanceOfSatisfying(CompileOutcome.Failure.class, f -> {
        assertThat(f.kind()).isEqualTo(FailureKind.COMPILE_ERROR);
        assertThat(f.message()).contains("XLAC_STANDIN:compile-error", "exit code 70",
            "[ERROR] [NCC_STANDIN070] unsupported operator");
      });
      assertThat(out.log()).contains("INFO: lowering the graph");
      assertThat(workDirs()).isEmpty();
    }
  }

  @Test
  void compile_killedBySigkill_isOutOfMemory() {
    try (NeuronxCcDriver d = open(List.of(), Duration.ofMinutes(2))) {
      assertThat(d.compile(request("oom"))).isInstanceOfSatisfying(CompileOutcome.Failure.class, f -> {
        assertThat(f.kind()).isEqualTo(FailureKind.OUT_OF_MEMORY);
        assertThat(f.message()).contains("SIGKILL", "137");
      });
      assertThat(d.compile(request("f137"))).isInstanceOfSatisfying(CompileOutcome.Failure.class,
          f -> assertThat(f.kind()).isEqualTo(FailureKind.OUT_OF_MEMORY));
    }
  }

  @Test
  void compile_pastTheTimeout_killsTheWholeProcessGroupIncludingGrandchildren() throws Exception {
    try (NeuronxCcDriver d = open(List.of(), Duration.ofSeconds(3))) {
      CompileOutcome out = d.compile(request("grandchild"));
      assertThat(out).isInstanceOfSatisfying(CompileOutcome.Failure.class, f -> {
        assertThat(f.kind()).isEqualTo(FailureKind.TIMEOUT);
        assertThat(f.message()).contains("no result after 3 s", "process group was killed");
      });
      Matcher m = Pattern.compile("grandchild pid (\\d+)").matcher(out.log());
      assertThat(m.find()).as("the stand-in reported its grandchild: %s", out.log()).isTrue();
      long pid = Long.parseLong(m.group(1));
      // The grandchild is gone (or a zombie awaiting its reaper, which no longer runs anything).
      assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)
          .filter(p -> !isZombie(p.pid()))).isEmpty();
      assertThat(workDirs()).isEmpty();
    }
  }

  private static boolean isZombie(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      return stat.substring(stat.lastIndexOf(')') + 2).startsWith("Z");
    } catch (IOException e) {
      return true; // gone
    }
  }

  @Test
  void compile_hang_isTimeout() {
    try (NeuronxCcDriver d = open(List.of(), Duration.ofSeconds(2))) {
      assertThat(d.compile(request("hang"))).isInstanceOfSatisfying(CompileOutcome.Failure.class,
          f -> assertThat(f.kind()).isEqualTo(FailureKind.TIMEOUT));
    }
  }

  @Test
  void compile_otherSignalsAndExitCodes_areCrashes() {
    try (NeuronxCcDriver d = open(List.of(), Duration.ofMinutes(2))) {
      assertThat(d.compile(request("crash"))).isInstanceOfSatisfying(CompileOutcome.Failure.class, f -> {
        assertThat(f.kind()).isEqualTo(FailureKind.CRASH);
        assertThat(f.message()).contains("signal 11");
      });
      assertThat(d.compile(request("exit3"))).isInstanceOfSatisfying(CompileOutcome.Failure.class, f -> {
        assertThat(f.kind()).isEqualTo(FailureKind.CRASH);
        assertThat(f.message()).contains("exited with code 3", "internal failure in the stand-in");
      });
    }
  }

  @Test
  void compile_exitZeroWithoutNeff_isCrashSayingSo() {
    try (NeuronxCcDriver d = open(List.of(), Duration.ofMinutes(2))) {
      assertThat(d.compile(request("no-neff"))).isInstanceOfSatisfying(CompileOutcome.Failure.class, f -> {
        assertThat(f.kind()).isEqualTo(FailureKind.CRASH);
        assertThat(f.message()).contains("exited with 0 but wrote no model.neff");
      });
      assertThat(d.compile(request("empty-neff"))).isInstanceOfSatisfying(CompileOutcome.Failure.class,
          f -> assertThat(f.message()).contains("an empty model.neff"));
    }
  }

  @Test
  void compile_aFlagTheCompilerRejects_isACrashWithItsUsageLine() {
    try (NeuronxCcDriver d = open(List.of("--no-such-flag"), Duration.ofMinutes(2))) {
      assertThat(d.compile(request("ok"))).isInstanceOfSatisfying(CompileOutcome.Failure.class, f -> {
        assertThat(f.kind()).isEqualTo(FailureKind.CRASH);
        assertThat(f.message()).contains("exited with code 2", "unrecognized arguments: --no-such-flag");
      });
    }
  }

  @Test
  void compile_withLogfileFlag_capturesThatFile() {
    try (NeuronxCcDriver d = open(List.of("--logfile", "my.log"), Duration.ofMinutes(2))) {
      CompileOutcome out = d.compile(request("compile-error"));
      assertThat(out.log()).contains("--- my.log ---").doesNotContain("--- log-neuron-cc.txt ---");
      assertThat(out.log().substring(out.log().indexOf("--- my.log ---"))).contains("[NCC_STANDIN070]");
    }
  }

  @Test
  void compile_fromManyThreadsAtOnce_eachGetsItsOwnResult() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try (NeuronxCcDriver d = open(List.of(), Duration.ofMinutes(2))) {
      List<CompileRequest> requests = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        HloModuleProto m = TestModules.mulAdd(i).toBuilder().setName("jit_g" + i + " XLAC_STANDIN:sleep=0.3").build();
        requests.add(new CompileRequest(GraphFingerprint.of(m), m.getName(), m.toByteArray()));
      }
      List<Future<CompileOutcome>> futures = new ArrayList<>();
      for (CompileRequest r : requests) {
        futures.add(pool.submit(() -> d.compile(r)));
      }
      for (int i = 0; i < requests.size(); i++) {
        CompileOutcome out = futures.get(i).get();
        assertThat(out).isInstanceOf(CompileOutcome.Success.class);
        String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(requests.get(i).hloModule()));
        assertThat(new String(((CompileOutcome.Success) out).artifact(), java.nio.charset.StandardCharsets.UTF_8))
            .contains("input-sha256=" + sha);
      }
      assertThat(workDirs()).isEmpty();
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void open_missingCompiler_isAnEnvironmentError() {
    assertThatThrownBy(() -> NeuronxCcDriver.open(tmp.resolve("nope/neuronx-cc"), "trn1", List.of(), Duration.ZERO, tmp))
        .isInstanceOfSatisfying(XlacException.class, e -> assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT))
        .hasMessageContaining("no such file");
  }

  @Test
  void open_notExecutable_isAnEnvironmentError() throws IOException {
    Path f = Files.writeString(tmp.resolve("neuronx-cc"), "#!/bin/sh\necho 1.0\n");
    assertThatThrownBy(() -> NeuronxCcDriver.open(f, "trn1", List.of(), Duration.ZERO, tmp))
        .isInstanceOfSatisfying(XlacException.class, e -> assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT))
        .hasMessageContaining("not executable");
  }

  @Test
  void open_compilerPrintingNoVersion_isAnEnvironmentError() throws IOException {
    Path silent = script("silent", "exit 0");
    assertThatThrownBy(() -> NeuronxCcDriver.open(silent, "trn1", List.of(), Duration.ZERO, tmp))
        .isInstanceOfSatisfying(XlacException.class, e -> assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT))
        .hasMessageContaining("printed nothing");
    Path words = script("words", "echo 'no version here'");
    assertThatThrownBy(() -> NeuronxCcDriver.open(words, "trn1", List.of(), Duration.ZERO, tmp))
        .hasMessageContaining("printed no version number: no version here");
    Path failing = script("failing", "echo boom >&2; exit 5");
    assertThatThrownBy(() -> NeuronxCcDriver.open(failing, "trn1", List.of(), Duration.ZERO, tmp))
        .hasMessageContaining("failed with exit code 5: boom");
  }

  private Path script(String name, String body) throws IOException {
    Path f = tmp.resolve(name);
    Files.writeString(f, "#!/bin/sh\n" + body + "\n");
    Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rwx------"));
    return f;
  }
}
