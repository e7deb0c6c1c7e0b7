package dev.xlac.pipeline.slurm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheRemote;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.RemoteSetting;
import dev.xlac.cache.remote.RemoteObjects;
import dev.xlac.cache.remote.SeaweedServer;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.FailureKind;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.pipeline.CompileSetup;
import dev.xlac.pipeline.DriverSource;
import dev.xlac.pipeline.FakeCompiler;
import dev.xlac.pipeline.RunListener;
import dev.xlac.pipeline.shard.RemoteShardTransport;
import dev.xlac.pipeline.shard.ResultLines;
import dev.xlac.pipeline.shard.ShardFixtures;
import dev.xlac.pipeline.shard.ShardPlan;
import dev.xlac.pipeline.shard.ShardRun;
import dev.xlac.pipeline.shard.ShardTask;
import dev.xlac.pipeline.shard.ShardTransport;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.DeleteObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * A shard's results through the remote tier, in-process, against a real S3 server (SeaweedFS, {@code $XLAC_WEED},
 * one for the class): the tasks push, the submitter pulls what the manifests name; an artifact missing from the
 * bucket or damaged there makes the results unusable, and once discarded the next attempt's manifest is read.
 */
class RemoteShardTransportTest {
  private static final String BUCKET = "xlac-shards";
  @TempDir
  static Path serverDir;
  private static SeaweedServer server;
  private static final Map<String, String> SAVED = new LinkedHashMap<>();

  @TempDir
  Path tmp;

  @BeforeAll
  static void startServer() throws Exception {
    server = SeaweedServer.startOrSkip(serverDir, BUCKET);
    // The SDK's default chain reads these system properties as it reads the environment.
    for (var e : Map.of("aws.accessKeyId", server.accessKey(), "aws.secretAccessKey", server.secretKey(),
        "aws.region", "us-east-1").entrySet()) {
      SAVED.put(e.getKey(), System.getProperty(e.getKey()));
      System.setProperty(e.getKey(), e.getValue());
    }
  }

  @AfterAll
  static void stopServer() throws Exception {
    SAVED.forEach((k, v) -> {
      if (v == null) {
        System.clearProperty(k);
      } else {
        System.setProperty(k, v);
      }
    });
    if (server != null) { // not stop(): that would clear the properties restored above
      server.close();
    }
  }

  private static CacheStore open(Path dir) throws InterruptedException {
    return CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
  }

  private CompileSetup nodeSetup(Path cache, FakeCompiler compiler) {
    return new CompileSetup(() -> open(cache), new DriverSource.Given(compiler.factory()),
        new SchedulerSettings(2, 0, 0), false, RunListener.NONE, () -> Long.MAX_VALUE);
  }

  private CacheRemote tier(String prefix) {
    return CacheRemote.open(RemoteSetting.parse("s3://" + BUCKET + "/" + prefix, server.endpoint()),
        m -> {});
  }

  private interface NodeTask {
    void run(String node) throws Exception;
  }

  /** Runs {@code task} for each node on a thread of its own, all started at once; what they throw goes to errors. */
  private static void atOnce(List<String> nodes, NodeTask task, List<Throwable> errors) throws InterruptedException {
    java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(nodes.size());
    List<Thread> threads = new ArrayList<>();
    for (String node : nodes) {
      threads.add(Thread.ofPlatform().start(() -> {
        try {
          start.await();
          task.run(node);
        } catch (Throwable t) {
          errors.add(t);
        }
      }));
    }
    for (Thread t : threads) {
      t.join();
    }
  }

  private ShardPlan sent(ShardTransport transport) throws Exception {
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      return ShardFixtures.sendGraphs(store, tmp.resolve("dumps"), transport, 4, 2.5f, 2);
    }
  }

  @Test
  void eachShardsResults_comeBackThroughTheRemote_noBundle_andTheTaskArgumentsNameIt() throws Exception {
    try (CacheRemote tier = tier("ok")) {
      RemoteShardTransport transport = new RemoteShardTransport(tmp.resolve("shared/run-1"), tier, m -> {});
      assertThat(transport.taskArguments()).containsExactly("--remote", "s3://" + BUCKET + "/ok", "--remote-endpoint",
          server.endpoint());
      ShardPlan plan = sent(transport);
      FakeCompiler compiler = new FakeCompiler(false);
      for (ShardPlan.Shard s : plan.nonEmpty()) {
        assertThat(transport.receiveResults(s.index(), "7")).isEmpty();
        ShardTask.run(nodeSetup(tmp.resolve("node-" + s.index()), compiler), transport, s.index(), "7",
            tmp.resolve("node-" + s.index() + ".bundle"));
      }
      assertThat(compiler.compiles).hasValue(4);
      try (CacheStore store = open(tmp.resolve("submitter"))) {
        for (ShardPlan.Shard s : plan.nonEmpty()) {
          ShardTransport.Results back = transport.receiveResults(s.index(), "7").orElseThrow();
          assertThat(back.bundle()).isNull();
          assertThat(back.where()).contains("/shard-" + s.index() + "/7-");
          List<GraphResult> results = ShardRun.importResults(store, transport, back, s, FakeCompiler.IDENTITY);
          assertThat(results).hasSize(s.items().size())
              .allSatisfy(g -> assertThat(g.status()).isEqualTo(GraphResult.Status.COMPILED));
          for (ShardPlan.Item item : s.items()) {
            assertThat(store.getArtifact(new ArtifactKey(item.graph(), FakeCompiler.IDENTITY))).isPresent();
          }
        }
      }
      assertThat(transport.stats().downloaded()).isEqualTo(4);
      assertThat(tmp.resolve("shared/run-1/results")).doesNotExist();
      assertThat(tier.list("v1/artifacts/")).hasSize(4);
    }
  }

  @Test
  void twoAttemptsOfOneShard_pushingAtOnce_leaveOneObjectPerKey_andEitherManifestImports() throws Exception {
    try (CacheRemote tier = tier("concurrent")) {
      RemoteShardTransport transport = new RemoteShardTransport(tmp.resolve("shared/run-5"), tier, m -> {});
      ShardPlan.Shard shard = sent(transport).nonEmpty().getFirst();
      List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
      atOnce(List.of("node-7", "node-8"), node -> ShardTask.run(nodeSetup(tmp.resolve(node), new FakeCompiler(false)),
          transport, shard.index(), node.substring("node-".length()), tmp.resolve(node + ".bundle")), errors);
      assertThat(errors).isEmpty();
      assertThat(tier.list(transport.resultsPrefix(shard.index()))).hasSize(2);
      assertThat(tier.list("v1/artifacts/")).hasSize(shard.items().size());
      assertThat(tier.list("v1/graphs/")).hasSize(shard.items().size());
      try (CacheStore store = open(tmp.resolve("submitter"))) {
        for (String attempt : List.of("7", "8")) {
          ShardTransport.Results back = transport.receiveResults(shard.index(), attempt).orElseThrow();
          assertThat(ShardRun.importResults(store, transport, back, shard, FakeCompiler.IDENTITY))
              .allSatisfy(g -> assertThat(g.status()).isEqualTo(GraphResult.Status.COMPILED));
        }
      }
    }
  }

  /**
   * Each task's push listed the whole bucket (every graph and artifact key) before it uploaded: at 10,000 graphs and
   * 256 tasks that is millions of keys listed for nothing. Now a task lists nothing: shown with credentials that may
   * read and write objects but not list them (a listing with them is refused), two attempts of one shard pushing the
   * same objects at once, both succeeding (one wins each conditional put, the other's is a 412).
   */
  @Test
  void aTasksPush_listsNothing_twoTasksPushingTheSameObjectsAtOnceWithCredentialsThatCannotList_bothSucceed()
      throws Exception {
    Path run = tmp.resolve("shared/run-6");
    ShardPlan.Shard shard;
    try (CacheRemote tier = tier("nolist")) {
      shard = sent(new RemoteShardTransport(run, tier, m -> {})).nonEmpty().getFirst();
    }
    List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
    String saved = System.getProperty("aws.accessKeyId");
    System.setProperty("aws.accessKeyId", server.noListAccessKey());
    try {
      try (CacheRemote probe = tier("nolist")) {
        assertThatThrownBy(() -> probe.list("v1/")).as("these credentials cannot list")
            .hasMessageContaining("403 AccessDenied");
      }
      atOnce(List.of("node-17", "node-18"), node -> {
        try (CacheRemote tier = tier("nolist")) { // each task opens its own, as on its node
          ShardTask.run(nodeSetup(tmp.resolve(node), new FakeCompiler(false)), new RemoteShardTransport(run, tier,
              m -> errors.add(new Exception(m))), shard.index(), node.substring("node-".length()),
              tmp.resolve(node + ".bundle"));
        }
      }, errors);
    } finally {
      System.setProperty("aws.accessKeyId", saved);
    }
    assertThat(errors).isEmpty();
    try (CacheRemote tier = tier("nolist"); CacheStore store = open(tmp.resolve("submitter"))) {
      RemoteShardTransport transport = new RemoteShardTransport(run, tier, m -> {});
      assertThat(tier.list("v1/artifacts/")).hasSize(shard.items().size());
      assertThat(tier.list("v1/graphs/")).hasSize(shard.items().size());
      for (String attempt : List.of("17", "18")) {
        ShardTransport.Results back = transport.receiveResults(shard.index(), attempt).orElseThrow();
        assertThat(ShardRun.importResults(store, transport, back, shard, FakeCompiler.IDENTITY))
            .allSatisfy(g -> assertThat(g.status()).isEqualTo(GraphResult.Status.COMPILED));
      }
    }
  }

  /**
   * The remote failed on the submitter while it pulled a shard's artifacts: the import threw the tier's plain exit-3
   * error, which the submitter took for damaged results: it discarded them and submitted the shard again, and as the
   * tier stays unusable for the run, every shard after it too, until all retries were spent (exit 1, everything
   * compiled again and again). Now that is {@link ShardTransport.Failed}, on which the run stops, and so is every
   * later look for results through the failed tier.
   */
  @Test
  void theRemoteFailingWhileTheSubmitterPulls_isTheTransportFailing_notTheResults() throws Exception {
    try (SeaweedServer own = SeaweedServer.start(tmp.resolve("own-weed"), BUCKET, server.accessKey(),
        server.secretKey());
        CacheRemote tier = CacheRemote.open(RemoteSetting.parse("s3://" + BUCKET + "/gone",
            own.endpoint()), m -> {})) {
      RemoteShardTransport transport = new RemoteShardTransport(tmp.resolve("shared/run-7"), tier, m -> {});
      ShardPlan.Shard shard = sent(transport).nonEmpty().getFirst();
      ShardTask.run(nodeSetup(tmp.resolve("node-g"), new FakeCompiler(false)), transport, shard.index(), "7",
          tmp.resolve("g.bundle"));
      ShardTransport.Results back = transport.receiveResults(shard.index(), "7").orElseThrow();
      own.close();
      try (CacheStore store = open(tmp.resolve("submitter"))) {
        assertThatThrownBy(() -> ShardRun.importResults(store, transport, back, shard, FakeCompiler.IDENTITY))
            .isInstanceOfSatisfying(ShardTransport.Failed.class, e -> assertThat(e.getMessage())
                .startsWith("cannot take in the results s3://" + BUCKET + "/gone/v1/runs/run-7/results/shard-")
                .contains("which failed: ").contains("every job of the run was stopped").doesNotContain("Slurm"));
      }
      assertThatThrownBy(() -> transport.receiveResults(shard.index(), "8"))
          .isInstanceOf(ShardTransport.Failed.class);
    }
  }

  @Test
  void anArtifactMissingFromTheBucket_failsTheImport_andOnceDiscarded_theNextAttemptsResultsAreRead()
      throws Exception {
    try (CacheRemote tier = tier("missing"); S3Client s3 = server.client()) {
      RemoteShardTransport transport = new RemoteShardTransport(tmp.resolve("shared/run-2"), tier, m -> {});
      ShardPlan.Shard shard = sent(transport).nonEmpty().getFirst();
      ShardTask.run(nodeSetup(tmp.resolve("node-a"), new FakeCompiler(false)), transport, shard.index(), "7",
          tmp.resolve("a.bundle"));
      ArtifactKey lost = new ArtifactKey(shard.items().getFirst().graph(), FakeCompiler.IDENTITY);
      s3.deleteObject(DeleteObjectRequest.builder().bucket(BUCKET).key("missing/" + RemoteObjects.artifactKey(lost))
          .build());
      try (CacheStore store = open(tmp.resolve("submitter"))) {
        assertThat(transport.receiveResults(shard.index(), "8")).as("only the asked attempt's results").isEmpty();
        ShardTransport.Results first = transport.receiveResults(shard.index(), "7").orElseThrow();
        assertThatThrownBy(() -> ShardRun.importResults(store, transport, first, shard, FakeCompiler.IDENTITY))
            .isInstanceOf(XlacException.class).hasMessageContaining("1 of the " + shard.items().size()
                + " artifacts that s3://" + BUCKET + "/missing/v1/runs/run-2/results/shard-" + shard.index() + "/")
            .hasMessageContaining("are missing or damaged");
        transport.discard(shard.index(), first);
        assertThat(transport.receiveResults(shard.index(), "7")).as("discarded results are not read again").isEmpty();

        ShardTask.run(nodeSetup(tmp.resolve("node-b"), new FakeCompiler(false)), transport, shard.index(), "8",
            tmp.resolve("b.bundle")); // the resubmitted task: its push writes what is missing again
        ShardTransport.Results second = transport.receiveResults(shard.index(), "8").orElseThrow();
        assertThat(second.where()).isNotEqualTo(first.where());
        assertThat(ShardRun.importResults(store, transport, second, shard, FakeCompiler.IDENTITY))
            .allSatisfy(g -> assertThat(g.status()).isEqualTo(GraphResult.Status.COMPILED));
        assertThat(store.getArtifact(lost)).isPresent();
      }
    }
  }

  @Test
  void aDamagedArtifactInTheBucket_isRejectedByName_andNothingOfItIsStored() throws Exception {
    List<String> problems = new ArrayList<>();
    try (CacheRemote tier = tier("damaged"); S3Client s3 = server.client()) {
      RemoteShardTransport transport = new RemoteShardTransport(tmp.resolve("shared/run-3"), tier,
          problems::add);
      ShardPlan.Shard shard = sent(transport).nonEmpty().getFirst();
      ShardTask.run(nodeSetup(tmp.resolve("node"), new FakeCompiler(false)), transport, shard.index(), "7",
          tmp.resolve("n.bundle"));
      ArtifactKey victim = new ArtifactKey(shard.items().getFirst().graph(), FakeCompiler.IDENTITY);
      String key = "damaged/" + RemoteObjects.artifactKey(victim);
      byte[] body = s3.getObjectAsBytes(GetObjectRequest.builder().bucket(BUCKET).key(key).build()).asByteArray();
      body[body.length - 3] ^= 0x40;
      s3.putObject(PutObjectRequest.builder().bucket(BUCKET).key(key).build(), RequestBody.fromBytes(body));
      try (CacheStore store = open(tmp.resolve("submitter"))) {
        ShardTransport.Results back = transport.receiveResults(shard.index(), "7").orElseThrow();
        assertThatThrownBy(() -> ShardRun.importResults(store, transport, back, shard, FakeCompiler.IDENTITY))
            .isInstanceOf(XlacException.class);
        assertThat(problems).anySatisfy(p -> assertThat(p).startsWith("rejected s3://" + BUCKET + "/" + key + ": "));
        assertThat(store.artifactInfo(victim)).isEmpty();
      }
    }
  }

  @Test
  void aFailedCompileInTheManifest_isRecordedAsAFailure_withItsKindAndMessage() throws Exception {
    try (CacheRemote tier = tier("failed")) {
      RemoteShardTransport transport = new RemoteShardTransport(tmp.resolve("shared/run-4"), tier, m -> {});
      ShardPlan.Shard shard = sent(transport).nonEmpty().getFirst();
      GraphFingerprint fp = shard.items().getFirst().graph();
      GraphResult failed = new GraphResult(fp, shard.items().getFirst().moduleName(), GraphResult.Status.FAILED,
          Duration.ofMillis(7), 1, FailureKind.COMPILE_ERROR, "bad shape");
      try (CacheStore store = open(tmp.resolve("submitter"))) {
        transport.importResults(store, new ShardTransport.Results(null, List.of(ResultLines.of(failed)), "x"),
            List.of(failed), FakeCompiler.IDENTITY);
        ArtifactInfo info = store.artifactInfo(new ArtifactKey(fp, FakeCompiler.IDENTITY)).orElseThrow();
        assertThat(info.status()).isEqualTo(EntryStatus.FAILED);
        assertThat(info.failureKind()).isEqualTo("compile-error");
        assertThat(info.failureMessage()).isEqualTo("bad shape");
      }
    }
  }
}
