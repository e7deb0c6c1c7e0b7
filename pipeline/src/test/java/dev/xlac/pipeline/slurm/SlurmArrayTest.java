package dev.xlac.pipeline.slurm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.BundleSigningKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.pipeline.CompileSetup;
import dev.xlac.pipeline.DriverSource;
import dev.xlac.pipeline.FakeCompiler;
import dev.xlac.pipeline.RunListener;
import dev.xlac.pipeline.StandInSlurm;
import dev.xlac.pipeline.shard.ShardFixtures;
import dev.xlac.pipeline.shard.ShardPlan;
import dev.xlac.pipeline.shard.ShardRun;
import dev.xlac.pipeline.shard.ShardTask;
import dev.xlac.pipeline.shard.SharedDirectoryTransport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The submitter's loop over one job array ({@link ShardRun}) against stand-ins for sbatch, squeue and
 * scancel on the PATH it is given (shell scripts that log their calls; the real Slurm runs in SlurmE2ETest). Every
 * job stays RUNNING until scancel names it, so what is left in the queue is what the run failed to cancel.
 */
@Timeout(120)
class SlurmArrayTest {
  @TempDir
  Path tmp;

  private StandInSlurm slurm;
  private Path state;
  private final List<String> progress = Collections.synchronizedList(new ArrayList<>());

  private static CacheStore open(Path dir) throws InterruptedException {
    return CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
  }

  private void fakeSlurm() throws Exception {
    slurm = StandInSlurm.create(tmp);
    state = slurm.state();
    slurm.script("sbatch", """
        echo "$*" >>"$S/sbatch.log"
        n=$(cat "$S/next"); echo $((n + 1)) >"$S/next"; echo "$n"
        """);
    slurm.script("squeue", """
        echo "$*" >>"$S/squeue.log"
        [ -f "$S/squeue.sleep" ] && sleep "$(cat "$S/squeue.sleep")"
        while [ $# -gt 0 ]; do [ "$1" = -j ] && jobs=$2; shift; done
        for j in $(echo "$jobs" | tr , ' '); do
          grep -qx -e "$j" -e "${j}_0" "$S/cancelled" 2>/dev/null || echo "$j 0 RUNNING"
        done
        """);
    slurm.script("scancel", """
        for a; do echo "$a" >>"$S/cancelled"; done
        """);
  }

  private record Setup(SharedDirectoryTransport transport, ShardPlan plan, BundleSigningKey key, Path run) {}

  /** Two graphs in the submitter's cache, one shard, sent; the run's key in the run directory. */
  private Setup sent() throws Exception {
    Path run = tmp.resolve("shared/run-1");
    SharedDirectoryTransport transport = new SharedDirectoryTransport(run);
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      ShardPlan plan = ShardFixtures.sendGraphs(store, tmp.resolve("dumps"), transport, 2, 1.5f, 1);
      return new Setup(transport, plan, ShardTaskTest.runKey(run), run);
    }
  }

  private void runTask(Setup s, String attempt) throws Exception {
    CompileSetup node = new CompileSetup(() -> open(tmp.resolve("node-" + attempt)),
        new DriverSource.Given(new FakeCompiler(false).factory()), new SchedulerSettings(2, 0, 0), false,
        RunListener.NONE, () -> Long.MAX_VALUE);
    ShardTask.run(node, new SharedDirectoryTransport(s.run(), s.key(), null), 0, attempt,
        tmp.resolve("node-" + attempt + ".bundle"));
  }

  private ShardRun array(Setup s, CacheStore store, Duration timeout) {
    Map<String, String> env = Map.of("PATH", slurm.path());
    SlurmSettings settings = new SlurmSettings(1, List.of(), 3, tmp.resolve("shared"), List.of("true"), env,
        Duration.ofMillis(20), progress::add);
    return SlurmExecutor.array(new SlurmClient(env, timeout), settings,
        new SharedDirectoryTransport(s.run(), null, s.key().publicKey()), s.run(), s.plan(), store,
        FakeCompiler.IDENTITY);
  }

  @Test
  void aDamagedResultBundle_isResubmittedOnce_andTheOldJobIsCancelled() throws Exception {
    fakeSlurm();
    Setup s = sent();
    // Both attempts' results are there from the start: job 100's damaged, job 101's good. Only the current
    // attempt's may be read, and job 100's only once.
    runTask(s, "100");
    Path damaged = s.run().resolve("results/shard-0.100.bundle");
    byte[] bytes = Files.readAllBytes(damaged);
    for (int i = bytes.length / 3; i < bytes.length * 2 / 3; i += 97) {
      bytes[i] ^= 0x5a;
    }
    Files.write(damaged, bytes);
    runTask(s, "101");
    List<GraphResult> results;
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      results = array(s, store, Duration.ofSeconds(30)).run();
    }
    assertThat(results).hasSize(2).allSatisfy(g -> assertThat(g.status()).isEqualTo(GraphResult.Status.COMPILED));
    assertThat(slurm.lines("sbatch.log")).as("submitted once, then once again").hasSize(2);
    assertThat(String.join("\n", progress)).contains("its results could not be imported")
        .contains("submitted again as job 101 (attempt 2 of 4)");
    assertThat(slurm.lines("cancelled")).as("the damaged attempt's task is cancelled, the imported one is left to end")
        .containsExactly("100_0");
    assertThat(s.run().resolve("results/shard-0.100.bundle")).doesNotExist();
    assertThat(s.run().resolve("results/shard-0.100.tsv")).doesNotExist();
  }

  @Test
  void aHungSqueue_isOneLineAndExit3_andEveryJobIsCancelled() throws Exception {
    fakeSlurm();
    Files.writeString(state.resolve("squeue.sleep"), "30");
    Setup s = sent();
    long start = System.nanoTime();
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      ShardRun array = array(s, store, Duration.ofMillis(500));
      assertThatThrownBy(array::run).isInstanceOfSatisfying(XlacException.class, e -> {
        assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
        assertThat(e.getMessage()).isEqualTo("squeue did not answer within 0.5 s; is slurmctld up?");
      });
    }
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(20));
    assertThat(slurm.lines("cancelled")).as("the run ended by an exception: its job is cancelled").containsExactly("100");
  }

  @Test
  void anInterruptedRun_cancelsEveryJob() throws Exception {
    fakeSlurm();
    Setup s = sent();
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      Thread t = Thread.ofPlatform().start(() -> {
        try {
          array(s, store, Duration.ofSeconds(30)).run();
        } catch (Throwable e) {
          thrown.set(e);
        }
      });
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (slurm.lines("squeue.log").isEmpty() && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      t.interrupt();
      t.join(Duration.ofSeconds(20));
      assertThat(t.isAlive()).isFalse();
    }
    assertThat(thrown.get()).isInstanceOf(InterruptedException.class);
    assertThat(slurm.lines("cancelled")).containsExactly("100");
  }

  /**
   * A task that completed (exit 0, so it had handed back its results) whose results showed on the submitter's host
   * only some polls later (a shared file system's attribute cache: up to a minute on NFS) was taken for one that
   * ended without results after two polls: its shard was submitted again and compiled twice, and its results,
   * named by the first attempt, were never read. Now they are waited for.
   */
  @Test
  void aCompletedTasksResults_thatShowSomePollsLate_areWaitedFor_notResubmitted() throws Exception {
    fakeSlurm();
    slurm.script("squeue", "echo \"$*\" >>\"$S/squeue.log\"\n"); // the task left the queue at once
    slurm.script("scontrol", "echo \"JobId=$4 JobState=COMPLETED Reason=None ExitCode=0:0\"\n");
    Setup s = sent();
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    List<GraphResult> results = Collections.synchronizedList(new ArrayList<>());
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      Thread t = Thread.ofPlatform().start(() -> {
        try {
          results.addAll(SlurmExecutor.array(new SlurmClient(Map.of("PATH", slurm.path())),
              new SlurmSettings(1, List.of(), 3, tmp.resolve("shared"), List.of("true"), Map.of("PATH", slurm.path()), Duration.ofMillis(20), progress::add), new SharedDirectoryTransport(s.run(),
              null, s.key().publicKey()), s.run(), s.plan(), store, FakeCompiler.IDENTITY, Duration.ofSeconds(60))
              .run());
        } catch (Throwable e) {
          thrown.set(e);
        }
      });
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (slurm.lines("squeue.log").size() < 6 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertThat(slurm.lines("squeue.log")).as("polls before the results show").hasSizeGreaterThanOrEqualTo(6);
      runTask(s, "100"); // the results show now
      t.join(Duration.ofSeconds(30));
      assertThat(t.isAlive()).isFalse();
    }
    assertThat(thrown.get()).isNull();
    assertThat(results).hasSize(2).allSatisfy(g -> assertThat(g.status()).isEqualTo(GraphResult.Status.COMPILED));
    assertThat(slurm.lines("sbatch.log")).as("submitted once").hasSize(1);
    assertThat(String.join("\n", progress)).doesNotContain("submitted again");
  }

  @Test
  void aCompletedTasksResults_thatNeverShow_failTheAttemptAfterTheGrace_namingTheSharedDirectory() throws Exception {
    fakeSlurm();
    slurm.script("squeue", "echo \"$*\" >>\"$S/squeue.log\"\n");
    slurm.script("scontrol", "echo \"JobId=$4 JobState=COMPLETED Reason=None ExitCode=0:0\"\n");
    Setup s = sent();
    Map<String, String> env = Map.of("PATH", slurm.path());
    List<GraphResult> results;
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      results = SlurmExecutor.array(new SlurmClient(env), new SlurmSettings(1, List.of(), 0, tmp.resolve("shared"),
          List.of("true"), env, Duration.ofMillis(20), progress::add), new SharedDirectoryTransport(s.run(), null,
          s.key().publicKey()), s.run(), s.plan(), store, FakeCompiler.IDENTITY, Duration.ofMillis(300)).run();
    }
    assertThat(results).hasSize(2).allSatisfy(g -> assertThat(g.error()).contains("its task COMPLETED (exit 0:0)"
        + " handed back results that did not show here within 0.3 s (does --shared-dir show this host what the nodes"
        + " write?)"));
  }

  /**
   * An sbatch that did not answer within the limit was killed and the run ended with exit 3, but sbatch may have
   * queued the array meanwhile: that job, whose id the run never learnt, was left to run. Now the run's jobs are
   * marked with its own comment, and such a job is found by it and cancelled.
   */
  @Test
  void anSbatchThatTimesOutAfterQueueingTheArray_leavesNoJobBehind() throws Exception {
    fakeSlurm();
    slurm.script("sbatch", """
        echo "$*" >>"$S/sbatch.log"
        for a; do case "$a" in --comment=*) c=${a#--comment=};; esac; done
        echo "100 $c" >>"$S/queued"
        sleep 5
        echo 100
        """);
    slurm.script("squeue", """
        echo "$*" >>"$S/squeue.log"
        touch "$S/cancelled"; [ "$1" = --me ] && grep -v -x -F -f "$S/cancelled" "$S/queued" | sed 's/^/ /'
        exit 0
        """);
    Setup s = sent();
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      ShardRun array = array(s, store, Duration.ofMillis(500));
      assertThatThrownBy(array::run).isInstanceOfSatisfying(XlacException.class, e -> {
        assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
        assertThat(e.getMessage()).isEqualTo("sbatch did not answer within 0.5 s; is slurmctld up?; the 1 job it"
            + " queued meanwhile was cancelled");
      });
    }
    assertThat(slurm.lines("sbatch.log")).singleElement().asString().contains("--comment=xlac:run-1");
    assertThat(slurm.lines("cancelled")).containsExactly("100");
  }
}
