package dev.xlac.pipeline.ray;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.e2e.RayCluster;
import dev.xlac.pipeline.shard.ShardEngine;
import dev.xlac.pipeline.shard.ShardSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link RayEngine} and {@link RayExecutor} against a real one-node dashboard ({@link RayCluster}), reached through
 * a {@link DashboardProxy} under a path as behind a site's ingress; the proxy also makes a POST fail after Ray took
 * its job, as a gateway that gave up waiting does. Each job runs {@code sleep 600} until stopped; what Ray has is
 * read straight from the dashboard. The whole run on Ray is tests' RayE2ETest.
 */
@Timeout(300)
class RayEngineTest {
  private static RayCluster ray;
  private static DashboardProxy proxy;
  private static RayJobsClient direct;

  @TempDir
  Path tmp;

  @BeforeAll
  static void startHead() throws Exception {
    String why = RayCluster.unavailableReason();
    Assumptions.assumeTrue(why == null, why);
    ray = RayCluster.start(1, 0, Map.of());
    proxy = DashboardProxy.start(ray.address(), "/ray/");
    direct = new RayJobsClient(RaySettings.address(ray.address(), Map.of()), Map.of());
  }

  @AfterAll
  static void stopHead() throws Exception {
    if (direct != null) {
      direct.close();
    }
    if (proxy != null) {
      proxy.close();
    }
    if (ray != null) {
      ray.close();
    }
  }

  @AfterEach
  void forwardEverything() {
    if (proxy != null) {
      proxy.rule(s -> DashboardProxy.Answer.FORWARD);
    }
  }

  /** Jobs that run {@code sleep 600} (the shard's arguments go to sh as $0...), reserving nothing. */
  private RaySettings settings() {
    return new RaySettings(RaySettings.address(proxy.address(), Map.of()), Map.of(), Map.of(),
        new ShardSettings(3, 0, tmp, Duration.ofMillis(100), line -> {}), List.of("sh", "-c", "sleep 600"));
  }

  /** An engine for run {@code run}, whose jobs are named xlac_RUN_sI_aN. */
  private RayEngine engine(String run) {
    RaySettings s = settings();
    return new RayEngine(new RayJobsClient(s.address(), s.headers()), s, tmp.resolve(run), List.of());
  }

  private static boolean isJobPost(DashboardProxy.Seen s) {
    return s.method().equals("POST") && s.path().equals("/ray/api/jobs/");
  }

  private static String status(String id) throws Exception {
    return direct.job(id).map(RayJobsClient.Job::status).orElse("unknown");
  }

  private static String waitFor(String id, String status) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    String s = status(id);
    while (!s.equals(status) && System.nanoTime() < deadline) {
      Thread.sleep(200);
      s = status(id);
    }
    return s;
  }

  /**
   * The second of three POSTs made its job, but the gateway answered 504: submit threw, and the first job and the
   * one that POST made ran on while xlac exited 3. Now the call stops what it posted before it throws.
   */
  @Test
  void aPostThatFailsAfterRayTookTheJob_leavesNoJobOfTheSubmissionRunning() throws Exception {
    AtomicInteger posts = new AtomicInteger();
    proxy.rule(s -> isJobPost(s) && posts.incrementAndGet() == 2
        ? DashboardProxy.Answer.FORWARD_THEN_GATEWAY_TIMEOUT : DashboardProxy.Answer.FORWARD);
    try (RayEngine engine = engine("partway")) {
      assertThatThrownBy(() -> engine.submit(List.of(0, 1, 2))).isInstanceOfSatisfying(XlacException.class, e -> {
        assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
        assertThat(e.getMessage()).startsWith("Ray refused POST /api/jobs/ (HTTP 504): ");
      });
      assertThat(engine.submitted()).extracting(ShardEngine.Task::attempt)
          .containsExactly("xlac_partway_s0_a1", "xlac_partway_s1_a1");
    }
    assertThat(posts).as("nothing posted after the failure").hasValue(2);
    assertThat(waitFor("xlac_partway_s0_a1", "STOPPED")).isEqualTo("STOPPED");
    assertThat(waitFor("xlac_partway_s1_a1", "STOPPED")).as("the job the failed POST made").isEqualTo("STOPPED");
    assertThat(status("xlac_partway_s2_a1")).isEqualTo("unknown");
  }

  /**
   * A shutdown (its hook's cancelAll) while the second of three jobs was being posted: the stops went out, but the
   * submission went on posting, and the job whose POST was under way, made after its stop, ran on. Now the
   * submission stops posting and stops what it posted.
   */
  @Test
  void aCancelAllDuringSubmission_stopsThePosting_andWhatWasPosted() throws Exception {
    AtomicInteger posts = new AtomicInteger();
    AtomicReference<RayEngine> shutdown = new AtomicReference<>();
    proxy.rule(s -> {
      if (isJobPost(s) && posts.incrementAndGet() == 2) {
        shutdown.get().cancelAll(); // before Ray has the job: its stop finds nothing
      }
      return DashboardProxy.Answer.FORWARD;
    });
    try (RayEngine engine = engine("cancelled")) {
      shutdown.set(engine);
      assertThatThrownBy(() -> engine.submit(List.of(0, 1, 2))).isInstanceOfSatisfying(XlacException.class,
          e -> assertThat(e.getMessage()).isEqualTo("the run was stopped while its Ray jobs were submitted"));
    }
    assertThat(posts).as("nothing posted after the cancel").hasValue(2);
    assertThat(waitFor("xlac_cancelled_s0_a1", "STOPPED")).isEqualTo("STOPPED");
    assertThat(waitFor("xlac_cancelled_s1_a1", "STOPPED")).as("posted while cancelled").isEqualTo("STOPPED");
    assertThat(status("xlac_cancelled_s2_a1")).isEqualTo("unknown");
  }

  private static Map<String, String> metadata(String host, String hostId, long pid) {
    return Map.of(RayEngine.RUN, "run-orphans", RayEngine.SHARD, "0", RayEngine.HOST, host, RayEngine.HOST_ID,
        hostId, RayEngine.PID, Long.toString(pid));
  }

  /**
   * A host whose name lookup failed named itself localhost, so two such hosts took each other's jobs for their own.
   * Jobs now name their host by its id as well: --ray-stop-orphans stops only the jobs of this host (name and id)
   * whose submitter is gone, and leaves those of a live submitter and of another host, even one of the same name.
   */
  @Test
  void stopOrphans_stopsOnlyThisHostsJobsWhoseSubmitterIsGone_notALiveOnesNorAnotherHostsOfTheSameName()
      throws Exception {
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    long dead = gone.pid();
    long alive = ProcessHandle.current().pid();
    Map<String, Map<String, String>> jobs = new LinkedHashMap<>();
    jobs.put("xlac_orphans_dead_s0_a1", metadata(RayEngine.Host.NAME, RayEngine.Host.ID, dead));
    jobs.put("xlac_orphans_live_s0_a1", metadata(RayEngine.Host.NAME, RayEngine.Host.ID, alive));
    jobs.put("xlac_orphans_other_s0_a1", metadata("other-host", "0123456789abcdef0123456789abcdef", dead));
    jobs.put("xlac_orphans_samename_s0_a1", metadata(RayEngine.Host.NAME, "fedcba9876543210fedcba9876543210", dead));
    for (Map.Entry<String, Map<String, String>> job : jobs.entrySet()) {
      direct.submit(job.getKey(), "sleep 600", job.getValue(), Map.of(), Map.of());
    }
    for (String id : jobs.keySet()) {
      assertThat(waitFor(id, "RUNNING")).as(id).isEqualTo("RUNNING");
    }
    List<String> lines = new ArrayList<>();
    assertThat(new RayExecutor(settings()).stopOrphans(lines::add)).isEqualTo(1);
    assertThat(lines).containsExactly("stopped Ray job xlac_orphans_dead_s0_a1 (shard 0 of run-orphans, whose"
        + " submitter, pid " + dead + ", is gone)");
    assertThat(waitFor("xlac_orphans_dead_s0_a1", "STOPPED")).isEqualTo("STOPPED");
    for (String left : List.of("xlac_orphans_live_s0_a1", "xlac_orphans_other_s0_a1", "xlac_orphans_samename_s0_a1")) {
      assertThat(status(left)).as(left).isEqualTo("RUNNING");
    }
  }

  private static Set<Thread> httpClientThreads() {
    return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith("HttpClient-")
        && t.getName().endsWith("-SelectorManager") && t.isAlive()).collect(Collectors.toSet());
  }

  /**
   * The executor's client was never closed: its selector thread lived as long as the executor. Each use now closes
   * its own client (the run's is its engine's, closed with it).
   */
  @Test
  void theExecutorsAndTheEnginesClients_areClosed_leavingNoThreadBehind() throws Exception {
    Set<Thread> before = httpClientThreads();
    RayExecutor executor = new RayExecutor(settings());
    executor.checkReady();
    executor.stopOrphans(line -> {});
    try (RayEngine engine = engine("closed")) {
      assertThat(engine.queued(List.of(new ShardEngine.Task(0, "xlac_closed_s0_a1")))).isEmpty();
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    Set<Thread> left = httpClientThreads();
    left.removeAll(before);
    while (!left.isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(50);
      left.removeIf(t -> !t.isAlive());
    }
    assertThat(left).isEmpty();
    java.lang.ref.Reference.reachabilityFence(executor); // a client the executor held would live as long
  }
}
