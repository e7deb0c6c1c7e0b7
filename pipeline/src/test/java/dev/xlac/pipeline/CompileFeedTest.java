package dev.xlac.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RemotePolicy;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.TestModules;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CompileFeedTest {
  private static final SchedulerSettings TWO_JOBS = new SchedulerSettings(2, 0, 0);

  @TempDir
  Path tmp;

  /** Three graphs in a fresh cache; one already has an artifact for the fake compiler. */
  private SequencedMap<GraphFingerprint, String> graphs(CacheStore store) throws Exception {
    SequencedMap<GraphFingerprint, String> graphs = new LinkedHashMap<>();
    for (int i = 0; i < 3; i++) {
      Path f = TestModules.writeDump(tmp.resolve("dumps"), "m" + i + ".before_optimizations.hlo.pb",
          TestModules.mulAdd(1.5f + i, 1, "_" + i, 10));
      LoadedModule m = new HloModuleReader().read(f);
      store.putGraph(m);
      graphs.put(m.fingerprint(), m.moduleName());
    }
    GraphFingerprint first = graphs.firstEntry().getKey();
    store.putArtifact(new dev.xlac.cache.ArtifactKey(first, FakeCompiler.IDENTITY), new byte[] {1},
        dev.xlac.cache.CompileInfo.of(1.0, ""));
    return graphs;
  }

  private static CacheStore open(Path dir) throws InterruptedException {
    return CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
  }

  private static List<String> summary(List<GraphResult> results) {
    return results.stream().sorted(Comparator.comparing(g -> g.fingerprint().value()))
        .map(r -> r.fingerprint() + " " + r.moduleName() + " " + r.status()).toList();
  }

  @Test
  void list_and_stream_giveTheSameResults() throws Exception {
    List<GraphResult> listed;
    try (CacheStore store = open(tmp.resolve("list"))) {
      SequencedMap<GraphFingerprint, String> graphs = graphs(store);
      try (CompileFeed feed = new CompileFeed(store, TWO_JOBS, false, RunListener.NONE, () -> Long.MAX_VALUE)) {
        feed.start(new FakeCompiler(false).factory());
        listed = feed.offerAll(graphs);
      }
    }
    List<GraphResult> streamed;
    try (CacheStore store = open(tmp.resolve("stream"))) {
      SequencedMap<GraphFingerprint, String> graphs = graphs(store);
      try (CompileFeed feed = new CompileFeed(store, TWO_JOBS, false, RunListener.NONE, () -> Long.MAX_VALUE)) {
        var first = graphs.firstEntry();
        feed.offer(first.getKey(), first.getValue()); // one before the compiler is known: it waits
        feed.start(new FakeCompiler(false).factory());
        graphs.sequencedEntrySet().stream().skip(1) // the rest after: settled or submitted as they come
            .forEach(e -> feed.offer(e.getKey(), e.getValue()));
        streamed = feed.finish();
        assertThat(feed.offered()).isEqualTo(3);
      }
    }
    assertThat(summary(listed)).hasSize(3).isEqualTo(summary(streamed));
    assertThat(listed).extracting(GraphResult::status).containsExactlyInAnyOrder(GraphResult.Status.CACHED,
        GraphResult.Status.COMPILED, GraphResult.Status.COMPILED);
  }

  @Test
  void offerAll_beforeStart_waitsForTheCompiler_thenPlansOnce() throws Exception {
    try (CacheStore store = open(tmp.resolve("c"))) {
      SequencedMap<GraphFingerprint, String> graphs = graphs(store);
      List<String> plans = new ArrayList<>();
      RunListener listener = new RunListener() {
        @Override
        public synchronized void planned(int total, int cached, int toCompile, int jobs) {
          plans.add(total + " " + cached + " " + toCompile + " " + jobs);
        }
      };
      try (CompileFeed feed = new CompileFeed(store, TWO_JOBS, false, listener, () -> Long.MAX_VALUE)) {
        CompletableFuture<List<GraphResult>> results = CompletableFuture.supplyAsync(() -> {
          try {
            return feed.offerAll(graphs);
          } catch (InterruptedException e) {
            throw new IllegalStateException(e);
          }
        });
        Thread.sleep(200);
        assertThat(results).isNotDone();
        synchronized (listener) {
          assertThat(plans).isEmpty();
        }
        FakeCompiler compiler = new FakeCompiler(false);
        feed.start(compiler.factory());
        assertThat(results.get(30, TimeUnit.SECONDS)).hasSize(3);
        assertThat(plans).containsExactly("3 1 2 2");
        assertThat(compiler.compiles).hasValue(2);
      }
    }
  }

  @Test
  void offerBeforeStart_waits() throws Exception {
    try (CacheStore store = open(tmp.resolve("c"))) {
      SequencedMap<GraphFingerprint, String> graphs = graphs(store);
      FakeCompiler compiler = new FakeCompiler(false);
      try (CompileFeed feed = new CompileFeed(store, TWO_JOBS, false, RunListener.NONE, () -> Long.MAX_VALUE)) {
        graphs.forEach(feed::offer);
        assertThat(compiler.compiles).hasValue(0);
        feed.start(compiler.factory());
        assertThat(feed.finish()).extracting(GraphResult::status).containsOnly(GraphResult.Status.CACHED,
            GraphResult.Status.COMPILED);
        assertThat(compiler.compiles).hasValue(2);
      }
    }
  }

  @Test
  void cancel_endsQueuedAsNotRun() throws Exception {
    try (CacheStore store = open(tmp.resolve("c"))) {
      SequencedMap<GraphFingerprint, String> graphs = graphs(store);
      try (CompileFeed feed = new CompileFeed(store, TWO_JOBS, false, RunListener.NONE, () -> Long.MAX_VALUE)) {
        graphs.forEach(feed::offer); // waiting: the compiler is not known yet
        feed.cancel();
        feed.start(new FakeCompiler(false).factory()); // too late: owned (closed at the end), not used
        feed.offer(GraphFingerprint.of(TestModules.mulAdd(99f)), "jit_late");
        List<GraphResult> results = feed.finish();
        assertThat(results).hasSize(4).allSatisfy(r -> {
          assertThat(r.status()).isEqualTo(GraphResult.Status.NOT_RUN);
          assertThat(r.error()).isEqualTo("not compiled: the run was stopped");
        });
      }
    }
  }

  @Test
  void allCached_startsNoWorker() throws Exception {
    try (CacheStore store = open(tmp.resolve("c"))) {
      SequencedMap<GraphFingerprint, String> graphs = graphs(store);
      SequencedMap<GraphFingerprint, String> cachedOnly = new LinkedHashMap<>();
      cachedOnly.put(graphs.firstEntry().getKey(), graphs.firstEntry().getValue());
      FakeCompiler compiler = new FakeCompiler(false);
      try (CompileFeed feed = new CompileFeed(store, TWO_JOBS, false, RunListener.NONE, () -> Long.MAX_VALUE)) {
        feed.start(compiler.factory());
        assertThat(feed.offerAll(cachedOnly)).extracting(GraphResult::status)
            .containsExactly(GraphResult.Status.CACHED);
      }
      assertThat(compiler.opened).hasValue(0);
    }
  }

  /**
   * A remote read-through ran inside the feed's lock (offer -> settled -> readThrough), so a remote that never
   * answers held up cancel() (Ctrl-C) for the whole read timeout. The remote here is a real socket that accepts and
   * never answers.
   */
  @Test
  void cancel_isNotBlockedByASilentRemoteRead() throws Exception {
    List<java.net.Socket> held = java.util.Collections.synchronizedList(new ArrayList<>());
    String key = System.getProperty("aws.accessKeyId");
    String secret = System.getProperty("aws.secretAccessKey");
    System.setProperty("aws.accessKeyId", "silent");
    System.setProperty("aws.secretAccessKey", "silent-secret");
    try (java.net.ServerSocket silent = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
        CacheStore store = open(tmp.resolve("c"))) {
      Thread acceptor = Thread.ofVirtual().start(() -> {
        try {
          while (true) {
            held.add(silent.accept()); // read nothing, answer nothing
          }
        } catch (java.io.IOException e) {
          // closed
        }
      });
      SequencedMap<GraphFingerprint, String> graphs = graphs(store);
      store.setRemoteSetting(java.util.Optional.of(dev.xlac.cache.RemoteSetting.parse("s3://xlac-silent/p",
          "http://127.0.0.1:" + silent.getLocalPort())));
      try (var remote = dev.xlac.cache.TieredCache.open(store, dev.xlac.cache.RemotePolicy.USE, m -> {},
          Duration.ofSeconds(5), Duration.ofSeconds(20), 1);
          CompileFeed feed = new CompileFeed(store, TWO_JOBS, false, RunListener.NONE, () -> Long.MAX_VALUE, remote)) {
        feed.start(new FakeCompiler(false).factory());
        var last = graphs.lastEntry(); // not in the local cache: read through to the silent remote
        Thread offering = Thread.ofPlatform().start(() -> feed.offer(last.getKey(), last.getValue()));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (held.isEmpty() && System.nanoTime() < deadline) {
          Thread.sleep(10);
        }
        assertThat(held).as("the read reached the remote").isNotEmpty();
        CompletableFuture<Void> cancel = CompletableFuture.runAsync(feed::cancel);
        cancel.get(3, TimeUnit.SECONDS); // was: blocked until the read timed out
        assertThat(feed.finish()).singleElement().extracting(GraphResult::status)
            .isEqualTo(GraphResult.Status.NOT_RUN);
        silent.close(); // no new connection (HttpURLConnection tries a GET again on a new one)
        acceptor.join();
        for (java.net.Socket s : held) {
          s.close(); // the read ends now; its late answer is dropped
        }
        offering.join(TimeUnit.SECONDS.toMillis(30));
        assertThat(offering.isAlive()).isFalse();
        assertThat(feed.finish()).hasSize(1);
      }
    } finally {
      restore("aws.accessKeyId", key);
      restore("aws.secretAccessKey", secret);
      for (java.net.Socket s : held) {
        s.close();
      }
    }
  }

  private static void restore(String property, String value) {
    if (value == null) {
      System.clearProperty(property);
    } else {
      System.setProperty(property, value);
    }
  }
}
