package dev.xlac.pipeline.shard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.CacheStore;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.pipeline.CompileExecutor;
import dev.xlac.pipeline.CompileResult;
import dev.xlac.pipeline.CompileRuns;
import dev.xlac.pipeline.CompileSetup;
import dev.xlac.pipeline.DriverSource;
import dev.xlac.pipeline.FakeCompiler;
import dev.xlac.pipeline.RunListener;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ShardRun}'s own logic against an engine written for the test: one whose submission of several shards is
 * several calls (as Ray's, a POST per job), any of which may fail after the engine took some of them. Whatever the
 * run's end, nothing it or its engine submitted is left running. The real engines run in SlurmArrayTest and
 * tests' RayEngineTest.
 */
@Timeout(60)
class ShardRunTest {
  @TempDir
  Path tmp;

  private final List<String> progress = Collections.synchronizedList(new ArrayList<>());

  /**
   * A queue of the test's own: a submission takes its shards one at a time (each a running task, attempt
   * {@code sI_aN}) and fails at the one {@code failAt} names; a task leaves the queue only when stopped, or, when
   * {@code tasksDie}, at once without results (as a job that failed).
   */
  private static final class TestEngine implements ShardEngine {
    final Map<String, Boolean> running = Collections.synchronizedMap(new LinkedHashMap<>()); // attempt: still queued
    final List<Task> submitted = Collections.synchronizedList(new ArrayList<>());
    final Map<Integer, Integer> attempts = new HashMap<>();
    final List<String> cancelled = Collections.synchronizedList(new ArrayList<>());
    volatile boolean cancelledAll;
    volatile boolean closed;
    volatile String failAt; // the attempt whose submission fails after the engine took it
    volatile boolean tasksDie;
    volatile Runnable duringSubmit = () -> {};

    @Override
    public String name() {
      return "Test";
    }

    @Override
    public Submitted submit(List<Integer> shards) {
      Map<Integer, String> ids = new LinkedHashMap<>();
      for (int shard : shards) {
        String id = "s" + shard + "_a" + attempts.merge(shard, 1, Integer::sum);
        submitted.add(new Task(shard, id));
        running.put(id, !tasksDie);
        duringSubmit.run();
        if (id.equals(failAt)) {
          throw XlacException.environment("the engine did not answer " + id + "'s submission");
        }
        ids.put(shard, id);
      }
      return new Submitted(ids, "test tasks", "task " + String.join(", ", ids.values()));
    }

    @Override
    public Map<Task, Boolean> queued(List<Task> tasks) {
      Map<Task, Boolean> out = new HashMap<>();
      tasks.stream().filter(t -> running.getOrDefault(t.attempt(), false)).forEach(t -> out.put(t, false));
      return out;
    }

    @Override
    public Ended ended(Task task) {
      return new Ended(false, "FAILED");
    }

    @Override
    public void cancel(List<Task> tasks) {
      tasks.forEach(t -> {
        cancelled.add(t.attempt());
        running.put(t.attempt(), false);
      });
    }

    @Override
    public void cancelAll() {
      cancelledAll = true;
      List.copyOf(submitted).forEach(t -> running.put(t.attempt(), false));
    }

    @Override
    public List<Task> submitted() {
      return List.copyOf(submitted);
    }

    @Override
    public String describe(Task task) {
      return "task " + task.attempt();
    }

    @Override
    public String logWhere(Task task) {
      return "log of " + task.attempt();
    }

    @Override
    public String logTail(Task task) {
      return null;
    }

    @Override
    public void close() {
      closed = true;
    }

    List<String> stillRunning() {
      synchronized (running) {
        return running.entrySet().stream().filter(Map.Entry::getValue).map(Map.Entry::getKey).toList();
      }
    }
  }

  private static CacheStore open(Path dir) throws InterruptedException {
    return CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
  }

  /** Three graphs over three shards, sent to the run directory; a ShardRun of them on {@code engine}. */
  private ShardRun run(TestEngine engine, CacheStore store, int retries) throws Exception {
    SharedDirectoryTransport transport = new SharedDirectoryTransport(tmp.resolve("shared/run-1"));
    ShardPlan plan = ShardFixtures.sendGraphs(store, tmp.resolve("dumps"), transport, 3, 1.5f, 3);
    assertThat(plan.nonEmpty()).hasSize(3);
    return new ShardRun(engine, transport, plan, store, FakeCompiler.IDENTITY, new ShardSettings(3, retries,
        tmp.resolve("shared"), Duration.ofMillis(10), progress::add), Duration.ofSeconds(5));
  }

  /**
   * The first submission failed at its second shard, after the engine had taken the first: the run returned early
   * (it knew of no task) and never told the engine to stop, so the task of shard 0 ran on while xlac exited 3.
   */
  @Test
  void aFirstSubmissionThatFailsPartway_leavesNoTaskOfItRunning() throws Exception {
    TestEngine engine = new TestEngine();
    engine.failAt = "s1_a1";
    try (CacheStore store = open(tmp.resolve("cache"))) {
      ShardRun run = run(engine, store, 0);
      assertThatThrownBy(run::run).isInstanceOfSatisfying(XlacException.class,
          e -> assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT));
    }
    assertThat(engine.cancelledAll).isTrue();
    assertThat(engine.stillRunning()).isEmpty();
  }

  /**
   * Shard 1's task died; its resubmission failed after the engine took it (a POST that timed out but made the
   * job). The run reported the shard and ended normally, stopping only the tasks it knew: attempt 2 ran on.
   */
  @Test
  void aResubmissionThatFailedAfterTheEngineTookIt_isStoppedWhenTheRunEnds() throws Exception {
    TestEngine engine = new TestEngine();
    engine.failAt = "s1_a2";
    List<GraphResult> results;
    try (CacheStore store = open(tmp.resolve("cache"))) {
      ShardRun run = run(engine, store, 1);
      engine.duringSubmit = () -> { // shard 1's first task dies; the others run until stopped
        engine.running.put("s1_a1", false);
      };
      AtomicReference<List<GraphResult>> out = new AtomicReference<>();
      Thread runner = Thread.ofPlatform().start(() -> {
        try {
          out.set(run.run());
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      // shards 0 and 2 run until shard 1 is reported
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (List.copyOf(progress).stream().noneMatch(l -> l.contains("submitting it again failed")) && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertThat(List.copyOf(progress)).anySatisfy(l -> assertThat(l).contains("shard 1 (task s1_a1) its task ended without"
          + " results: FAILED; submitting it again failed: the engine did not answer s1_a2's submission"));
      engine.tasksDie = true; // shards 0 and 2 end without results, then their second attempts: a normal end
      engine.running.put("s0_a1", false);
      engine.running.put("s2_a1", false);
      runner.join(Duration.ofSeconds(30));
      results = out.get();
    }
    assertThat(results).as("the run ended normally").isNotNull().hasSize(3);
    assertThat(engine.cancelledAll).as("a normal end").isFalse();
    assertThat(engine.cancelled).contains("s1_a2");
    assertThat(engine.stillRunning()).isEmpty();
  }

  /** A shutdown while the engine submitted: the engine stopped the submission; the run ends as a stopped one. */
  @Test
  void aShutdownDuringTheFirstSubmission_endsTheRunAsStopped_withNothingLeftRunning() throws Exception {
    TestEngine engine = new TestEngine();
    List<GraphResult> results;
    try (CacheStore store = open(tmp.resolve("cache"))) {
      ShardRun run = run(engine, store, 0);
      engine.duringSubmit = () -> {
        if (engine.submitted.size() == 2) {
          run.cancel(); // as the shutdown hook does; the engine then refuses to go on, as RayEngine does
          engine.failAt = "s1_a1";
        }
      };
      results = run.run();
    }
    assertThat(results).hasSize(3).allSatisfy(g -> {
      assertThat(g.status()).isEqualTo(GraphResult.Status.NOT_RUN);
      assertThat(g.error()).isEqualTo("not compiled: the run was stopped while it was being submitted to Test");
    });
    assertThat(engine.stillRunning()).isEmpty();
  }

  /** A CompileExecutor of the test's own whose shards run on {@code engine}. */
  private record OnTestEngine(TestEngine engine, ShardSettings settings) implements CompileExecutor {
    @Override
    public boolean compilesHere() {
      return false;
    }

    @Override
    public Map<String, String> compileEnvironment() {
      return System.getenv();
    }

    @Override
    public Compiles start(Run run) {
      return new ShardedCompiles(run, settings, "Test", (dir, transport) -> engine);
    }
  }

  /** The engine holds a connection (Ray's HTTP client, with its thread): the run closes it when it is done. */
  @Test
  void theEngine_isClosedWhenTheRunIsDone() throws Exception {
    TestEngine engine = new TestEngine();
    engine.tasksDie = true;
    Path cache = tmp.resolve("cache");
    try (CacheStore store = open(cache)) {
      ShardFixtures.sendGraphs(store, tmp.resolve("dumps"), new SharedDirectoryTransport(tmp.resolve("unused")), 2,
          1.5f, 1);
    }
    CompileSetup setup = new CompileSetup(() -> open(cache), new DriverSource.Given(new FakeCompiler(false)
        .factory()), new SchedulerSettings(2, 0, 0), false, RunListener.NONE, () -> Long.MAX_VALUE);
    CompileResult r = CompileRuns.cache(setup.withExecutor(new OnTestEngine(engine, new ShardSettings(2, 0,
        tmp.resolve("shared"), Duration.ofMillis(10), progress::add))));
    assertThat(r.exitCode()).isEqualTo(ExitCode.WORK_FAILED);
    assertThat(engine.submitted).isNotEmpty();
    assertThat(engine.closed).isTrue();
  }
}
