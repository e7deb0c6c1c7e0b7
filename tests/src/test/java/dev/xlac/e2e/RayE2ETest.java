package dev.xlac.e2e;

import static dev.xlac.e2e.ShardedRuns.mlp;
import static dev.xlac.e2e.ShardedRuns.shardTask;
import static dev.xlac.e2e.ShardedRuns.xlac;
import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.remote.SeaweedServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * {@code parallel-compile --executor ray} on a real Ray cluster ({@link RayCluster}: a head and a second node on
 * 127.0.0.1, from the pinned Ray), with a SeaweedFS remote tier (a real S3 server, {@code $XLAC_WEED}) whose
 * credentials the nodes have in their own environment, as a site gives them (never on a command line, nor in a
 * job's runtime environment). The JAX sample compiled over 3 shards, one Ray job each: a shard whose job is killed
 * is submitted again, every graph compiles exactly once, the summary is the local run's, and {@code xlac run} is
 * then all hits. SIGTERM to xlac stops every job it submitted; the jobs of an xlac killed outright are found by their
 * metadata and stopped by {@code --ray-stop-orphans}; no dashboard is one line and exit 3.
 */
class RayE2ETest {
  private static final String BUCKET = "xlac-ray";
  private static Path weedDir;
  private static SeaweedServer weed;
  private static RayCluster ray;

  @TempDir
  Path work;

  private final List<Process> started = new ArrayList<>();

  @BeforeAll
  static void startCluster() throws Exception {
    String why = RayCluster.unavailableReason();
    Assumptions.assumeTrue(why == null, why);
    Assumptions.assumeTrue(SeaweedServer.unavailableReason() == null, SeaweedServer.unavailableReason());
    weedDir = Files.createTempDirectory("xlac-ray-weed");
    weed = SeaweedServer.start(weedDir, BUCKET);
    ray = RayCluster.start(2, 2, weed.environment());
  }

  @AfterAll
  static void stopCluster() throws Exception {
    if (ray != null) {
      ray.close();
    }
    if (weed != null) {
      weed.close();
    }
    if (weedDir != null) {
      try (Stream<Path> s = Files.walk(weedDir)) {
        s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  private static Map<String, String> env() {
    Map<String, String> env = new HashMap<>();
    env.put("JAX_PLATFORMS", "");
    env.put("XLAC_PJRT_PLUGIN", "");
    env.put("RAY_ADDRESS", ray.address()); // as a Ray user sets it
    return env;
  }

  private List<String> rayCompile(Path cache, String plugin, Path shared, String... options) {
    List<String> cmd = new ArrayList<>(List.of(xlac(), "parallel-compile", "--cache", cache.toString(), "--plugin",
        plugin, "--executor", "ray", "--shared-dir", shared.toString()));
    cmd.addAll(List.of(options));
    return cmd;
  }

  /** Starts xlac in the background; stdout and stderr go to files in {@code work}. */
  private Process start(List<String> cmd, Map<String, String> env, String name) throws IOException {
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(Launcher.root().toFile());
    pb.environment().putAll(env);
    pb.redirectOutput(work.resolve(name + ".out").toFile()).redirectError(work.resolve(name + ".err").toFile());
    Process p = pb.start();
    started.add(p);
    return p;
  }

  private String read(String file) throws IOException {
    return Files.readString(work.resolve(file), StandardCharsets.UTF_8);
  }

  @AfterEach
  void killStarted() {
    ShardedRuns.killWithChildren(started);
  }

  @Test
  void threeShards_throughTheRemoteTier_aKilledJobIsSubmittedAgain_eachGraphCompilesOnce_andXlacRunIsAllHits()
      throws Exception {
    Path cache = work.resolve("cache");
    Map<String, String> env = env();
    env.putAll(weed.environment()); // the submitter's own credentials, to pull the results
    Launcher.Result config = Launcher.run(List.of(xlac(), "cache", "config", "remote", "s3://" + BUCKET + "/sharded",
        "--endpoint", weed.endpoint(), "--cache", cache.toString()), env, 300);
    assertThat(config.exitCode()).as(config.err()).isZero();
    Path kept = work.resolve("kept");
    List<String> cmd = rayCompile(cache, Launcher.cpuPlugin(), work.resolve("shared"), "--shards", "3", "--retries",
        "1", "--keep-dumps", kept.toString(), "--");
    cmd.addAll(mlp());
    Process p = start(cmd, env, "sharded");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
    Optional<Long> task = Optional.empty();
    while (task.isEmpty() && p.isAlive() && System.nanoTime() < deadline) {
      task = shardTask(work.resolve("shared"));
      Thread.sleep(20);
    }
    assertThat(task).as("a running shard job; xlac: %s", read("sharded.err")).isPresent();
    ProcessHandle.of(task.get()).orElseThrow().destroyForcibly(); // SIGKILL: the job ends without results
    assertThat(p.waitFor(300, TimeUnit.SECONDS)).isTrue();
    String err = read("sharded.err");
    String out = read("sharded.out");
    assertThat(p.exitValue()).as(err).isZero();
    assertThat(err).contains("submitted 3 Ray jobs xlac_run_").contains("3 tasks")
        .contains("(results through s3://" + BUCKET + "/sharded)")
        .containsPattern("Ray: shard \\d \\(job xlac_run_\\w+_s\\d_a1\\) its task ended without results: FAILED")
        .containsPattern("submitted again as job xlac_run_\\w+_s\\d_a2 \\(attempt 2 of 2\\)");
    Matcher summary = Pattern.compile("(\\d+) graphs: \\1 compiled, 0 cached, 0 failed").matcher(out);
    assertThat(summary.find()).as(out).isTrue();
    int graphs = Integer.parseInt(summary.group(1));
    assertThat(graphs).isGreaterThan(3);
    assertThat(out).as("every artifact came back through the remote").contains("remote s3://" + BUCKET
        + "/sharded: read through " + graphs + " (");
    Map<String, Integer> compiles;
    try (S3Client s3 = weed.client()) {
      compiles = ShardedRuns.compilesPerGraph(s3, BUCKET, "sharded");
    }
    assertThat(compiles).as("each graph compiled on some shard, once").hasSize(graphs)
        .allSatisfy((fp, n) -> assertThat(n).as(fp).isEqualTo(1));

    // The same graphs (the dumps the one-shot kept) compiled locally into a new cache: the same summary line.
    Launcher.Result local = Launcher.run(List.of(xlac(), "parallel-compile", "--cache",
        work.resolve("local-cache").toString(), "--plugin", Launcher.cpuPlugin(), kept.toString()), env(), 300);
    assertThat(local.exitCode()).as(local.err()).isZero();
    assertThat(local.out()).contains(summary.group());

    // xlac run serves what the one-shot recorded through the proxy: all hits.
    List<String> run = new ArrayList<>(List.of(xlac(), "run", "--cache", cache.toString(), "--plugin",
        Launcher.cpuPlugin(), "--"));
    run.addAll(mlp());
    Launcher.Result served = Launcher.run(run, env, 300);
    assertThat(served.exitCode()).as(served.err()).isZero();
    assertThat(served.runSummary()).matches("xlac run: (\\d+) compiles: \\1 served from the cache, 0 compiled; .*");
  }

  /** The run name (the prefix of its jobs' ids, xlac_run_..._sI_aN) in a run's stderr. */
  private static String runOf(String err) {
    Matcher m = Pattern.compile("submitted 2 Ray jobs (xlac_run_\\w+)_s\\*_a1").matcher(err);
    assertThat(m.find()).as(err).isTrue();
    return m.group(1);
  }

  /** Status of every job of the run whose jobs are named {@code prefix}, from the dashboard's list of jobs. */
  private static Map<String, String> statuses(String prefix) throws Exception {
    java.net.http.HttpResponse<String> r;
    try (java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient()) {
      r = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(ray.address() + "/api/jobs/")).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString());
    }
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    Map<String, String> m = new HashMap<>();
    for (Object o : (List<?>) com.fasterxml.jackson.jr.ob.JSON.std.anyFrom(r.body())) {
      Map<?, ?> job = (Map<?, ?>) o;
      if (job.get("submission_id") instanceof String id && id.startsWith(prefix + "_s")) {
        m.put(id, (String) job.get("status"));
      }
    }
    return m;
  }

  private static Map<String, String> settled(String prefix) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    Map<String, String> s = statuses(prefix);
    while (s.values().stream().anyMatch(v -> !v.equals("STOPPED")) && System.nanoTime() < deadline) {
      Thread.sleep(500);
      s = statuses(prefix);
    }
    return s;
  }

  /** Two shards whose compiles never end (the C test plugin hangs on graphs named hang), once both jobs run. */
  private Process hangingRun(Path dumps, Path plugin, String name) throws Exception {
    Process p = start(rayCompile(work.resolve(name + "-cache"), plugin.toString(), work.resolve(name + "-shared"),
        "--shards", "2", dumps.toString()), env(), name);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (!read(name + ".err").contains("Ray: 0 of 2 shards done, 2 running") && p.isAlive()
        && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
    assertThat(read(name + ".err")).contains("Ray: 0 of 2 shards done, 2 running");
    return p;
  }

  @Test
  void sigterm_stopsEveryJob_andAKilledSubmittersJobs_areStoppedByStopOrphans() throws Exception {
    Path dumps = work.resolve("dumps");
    // Two graphs the test plugin hangs on, the largest of the dumps, so each shard gets one.
    Path script = Files.writeString(work.resolve("hang.py"), "import jax, jax.numpy as jnp\n"
        + "def hang_a(x):\n    for _ in range(20):\n        x = jnp.tanh(x) * 2 + 1\n    return x\n"
        + "def hang_b(x):\n    for _ in range(20):\n        x = jnp.sin(x) * 3 - 1\n    return x\n"
        + "print(jax.jit(hang_a)(jnp.ones(8)), jax.jit(hang_b)(jnp.ones(8)))\n");
    Launcher.traceJax(script, dumps);
    Path plugin = Launcher.buildTestPlugin(work);

    Process term = hangingRun(dumps, plugin, "term");
    String run = runOf(read("term.err"));
    assertThat(statuses(run)).hasSize(2).allSatisfy((id, s) -> assertThat(s).isEqualTo("RUNNING"));
    term.destroy(); // SIGTERM, as Ctrl-C's SIGINT: the shutdown hook stops the jobs
    assertThat(term.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(term.exitValue()).as(read("term.err")).isEqualTo(143);
    assertThat(settled(run)).hasSize(2).allSatisfy((id, s) -> assertThat(s).isEqualTo("STOPPED"));

    Process crash = hangingRun(dumps, plugin, "crash");
    String orphans = runOf(read("crash.err"));
    crash.destroyForcibly(); // SIGKILL: no hook runs, the jobs stay
    assertThat(crash.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(statuses(orphans)).hasSize(2).allSatisfy((id, s) -> assertThat(s).isEqualTo("RUNNING"));
    Launcher.Result stop = Launcher.run(List.of(xlac(), "parallel-compile", "--cache", work.resolve("c").toString(),
        "--executor", "ray", "--ray-stop-orphans"), env(), 120);
    assertThat(stop.exitCode()).as(stop.err()).isZero();
    assertThat(stop.out().lines().filter(l -> l.startsWith("stopped Ray job " + orphans))).hasSize(2);
    assertThat(stop.out()).contains("stopped 2 orphaned Ray jobs");
    assertThat(settled(orphans)).hasSize(2).allSatisfy((id, s) -> assertThat(s).isEqualTo("STOPPED"));
  }

  @Test
  void noDashboard_isOneLine_andExit3_beforeAnythingIsSubmitted() throws Exception {
    Map<String, String> env = env();
    env.put("RAY_ADDRESS", "http://127.0.0.1:9"); // nothing listens on discard
    Launcher.Result r = Launcher.run(List.of(xlac(), "parallel-compile", "--cache", work.resolve("cache").toString(),
        "--executor", "ray", "--shared-dir", work.resolve("shared").toString()), env, 120);
    assertThat(r.exitCode()).as(r.err()).isEqualTo(3);
    assertThat(r.err().lines().filter(l -> !l.startsWith("xlac: buil")).toList()).singleElement().asString()
        .startsWith("xlac: cannot reach Ray's dashboard at http://127.0.0.1:9/: ");
    assertThat(work.resolve("shared")).doesNotExist();
  }
}
