package dev.xlac.cache.remote;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.Fixtures;
import dev.xlac.cache.RemotePolicy;
import dev.xlac.cache.RemoteSetting;
import dev.xlac.cache.RemoteUnavailableException;
import dev.xlac.cache.RequestFixtures;
import dev.xlac.core.XlacException;
import dev.xlac.core.neuron.NeuronName;
import dev.xlac.runtime.RecordedRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * The remote tier against a real S3 server (SeaweedFS, {@link SeaweedServer}), started once for the class; each
 * test works under a prefix of its own.
 */
class RemoteTierTest {
  static final String BUCKET = "xlac-test";
  @TempDir
  static Path serverDir;
  static SeaweedServer server;
  static int prefixes;

  @TempDir
  Path tmp;
  final List<String> notices = Collections.synchronizedList(new ArrayList<>());

  @BeforeAll
  static void startServer() throws Exception {
    server = SeaweedServer.startOrSkip(serverDir, BUCKET);
    server.useAsDefaultCredentials();
  }

  @AfterAll
  static void stopServer() throws Exception {
    SeaweedServer.stop(server);
  }

  @AfterEach
  void restoreKeys() {
    if (server != null) {
      System.setProperty("aws.secretAccessKey", server.secretKey());
    }
  }

  static RemoteSetting setting(String name) {
    return RemoteSetting.parse("s3://" + BUCKET + "/" + name + "-" + (++prefixes), server.endpoint());
  }

  CacheStore open(String name) throws InterruptedException {
    return CacheStore.open(tmp.resolve(name), CacheStore.Mode.READ_WRITE, Duration.ZERO, notices::add);
  }

  RemoteTier tier(RemoteSetting s) {
    return RemoteTier.open(s, RemoteTier.Options.defaults(true, notices::add));
  }

  /** Graphs 1..n, each with a CPU artifact; graph 1 with a Neuron name; one runtime entry. */
  static void fill(CacheStore store, int n) {
    for (int i = 1; i <= n; i++) {
      Fixtures.graph(store, i);
      store.putArtifact(new ArtifactKey(Fixtures.fp(i), Fixtures.CPU), Fixtures.bytes(i, 1000 + i),
          CompileInfo.of(1.5, "log " + i));
    }
    store.addNeuronName(Fixtures.fp(1), new NeuronName("neuronxcc-2.21.0", "MODULE_1+abcd", "[\"--target=trn1\"]"));
    store.putRequests(List.of(RequestFixtures.request(7, 5000)));
  }

  @Test
  void pushThenPull_carriesGraphsArtifactsNeuronNamesAndRuntimeEntries() throws Exception {
    RemoteSetting s = setting("roundtrip");
    RecordedRequest request = RequestFixtures.request(7, 5000);
    try (CacheStore a = open("a"); RemoteTier t = tier(s)) {
      fill(a, 3);
      RemoteStats pushed = RemoteSync.push(a, t, List.of(), notices::add);
      assertThat(pushed.uploaded()).isEqualTo(7); // 3 graphs, 3 artifacts, 1 runtime entry
      assertThat(pushed.failed()).isZero();
      RemoteStats again = RemoteSync.push(a, t, List.of(), notices::add);
      assertThat(again.uploaded()).isZero();
      assertThat(again.alreadyThere()).isEqualTo(7);
      assertThat(RemoteListing.list(t)).extracting(RemoteListing.Row::kind)
          .containsExactly("graph", "graph", "graph", "artifact", "artifact", "artifact", "runtime");
    }
    try (CacheStore b = open("b"); RemoteTier t = tier(s)) {
      RemoteStats pulled = RemoteSync.pull(b, t, List.of(), notices::add);
      assertThat(pulled.downloaded()).isEqualTo(7);
      assertThat(pulled.rejected()).isZero();
      for (int i = 1; i <= 3; i++) {
        assertThat(b.readGraph(Fixtures.fp(i))).hasValue(Fixtures.module(i));
        assertThat(b.getArtifact(new ArtifactKey(Fixtures.fp(i), Fixtures.CPU)).orElseThrow().bytes())
            .isEqualTo(Fixtures.bytes(i, 1000 + i));
      }
      assertThat(b.graph(Fixtures.fp(1)).orElseThrow().neuronNames()).extracting(NeuronName::moduleDirectory)
          .containsExactly("MODULE_1+abcd");
      assertThat(b.readRequest(request.key()).orElseThrow().executable()).isEqualTo(request.executable());
      assertThat(b.verify(false).problems()).isEmpty();
      RemoteStats again = RemoteSync.pull(b, t, List.of(), notices::add);
      assertThat(again.downloaded()).isZero();
      assertThat(again.alreadyLocal()).isEqualTo(7);
    }
  }

  @Test
  void pullOfSelectedGraphs_byPrefix_takesOnlyThem() throws Exception {
    RemoteSetting s = setting("selected");
    try (CacheStore a = open("a"); RemoteTier t = tier(s)) {
      fill(a, 3);
      RemoteSync.push(a, t, List.of(Fixtures.fp(2)), notices::add);
      assertThat(RemoteListing.list(t)).hasSize(2);
      RemoteSync.push(a, t, List.of(), notices::add);
    }
    try (CacheStore b = open("b"); RemoteTier t = tier(s)) {
      String prefix = Fixtures.fp(3).value().substring(5, 15);
      RemoteStats pulled = RemoteSync.pull(b, t, List.of(prefix), notices::add);
      assertThat(pulled.downloaded()).isEqualTo(2);
      assertThat(b.graphs()).extracting(g -> g.fingerprint()).containsExactly(Fixtures.fp(3));
      assertThat(b.requests()).isEmpty();
      assertThatThrownBy(() -> RemoteSync.pull(b, t, List.of("ffffffffff"), notices::add))
          .isInstanceOf(XlacException.class).hasMessageContaining("no graph ffffffffff in s3://");
    }
  }

  @Test
  void conditionalPut_neverReplacesAnObject() throws Exception {
    RemoteSetting s = setting("conditional");
    try (RemoteTier t = tier(s)) {
      assertThat(t.putIfAbsent("v1/x", "first".getBytes(StandardCharsets.UTF_8))).isEqualTo(RemoteTier.Put.WRITTEN);
      assertThat(t.putIfAbsent("v1/x", "second".getBytes(StandardCharsets.UTF_8)))
          .isEqualTo(RemoteTier.Put.ALREADY_THERE);
      assertThat(new String(t.get("v1/x").orElseThrow(), StandardCharsets.UTF_8)).isEqualTo("first");
      assertThat(t.get("v1/absent")).isEmpty();
    }
  }

  @Test
  void corruptedObject_isRejectedByName_andTheLocalCacheIsUnharmed() throws Exception {
    RemoteSetting s = setting("corrupt");
    ArtifactKey two = new ArtifactKey(Fixtures.fp(2), Fixtures.CPU);
    try (CacheStore a = open("a"); RemoteTier t = tier(s)) {
      fill(a, 3);
      RemoteSync.push(a, t, List.of(), notices::add);
    }
    // Bad bytes written over the artifact and a graph directly, as any writer of the bucket could (no If-None-Match).
    byte[] good;
    try (RemoteTier t = tier(s)) {
      good = t.get(RemoteObjects.artifactKey(two)).orElseThrow();
    }
    byte[] flipped = good.clone();
    flipped[flipped.length / 2] ^= 0x40;
    try (S3Client raw = server.client()) {
      raw.putObject(PutObjectRequest.builder().bucket(BUCKET).key(s.key(RemoteObjects.artifactKey(two))).build(),
          RequestBody.fromBytes(flipped));
      raw.putObject(PutObjectRequest.builder().bucket(BUCKET).key(s.key(RemoteObjects.graphKey(Fixtures.fp(3))))
          .build(), RequestBody.fromString("not an object"));
    }
    try (CacheStore b = open("b"); RemoteTier t = tier(s)) {
      Fixtures.graph(b, 2); // graph 2 is local already, its artifact is not
      RemoteStats pulled = RemoteSync.pull(b, t, List.of(), notices::add);
      assertThat(pulled.rejected()).isEqualTo(2);
      assertThat(notices).anySatisfy(n -> assertThat(n).contains("rejected " + t.address(RemoteObjects.artifactKey(two)))
          .contains("SHA-256 does not match").contains("not stored locally"));
      assertThat(notices).anySatisfy(n -> assertThat(n)
          .contains("rejected " + t.address(RemoteObjects.graphKey(Fixtures.fp(3)))).contains("XLACOBJ1"));
      assertThat(b.artifactInfo(two)).isEmpty();
      assertThat(b.graph(Fixtures.fp(3))).isEmpty();
      assertThat(b.getArtifact(new ArtifactKey(Fixtures.fp(1), Fixtures.CPU))).isPresent();
      assertThat(b.verify(false).problems()).isEmpty();
    }
    // Read-through rejects it too, and the run compiles it instead.
    notices.clear();
    try (CacheStore c = open("c")) {
      c.setRemoteSetting(Optional.of(s));
      Fixtures.graph(c, 2);
      try (RemoteSession session = RemoteSession.open(c, RemotePolicy.USE, notices::add)) {
        assertThat(session.readThrough(two)).isFalse();
        assertThat(session.finish().rejected()).isEqualTo(1);
      }
      assertThat(c.artifactInfo(two)).isEmpty();
      assertThat(notices).singleElement().asString().contains("rejected s3://").contains("SHA-256");
    }
  }

  @Test
  void objectUnderAnotherKey_isRejected() throws Exception {
    RemoteSetting s = setting("moved");
    ArtifactKey one = new ArtifactKey(Fixtures.fp(1), Fixtures.CPU);
    ArtifactKey two = new ArtifactKey(Fixtures.fp(2), Fixtures.CPU);
    try (CacheStore a = open("a"); RemoteTier t = tier(s)) {
      fill(a, 2);
      // Artifact 1's intact object copied over artifact 2's key: whole and checksummed, but not what the key says.
      byte[] body = t.get(RemoteObjects.artifactKey(one)).orElse(null);
      assertThat(body).isNull();
      RemoteSync.push(a, t, List.of(Fixtures.fp(1)), notices::add);
      body = t.get(RemoteObjects.artifactKey(one)).orElseThrow();
      assertThat(t.putIfAbsent(RemoteObjects.artifactKey(two), body)).isEqualTo(RemoteTier.Put.WRITTEN);
      assertThatThrownBy(() -> RemoteEntries.artifact(two, t.get(RemoteObjects.artifactKey(two)).orElseThrow(),
          new RemoteTrust(a.trustSettings())))
          .isInstanceOf(RemoteObjects.BadObjectException.class).hasMessageContaining("not the one it is stored as");
    }
  }

  @Test
  void twoNodesPushingTheSameEntriesAtOnce_writeEachObjectOnce() throws Exception {
    RemoteSetting s = setting("two-nodes");
    try (CacheStore a = open("a"); CacheStore b = open("b"); RemoteTier ta = tier(s); RemoteTier tb = tier(s)) {
      fill(a, 12);
      fill(b, 12);
      CyclicBarrier start = new CyclicBarrier(2);
      ExecutorService pool = Executors.newFixedThreadPool(2);
      try {
        Future<RemoteStats> fa = pool.submit(() -> {
          start.await();
          return RemoteSync.push(a, ta, List.of(), notices::add);
        });
        Future<RemoteStats> fb = pool.submit(() -> {
          start.await();
          return RemoteSync.push(b, tb, List.of(), notices::add);
        });
        RemoteStats ra = fa.get();
        RemoteStats rb = fb.get();
        assertThat(ra.failed() + rb.failed()).isZero();
        assertThat(ra.uploaded() + rb.uploaded()).isEqualTo(25);
        assertThat(ra.uploaded() + ra.alreadyThere()).isEqualTo(25);
        assertThat(rb.uploaded() + rb.alreadyThere()).isEqualTo(25);
      } finally {
        pool.shutdownNow();
      }
    }
    try (CacheStore c = open("c"); RemoteTier t = tier(s)) {
      assertThat(RemoteListing.list(t)).hasSize(25);
      RemoteStats pulled = RemoteSync.pull(c, t, List.of(), notices::add);
      assertThat(pulled.downloaded()).isEqualTo(25);
      assertThat(pulled.rejected()).isZero();
    }
  }

  @Test
  void session_writesThroughAndAnotherCacheReadsThrough() throws Exception {
    RemoteSetting s = setting("session");
    ArtifactKey key = new ArtifactKey(Fixtures.fp(4), Fixtures.CPU);
    byte[] art = Fixtures.bytes(4, 70_000);
    try (CacheStore a = open("a")) {
      a.setRemoteSetting(Optional.of(s));
      Fixtures.graph(a, 4);
      try (RemoteSession session = RemoteSession.open(a, RemotePolicy.REQUIRE, notices::add)) {
        assertThat(session.readThrough(key)).isFalse();
        a.putArtifact(key, art, CompileInfo.of(2, ""));
        session.writeThrough(key, art, CompileInfo.of(2, ""));
        RemoteStats stats = session.finish();
        assertThat(stats.uploaded()).isEqualTo(2); // the graph and the artifact
        assertThat(stats.misses()).isEqualTo(1);
        assertThat(stats.runLine()).startsWith("remote " + s.url() + ": read through 0 (0 B), not there 1")
            .contains("uploaded 2");
      }
    }
    try (CacheStore b = open("b")) {
      b.setRemoteSetting(Optional.of(s));
      Fixtures.graph(b, 4);
      try (RemoteSession session = RemoteSession.open(b, RemotePolicy.USE, notices::add)) {
        assertThat(session.readThrough(key)).isTrue();
        assertThat(session.finish().downloaded()).isEqualTo(1);
      }
      assertThat(b.lookup(key).orElseThrow().status()).isEqualTo(EntryStatus.COMPILED);
      assertThat(b.getArtifact(key).orElseThrow().bytes()).isEqualTo(art);
      assertThat(b.getArtifact(key).orElseThrow().compileTime()).isEqualTo(Duration.ofSeconds(2));
    }
    assertThat(notices).isEmpty();
  }

  @Test
  void prefetch_readsThroughSeveralAtOnce_andAsksForAMissingKeyOnce() throws Exception {
    RemoteSetting s = setting("prefetch");
    try (CacheStore a = open("a"); RemoteTier t = tier(s)) {
      fill(a, 6);
      RemoteSync.push(a, t, List.of(), notices::add);
    }
    try (CacheStore b = open("b")) {
      b.setRemoteSetting(Optional.of(s));
      List<ArtifactKey> keys = new ArrayList<>();
      for (int i = 1; i <= 10; i++) {
        Fixtures.graph(b, i);
        keys.add(new ArtifactKey(Fixtures.fp(i), Fixtures.CPU));
      }
      b.putArtifact(keys.get(0), new byte[] {1}, CompileInfo.of(1, "")); // local already: not asked for
      try (RemoteSession session = RemoteSession.open(b, RemotePolicy.USE, notices::add)) {
        session.prefetch(keys);
        assertThat(session.readThrough(keys.get(9))).isFalse(); // known absent: no second request
        RemoteStats stats = session.finish();
        assertThat(stats.downloaded()).isEqualTo(5);
        assertThat(stats.misses()).isEqualTo(4);
      }
      for (int i = 2; i <= 6; i++) {
        assertThat(b.getArtifact(keys.get(i - 1)).orElseThrow().bytes()).isEqualTo(Fixtures.bytes(i, 1000 + i));
      }
      assertThat(b.getArtifact(keys.get(0)).orElseThrow().bytes()).containsExactly(1);
      assertThat(b.artifactInfo(keys.get(6))).isEmpty();
    }
    assertThat(notices).isEmpty();
  }

  @Test
  void wrongCredentials_areOneLine_fatalWhenRequired_aWarningOtherwise() throws Exception {
    RemoteSetting s = setting("creds");
    System.setProperty("aws.secretAccessKey", "wrong-" + server.secretKey());
    try (CacheStore a = open("a")) {
      a.setRemoteSetting(Optional.of(s));
      Fixtures.graph(a, 5);
      assertThatThrownBy(() -> RemoteSession.open(a, RemotePolicy.REQUIRE, notices::add))
          .isInstanceOf(XlacException.class)
          .satisfies(e -> assertThat(((XlacException) e).exitCode().code()).isEqualTo(3))
          .hasMessageContaining("access refused (S3 said 403")
          .hasMessageContaining("check the AWS credentials")
          .hasMessageNotContaining("\n");
      ArtifactKey key = new ArtifactKey(Fixtures.fp(5), Fixtures.CPU);
      try (RemoteSession session = RemoteSession.open(a, RemotePolicy.USE, notices::add)) {
        assertThat(session.readThrough(key)).isFalse();
        assertThat(session.readThrough(key)).isFalse();
        a.putArtifact(key, new byte[] {1, 2, 3}, CompileInfo.of(1, ""));
        session.writeThrough(key, new byte[] {1, 2, 3}, CompileInfo.of(1, ""));
        RemoteStats stats = session.finish();
        assertThat(stats.failed()).isEqualTo(1);
        assertThat(stats.uploaded()).isZero();
      }
      assertThat(notices).singleElement().asString().contains("access refused").contains("going on without it")
          .doesNotContain("\n");
    }
  }

  /** A server of its own, stopped in the middle of two runs: one that uses the remote, one that requires it. */
  @Test
  void serverStoppedMidRun_isAWarning_orExit3WithRequireRemote(@TempDir Path ownServer) throws Exception {
    ArtifactKey first = new ArtifactKey(Fixtures.fp(8), Fixtures.CPU);
    ArtifactKey second = new ArtifactKey(Fixtures.fp(9), Fixtures.CPU);
    SeaweedServer stopped = SeaweedServer.start(ownServer, BUCKET, server.accessKey(), server.secretKey());
    try (CacheStore a = open("a"); CacheStore b = open("b")) {
      a.setRemoteSetting(Optional.of(RemoteSetting.parse("s3://" + BUCKET + "/stopped-a", stopped.endpoint())));
      b.setRemoteSetting(Optional.of(RemoteSetting.parse("s3://" + BUCKET + "/stopped-b", stopped.endpoint())));
      List<String> required = Collections.synchronizedList(new ArrayList<>());
      try (RemoteSession use = RemoteSession.open(a, RemotePolicy.USE, notices::add);
          RemoteSession require = RemoteSession.open(b, RemotePolicy.REQUIRE, required::add)) {
        for (CacheStore c : List.of(a, b)) {
          Fixtures.graph(c, 8);
          Fixtures.graph(c, 9);
          c.putArtifact(first, new byte[] {8}, CompileInfo.of(1, ""));
          c.putArtifact(second, new byte[] {9}, CompileInfo.of(1, ""));
        }
        use.writeThrough(first, new byte[] {8}, CompileInfo.of(1, ""));
        require.writeThrough(first, new byte[] {8}, CompileInfo.of(1, ""));
        try (S3Client raw = stopped.client()) { // both uploads arrived before the server goes
          long deadline = System.nanoTime() + 30_000_000_000L;
          while (raw.listObjectsV2(r -> r.bucket(BUCKET).prefix("stopped-")).contents().size() < 4) {
            assertThat(System.nanoTime()).as("uploads before the stop").isLessThan(deadline);
            Thread.sleep(50);
          }
        }
        stopped.close();
        use.writeThrough(second, new byte[] {9}, CompileInfo.of(1, ""));
        require.writeThrough(second, new byte[] {9}, CompileInfo.of(1, ""));
        assertThat(use.readThrough(new ArtifactKey(Fixtures.fp(10), Fixtures.CPU))).isFalse();

        RemoteStats stats = use.finish();
        assertThat(stats.uploaded()).isEqualTo(2);
        assertThat(stats.failed()).isEqualTo(1);
        // A connection the stop cut while a write-through sent its body, or one refused after it: either is words.
        assertThat(stats.unavailable()).containsAnyOf("cannot connect", "the connection broke");
        assertThat(stats.runLine()).endsWith("(unavailable)");
        assertThat(notices).singleElement().asString().containsAnyOf("cannot connect", "the connection broke")
            .contains("going on without it").doesNotContain("SDK Attempt");

        assertThatThrownBy(require::finish).isInstanceOf(XlacException.class)
            .satisfies(e -> assertThat(((XlacException) e).exitCode().code()).isEqualTo(3))
            .satisfies(e -> assertThat(e.getMessage()).containsAnyOf("cannot connect", "the connection broke"))
            .hasMessageContaining("--require-remote: the run fails");
        assertThat(required).isEmpty(); // said once, by the failure itself
      }
      // The local caches hold every result, whatever the remote did.
      assertThat(a.getArtifact(second)).isPresent();
      assertThat(b.getArtifact(second)).isPresent();
    } finally {
      stopped.close();
    }
  }

  @Test
  void neuronLayout_isWrittenIntoS3_withModelDoneAfterItsNeff() throws Exception {
    RemoteSetting s = setting("neuron");
    NeuronName name = new NeuronName("neuronxcc-2.21.0.5+abc", "MODULE_77+1c2d3e4f", "[\"--target=trn1\",\"-O2\"]");
    byte[] neff = Fixtures.bytes(77, 50_000);
    try (CacheStore a = open("a"); RemoteTier t = tier(s)) {
      Fixtures.graph(a, 11);
      a.addNeuronName(Fixtures.fp(11), name);
      a.putArtifact(new ArtifactKey(Fixtures.fp(11), dev.xlac.core.neuron.NeuronxCcIdentity.forCacheEntry(
          name.versionDirectory(), name.compileFlags())), neff, CompileInfo.of(3, ""));
      Fixtures.graph(a, 12); // no Neuron name: skipped
      NeuronRemoteLayout.Result r = NeuronRemoteLayout.materialize(a, t, tmp, notices::add);
      assertThat(r.layout().compiled()).isEqualTo(1);
      assertThat(r.layout().withoutName()).isEqualTo(1);
      assertThat(r.uploads().uploaded()).isEqualTo(4);
      String dir = "neuronxcc-2.21.0.5+abc/MODULE_77+1c2d3e4f/";
      assertThat(t.list("")).extracting(RemoteTier.Listed::key).containsExactlyInAnyOrder(dir + "compile_flags.json",
          dir + "model.done", dir + "model.hlo_module.pb", dir + "model.neff");
      assertThat(t.get(dir + "model.neff").orElseThrow()).isEqualTo(neff);
      assertThat(t.get(dir + "model.hlo_module.pb").orElseThrow()).isEqualTo(Fixtures.module(11));
      NeuronRemoteLayout.Result again = NeuronRemoteLayout.materialize(a, t, tmp, notices::add);
      assertThat(again.uploads().uploaded()).isZero();
      assertThat(again.uploads().alreadyThere()).isEqualTo(4);
      try (var files = java.nio.file.Files.list(tmp)) { // the scratch tree is gone
        assertThat(files.filter(p -> p.getFileName().toString().startsWith("xlac-neuron-s3-"))).isEmpty();
      }
    }
  }

  /** A remote that takes the connection and never answers: a timeout, one warning, and the run goes on. */
  @Test
  void silentRemote_timesOut_withOneWarning() throws Exception {
    try (java.net.ServerSocket silent = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
        CacheStore a = open("a")) {
      List<java.net.Socket> held = Collections.synchronizedList(new ArrayList<>());
      Thread acceptor = Thread.ofVirtual().start(() -> {
        try {
          while (true) {
            held.add(silent.accept()); // read nothing, answer nothing
          }
        } catch (java.io.IOException e) {
          // closed
        }
      });
      a.setRemoteSetting(Optional.of(RemoteSetting.parse("s3://" + BUCKET + "/silent",
          "http://127.0.0.1:" + silent.getLocalPort())));
      Fixtures.graph(a, 13);
      ArtifactKey key = new ArtifactKey(Fixtures.fp(13), Fixtures.CPU);
      RemoteTier.Options quick = new RemoteTier.Options(Duration.ofSeconds(1), Duration.ofSeconds(1), 1, false,
          notices::add);
      long start = System.nanoTime();
      try (RemoteSession session = RemoteSession.open(a, RemotePolicy.USE, notices::add, quick)) {
        assertThat(session.readThrough(key)).isFalse();
        assertThat(session.readThrough(new ArtifactKey(Fixtures.fp(14), Fixtures.CPU))).isFalse(); // no new wait
        a.putArtifact(key, new byte[] {13}, CompileInfo.of(1, ""));
        session.writeThrough(key, new byte[] {13}, CompileInfo.of(1, ""));
        RemoteStats stats = session.finish();
        assertThat(stats.failed()).isEqualTo(1);
      }
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
      assertThat(notices).singleElement().asString().contains("timed out").contains("going on without it");
      silent.close();
      acceptor.join();
      for (java.net.Socket s : held) {
        s.close();
      }
    }
  }

  @Test
  void requireSigned_takesOnlyObjectsSignedByATrustedKey() throws Exception {
    RemoteSetting unsigned = setting("unsigned");
    RemoteSetting signed = setting("signed");
    RemoteSetting stranger = setting("stranger");
    dev.xlac.cache.BundleSigningKey.generate(tmp.resolve("ci"), false);
    dev.xlac.cache.BundleSigningKey.generate(tmp.resolve("other"), false);
    dev.xlac.cache.BundleSigningKey ci = dev.xlac.cache.BundleSigningKey.read(tmp.resolve("ci.key"));
    dev.xlac.cache.BundleSigningKey other = dev.xlac.cache.BundleSigningKey.read(tmp.resolve("other.key"));
    try (CacheStore a = open("a"); RemoteTier tu = tier(unsigned); RemoteTier ts = tier(signed);
        RemoteTier tx = tier(stranger)) {
      fill(a, 2);
      RemoteSync.push(a, tu, List.of(), notices::add);
      RemoteSync.push(a, ts, List.of(), notices::add, Optional.of(ci));
      RemoteSync.push(a, tx, List.of(), notices::add, Optional.of(other));
    }
    try (CacheStore b = open("b")) {
      b.trustKey(ci.publicKey(), "ci.pub");
      b.setRequireSigned(true);
      try (RemoteTier t = tier(unsigned)) {
        RemoteStats r = RemoteSync.pull(b, t, List.of(), notices::add);
        assertThat(r.downloaded()).isZero();
        assertThat(r.rejected()).isEqualTo(3); // the graphs (their artifacts wait for them) and the runtime entry
        assertThat(notices).allSatisfy(n -> assertThat(n).contains("it is not signed, and the cache has require-signed"));
      }
      notices.clear();
      try (RemoteTier t = tier(stranger)) {
        RemoteStats r = RemoteSync.pull(b, t, List.of(), notices::add);
        assertThat(r.downloaded()).isZero();
        assertThat(notices).first().asString().contains("signed by key " + other.publicKey().id())
            .contains("does not trust");
      }
      notices.clear();
      try (RemoteTier t = tier(signed)) {
        RemoteStats r = RemoteSync.pull(b, t, List.of(), notices::add);
        assertThat(r.downloaded()).isEqualTo(5);
        assertThat(r.rejected()).isZero();
      }
      assertThat(b.getArtifact(new ArtifactKey(Fixtures.fp(2), Fixtures.CPU)).orElseThrow().bytes())
          .isEqualTo(Fixtures.bytes(2, 1002));
      // Read-through under require-signed: the signed remote serves, the unsigned one does not.
      b.setRemoteSetting(Optional.of(unsigned));
      Fixtures.graph(b, 3);
      try (RemoteSession session = RemoteSession.open(b, RemotePolicy.USE, notices::add)) {
        assertThat(session.readThrough(new ArtifactKey(Fixtures.fp(3), Fixtures.CPU))).isFalse();
        assertThat(session.finish().rejected()).isZero(); // nothing there for graph 3
      }
    }
    // A signed object changed and its SHA-256 recomputed, as anyone who can write the bucket can: refused always.
    ArtifactKey one = new ArtifactKey(Fixtures.fp(1), Fixtures.CPU);
    try (RemoteTier t = tier(signed)) {
      byte[] body = t.get(RemoteObjects.artifactKey(one)).orElseThrow();
      int block = 8 + 44 + 64;
      byte[] inner = java.util.Arrays.copyOf(body, body.length - block);
      inner[inner.length - 40] ^= 1; // a payload byte
      byte[] sha = RemoteObjects.sha256().digest(java.util.Arrays.copyOf(inner, inner.length - 32));
      System.arraycopy(sha, 0, inner, inner.length - 32, 32);
      byte[] forged = java.util.Arrays.copyOf(inner, body.length);
      System.arraycopy(body, body.length - block, forged, inner.length, block);
      assertThatThrownBy(() -> RemoteObjects.open(RemoteObjects.artifactKey(one), forged))
          .isInstanceOf(RemoteObjects.BadObjectException.class)
          .hasMessageContaining("signature does not match").hasMessageContaining(ci.publicKey().id());
      assertThat(RemoteObjects.open(RemoteObjects.artifactKey(one), body).signer()).isEqualTo(ci.publicKey());
    }
  }

  @Test
  void remoteSetting_isKeptWithTheOtherSettings() throws Exception {
    try (CacheStore a = open("a")) {
      assertThat(a.remoteSetting()).isEmpty();
      a.setRemoteSetting(Optional.of(RemoteSetting.parse("s3://my-bucket/team/xlac/", "http://127.0.0.1:9000")));
    }
    try (CacheStore a = CacheStore.open(tmp.resolve("a"), CacheStore.Mode.READ_ONLY, Duration.ZERO, notices::add)) {
      RemoteSetting s = a.remoteSetting().orElseThrow();
      assertThat(s.describe()).isEqualTo("s3://my-bucket/team/xlac --endpoint http://127.0.0.1:9000");
      assertThat(s.key("v1/graphs/x")).isEqualTo("team/xlac/v1/graphs/x");
    }
    assertThatThrownBy(() -> RemoteSetting.parse("gs://b/p", null)).hasMessageContaining("must be an S3 URL");
    assertThatThrownBy(() -> RemoteSetting.parse("s3://B_ad/p", null)).hasMessageContaining("not an S3 bucket name");
    assertThatThrownBy(() -> RemoteSetting.parse("s3://bucket/p", "ftp://x")).hasMessageContaining("--endpoint");
  }

  /** A bucket typo (S3's 404 NoSuchBucket) read every key as a miss; it is the remote unavailable, with its line. */
  @Test
  void noSuchBucket_isTheRemoteUnavailable_notAMissForEveryKey() throws Exception {
    RemoteSetting typo = RemoteSetting.parse("s3://xlac-no-such-bucket/p", server.endpoint());
    try (RemoteTier t = tier(typo)) {
      assertThatThrownBy(() -> t.get("v1/x")).isInstanceOfSatisfying(XlacException.class, x -> {
        assertThat(x.exitCode()).isEqualTo(dev.xlac.core.ExitCode.ENVIRONMENT);
        assertThat(x.getMessage()).contains("the bucket does not exist").contains("NoSuchBucket").doesNotContain("\n");
      });
    }
    try (RemoteTier t = RemoteTier.open(typo, RemoteTier.Options.defaults(false, notices::add))) {
      assertThatThrownBy(() -> t.get("v1/x")).isInstanceOf(RemoteUnavailableException.class);
      assertThat(t.available()).isFalse();
      assertThat(notices).singleElement().asString().contains("the bucket does not exist");
    }
    try (RemoteTier t = tier(setting("miss"))) {
      assertThat(t.get("v1/absent")).isEmpty(); // NoSuchKey stays a miss
    }
  }

  /** putFileIfAbsent gave up on S3's 409 ConditionalRequestConflict, which putIfAbsent tried again. */
  @Test
  void conditionalPut_retriesConditionalRequestConflict_forBytesAndFilesAlike() throws Exception {
    java.util.concurrent.atomic.AtomicInteger sent = new java.util.concurrent.atomic.AtomicInteger();
    software.amazon.awssdk.services.s3.model.S3Exception conflict = (software.amazon.awssdk.services.s3.model.S3Exception)
        software.amazon.awssdk.services.s3.model.S3Exception.builder().statusCode(409).message("conflict").build();
    assertThat(RemoteTier.conditionalPut(() -> {
      if (sent.incrementAndGet() < 3) {
        throw conflict;
      }
    })).isEqualTo(RemoteTier.Put.WRITTEN);
    assertThat(sent).hasValue(3);
    sent.set(0);
    assertThatThrownBy(() -> RemoteTier.conditionalPut(() -> {
      sent.incrementAndGet();
      throw conflict;
    })).isSameAs(conflict);
    assertThat(sent).hasValue(RemoteTier.CONFLICT_ATTEMPTS);
    // And both puts go through it against the real server: 412 is ALREADY_THERE for a file too.
    Path file = tmp.resolve("body");
    java.nio.file.Files.writeString(file, "file body");
    try (RemoteTier t = tier(setting("file-put"))) {
      assertThat(t.putFileIfAbsent("v1/f", file)).isEqualTo(RemoteTier.Put.WRITTEN);
      assertThat(t.putFileIfAbsent("v1/f", file)).isEqualTo(RemoteTier.Put.ALREADY_THERE);
    }
  }

  /** A damaged remote object could never be replaced: push skipped it as present, pull rejected it for ever. */
  @Test
  void damagedObject_isReplacedByPushRepair_andThenPulls() throws Exception {
    RemoteSetting s = setting("repair");
    ArtifactKey two = new ArtifactKey(Fixtures.fp(2), Fixtures.CPU);
    String key = RemoteObjects.artifactKey(two);
    try (CacheStore a = open("a"); RemoteTier t = tier(s)) {
      fill(a, 2);
      RemoteSync.push(a, t, List.of(), notices::add);
      byte[] flipped = t.get(key).orElseThrow().clone();
      flipped[flipped.length / 2] ^= 0x40;
      try (S3Client raw = server.client()) {
        raw.putObject(PutObjectRequest.builder().bucket(BUCKET).key(s.key(key)).build(), RequestBody.fromBytes(flipped));
      }
      assertThat(RemoteSync.push(a, t, List.of(), notices::add).repaired()).isZero(); // without --repair: skipped
      try (CacheStore b = open("b")) {
        assertThat(RemoteSync.pull(b, t, List.of(), notices::add).rejected()).isEqualTo(1);
        assertThat(notices).anySatisfy(n -> assertThat(n).contains("rejected " + t.address(key))
            .contains("'xlac cache push --repair'"));
      }
      notices.clear();
      RemoteStats repaired = RemoteSync.push(a, t, List.of(), notices::add, Optional.empty(), true);
      assertThat(repaired.repaired()).isEqualTo(1);
      assertThat(repaired.uploaded()).isZero();
      assertThat(repaired.alreadyThere()).isEqualTo(4); // 2 graphs, 1 artifact, 1 runtime entry: intact, left alone
      assertThat(repaired.uploads()).contains("repaired 1");
      assertThat(notices).singleElement().asString().startsWith("repaired " + t.address(key));
      assertThat(RemoteSync.push(a, t, List.of(), notices::add, Optional.empty(), true).repaired()).isZero();
    }
    try (CacheStore c = open("c"); RemoteTier t = tier(s)) {
      RemoteStats pulled = RemoteSync.pull(c, t, List.of(), notices::add);
      assertThat(pulled.rejected()).isZero();
      assertThat(c.getArtifact(two).orElseThrow().bytes()).isEqualTo(Fixtures.bytes(2, 1002));
    }
  }

  /** The repair's If-Match: an object changed since it was read (another node repaired it) is not replaced. */
  @Test
  void replace_isConditionalOnTheEtag() throws Exception {
    try (RemoteTier t = tier(setting("if-match"))) {
      t.putIfAbsent("v1/x", "damaged".getBytes(StandardCharsets.UTF_8));
      RemoteTier.Tagged first = t.getTagged("v1/x").orElseThrow();
      assertThat(t.replace("v1/x", first.etag(), "fixed".getBytes(StandardCharsets.UTF_8)))
          .isEqualTo(RemoteTier.Put.WRITTEN);
      assertThat(t.replace("v1/x", first.etag(), "again".getBytes(StandardCharsets.UTF_8)))
          .isEqualTo(RemoteTier.Put.ALREADY_THERE);
      assertThat(new String(t.get("v1/x").orElseThrow(), StandardCharsets.UTF_8)).isEqualTo("fixed");
    }
  }

  /** An SDK exception without a message gave its Java class name as the reason. */
  @Test
  void reason_ofAnExceptionWithoutMessage_isWords_notAClassName() {
    String r = RemoteTier.reason(software.amazon.awssdk.core.exception.SdkClientException.builder().build());
    assertThat(r).doesNotContain("Exception").isNotBlank();
  }

  /**
   * A server stopped while a write-through sent its body: the reason was the SDK's own text ("Unable to execute HTTP
   * request: Error writing request body to server (SDK Attempt Count: 2)"), not words, and serverStoppedMidRun's
   * "cannot connect" failed now and then on it.
   */
  @Test
  void reason_ofAConnectionCutWhileSending_isWords_notTheSdksText() {
    java.io.IOException cut = new java.io.IOException("Error writing request body to server",
        new java.net.SocketException("Broken pipe"));
    String r = RemoteTier.reason(software.amazon.awssdk.core.exception.SdkClientException.builder()
        .message("Unable to execute HTTP request: Error writing request body to server (SDK Attempt Count: 2)")
        .cause(cut).build());
    assertThat(r).startsWith("the connection broke (").doesNotContain("SDK Attempt").doesNotContain("Exception");
    assertThat(RemoteTier.reason(new java.io.IOException("x", new java.net.SocketException("Connection reset"))))
        .isEqualTo("the connection broke (Connection reset)");
  }

  /** An endpoint with user-info was taken, credentials and all; credentials come from AWS's chain. */
  @Test
  void endpointWithCredentials_isBadInput_withoutEchoingThem() {
    assertThatThrownBy(() -> RemoteSetting.parse("s3://b-ucket/p", "http://user:secret@127.0.0.1:8333"))
        .isInstanceOfSatisfying(XlacException.class, x -> {
          assertThat(x.exitCode()).isEqualTo(dev.xlac.core.ExitCode.BAD_INPUT);
          assertThat(x.getMessage()).contains("must not carry credentials").doesNotContain("secret")
              .doesNotContain("\n");
        });
  }

  /** pull's runtime scratch files (.remote-*.tmp) left by a killed pull stayed in the cache directory for ever. */
  @Test
  void pullRuntime_scratchLeftByAKilledPull_isRemoved_andNoneIsLeft() throws Exception {
    RemoteSetting s = setting("scratch");
    try (CacheStore a = open("a"); RemoteTier t = tier(s)) {
      fill(a, 1);
      RemoteSync.push(a, t, List.of(), notices::add);
    }
    Path dir = tmp.resolve("b");
    try (CacheStore b = open("b"); RemoteTier t = tier(s)) {
      long dead = deadPid();
      Path stale = dir.resolve("." + RemoteEntries.SCRATCH_NAME + ".tmp-" + dead + ".1");
      java.nio.file.Files.write(stale, new byte[] {1, 2, 3});
      assertThat(RemoteSync.pull(b, t, List.of(), notices::add).downloaded()).isEqualTo(3);
      assertThat(stale).doesNotExist();
      try (var left = java.nio.file.Files.list(dir)) {
        assertThat(left.map(f -> f.getFileName().toString())).noneMatch(n -> n.contains("remote-"));
      }
    }
  }

  /**
   * Runtime entries are filed under their plugin's SHA-256, so that one plugin's can be listed alone; an object an
   * older xlac wrote under the flat key is still pulled, and an intact object filed under another plugin is refused.
   */
  @Test
  void runtimeEntries_areFiledByPlugin_theFlatKeyIsStillRead_andAnotherPluginsDirectoryRefusesAnEntry()
      throws Exception {
    RemoteSetting s = setting("by-plugin");
    RecordedRequest a = RequestFixtures.request(21, 3000, RequestFixtures.PLUGIN_A);
    RecordedRequest b = RequestFixtures.request(22, 3000, RequestFixtures.PLUGIN_B);
    RecordedRequest old = RequestFixtures.request(23, 3000, RequestFixtures.PLUGIN_A);
    try (CacheStore c = open("a"); RemoteTier t = tier(s)) {
      c.putRequests(List.of(a, b));
      assertThat(RemoteSync.push(c, t, List.of(), notices::add).uploaded()).isEqualTo(2);
      assertThat(RemoteRuntime.list(t, RequestFixtures.PLUGIN_A)).extracting(RemoteObjects.RuntimeObject::request)
          .containsExactly(a.key());
      assertThat(RemoteRuntime.list(t, RequestFixtures.PLUGIN_B)).extracting(RemoteObjects.RuntimeObject::request)
          .containsExactly(b.key());
      // An older xlac's object: the flat key, its envelope naming it.
      String flatKey = RemoteObjects.legacyRuntimeKey(old.key());
      byte[] legacy = envelope("kind=runtime\nkey=" + java.net.URLEncoder.encode(flatKey, StandardCharsets.UTF_8)
          + "\n", dev.xlac.runtime.RecordSpool.encode(old));
      assertThat(t.putIfAbsent(flatKey, legacy)).isEqualTo(RemoteTier.Put.WRITTEN);
      // A's intact object copied into plugin B's directory.
      byte[] body = t.get(RemoteObjects.runtimeKey(RequestFixtures.PLUGIN_A, a.key())).orElseThrow();
      RemoteObjects.RuntimeObject moved = RemoteObjects.runtimeOf(RemoteObjects.runtimeKey(RequestFixtures.PLUGIN_B,
          a.key()));
      assertThatThrownBy(() -> RemoteEntries.storeRuntime(c, moved, body, tmp, new RemoteTrust(c.trustSettings())))
          .isInstanceOf(RemoteObjects.BadObjectException.class).hasMessageContaining("not the one it is stored as");
      // ... and one made for B's directory, its envelope agreeing, but the entry is A's.
      byte[] forged = RemoteObjects.runtime(RequestFixtures.PLUGIN_B, a.key(), dev.xlac.runtime.RecordSpool.encode(a));
      assertThatThrownBy(() -> RemoteEntries.storeRuntime(c, moved, forged, tmp, new RemoteTrust(c.trustSettings())))
          .isInstanceOf(RemoteObjects.BadObjectException.class)
          .hasMessageContaining("holds an entry of the plugin with SHA-256 " + RequestFixtures.PLUGIN_A);
    }
    try (CacheStore d = open("d"); RemoteTier t = tier(s)) {
      RemoteStats pulled = RemoteSync.pull(d, t, List.of(), notices::add);
      assertThat(pulled.downloaded()).as("%s %s %s", pulled.downloads(), notices, RemoteListing.list(t)).isEqualTo(3);
      assertThat(pulled.rejected()).isZero();
      assertThat(d.readRequest(old.key()).orElseThrow().executable()).isEqualTo(old.executable());
    }
  }

  /** An envelope written by hand, as docs/cache-remote.md describes it: magic, header length, header, payload, SHA-256. */
  private static byte[] envelope(String header, byte[] payload) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    byte[] h = header.getBytes(StandardCharsets.UTF_8);
    out.writeBytes("XLACOBJ1".getBytes(StandardCharsets.US_ASCII));
    out.writeBytes(java.nio.ByteBuffer.allocate(4).putInt(h.length).array());
    out.writeBytes(h);
    out.writeBytes(payload);
    out.writeBytes(RemoteObjects.sha256().digest(out.toByteArray()));
    return out.toByteArray();
  }

  private static long deadPid() {
    for (long pid = 4_000_000; ; pid--) {
      if (ProcessHandle.of(pid).isEmpty()) {
        return pid;
      }
    }
  }
}
