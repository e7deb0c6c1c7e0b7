package dev.xlac.pipeline.slurm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RemoteSetting;
import dev.xlac.cache.remote.RemoteObjects;
import dev.xlac.cache.remote.SeaweedServer;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.ExitCode;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.TestModules;
import dev.xlac.pipeline.CompileResult;
import dev.xlac.pipeline.CompileRuns;
import dev.xlac.pipeline.CompileSetup;
import dev.xlac.pipeline.DriverSource;
import dev.xlac.pipeline.FakeCompiler;
import dev.xlac.pipeline.RunListener;
import dev.xlac.pipeline.StandInSlurm;
import dev.xlac.pipeline.shard.ShardTask;
import dev.xlac.pipeline.shard.ShardTaskMain;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;

/**
 * The whole submitter ({@link CompileRuns#cache} with a {@link SlurmExecutor}) against a stand-in Slurm whose {@code sbatch} runs each array task
 * at once, as a real process ({@link ShardTaskMain}: {@link ShardTask#runOnNode} with {@link FakeCompiler} as a PJRT
 * plugin), its output in the log file {@code --output} names; {@code squeue} then finds no task queued and
 * {@code scontrol} says how each ended. The real Slurm runs in tests' SlurmE2ETest.
 */
@Timeout(300)
class SlurmRunTest {
  private static final String OLD = "xlac-pjrt-plugin/2\nplatform_name=old\n";
  private static final String OTHER = "xlac-pjrt-plugin/2\nplatform_name=other\n";

  @TempDir
  Path tmp;

  private StandInSlurm slurm;
  private final List<String> progress = Collections.synchronizedList(new ArrayList<>());

  private void standInSlurm() throws Exception {
    slurm = StandInSlurm.create(tmp);
    slurm.script("sbatch", """
        echo "$*" >>"$S/sbatch.log"
        n=$(cat "$S/next"); echo $((n + 1)) >"$S/next"
        for a; do case "$a" in --array=*) arr=${a#--array=};; --output=*) out=${a#--output=};; esac; script=$a; done
        for part in $(echo "$arr" | tr , ' '); do
          i=${part%-*}; e=${part#*-}
          while [ "$i" -le "$e" ]; do
            log=$(printf '%s' "$out" | sed "s/%A/$n/; s/%a/$i/")
            if [ -f "$S/full-disk" ]; then # the node's TMPDIR is a full 16 kB tmpfs
              SLURM_ARRAY_JOB_ID=$n SLURM_ARRAY_TASK_ID=$i unshare -Urm sh -c \\
                'mount -t tmpfs -o size=16k xlac-full "$TMPDIR" && exec "$0"' "$script" >"$log" 2>&1
            else
              SLURM_ARRAY_JOB_ID=$n SLURM_ARRAY_TASK_ID=$i "$script" >"$log" 2>&1
            fi
            echo $? >"$S/exit.${n}_$i"
            i=$((i + 1))
          done
        done
        if [ -f "$S/pause-after-tasks" ] && [ ! -f "$S/tasks-done" ]; then # once: the test acts, then resumes
          touch "$S/tasks-done"; k=0
          while [ ! -f "$S/resume" ] && [ $k -lt 600 ]; do sleep 0.1; k=$((k + 1)); done
        fi
        echo "$n"
        """);
    slurm.script("squeue", "exit 0\n");
    slurm.script("scontrol", """
        e=$(cat "$S/exit.$4")
        if [ "$e" = 0 ]; then echo "JobId=$4 JobState=COMPLETED ExitCode=0:0"
        else echo "JobId=$4 JobState=FAILED Reason=NonZeroExitCode ExitCode=$e:0"; fi
        """);
    slurm.script("scancel", "for a; do echo \"$a\" >>\"$S/cancelled\"; done\n");
  }

  private static RecordedRequest recorded(String program, String identity) {
    byte[] format = "mlir".getBytes(StandardCharsets.UTF_8);
    byte[] code = program.getBytes(StandardCharsets.UTF_8);
    byte[] options = {0x1a, 0x02, 0x20, 0x01};
    byte[] id = identity.getBytes(StandardCharsets.UTF_8);
    return new RecordedRequest(RequestKey.of(format, code, options, id), format, code, options, identity,
        new byte[] {7}, 1000);
  }

  private static CacheStore open(Path dir) throws InterruptedException {
    return CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
  }

  /** The key the proxy computes when a run sends {@code r}'s program to the fake plugin. */
  private static RequestKey forFake(RecordedRequest r) {
    return RequestKey.of(r.format(), r.program(), r.options(), FakeCompiler.IDENTITY_TEXT.getBytes(
        StandardCharsets.UTF_8));
  }

  private final List<RecordedRequest> recorded = List.of(recorded("module a", OLD), recorded("module a", OTHER),
      recorded("module b", OLD), recorded("module c with a longer program", OLD));

  /** Two graphs and four recorded requests (three distinct programs) in the submitter's cache. */
  private Path submitterCache() throws Exception {
    Path dir = tmp.resolve("submitter");
    try (CacheStore store = open(dir)) {
      for (int i = 0; i < 2; i++) {
        LoadedModule m = new HloModuleReader().read(TestModules.writeDump(tmp.resolve("dumps"),
            "m" + i + ".before_optimizations.hlo.pb", TestModules.mulAdd(1.5f + i, 1, "_" + i, 10)));
        store.putGraph(m);
      }
      assertThat(store.putRequests(recorded).added()).isEqualTo(4);
    }
    return dir;
  }

  private CompileResult compile(Path cache, int retries, Map<String, String> extraEnv) throws Exception {
    Map<String, String> env = new HashMap<>(extraEnv);
    env.put("PATH", slurm.path());
    env.put("TMPDIR", Files.createDirectories(tmp.resolve("node-tmp")).toString());
    List<String> task = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--enable-native-access=ALL-UNNAMED", "-cp",
        System.getProperty("java.class.path"), ShardTaskMain.class.getName());
    SlurmSettings slurm = new SlurmSettings(2, List.of(), retries, tmp.resolve("shared"), task, env,
        Duration.ofMillis(20), progress::add);
    CompileSetup setup = new CompileSetup(() -> open(cache), new DriverSource.Given(new FakeCompiler(false,
        FakeCompiler.PJRT_IDENTITY).factory()), new SchedulerSettings(2, 0, 0), false, RunListener.NONE,
        () -> Long.MAX_VALUE);
    return CompileRuns.cache(setup.withExecutor(new SlurmExecutor(slurm)));
  }

  private void assertRuntimeEntriesCameBack(Path cache) throws Exception {
    try (CacheStore store = open(cache)) {
      for (RecordedRequest r : recorded) {
        RecordedRequest entry = store.readRequest(forFake(r)).orElseThrow();
        assertThat(entry.identityText()).isEqualTo(FakeCompiler.IDENTITY_TEXT);
        assertThat(entry.program()).isEqualTo(r.program());
        assertThat(entry.executable()).isEqualTo("mlir request".getBytes(StandardCharsets.UTF_8));
      }
    }
  }

  /**
   * {@code parallel-compile --executor slurm --plugin NEW} compiled the cache's graphs on the cluster but not its
   * recorded requests: those were left for a local run. Now they are sharded with the graphs and their runtime
   * entries come back with the bundles.
   */
  @Test
  void recordedRequests_areShardedWithTheGraphs_andTheirRuntimeEntriesComeBack_throughTheSharedDirectory()
      throws Exception {
    standInSlurm();
    Path cache = submitterCache();
    CompileResult r = compile(cache, 1, Map.of());
    assertThat(r.report().summaryLines().getFirst())
        .isEqualTo("2 graphs and 3 recorded requests: 5 compiled, 0 cached, 0 failed");
    assertThat(r.exitCode()).isEqualTo(ExitCode.OK);
    assertThat(slurm.lines("sbatch.log")).singleElement().asString().contains("--array=0-1");
    assertThat(r.report().graphs()).filteredOn(g -> g.fingerprint() instanceof RequestKey).extracting(
        GraphResult::fingerprint).containsExactlyInAnyOrderElementsOf(recorded.stream().map(SlurmRunTest::forFake)
        .distinct().toList());
    assertRuntimeEntriesCameBack(cache);

    CompileResult again = compile(cache, 1, Map.of());
    assertThat(again.report().summaryLines().getFirst())
        .isEqualTo("2 graphs and 3 recorded requests: 0 compiled, 5 cached, 0 failed");
    assertThat(slurm.lines("sbatch.log")).as("nothing left to submit").hasSize(1);
  }

  /** One SeaweedFS server for the tests that leave it running, each under a prefix of its own. */
  @TempDir
  static Path sharedWeedDir;
  private static SeaweedServer shared;
  private static final java.util.concurrent.atomic.AtomicInteger PREFIXES = new java.util.concurrent.atomic.AtomicInteger();
  private String prefix;

  @org.junit.jupiter.api.AfterAll
  static void stopSharedServer() throws InterruptedException {
    if (shared != null) {
      shared.close();
    }
  }

  private interface WithRemote {
    void run(SeaweedServer weed, Path cache) throws Exception;
  }

  /**
   * A SeaweedFS server, the submitter's cache (as {@link #submitterCache}) with a remote tier on it, and its
   * credentials where the submitter's AWS client finds them (system properties) and the tasks' do (their environment).
   */
  private void withRemote(boolean own, WithRemote body) throws Exception {
    String why = SeaweedServer.unavailableReason();
    assumeTrue(why == null, why);
    standInSlurm();
    Path cache = submitterCache();
    String[] names = {"aws.accessKeyId", "aws.secretAccessKey", "aws.region"};
    String[] saved = new String[3];
    for (int i = 0; i < 3; i++) {
      saved[i] = System.getProperty(names[i]);
    }
    synchronized (SlurmRunTest.class) {
      if (!own && shared == null) {
        shared = SeaweedServer.start(sharedWeedDir, "xlac-requests");
      }
    }
    prefix = "p" + PREFIXES.incrementAndGet();
    try (SeaweedServer mine = own ? SeaweedServer.start(tmp.resolve("weed"), "xlac-requests") : null) {
      SeaweedServer weed = own ? mine : shared;
      try (CacheStore store = open(cache)) {
        store.setRemoteSetting(java.util.Optional.of(RemoteSetting.parse("s3://xlac-requests/" + prefix,
            weed.endpoint())));
      }
      System.setProperty(names[0], weed.accessKey());
      System.setProperty(names[1], weed.secretKey());
      System.setProperty(names[2], "us-east-1");
      body.run(weed, cache);
    } finally {
      for (int i = 0; i < 3; i++) {
        if (saved[i] == null) {
          System.clearProperty(names[i]);
        } else {
          System.setProperty(names[i], saved[i]);
        }
      }
    }
  }

  @Test
  void recordedRequests_comeBackThroughTheRemoteTier_asRuntimeEntriesPushedByTheTasks() throws Exception {
    withRemote(false, (weed, cache) -> {
      CompileResult r = compile(cache, 1, weed.environment()); // the tasks' credentials, as sbatch passes them on
      assertThat(r.report().summaryLines().getFirst())
          .isEqualTo("2 graphs and 3 recorded requests: 5 compiled, 0 cached, 0 failed");
      assertThat(String.join("\n", progress)).contains("(results through s3://xlac-requests/" + prefix + ")");
      try (S3Client s3 = weed.client()) {
        List<String> runtime = new ArrayList<>();
        s3.listObjectsV2Paginator(ListObjectsV2Request.builder().bucket("xlac-requests")
            .prefix(prefix + "/" + RemoteObjects.Kind.RUNTIME.keyPrefix()).build()).forEach(p -> p.contents()
            .forEach(o -> runtime.add(o.key())));
        assertThat(runtime).as("the tasks pushed the runtime entries they compiled").hasSize(3);
      }
      try (Stream<Path> files = Files.walk(tmp.resolve("shared"))) {
        assertThat(files.map(Path::toString).toList()).noneMatch(f -> f.endsWith(".bundle"));
      }
      assertRuntimeEntriesCameBack(cache);
    });
  }

  /**
   * The remote fails on the submitter's side after the tasks pushed: no attempt's results could be taken in (the tier
   * stays unusable for the run), so the run stops at once, one line and exit 3, its jobs cancelled, no shard
   * submitted again. (A failure in the middle of the pulls: RemoteShardTransportTest.)
   */
  @Test
  void theRemoteFailingOnTheSubmitter_endsTheRunWithExit3AndCancelsItsJobs_insteadOfResubmittingEveryShard()
      throws Exception {
    withRemote(true, (weed, cache) -> { // it stops its server
      Files.writeString(slurm.state().resolve("pause-after-tasks"), "");
      java.util.concurrent.atomic.AtomicReference<Throwable> thrown = new java.util.concurrent.atomic.AtomicReference<>();
      Thread submitter = Thread.ofPlatform().start(() -> {
        try {
          compile(cache, 2, weed.environment());
        } catch (Throwable t) {
          thrown.set(t);
        }
      });
      long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
      while (!Files.exists(slurm.state().resolve("tasks-done")) && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertThat(slurm.state().resolve("tasks-done")).as("the tasks ran and pushed").exists();
      weed.close(); // the remote goes away before the submitter takes anything in
      Files.writeString(slurm.state().resolve("resume"), "");
      submitter.join(Duration.ofSeconds(120));
      assertThat(submitter.isAlive()).isFalse();
      assertThat(thrown.get()).isInstanceOfSatisfying(dev.xlac.core.XlacException.class, e -> {
        assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
        assertThat(e.getMessage()).startsWith("remote s3://xlac-requests/" + prefix + " ").contains("cannot connect")
            .doesNotContain("\n");
      });
      assertThat(slurm.lines("sbatch.log")).as("no shard submitted again").hasSize(1);
      assertThat(slurm.lines("cancelled")).as("the run's job cancelled").containsExactly("100");
    });
  }

  /**
   * With {@code require-signed on} the tasks' objects in the remote are unsigned and the cache refused every one:
   * each shard's results were rejected, the shard submitted again until its retries were spent, and the run ended
   * with nothing imported. Now such a run takes its results as bundles signed by the run's own key.
   */
  @Test
  void aCacheWithRequireSignedOn_takesTheShardsResultsAsRunSignedBundles_notAsUnsignedRemoteObjects()
      throws Exception {
    withRemote(false, (weed, cache) -> {
      try (CacheStore store = open(cache)) {
        store.setRequireSigned(true);
      }
      CompileResult r = compile(cache, 1, weed.environment());
      assertThat(r.report().summaryLines().getFirst())
          .isEqualTo("2 graphs and 3 recorded requests: 5 compiled, 0 cached, 0 failed");
      assertThat(slurm.lines("sbatch.log")).hasSize(1);
      assertThat(String.join("\n", progress)).contains("require-signed on").doesNotContain("(results through s3://");
      assertRuntimeEntriesCameBack(cache);
    });
  }

  /**
   * A node whose TMPDIR (where its task makes the node-local cache) is a full disk: the task ends with one line
   * and exit 3, without results; the shard is submitted again as for any task that failed, then reported as not
   * compiled with the task's state and that line; the run exits 1; the submitter's cache is intact.
   */
  @Test
  void aNodeLocalCacheOnAFullDisk_failsItsShardWithOneLine_isSubmittedAgain_thenReported_andTheSubmittersCacheIsIntact()
      throws Exception {
    standInSlurm();
    Path probe = Files.createDirectories(tmp.resolve("probe"));
    Process p = new ProcessBuilder("unshare", "-Urm", "sh", "-c", "mount -t tmpfs -o size=16k x \"$0\"",
        probe.toString()).redirectErrorStream(true).start();
    String why = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    assumeTrue(p.waitFor() == 0, "cannot mount a small tmpfs in a user namespace here: " + why);
    Files.writeString(slurm.state().resolve("full-disk"), "");
    Path cache = submitterCache();
    CompileResult r = compile(cache, 1, Map.of());
    assertThat(r.exitCode()).isEqualTo(ExitCode.WORK_FAILED);
    List<String> summary = r.report().summaryLines();
    assertThat(summary.getFirst()).isEqualTo("2 graphs and 3 recorded requests: 0 compiled, 0 cached, 5 failed");
    assertThat(summary.stream().filter(l -> l.startsWith("  failed: ")).toList()).hasSize(5).allSatisfy(l ->
        assertThat(l).containsPattern("the Slurm task of shard \\d failed 2 times \\(its task ended without results:"
            + " FAILED \\(exit 3:0, NonZeroExitCode\\); its log ends: xlac: shard \\d: the node-local cache in \\S+ is on a full disk \\(.*No space left on device.*\\); free space"
            + " there, or give the tasks a TMPDIR with room \\(Slurm: --sbatch-arg=--export=ALL,TMPDIR=/scratch; Ray:"
            + " TMPDIR in the environment its nodes start with\\)"));
    assertThat(slurm.lines("sbatch.log")).as("the array, then each of its 2 shards once again").hasSize(3);
    assertThat(String.join("\n", progress)).contains("submitted again as job");
    try (Stream<Path> logs = Files.list(tmp.resolve("shared")).flatMap(run -> {
      try {
        return Files.list(run.resolve("logs"));
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    })) {
      for (Path log : logs.toList()) {
        assertThat(Files.readAllLines(log)).as("%s: one line, no stack trace: %s", log, Files.readString(log)).singleElement().asString()
            .startsWith("xlac: shard ").contains("is on a full disk");
      }
    }
    try (CacheStore store = open(cache)) {
      assertThat(store.verify(false).problems()).isEmpty();
      assertThat(store.graphs()).hasSize(2).allSatisfy(g -> assertThat(store.readGraph(g.fingerprint())).isPresent());
      assertThat(store.requests()).as("the recorded requests, and no runtime entry of the failed shards")
          .hasSize(4);
    }
  }
}
