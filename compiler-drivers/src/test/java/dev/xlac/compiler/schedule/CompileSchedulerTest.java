package dev.xlac.compiler.schedule;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.compiler.CompilerDriver;
import dev.xlac.compiler.pjrt.GoldenModules;
import dev.xlac.compiler.pjrt.IsolatedPjrtDriver;
import dev.xlac.compiler.pjrt.IsolatedPjrtDrivers;
import dev.xlac.compiler.pjrt.PjrtCompileOptions;
import dev.xlac.compiler.pjrt.TestPluginBuild;
import dev.xlac.compiler.pjrt.TestPlugins;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.FailureKind;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The scheduler with real drivers: worker JVMs running the real XLA CPU plugin, and the C test
 * plugin (src/test/c) that crashes, hangs, is OOM-killed, rejects or is slow depending on the
 * module's name. Only the memory figure is simulated (a MemoryProbe), since a test cannot make
 * the machine short of memory.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES) // a guard against hangs, not a speed check
class CompileSchedulerTest {
  private static final MemoryProbe PLENTY = () -> Long.MAX_VALUE;

  @TempDir
  Path temp;

  /** A module for the test plugin: its name decides what the plugin does; the fingerprint is made up. */
  private static CompileJob job(int n, String name) {
    GraphFingerprint fp = new GraphFingerprint("hlo1:" + String.format("%064x", n));
    byte[] module = HloModuleProto.newBuilder().setName(name).build().toByteArray();
    return new CompileJob(fp, name, () -> module);
  }

  private static IsolatedPjrtDrivers testPlugin(Duration timeout) {
    return new IsolatedPjrtDrivers(TestPluginBuild.library(), Map.of(), PjrtCompileOptions.DEFAULT, timeout, List.of());
  }

  /** Keeps what the sink received, by module name. */
  private static final class Stored implements ResultSink {
    final Map<String, CompileOutcome> outcomes = new ConcurrentHashMap<>();
    final Map<dev.xlac.core.ProgramKey, CompileOutcome> byFingerprint = new ConcurrentHashMap<>();

    @Override
    public void store(CompileJob job, CompileOutcome outcome) {
      assertThat(byFingerprint.put(job.fingerprint(), outcome)).as("stored twice: %s", job.describe()).isNull();
      outcomes.put(job.moduleName(), outcome);
    }
  }

  /** Records the most compiles seen running at once, and the retries. */
  private static final class Watch implements CompileListener {
    final AtomicInteger running = new AtomicInteger();
    final AtomicInteger most = new AtomicInteger();
    final List<String> retries = new CopyOnWriteArrayList<>();
    final CountDownLatch started = new CountDownLatch(1);

    @Override
    public void started(CompileJob job, int attempt) {
      most.accumulateAndGet(running.incrementAndGet(), Math::max);
      started.countDown();
    }

    @Override
    public void retrying(CompileJob job, CompileOutcome.Failure failure, String why) {
      running.decrementAndGet();
      retries.add(job.moduleName() + ": " + why);
    }

    @Override
    public void finished(GraphResult result) {
      if (result.attempts() > 0) {
        running.decrementAndGet();
      }
    }
  }

  private static List<GraphResult> runAll(DriverFactory drivers, SchedulerSettings settings, ResultSink sink,
      CompileListener listener, MemoryProbe memory, List<CompileJob> jobs) throws InterruptedException {
    try (CompileScheduler s = new CompileScheduler(drivers, settings, sink, listener, memory)) {
      jobs.forEach(s::submit);
      return s.finish();
    }
  }

  /** A driver in this JVM: every compile returns what {@code compile} gives; nothing to close. */
  private static CompilerDriver inJvm(CompilerIdentity id, Supplier<CompileOutcome> compile) {
    return new CompilerDriver() {
      @Override
      public CompilerIdentity identity() {
        return id;
      }

      @Override
      public CompileOutcome compile(CompileRequest request) {
        return compile.get();
      }

      @Override
      public void close() {}
    };
  }

  @Test
  void realCpuPlugin_compilesGoldenGraphsInParallel_storingEveryArtifact() throws Exception {
    List<LoadedModule> modules = GoldenModules.all().subList(0, 6);
    Stored stored = new Stored();
    Path probes = temp.resolve("probes");
    try (IsolatedPjrtDrivers drivers = new IsolatedPjrtDrivers(TestPlugins.cpuPlugin(), Map.of(),
        PjrtCompileOptions.DEFAULT, Duration.ofMinutes(2), List.of(probes))) {
      assertThat(drivers.identityFromRecord()).isFalse();
      List<GraphResult> results = runAll(drivers, new SchedulerSettings(2, 0, 0), stored, null, PLENTY,
          modules.stream().map(m -> CompileJob.of(CompileRequest.of(m))).toList());

      assertThat(results).extracting(GraphResult::moduleName)
          .containsExactlyElementsOf(modules.stream().map(LoadedModule::moduleName).toList());
      assertThat(results).allSatisfy(r -> {
        assertThat(r.status()).as(r.describe() + ": " + r.error()).isEqualTo(GraphResult.Status.COMPILED);
        assertThat(r.attempts()).isEqualTo(1);
        assertThat(r.compileTime()).isPositive();
      });
      assertThat(stored.byFingerprint).hasSize(6).allSatisfy((fp, o) -> assertThat(o.succeeded()).isTrue());

      // The identity was recorded: the next factory knows it without starting the plugin.
      try (IsolatedPjrtDrivers again = new IsolatedPjrtDrivers(TestPlugins.cpuPlugin(), Map.of(),
          PjrtCompileOptions.DEFAULT, Duration.ofMinutes(2), List.of(probes))) {
        assertThat(again.identityFromRecord()).isTrue();
        assertThat(again.identity()).isEqualTo(drivers.identity());
      }

      // A new cache's empty probe directory first, the user's record second: the record answers,
      // and the new directory learns it.
      Path newCache = temp.resolve("new-cache-probes");
      try (IsolatedPjrtDrivers viaUser = new IsolatedPjrtDrivers(TestPlugins.cpuPlugin(), Map.of(),
          PjrtCompileOptions.DEFAULT, Duration.ofMinutes(2), List.of(newCache, probes))) {
        assertThat(viaUser.identityFromRecord()).isTrue();
        assertThat(viaUser.identity()).isEqualTo(drivers.identity());
      }
      try (var copied = Files.list(newCache)) {
        assertThat(copied.map(f -> f.getFileName().toString())).singleElement().asString()
            .startsWith("pjrt-").endsWith(".identity");
      }
    }
  }

  @Test
  void crashAndCompileError_failOnlyTheirGraphs_andAreStored() throws Exception {
    Stored stored = new Stored();
    List<CompileJob> jobs = List.of(job(1, "jit_before"), job(2, "jit_crash"), job(3, "jit_reject"),
        job(4, "jit_after"));
    List<GraphResult> results;
    try (IsolatedPjrtDrivers drivers = testPlugin(Duration.ofMinutes(1))) {
      results = runAll(drivers, new SchedulerSettings(2, 0, 0), stored, null, PLENTY, jobs);
    }

    assertThat(results).extracting(GraphResult::status).containsExactly(GraphResult.Status.COMPILED,
        GraphResult.Status.FAILED, GraphResult.Status.FAILED, GraphResult.Status.COMPILED);
    assertThat(results.get(1).failureKind()).isEqualTo(FailureKind.CRASH);
    assertThat(results.get(1).error()).contains("SIGABRT");
    assertThat(results.get(2).failureKind()).isEqualTo(FailureKind.COMPILE_ERROR);
    assertThat(stored.outcomes.get("jit_crash")).isInstanceOf(CompileOutcome.Failure.class);
    assertThat(stored.outcomes.get("jit_reject")).isInstanceOf(CompileOutcome.Failure.class);
    assertThat(stored.outcomes.get("jit_after").succeeded()).isTrue();
    // The run's exit code (1 here) is RunReport's (pipeline RunReportTest.exitCode_*).
    assertThat(results).noneMatch(r -> r.failureKind() == FailureKind.ENVIRONMENT);
  }

  @Test
  void retries_repeatCrashesAndTimeouts_butNeverCompileErrors() throws Exception {
    Watch watch = new Watch();
    List<GraphResult> results;
    try (IsolatedPjrtDrivers drivers = testPlugin(Duration.ofSeconds(2))) {
      results = runAll(drivers, new SchedulerSettings(1, 0, 2), new Stored(), watch, PLENTY,
          List.of(job(1, "jit_crash"), job(2, "jit_reject"), job(3, "jit_hang")));
    }

    assertThat(results.get(0).attempts()).isEqualTo(3);
    assertThat(results.get(0).failureKind()).isEqualTo(FailureKind.CRASH);
    assertThat(results.get(1).attempts()).isEqualTo(1);
    assertThat(results.get(2).attempts()).isEqualTo(3);
    assertThat(results.get(2).failureKind()).isEqualTo(FailureKind.TIMEOUT);
    assertThat(watch.retries).containsExactlyInAnyOrder("jit_crash: crash; retry 1 of 2", "jit_crash: crash; retry 2 of 2",
        "jit_hang: timeout; retry 1 of 2", "jit_hang: timeout; retry 2 of 2");
  }

  @Test
  void outOfMemory_lowersConcurrency_andRetriesOnceEvenWithoutRetries() throws Exception {
    Watch watch = new Watch();
    List<GraphResult> results;
    int limitAfter;
    try (IsolatedPjrtDrivers drivers = testPlugin(Duration.ofMinutes(1));
        CompileScheduler s = new CompileScheduler(drivers, new SchedulerSettings(2, 0, 0), new Stored(), watch,
            PLENTY)) {
      s.submit(job(1, "jit_slow_a"));
      s.submit(job(2, "jit_oomkill"));
      s.submit(job(3, "jit_slow_b"));
      results = s.finish();
      limitAfter = s.concurrencyLimit();
    }

    assertThat(results.get(1).failureKind()).isEqualTo(FailureKind.OUT_OF_MEMORY);
    assertThat(results.get(1).attempts()).isEqualTo(2);
    assertThat(watch.retries).singleElement().asString().contains("at most 1 parallel job");
    assertThat(limitAfter).isEqualTo(1);
    assertThat(results.get(0).status()).isEqualTo(GraphResult.Status.COMPILED);
    assertThat(results.get(2).status()).isEqualTo(GraphResult.Status.COMPILED);
  }

  @Test
  void admission_runsJobsInParallel_onlyWhileMemoryAllows() throws Exception {
    List<CompileJob> jobs = List.of(job(1, "jit_slow_1"), job(2, "jit_slow_2"), job(3, "jit_slow_3"),
        job(4, "jit_slow_4"));
    Watch roomy = new Watch();
    Watch tight = new Watch();
    try (IsolatedPjrtDrivers drivers = testPlugin(Duration.ofMinutes(1))) {
      runAll(drivers, new SchedulerSettings(2, 1L << 30, 0), new Stored(), roomy, () -> 8L << 30, jobs);
    }
    try (IsolatedPjrtDrivers drivers = testPlugin(Duration.ofMinutes(1))) {
      runAll(drivers, new SchedulerSettings(2, 1L << 30, 0), new Stored(), tight, () -> 512L << 20, jobs);
    }

    assertThat(roomy.most.get()).isEqualTo(2);
    assertThat(tight.most.get()).isEqualTo(1);
  }

  @Test
  void streaming_acceptsGraphsWhileCompiling_andCompilesADuplicateOnce() throws Exception {
    Stored stored = new Stored();
    Watch watch = new Watch();
    try (IsolatedPjrtDrivers drivers = testPlugin(Duration.ofMinutes(1));
        CompileScheduler s = new CompileScheduler(drivers, new SchedulerSettings(2, 0, 0), stored, watch, PLENTY)) {
      var first = s.submit(job(1, "jit_slow_first"));
      Thread producer = Thread.ofPlatform().start(() -> {
        for (int i = 2; i <= 5; i++) {
          s.submit(job(i, "jit_arrived_" + i));
        }
      });
      watch.started.await();
      producer.join();
      var again = s.submit(job(1, "jit_slow_first"));
      List<GraphResult> results = s.finish();

      assertThat(again).isSameAs(first);
      assertThat(results).hasSize(5).allSatisfy(r -> assertThat(r.status()).isEqualTo(GraphResult.Status.COMPILED));
      assertThat(stored.byFingerprint).hasSize(5);
      assertThatThrownBy(() -> s.submit(job(9, "jit_late"))).isInstanceOf(IllegalStateException.class);
    }
  }

  @Test
  void driverWithAnotherIdentity_stopsTheRun_andStoresNothing() throws Exception {
    CompilerIdentity expected = new CompilerIdentity("pjrt", "something else", "cpu", List.of(), Map.of());
    DriverFactory wrong = DriverFactory.of(expected, () -> IsolatedPjrtDriver.start(TestPluginBuild.library(),
        Map.of(), PjrtCompileOptions.DEFAULT, Duration.ofMinutes(1)));
    Stored stored = new Stored();

    List<GraphResult> results = runAll(wrong, new SchedulerSettings(1, 0, 0), stored, null, PLENTY,
        List.of(job(1, "jit_a"), job(2, "jit_b")));

    assertThat(results).allSatisfy(r -> {
      assertThat(r.status()).isEqualTo(GraphResult.Status.NOT_RUN);
      assertThat(r.failureKind()).isEqualTo(FailureKind.ENVIRONMENT);
    });
    assertThat(results.get(0).error()).contains("instead of pjrt");
    assertThat(stored.outcomes).isEmpty();
    // ENVIRONMENT on every graph: the run's exit code is 3 (pipeline RunReportTest.exitCode_*).
  }

  @Test
  void pluginThatIsNotOne_isEnvironmentFailure() throws Exception {
    Path notAPlugin = java.nio.file.Files.writeString(temp.resolve("libnot.so"), "not an ELF file");
    try (IsolatedPjrtDrivers drivers = new IsolatedPjrtDrivers(notAPlugin, Map.of(), PjrtCompileOptions.DEFAULT,
        Duration.ofMinutes(1), List.of(temp.resolve("probes")))) {
      assertThatThrownBy(drivers::identity).isInstanceOfSatisfying(XlacException.class,
          e -> assertThat(e.exitCode().code()).isEqualTo(3));
    }
    try (IsolatedPjrtDrivers missing = new IsolatedPjrtDrivers(temp.resolve("absent.so"), Map.of(),
        PjrtCompileOptions.DEFAULT, Duration.ofMinutes(1), List.of(temp.resolve("probes")))) {
      assertThatThrownBy(missing::identity).isInstanceOf(XlacException.class).hasMessageContaining("no such file");
    }
  }

  @Test
  void cancel_stopsRunningCompiles_andStoresNothing() throws Exception {
    Stored stored = new Stored();
    Watch watch = new Watch();
    List<GraphResult> results;
    try (IsolatedPjrtDrivers drivers = testPlugin(Duration.ZERO);
        CompileScheduler s = new CompileScheduler(drivers, new SchedulerSettings(2, 0, 0), stored, watch, PLENTY)) {
      for (int i = 1; i <= 4; i++) {
        s.submit(job(i, "jit_hang_" + i));
      }
      watch.started.await();
      s.cancel();
      results = s.finish();
    }

    assertThat(results).hasSize(4).allSatisfy(r -> {
      assertThat(r.status()).isEqualTo(GraphResult.Status.NOT_RUN);
      assertThat(r.error()).contains("stopped");
    });
    assertThat(stored.outcomes).isEmpty();
  }

  @Test
  void sinkFailure_stopsTheRun_andFinishRethrowsIt() throws Exception {
    List<String> tried = Collections.synchronizedList(new ArrayList<>());
    ResultSink full = (job, outcome) -> {
      tried.add(job.moduleName());
      throw new XlacException(dev.xlac.core.ExitCode.ENVIRONMENT, "disk full");
    };
    try (IsolatedPjrtDrivers drivers = testPlugin(Duration.ofMinutes(1));
        CompileScheduler s = new CompileScheduler(drivers, new SchedulerSettings(1, 0, 0), full, null, PLENTY)) {
      for (int i = 1; i <= 3; i++) {
        s.submit(job(i, "jit_" + i));
      }
      assertThatThrownBy(s::finish).isInstanceOf(XlacException.class).hasMessage("disk full");
    }
    assertThat(tried).containsExactly("jit_1");
  }

  /**
   * A crashed graph retried by the other worker before the worker that ran it had released its
   * slot: the scheduler used to find the slot through the task, whose admission time the retry had
   * just overwritten, so the wrong slot was freed, one stayed taken forever and finish() never
   * returned (the rare ParallelCompileE2ETest hang, seen once in a full run and again on
   * 2026-11-24 with a jstack of both workers parked in admit()).
   */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void retryAdmittedBeforeTheCrashedRunReleased_doesNotHangFinish() throws Exception {
    CompilerIdentity id = new CompilerIdentity("fake", "1", "cpu", List.of(), Map.of());
    AtomicInteger compiles = new AtomicInteger();
    CompilerDriver crashesOnce = inJvm(id, () -> compiles.incrementAndGet() == 1
        ? new CompileOutcome.Failure(FailureKind.CRASH, "worker died", "", Duration.ofMillis(1))
        : new CompileOutcome.Success(new byte[] {1}, "", Duration.ofMillis(1), Map.of()));
    CountDownLatch secondAttemptStarted = new CountDownLatch(1);
    CompileListener holdTheFirstWorker = new CompileListener() {
      @Override
      public void started(CompileJob job, int attempt) {
        if (attempt == 2) {
          secondAttemptStarted.countDown();
        }
      }

      @Override
      public void retrying(CompileJob job, CompileOutcome.Failure failure, String why) {
        // The task is queued again; keep this worker from releasing its slot until the other
        // worker has taken the retry.
        try {
          assertThat(secondAttemptStarted.await(20, TimeUnit.SECONDS)).as("the retry started elsewhere").isTrue();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    };
    Stored stored = new Stored();
    List<GraphResult> results = runAll(DriverFactory.of(id, () -> crashesOnce), new SchedulerSettings(2, 0, 1),
        stored, holdTheFirstWorker, PLENTY, List.of(job(1, "jit_crash_once")));

    assertThat(results).singleElement().satisfies(r -> {
      assertThat(r.status()).isEqualTo(GraphResult.Status.COMPILED);
      assertThat(r.attempts()).isEqualTo(2);
    });
  }

  /**
   * The memory probe reads /proc/meminfo, a file read that can stall; the scheduler used to call it
   * holding its lock, so a stalled read held up every submit (and every other worker) with it.
   */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void blockingMemoryProbe_doesNotBlockSubmit() throws Exception {
    CompilerIdentity id = new CompilerIdentity("fake", "1", "cpu", List.of(), Map.of());
    CountDownLatch compilesMayEnd = new CountDownLatch(1);
    CompilerDriver waits = inJvm(id, () -> {
      try {
        compilesMayEnd.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return new CompileOutcome.Success(new byte[] {1}, "", Duration.ofMillis(1), Map.of());
    });
    CountDownLatch probeEntered = new CountDownLatch(1);
    CountDownLatch probeMayAnswer = new CountDownLatch(1);
    MemoryProbe stalls = () -> {
      probeEntered.countDown();
      try {
        probeMayAnswer.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return Long.MAX_VALUE;
    };
    try (CompileScheduler s = new CompileScheduler(DriverFactory.of(id, () -> waits), new SchedulerSettings(2, 1, 0),
        new Stored(), null, stalls)) {
      try {
        s.submit(job(1, "jit_first")); // runs at once: with nothing running, memory is not asked
        s.submit(job(2, "jit_second")); // the other worker asks the probe, which stalls
        assertThat(probeEntered.await(30, TimeUnit.SECONDS)).as("the probe was asked").isTrue();

        CompletableFuture<Integer> submitAndLook = CompletableFuture.supplyAsync(() -> {
          s.submit(job(3, "jit_third"));
          return s.concurrencyLimit();
        });
        assertThat(submitAndLook).succeedsWithin(Duration.ofSeconds(10)).isEqualTo(2);
      } finally { // before close(), which waits for the workers
        probeMayAnswer.countDown();
        compilesMayEnd.countDown();
      }
      assertThat(s.finish()).hasSize(3)
          .allSatisfy(r -> assertThat(r.status()).isEqualTo(GraphResult.Status.COMPILED));
    }
  }
}
