package dev.xlac.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.remote.SeaweedServer;
import dev.xlac.core.XlacException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The one door into both tiers, against a real S3 server (SeaweedFS, started once for the class): local first, then
 * the remote pulled through, then write-through, and a remote that is down costing one line, never the run.
 */
class TieredCacheTest {
  static final String BUCKET = "xlac-tiers";
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

  /** A cache whose remote tier is a fresh prefix of its own (or {@code remote}'s, to share one). */
  CacheStore open(String name, RemoteSetting remote) throws InterruptedException {
    CacheStore store = CacheStore.open(tmp.resolve(name), CacheStore.Mode.READ_WRITE, Duration.ZERO, notices::add);
    store.setRemoteSetting(Optional.of(remote));
    return store;
  }

  static RemoteSetting freshRemote() {
    return RemoteSetting.parse("s3://" + BUCKET + "/tiers-" + (++prefixes), server.endpoint());
  }

  static ArtifactKey key(int n) {
    return new ArtifactKey(Fixtures.fp(n), Fixtures.CPU);
  }

  @Test
  void localHit_isServedLocally_andTheRemoteIsNotAsked() throws Exception {
    try (CacheStore a = open("a", freshRemote())) {
      Fixtures.graph(a, 1);
      a.putArtifact(key(1), new byte[] {1}, CompileInfo.of(1, ""));
      try (TieredCache tiers = TieredCache.open(a, RemotePolicy.USE, notices::add)) {
        assertThat(tiers.hasRemote()).isTrue();
        assertThat(tiers.lookup(key(1), false)).get().extracting(ArtifactInfo::status)
            .isEqualTo(EntryStatus.COMPILED);
        RemoteSummary remote = tiers.finish();
        assertThat(remote.misses() + remote.downloaded()).as("asked the remote").isZero();
      }
      assertThat(a.statistics().hits()).isEqualTo(1);
    }
    assertThat(notices).isEmpty();
  }

  @Test
  void localFailure_isTheAnswerUnlessRetried_thenTheRemoteIsAsked() throws Exception {
    try (CacheStore a = open("a", freshRemote())) {
      Fixtures.graph(a, 2);
      a.recordFailure(key(2), "compile-error", "no", "log");
      try (TieredCache tiers = TieredCache.open(a, RemotePolicy.USE, notices::add)) {
        assertThat(tiers.lookup(key(2), false)).get().extracting(ArtifactInfo::status)
            .isEqualTo(EntryStatus.FAILED);
        assertThat(tiers.remoteSoFar().misses()).isZero();
        assertThat(tiers.lookup(key(2), true)).isEmpty();
        assertThat(tiers.finish().misses()).isEqualTo(1);
      }
    }
  }

  @Test
  void putArtifact_writesThrough_andAnotherCachesLookupPullsItThrough() throws Exception {
    RemoteSetting shared = freshRemote();
    byte[] artifact = Fixtures.bytes(3, 50_000);
    try (CacheStore a = open("a", shared);
        TieredCache tiers = TieredCache.open(a, RemotePolicy.REQUIRE, notices::add)) {
      Fixtures.graph(a, 3);
      assertThat(tiers.lookup(key(3), false)).as("in neither tier").isEmpty();
      tiers.putArtifact(key(3), artifact, CompileInfo.of(2, "log"));
      assertThat(a.getArtifact(key(3)).orElseThrow().bytes()).as("stored locally").isEqualTo(artifact);
      RemoteSummary remote = tiers.finish();
      assertThat(remote.misses()).isEqualTo(1);
      assertThat(remote.uploaded()).as("the graph, then its artifact").isEqualTo(2);
    }
    try (CacheStore b = open("b", shared);
        TieredCache tiers = TieredCache.open(b, RemotePolicy.USE, notices::add)) {
      Fixtures.graph(b, 3);
      assertThat(tiers.lookup(key(3), false)).get().extracting(ArtifactInfo::status)
          .isEqualTo(EntryStatus.COMPILED);
      RemoteSummary remote = tiers.finish();
      assertThat(remote.downloaded()).isEqualTo(1);
      assertThat(remote.runLine()).startsWith("remote " + shared.url() + ": read through 1");
      assertThat(b.getArtifact(key(3)).orElseThrow().bytes()).as("pulled through into the local cache")
          .isEqualTo(artifact);
    }
    assertThat(notices).isEmpty();
  }

  @Test
  void remoteDown_isOneWarning_andTheRunGoesOnWithItsLocalCache() throws Exception {
    RemoteSetting down;
    try (ServerSocket s = new ServerSocket(0)) { // a port nothing listens on once closed
      down = RemoteSetting.parse("s3://" + BUCKET + "/down", "http://127.0.0.1:" + s.getLocalPort());
    }
    try (CacheStore a = open("a", down)) {
      Fixtures.graph(a, 4);
      Fixtures.graph(a, 5);
      assertThatThrownBy(() -> TieredCache.open(a, RemotePolicy.REQUIRE, notices::add))
          .isInstanceOf(XlacException.class)
          .satisfies(e -> assertThat(((XlacException) e).exitCode().code()).isEqualTo(3))
          .hasMessageContaining("cannot connect");
      try (TieredCache tiers = TieredCache.open(a, RemotePolicy.USE, notices::add)) {
        assertThat(tiers.lookup(key(4), false)).isEmpty();
        assertThat(tiers.lookup(key(5), false)).isEmpty();
        tiers.putArtifact(key(4), new byte[] {4}, CompileInfo.of(1, ""));
        RemoteSummary remote = tiers.finish();
        assertThat(remote.unavailable()).contains("cannot connect");
        assertThat(remote.failed()).isEqualTo(1);
      }
      assertThat(a.getArtifact(key(4))).as("stored locally whatever the remote did").isPresent();
    }
    assertThat(notices).singleElement().asString().contains("cannot connect").contains("going on without it");
  }

  @Test
  void offOrNoRemote_isTheLocalCacheAlone_andRequireWithoutOneIsBadInput() throws Exception {
    try (CacheStore a = CacheStore.open(tmp.resolve("plain"), CacheStore.Mode.READ_WRITE, Duration.ZERO,
        notices::add)) {
      try (TieredCache tiers = TieredCache.open(a, RemotePolicy.USE, notices::add)) {
        assertThat(tiers.hasRemote()).isFalse();
        assertThat(tiers.finish()).isNull();
      }
      assertThatThrownBy(() -> TieredCache.open(a, RemotePolicy.REQUIRE, notices::add))
          .isInstanceOf(XlacException.class)
          .satisfies(e -> assertThat(((XlacException) e).exitCode().code()).isEqualTo(2))
          .hasMessage("--require-remote: cache " + tmp.resolve("plain") + " has no remote tier (set one with 'xlac"
              + " cache config remote s3://BUCKET/PREFIX')");
      assertThatThrownBy(() -> CacheRemote.forCommand(a, notices::add)).isInstanceOf(XlacException.class)
          .satisfies(e -> assertThat(((XlacException) e).exitCode().code()).isEqualTo(2))
          .hasMessageContaining("has no remote tier");
    }
    try (CacheStore b = open("b", freshRemote());
        TieredCache tiers = TieredCache.open(b, RemotePolicy.OFF, notices::add)) {
      assertThat(tiers.hasRemote()).isFalse();
    }
    assertThat(notices).isEmpty();
  }
}
