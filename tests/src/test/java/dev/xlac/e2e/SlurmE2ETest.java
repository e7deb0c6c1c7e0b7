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
 * {@code parallel-compile --executor slurm} on a real Slurm: Debian's slurmctld, slurmd and munge (slurm-wlm
 * 22.05) on localhost, started by {@code tests/src/test/sh/slurm-local.sh} (which installs the packages with
 * apt-get when they are missing, and is the only reason this test skips: where they cannot be installed or run).
 * A sharded compile of samples/jax/mlp.py against a SeaweedFS remote tier (a real S3 server, {@code $XLAC_WEED})
 * compiles each graph exactly once, on some shard, and its results come back through the remote (the objects are in
 * the bucket, no bundle went through the shared directory); another cache with the same remote reads every graph
 * through and submits nothing; the cache then holds an artifact of each (a local run is all cached) and
 * {@code xlac run} serves every compile. Recorded requests compiled for a second plugin over 2 shards come back as
 * runtime entries, and {@code xlac run} with that plugin is all hits. Through the shared directory (no remote): a task
 * killed
 * with SIGKILL is submitted again; SIGTERM to xlac cancels the array; no sbatch on PATH is one line and exit 3.
 */
class SlurmE2ETest {
  private static final Pattern SUBMITTED = Pattern.compile("submitted Slurm job array (\\d+)");
  private static final String BUCKET = "xlac-slurm";
  private static Path slurmDir;
  private static String slurmConf;
  private static Path weedDir;
  private static SeaweedServer weed;

  @TempDir
  Path work;

  private final List<Process> started = new ArrayList<>();

  @BeforeAll
  static void startSlurm() throws Exception {
    slurmDir = Files.createTempDirectory("xlac-slurm-e2e");
    Launcher.Result r = Launcher.run(List.of("bash", harness(), "start", slurmDir.toString()), Map.of(), 900);
    if (r.exitCode() == 77) {
      List<String> lines = r.err().lines().toList();
      Assumptions.abort("no Slurm here: " + (lines.isEmpty() ? "" : lines.getLast()));
    }
    assertThat(r.exitCode()).as("slurm-local.sh start: %s", r.err()).isZero();
    slurmConf = r.out().lines().filter(l -> l.startsWith("SLURM_CONF=")).findFirst().orElseThrow().substring(11);
    if (SeaweedServer.unavailableReason() == null) {
      weedDir = Files.createTempDirectory("xlac-slurm-weed");
      weed = SeaweedServer.start(weedDir, BUCKET);
    }
  }

  @AfterAll
  static void stopSlurm() throws Exception {
    if (weed != null) {
      weed.close();
    }
    if (weedDir != null) {
      deleteTree(weedDir);
    }
    if (slurmDir != null) {
      Launcher.run(List.of("bash", harness(), "stop", slurmDir.toString()), Map.of(), 120);
    }
  }

  private static void deleteTree(Path dir) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }

  private static String harness() {
    return Launcher.root().resolve("tests/src/test/sh/slurm-local.sh").toString();
  }

  private static Map<String, String> env() {
    Map<String, String> env = new HashMap<>();
    env.put("SLURM_CONF", slurmConf);
    env.put("JAX_PLATFORMS", "");
    env.put("XLAC_PJRT_PLUGIN", "");
    return env;
  }

  private List<String> slurmCompile(Path cache, Path shared, String... options) {
    List<String> cmd = new ArrayList<>(List.of(xlac(), "parallel-compile", "--cache", cache.toString(), "--plugin",
        Launcher.cpuPlugin(), "--executor", "slurm", "--shared-dir", shared.toString()));
    cmd.addAll(List.of(options));
    return cmd;
  }

  /** Compiles per fingerprint, over every shard's result lines of every run in {@code shared}. */
  private static Map<String, Integer> compilesPerGraph(Path shared) throws IOException {
    Map<String, Integer> count = new HashMap<>();
    try (Stream<Path> files = Files.walk(shared)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".tsv") && p.getParent().endsWith("results")).toList()) {
        for (String line : Files.readAllLines(f)) {
          String[] fields = line.split("\t");
          if (fields.length > 1 && fields[1].equals("COMPILED")) {
            count.merge(fields[0], 1, Integer::sum);
          }
        }
      }
    }
    return count;
  }

  private static Map<String, String> reportStatuses(Path report) throws Exception {
    Launcher.Result r = Launcher.run(List.of(Launcher.python(), "-c", """
        import json, sys
        for g in json.load(open(sys.argv[1]))["graphs"]:
            print(g["fingerprint"], g["status"])
        """, report.toString()), Map.of(), 60);
    assertThat(r.exitCode()).as(r.err()).isZero();
    Map<String, String> m = new HashMap<>();
    r.out().lines().map(l -> l.split(" ")).forEach(f -> m.put(f[0], f[1]));
    return m;
  }

  @Test
  void shardedOneShot_throughTheRemoteTier_compilesEveryGraphOnce_thenLocalRunIsAllCached_andXlacRunAllHits()
      throws Exception {
    Assumptions.assumeTrue(weed != null, SeaweedServer.unavailableReason());
    Path cache = work.resolve("cache");
    Path shared = work.resolve("shared");
    Path report = work.resolve("report.json");
    Map<String, String> env = env();
    env.putAll(weed.environment()); // the credentials: sbatch passes the environment on to the tasks
    Launcher.Result config = Launcher.run(List.of(xlac(), "cache", "config", "remote", "s3://" + BUCKET + "/sharded",
        "--endpoint", weed.endpoint(), "--cache", cache.toString()), env, 300);
    assertThat(config.exitCode()).as(config.err()).isZero();
    List<String> cmd = slurmCompile(cache, shared, "--shards", "3", "--report", report.toString(), "--");
    cmd.addAll(mlp());
    Launcher.Result r = Launcher.run(cmd, env, 600);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).contains("submitted Slurm job array").contains("3 tasks")
        .contains("(results through s3://" + BUCKET + "/sharded)");
    Matcher summary = Pattern.compile("(\\d+) graphs: \\1 compiled, 0 cached, 0 failed").matcher(r.out());
    assertThat(summary.find()).as(r.out()).isTrue();
    int graphs = Integer.parseInt(summary.group(1));
    assertThat(graphs).isGreaterThan(3);
    assertThat(r.out()).as("every artifact came back through the remote")
        .contains("remote s3://" + BUCKET + "/sharded: read through " + graphs + " (");

    Map<String, String> statuses = reportStatuses(report);
    assertThat(statuses).hasSize(graphs).allSatisfy((fp, status) -> assertThat(status).isEqualTo("compiled"));
    Map<String, Integer> compiles;
    try (S3Client s3 = weed.client()) {
      compiles = ShardedRuns.compilesPerGraph(s3, BUCKET, "sharded");
    }
    assertThat(compiles.keySet()).as("every graph of the report compiled on some shard").isEqualTo(statuses.keySet());
    assertThat(compiles).allSatisfy((fp, n) -> assertThat(n).as(fp).isEqualTo(1));
    try (S3Client s3 = weed.client()) {
      assertThat(ShardedRuns.objects(s3, BUCKET, "sharded/v1/graphs/")).hasSize(graphs);
      assertThat(ShardedRuns.objects(s3, BUCKET, "sharded/v1/artifacts/")).hasSize(graphs);
      assertThat(ShardedRuns.objects(s3, BUCKET, "sharded/v1/runs/")).as("one result manifest per shard").hasSize(3);
    }
    try (Stream<Path> files = Files.walk(shared)) {
      assertThat(files.map(shared::relativize).map(Path::toString).toList()).as("no results through the shared dir")
          .noneMatch(f -> f.endsWith(".bundle") || f.contains("results"));
    }

    // Another login node's cache with the same remote: every graph is read through, no array is submitted.
    Path other = work.resolve("other-cache");
    assertThat(Launcher.run(List.of(xlac(), "cache", "config", "remote", "s3://" + BUCKET + "/sharded", "--endpoint",
        weed.endpoint(), "--cache", other.toString()), env, 300).exitCode()).isZero();
    List<String> again = slurmCompile(other, work.resolve("other-shared"), "--shards", "3", "--");
    again.addAll(mlp());
    Launcher.Result second = Launcher.run(again, env, 600);
    assertThat(second.exitCode()).as(second.err()).isZero();
    assertThat(second.out()).contains(graphs + " graphs: 0 compiled, " + graphs + " cached, 0 failed")
        .contains("read through " + graphs + " (");
    assertThat(second.err()).doesNotContain("submitted Slurm job array");

    Launcher.Result local = Launcher.run(List.of(xlac(), "parallel-compile", "--no-remote", "--cache",
        cache.toString(), "--plugin", Launcher.cpuPlugin()), env, 300);
    assertThat(local.exitCode()).as(local.err()).isZero();
    // The recorded requests (the one-shot recorded through the proxy) count beside the graphs: all cached too.
    assertThat(local.out()).as("the shards' artifacts are in the cache, under this plugin's identity")
        .containsPattern(graphs + " graphs(?: and \\d+ recorded requests)?: 0 compiled, \\d+ cached, 0 failed");

    // xlac run serves what the one-shot recorded through the proxy (the command ran where xlac was called).
    assertThat(r.out()).containsPattern("recorded (\\d+) compiles through the runtime proxy");
    Path runReport = work.resolve("run.json");
    List<String> run = new ArrayList<>(List.of(xlac(), "run", "--cache", cache.toString(), "--plugin",
        Launcher.cpuPlugin(), "--report", runReport.toString(), "--"));
    run.addAll(mlp());
    Launcher.Result served = Launcher.run(run, env, 300);
    assertThat(served.exitCode()).as(served.err()).isZero();
    assertThat(served.runSummary()).matches(
        "xlac run: (\\d+) compiles: \\1 served from the cache, 0 compiled; .*");
  }

  /**
   * Issue #15's CI flow on the cluster: mlp.py recorded under {@code xlac run --record} with the 0.115 plugin, then
   * {@code parallel-compile --executor slurm --plugin NEW} (the xla-cpu-pjrt 0.81 plugin, {@code $XLAC_PJRT_PLUGIN_2})
   * over 2 shards compiles every recorded request there (before, the Slurm executor compiled graphs only and left
   * them out), their runtime entries come back through the shared directory, and {@code xlac run} with NEW is then
   * all hits.
   */
  @Test
  void recordedRequests_shardedForANewPlugin_comeBackAsRuntimeEntries_andXlacRunWithItIsAllHits() throws Exception {
    String newPlugin = System.getenv("XLAC_PJRT_PLUGIN_2");
    Assumptions.assumeTrue(newPlugin != null && !newPlugin.isBlank(), "XLAC_PJRT_PLUGIN_2 is not set; scripts/test"
        + " sets it");
    Path cache = work.resolve("cache");
    Map<String, String> env = env();
    List<String> record = new ArrayList<>(List.of(xlac(), "run", "--cache", cache.toString(), "--plugin",
        Launcher.cpuPlugin(), "--record", "--"));
    record.addAll(mlp());
    Launcher.Result recorded = Launcher.run(record, env, 300);
    assertThat(recorded.exitCode()).as(recorded.err()).isZero();
    int compiles = Integer.parseInt(recorded.runSummary().replaceAll("(?s).*xlac run: (\\d+) compiles.*", "$1"));

    Path shared = work.resolve("shared");
    Launcher.Result r = Launcher.run(List.of(xlac(), "parallel-compile", "--cache", cache.toString(), "--plugin",
        newPlugin, "--executor", "slurm", "--shared-dir", shared.toString(), "--shards", "2"), env, 600);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).contains("submitted Slurm job array").contains("2 tasks");
    assertThat(r.out()).startsWith(compiles + " recorded requests: " + compiles + " compiled, 0 cached, 0 failed");
    Map<String, Integer> perKey = compilesPerGraph(shared);
    assertThat(perKey).as("each request compiled once, on some shard").hasSize(compiles)
        .allSatisfy((key, n) -> assertThat(key).startsWith("pjrt1:")).allSatisfy((key, n) -> assertThat(n).isOne());

    List<String> run = new ArrayList<>(List.of(xlac(), "run", "--cache", cache.toString(), "--plugin", newPlugin,
        "--require-hits", "--"));
    run.addAll(mlp());
    Launcher.Result served = Launcher.run(run, env, 300);
    assertThat(served.exitCode()).as(served.err()).isZero();
    assertThat(served.runSummary()).contains("xlac run: " + compiles + " compiles: " + compiles + " served from the cache, 0"
        + " compiled");
  }

  /** Starts xlac in the background; stdout and stderr go to files in {@code work}. */
  private Process start(List<String> cmd) throws IOException {
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(Launcher.root().toFile());
    pb.environment().putAll(env());
    pb.redirectOutput(work.resolve("bg.out").toFile()).redirectError(work.resolve("bg.err").toFile());
    Process p = pb.start();
    started.add(p);
    return p;
  }

  /** Whatever a test started and left running (it failed half-way): killed with its children, and waited for. */
  @AfterEach
  void killStarted() {
    ShardedRuns.killWithChildren(started);
  }

  private String bgErr() throws IOException {
    return Files.readString(work.resolve("bg.err"), StandardCharsets.UTF_8);
  }

  private Path dumps() throws Exception {
    Path dumps = work.resolve("dumps");
    Launcher.traceJax(Launcher.root().resolve("samples/jax/mlp.py"), dumps, "--steps", "2");
    return dumps;
  }

  @Test
  void aTaskKilledBeforeItHandsBackResults_isSubmittedAgain_andEveryGraphStillCompilesOnce() throws Exception {
    Path dumps = dumps();
    Path shared = work.resolve("shared");
    Path report = work.resolve("report.json");
    List<String> cmd = slurmCompile(work.resolve("cache"), shared, "--shards", "2", "--retries", "1",
        "--report", report.toString(), dumps.toString());
    Process p = start(cmd);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
    Optional<Long> task = Optional.empty();
    while (task.isEmpty() && p.isAlive() && System.nanoTime() < deadline) {
      task = shardTask(shared);
      Thread.sleep(20);
    }
    assertThat(task).as("a running task; xlac: %s", bgErr()).isPresent();
    ProcessHandle.of(task.get()).orElseThrow().destroyForcibly(); // SIGKILL: the task dies without results
    assertThat(p.waitFor(300, TimeUnit.SECONDS)).isTrue();
    String err = bgErr();
    assertThat(p.exitValue()).as(err).isZero();
    assertThat(err).containsPattern("shard \\d \\(job \\d+_\\d\\) its task ended without results: [A-Z]+")
        .contains("submitted again as job").contains("(attempt 2 of 2)");
    Map<String, String> statuses = reportStatuses(report);
    assertThat(statuses).isNotEmpty().allSatisfy((fp, status) -> assertThat(status).isEqualTo("compiled"));
    Map<String, Integer> compiles = compilesPerGraph(shared);
    assertThat(compiles.keySet()).isEqualTo(statuses.keySet());
    assertThat(compiles).allSatisfy((fp, n) -> assertThat(n).as(fp).isEqualTo(1));
  }

  @Test
  void sigtermToXlac_cancelsTheJobArray() throws Exception {
    Path dumps = dumps();
    // The tasks wait a minute before they may start, so the array is surely still there to cancel.
    Process p = start(slurmCompile(work.resolve("cache"), work.resolve("shared"), "--shards", "2",
        "--sbatch-arg=--begin=now+60", dumps.toString()));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
    Matcher m = SUBMITTED.matcher("");
    boolean submitted = false;
    while (!submitted && p.isAlive() && System.nanoTime() < deadline) {
      Thread.sleep(50);
      m = SUBMITTED.matcher(bgErr());
      submitted = m.find();
    }
    assertThat(submitted).as("a job array was submitted: %s", bgErr()).isTrue();
    String job = m.group(1);
    Map<String, String> slurm = Map.of("SLURM_CONF", slurmConf);
    assertThat(Launcher.run(List.of("squeue", "-h", "-j", job), slurm, 60).out()).as("queued").isNotBlank();
    p.destroy(); // SIGTERM, as Ctrl-C's SIGINT: the shutdown hook cancels
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(bgErr()).isEqualTo(143);
    Launcher.Result show = Launcher.run(List.of("scontrol", "-o", "show", "job", job), slurm, 60);
    assertThat(show.out().lines().toList()).as(show.out() + show.err()).isNotEmpty()
        .allSatisfy(l -> assertThat(l).contains("JobState=CANCELLED"));
  }

  @Test
  void noSbatchOnPath_isOneLine_andExit3() throws Exception {
    Path bin = Files.createDirectories(work.resolve("bin"));
    try (Stream<Path> s = Files.list(Path.of("/usr/bin"))) {
      for (Path f : s.filter(f -> !f.getFileName().toString().equals("sbatch")).toList()) {
        Files.createSymbolicLink(bin.resolve(f.getFileName()), f);
      }
    }
    Map<String, String> env = env();
    env.put("PATH", bin.toString());
    Launcher.Result r;
    try {
      r = Launcher.run(List.of(xlac(), "parallel-compile", "--cache", work.resolve("cache").toString(),
          "--executor", "slurm"), env, 300);
    } finally {
      try (Stream<Path> s = Files.list(bin)) { // the links, so that the temp dir's cleanup has none to warn about
        for (Path link : s.toList()) {
          Files.delete(link);
        }
      }
    }
    assertThat(r.exitCode()).as(r.err()).isEqualTo(3);
    assertThat(r.err().lines().filter(l -> !l.startsWith("xlac: buil")).toList()).singleElement().asString()
        .startsWith("xlac: sbatch not found on PATH: ");
  }
}
