package dev.xlac.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.ExitCode;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.TestModules;
import dev.xlac.pipeline.sources.PathSource;
import dev.xlac.pipeline.sources.TraceSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The public entry points, in-process, with a compiler that needs no process. */
class CompileRunsTest {
  @TempDir
  Path tmp;

  private CompileSetup setup(FakeCompiler compiler, RunListener listener) {
    return new CompileSetup(() -> CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_WRITE, Duration.ZERO,
        m -> {}), new DriverSource.Given(compiler.factory()), new SchedulerSettings(2, 0, 0), false, listener,
        () -> Long.MAX_VALUE);
  }

  private Path dumps(int n) throws Exception {
    Path dir = tmp.resolve("dumps");
    for (int i = 0; i < n; i++) {
      TestModules.writeDump(dir, "m" + i + ".before_optimizations.hlo.pb", TestModules.mulAdd(2.5f + i, 1, "_" + i, 10));
    }
    return dir;
  }

  @Test
  void paths_compileWhatIsNew_thenTheSameRunIsAllCached() throws Exception {
    Path dir = dumps(3);
    FakeCompiler compiler = new FakeCompiler(false);
    CompileResult first = CompileRuns.paths(setup(compiler, RunListener.NONE), List.of(dir));
    assertThat(first.report().compiled()).isEqualTo(3);
    assertThat(first.exitCode()).isEqualTo(ExitCode.OK);
    assertThat(first.report().graphs()).extracting(GraphResult::moduleName).isSorted();

    CompileResult again = CompileRuns.cache(setup(compiler, RunListener.NONE));
    assertThat(again.report().cached()).isEqualTo(3);
    assertThat(compiler.compiles).hasValue(3);
  }

  @Test
  void paths_sayWhyEachNewGraphIsNew_asOneShotDoes() throws Exception {
    FakeCompiler compiler = new FakeCompiler(false);
    Path first = TestModules.writeDump(tmp.resolve("run1"), "a.before_optimizations.hlo.pb", TestModules.mulAdd(2.5f));
    CompileResult r1 = CompileRuns.paths(setup(compiler, RunListener.NONE), List.of(first));
    assertThat(r1.whyNew().line()).as("a first fill explains nothing").isNull();

    Path second = TestModules.writeDump(tmp.resolve("run2"), "a.before_optimizations.hlo.pb", TestModules.mulAdd(3.5f));
    CompileResult r2 = CompileRuns.paths(setup(compiler, RunListener.NONE), List.of(first, second));
    assertThat(r2.whyNew().line()).isEqualTo("1 new graph: 1 differs from a cached graph only in a constant"
        + " ({2.5, 2.5, 2.5, 2.5} -> {3.5, 3.5, 3.5, 3.5}: jit_step)");
    String json = dev.xlac.core.Json.write(r2.report().toJson());
    assertThat(json).contains("\"reason\": \"a constant ({2.5, 2.5, 2.5, 2.5} -> {3.5, 3.5, 3.5, 3.5})\"")
        .contains("\"relative\": \"" + r1.report().graphs().getFirst().fingerprint().value() + "\"");
    assertThat(r2.report().reasons()).as("the graph already cached has no reason").hasSize(1);

    CompileResult cacheRun = CompileRuns.cache(setup(compiler, RunListener.NONE));
    assertThat(cacheRun.whyNew().line()).as("a run over the cache adds nothing").isNull();
  }

  @Test
  void allCached_startsNoWorker() throws Exception {
    Path dir = dumps(2);
    try (CacheStore store = CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {})) {
      try (var files = Files.list(dir)) {
        for (Path f : files.toList()) {
          LoadedModule m = new HloModuleReader().read(f);
          store.putGraph(m);
          store.putArtifact(new ArtifactKey(m.fingerprint(), FakeCompiler.IDENTITY), new byte[] {7},
              CompileInfo.of(1.0, ""));
        }
      }
    }
    FakeCompiler compiler = new FakeCompiler(false);
    List<String> events = new ArrayList<>();
    RunListener listener = new RunListener() {
      @Override
      public synchronized void planned(int graphs, int cached, int toCompile, int jobs) {
        events.add("planned " + graphs + " " + cached + " " + toCompile);
      }

      @Override
      public synchronized void close() {
        events.add("closed");
      }
    };
    CompileResult r = CompileRuns.cache(setup(compiler, listener));
    assertThat(r.report().cached()).isEqualTo(2);
    assertThat(compiler.opened).hasValue(0);
    assertThat(events).startsWith("planned 2 2 0", "closed");
  }

  /** An engine elsewhere, as a third one would be: what it was handed, and its answer for each (not compiled). */
  private static final class ElsewhereExecutor implements CompileExecutor {
    final List<String> submitted = java.util.Collections.synchronizedList(new ArrayList<>());
    final java.util.concurrent.atomic.AtomicInteger started = new java.util.concurrent.atomic.AtomicInteger();

    @Override
    public boolean compilesHere() {
      return false;
    }

    @Override
    public java.util.Map<String, String> compileEnvironment() {
      return System.getenv();
    }

    @Override
    public Compiles start(Run run) {
      started.incrementAndGet();
      List<GraphResult> results = new ArrayList<>();
      return new Compiles() {
        @Override
        public synchronized void submit(CompileWork work) {
          submitted.add(work.name());
          results.add(new GraphResult(work.key(), work.name(), GraphResult.Status.NOT_RUN, Duration.ZERO, 0, null,
              "not compiled: elsewhere"));
        }

        @Override
        public synchronized List<GraphResult> finish() {
          return List.copyOf(results);
        }

        @Override
        public void cancel() {}

        @Override
        public int jobs() {
          return 12;
        }

        @Override
        public void close() {}
      };
    }
  }

  @Test
  void anotherExecutor_getsOnlyWhatTheCacheLacks_andTheRunReportsItsResults_withNoLocalWorkerOrLocalProgress()
      throws Exception {
    FakeCompiler compiler = new FakeCompiler(false);
    Path first = TestModules.writeDump(tmp.resolve("run1"), "a.before_optimizations.hlo.pb", TestModules.mulAdd(2.5f));
    assertThat(CompileRuns.paths(setup(compiler, RunListener.NONE), List.of(first)).report().compiled()).isEqualTo(1);
    Path second = TestModules.writeDump(tmp.resolve("run2"), "b.before_optimizations.hlo.pb", TestModules.mulAdd(3.5f,
        1, "_b", 10));
    List<String> events = new ArrayList<>();
    RunListener listener = new RunListener() {
      @Override
      public synchronized void planned(int graphs, int cached, int toCompile, int jobs) {
        events.add("planned");
      }

      @Override
      public synchronized void inputsRead(PathSource.Result inputs) {
        events.add("read " + inputs.added());
      }

      @Override
      public synchronized void close() {
        events.add("closed");
      }
    };
    ElsewhereExecutor elsewhere = new ElsewhereExecutor();
    CompileResult r = CompileRuns.paths(setup(compiler, listener).withExecutor(elsewhere), List.of(first, second));
    assertThat(elsewhere.submitted).containsExactly(r.report().graphs().stream()
        .filter(g -> g.status() == GraphResult.Status.NOT_RUN).map(GraphResult::moduleName).findFirst().orElseThrow());
    assertThat(elsewhere.started).hasValue(1);
    assertThat(r.report().summaryLines().getFirst()).isEqualTo("2 graphs: 0 compiled, 1 cached, 1 failed");
    assertThat(r.report().jobs()).as("the executor's figure").isEqualTo(12);
    assertThat(r.whyNew().line()).as("explained as a local run").startsWith("1 new graph: ");
    assertThat(r.exitCode()).isEqualTo(ExitCode.WORK_FAILED);
    assertThat(compiler.compiles).as("nothing compiled here").hasValue(1);
    assertThat(events).as("its progress is its own: no local plan line").startsWith("read 1", "closed")
        .doesNotContain("planned");

    ElsewhereExecutor idle = new ElsewhereExecutor();
    CompileResult cached = CompileRuns.paths(setup(compiler, RunListener.NONE).withExecutor(idle), List.of(first));
    assertThat(idle.started).as("all cached: the executor is not started").hasValue(0);
    assertThat(cached.report().jobs()).isEqualTo(2);
  }

  @Test
  void paths_unreadableFile_isReportedAndAddsBadInput_theOthersCompile() throws Exception {
    Path dir = dumps(1);
    Files.write(dir.resolve("broken.before_optimizations.hlo.pb"), new byte[] {(byte) 0xff, 0x01, 0x02});
    List<PathSource.Result> read = new ArrayList<>();
    RunListener listener = new RunListener() {
      @Override
      public void inputsRead(PathSource.Result inputs) {
        read.add(inputs);
      }
    };
    CompileResult r = CompileRuns.paths(setup(new FakeCompiler(false), listener), List.of(dir));
    assertThat(r.report().compiled()).isEqualTo(1);
    assertThat(r.inputs()).isEqualTo(ExitCode.BAD_INPUT);
    assertThat(r.exitCode()).isEqualTo(ExitCode.BAD_INPUT);
    assertThat(read).singleElement().satisfies(p -> {
      assertThat(p.readErrors()).singleElement().satisfies(e -> assertThat(e.getMessage()).contains("broken"));
      assertThat(p.added()).isEqualTo(1);
    });
  }

  @Test
  void command_thatCannotRun_whileTheCompilerCannotStartEither_isNotRunnable_127() throws Exception {
    DriverFactory broken = new DriverFactory() {
      @Override
      public dev.xlac.core.CompilerIdentity identity() {
        throw dev.xlac.core.XlacException.environment("cannot use PJRT plugin /nowhere.so: no such file");
      }

      @Override
      public dev.xlac.compiler.CompilerDriver open() {
        throw new AssertionError("no driver is opened without an identity");
      }
    };
    CompileSetup setup = new CompileSetup(() -> CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_WRITE,
        Duration.ZERO, m -> {}), new DriverSource.Given(broken), new SchedulerSettings(2, 0, 0), false,
        RunListener.NONE, () -> Long.MAX_VALUE);
    for (int i = 0; i < 5; i++) { // the probe fails before, during or after the failed start: always 127
      OneShotResult r = CompileRuns.command(setup, new TraceSpec(List.of(tmp.resolve("no-such-command").toString()),
          dev.xlac.capture.Frontend.AUTO, null, null, false, System.getenv(), TraceSpec.DEFAULT_POLL_INTERVAL));
      assertThat(r.capture().notRunnable()).isNotNull();
      assertThat(r.exitStatus()).isEqualTo(127);
      assertThat(Thread.interrupted()).isFalse();
    }
  }

  private static dev.xlac.runtime.RecordedRequest recorded(String program, String identity) {
    byte[] format = "mlir".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    byte[] code = program.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    byte[] options = {0x1a, 0x02, 0x20, 0x01};
    byte[] id = identity.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    return new dev.xlac.runtime.RecordedRequest(dev.xlac.runtime.RequestKey.of(format, code, options, id), format,
        code, options, identity, new byte[] {7}, 1000);
  }

  @Test
  void cache_compilesRecordedRequestsForThisPlugin_underTheProxysKey_andOneRuleSettlesThem() throws Exception {
    String old = "xlac-pjrt-plugin/2\nplatform_name=old\n";
    String other = "xlac-pjrt-plugin/2\nplatform_name=other\n";
    var a = recorded("module a", old);
    var aElsewhere = recorded("module a", other); // the same request recorded with a third plugin: one new key
    var rejected = recorded("reject me", old);
    try (CacheStore s = CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_WRITE, Duration.ZERO,
        n -> {})) {
      assertThat(s.putRequests(List.of(a, aElsewhere, rejected)).added()).isEqualTo(3);
    }
    CompileResult notPjrt = CompileRuns.cache(setup(new FakeCompiler(false), RunListener.NONE));
    assertThat(notPjrt.report().total()).as("another compiler compiles graphs only").isZero();
    FakeCompiler compiler = new FakeCompiler(false, FakeCompiler.PJRT_IDENTITY);
    CompileResult first = CompileRuns.cache(setup(compiler, RunListener.NONE));
    assertThat(first.exitCode()).isEqualTo(dev.xlac.core.ExitCode.WORK_FAILED);
    assertThat(first.report().total()).isEqualTo(2);
    assertThat(first.report().compiled()).isEqualTo(1);
    dev.xlac.runtime.RequestKey forFake = dev.xlac.runtime.RequestKey.of(a.format(), a.program(), a.options(),
        FakeCompiler.IDENTITY_TEXT.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    assertThat(first.report().graphs()).filteredOn(g -> g.status() == dev.xlac.compiler.schedule.GraphResult.Status.COMPILED)
        .singleElement().satisfies(g -> assertThat(g.fingerprint()).isEqualTo(forFake));
    assertThat(first.report().summaryLines().getFirst()).isEqualTo("2 recorded requests: 1 compiled, 0 cached, 1 failed");
    String failure = first.report().summaryLines().stream().filter(l -> l.startsWith("  failed: ")).findFirst()
        .orElseThrow();
    assertThat(failure).startsWith("  failed: mlir request (").contains("PJRT_Client_Compile: INVALID_ARGUMENT")
        .doesNotContain("xlac cache log");
    java.nio.file.Path log = java.nio.file.Path.of(failure.replaceAll(".*; log: (\\S+)$", "$1"));
    assertThat(java.nio.file.Files.readString(log)).isEqualTo("the fake plugin's log\nline 2");
    try (CacheStore s = CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_ONLY, Duration.ZERO, n -> {})) {
      var stored = s.readRequest(forFake).orElseThrow();
      assertThat(stored.identityText()).isEqualTo(FakeCompiler.IDENTITY_TEXT);
      assertThat(stored.program()).isEqualTo(a.program());
      assertThat(stored.executable()).isEqualTo("mlir request".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    CompileResult again = CompileRuns.cache(setup(compiler, RunListener.NONE));
    assertThat(again.report().cached()).isEqualTo(1);
    assertThat(again.report().failed()).as("no failure record: tried again").isEqualTo(1);
    assertThat(compiler.compiles.get()).isEqualTo(3);
  }

  /** {@link FakeCompiler}'s factory, remembering identity texts as a PJRT factory's records would. */
  private static final class RememberingFactory implements dev.xlac.compiler.schedule.DriverFactory {
    private final dev.xlac.compiler.schedule.DriverFactory fake;
    final java.util.Map<String, String> remembered = new java.util.concurrent.ConcurrentHashMap<>();

    RememberingFactory(FakeCompiler compiler) {
      fake = compiler.factory();
    }

    @Override
    public dev.xlac.core.CompilerIdentity identity() {
      return fake.identity();
    }

    @Override
    public dev.xlac.compiler.CompilerDriver open() {
      return fake.open();
    }

    @Override
    public java.util.Optional<String> rememberedIdentityText(String context) {
      return java.util.Optional.ofNullable(remembered.get(context));
    }

    @Override
    public void rememberIdentityText(String context, String identityText) {
      remembered.put(context, identityText);
    }
  }

  @Test
  void cache_recordedRequestsAllCompiled_withARememberedText_startsNoDriver_aStaleTextAsksADriver() throws Exception {
    var a = recorded("module a", "xlac-pjrt-plugin/2\nplatform_name=old\n");
    try (CacheStore s = CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_WRITE, Duration.ZERO,
        n -> {})) {
      s.putRequests(List.of(a));
    }
    // The identity names the plugin build its facts report (PjrtDriver puts the file's SHA-256 in both).
    dev.xlac.core.CompilerIdentity identity = new dev.xlac.core.CompilerIdentity("pjrt", "fake 1.0; plugin api 0.94",
        "fake", List.of(), java.util.Map.of("plugin.sha256", FakeCompiler.FACTS.fileSha256()));
    FakeCompiler compiler = new FakeCompiler(false, identity);
    RememberingFactory factory = new RememberingFactory(compiler);
    java.util.function.Supplier<CompileSetup> setup = () -> new CompileSetup(() -> CacheStore.open(
        tmp.resolve("cache"), CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {}), new DriverSource.Given(factory),
        new SchedulerSettings(2, 0, 0), false, RunListener.NONE, () -> Long.MAX_VALUE);

    CompileResult first = CompileRuns.cache(setup.get());
    assertThat(first.report().compiled()).isEqualTo(1);
    assertThat(compiler.opened.get()).isEqualTo(1);
    assertThat(factory.remembered.values()).as("the driver's text is remembered")
        .containsExactly(FakeCompiler.IDENTITY_TEXT);

    CompileResult again = CompileRuns.cache(setup.get());
    assertThat(again.report().cached()).isEqualTo(1);
    assertThat(again.report().summaryLines().getFirst()).isEqualTo("1 recorded request: 0 compiled, 1 cached, 0 failed");
    assertThat(compiler.opened.get()).as("nothing to compile: no driver").isEqualTo(1);

    // A text that no longer holds (another plugin version): its keys find nothing, so a driver is asked, and its
    // text, which finds the entry, is remembered again; nothing is compiled.
    factory.remembered.replaceAll((context, text) -> text.replace("platform_version=1.0", "platform_version=2.0"));
    assertThat(factory.remembered.values()).doesNotContain(FakeCompiler.IDENTITY_TEXT);
    CompileResult stale = CompileRuns.cache(setup.get());
    assertThat(stale.report().cached()).isEqualTo(1);
    assertThat(compiler.opened.get()).isEqualTo(2);
    assertThat(compiler.compiles.get()).isEqualTo(1);
    assertThat(factory.remembered.values()).containsExactly(FakeCompiler.IDENTITY_TEXT);

    // The plugin replaced in a way the records' key missed: the identity names another build, so the text, which
    // would still find the old entries, is not used, and a driver is asked.
    FakeCompiler replaced = new FakeCompiler(false, new dev.xlac.core.CompilerIdentity("pjrt",
        "fake 1.0; plugin api 0.94", "fake", List.of(), java.util.Map.of("plugin.sha256", "e".repeat(64))));
    RememberingFactory replacedFactory = new RememberingFactory(replaced);
    replacedFactory.remembered.putAll(factory.remembered);
    CompileResult afterReplace = CompileRuns.cache(new CompileSetup(() -> CacheStore.open(tmp.resolve("cache"),
        CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {}), new DriverSource.Given(replacedFactory),
        new SchedulerSettings(2, 0, 0), false, RunListener.NONE, () -> Long.MAX_VALUE));
    assertThat(replaced.opened.get()).isEqualTo(1);
    assertThat(afterReplace.report().cached()).isEqualTo(1);
  }
}
