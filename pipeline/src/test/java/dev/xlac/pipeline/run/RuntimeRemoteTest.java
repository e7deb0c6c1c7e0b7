package dev.xlac.pipeline.run;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RemotePolicy;
import dev.xlac.cache.RemoteSetting;
import dev.xlac.cache.RequestFixtures;
import dev.xlac.cache.remote.RemoteObjects;
import dev.xlac.cache.remote.SeaweedServer;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.pipeline.TestPlugin;
import dev.xlac.pipeline.recording.RealPlugin;
import dev.xlac.runtime.LayoutEntry;
import dev.xlac.runtime.RecordSpool;
import dev.xlac.runtime.RecordedRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * {@code xlac run} with the cache's remote tier, in-process, against a real S3 server (SeaweedFS, {@code $XLAC_WEED},
 * one for the class): a recording run writes its entries through; a run on another, empty cache fetches them before
 * its command starts, so the layout the command sees holds them; only the run's plugin's entries are listed and
 * fetched; a damaged object is rejected; a remote that is down is one warning (exit 3 before the command with
 * {@code --require-remote}); a silent one is bounded in time. The command is a shell script that does what the proxy
 * would (records into the spool), with compiler-drivers' C test plugin as the real plugin.
 */
class RuntimeRemoteTest {
  static final String BUCKET = "xlac-run";
  @TempDir
  static Path serverDir;
  static SeaweedServer server;
  static int prefixes;

  @TempDir
  Path tmp;
  Path plugin;
  String sha;
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

  @BeforeEach
  void buildPlugin() throws Exception {
    plugin = TestPlugin.build(Files.createDirectories(tmp.resolve("plugin")));
    sha = RealPlugin.identify(plugin, null, null).sha256();
  }

  @AfterEach
  void defaults() {
    RuntimeRemote.connectTimeoutForTests = null;
    RuntimeRemote.readTimeoutForTests = null;
    RuntimeRemote.fetchTimeForTests = null;
  }

  static RemoteSetting setting(String name) {
    return RemoteSetting.parse("s3://" + BUCKET + "/" + name + "-" + (++prefixes), server.endpoint());
  }

  private Path node(String name, RemoteSetting remote) throws Exception {
    Path dir = tmp.resolve(name);
    try (CacheStore s = CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      s.setRemoteSetting(Optional.ofNullable(remote));
    }
    return dir;
  }

  private RunResult run(Path cache, RemotePolicy policy, boolean record, String script) throws Exception {
    Map<String, String> env = new HashMap<>(Map.of("PATH", System.getenv("PATH")));
    return RuntimeRun.run(new RunSpec(List.of("sh", "-c", script), cache, plugin, null, record, env, policy),
        () -> CacheStore.lock(cache, Duration.ZERO, m -> {}), notices::add,
        () -> Path.of("/opt/xlac/libxlac_pjrt.so"));
  }

  /** Records of requests {@code from..to-1} for {@code pluginSha}, and the script line that "records" them. */
  private String recording(int from, int to, String pluginSha) throws Exception {
    Path made = Files.createDirectories(tmp.resolve("made-" + from + "-" + to + "-" + pluginSha.substring(0, 4)));
    for (int n = from; n < to; n++) {
      RecordSpool.write(made, RequestFixtures.request(n, 20_000 + n, pluginSha));
    }
    return "cp " + made + "/*.xpr $XLAC_PJRT_RECORD/";
  }

  /** The script line that writes how many layout entries the command found into {@code out}. */
  private static String countLayout(Path out) {
    return "find \"$XLAC_PJRT_LAYOUT\" -name '*.xpx' | wc -l > " + out;
  }

  private static List<String> objects(RemoteSetting s, String below) {
    try (S3Client c = server.client()) {
      return c.listObjectsV2(r -> r.bucket(BUCKET).prefix(s.key(below))).contents().stream().map(S3Object::key)
          .map(k -> k.substring(s.prefix().length() + 1)).sorted().toList();
    }
  }

  @Test
  void recordingRun_writesThrough_andARunOnAnEmptyCacheFetchesItsPluginsEntriesBeforeTheCommand() throws Exception {
    RemoteSetting s = setting("through");
    Path a = node("a", s);
    RunResult recorded = run(a, RemotePolicy.USE, true, recording(0, 3, sha));
    assertThat(recorded.exitStatus()).isZero();
    assertThat(recorded.ingested().added()).isEqualTo(3);
    assertThat(recorded.remote().uploaded()).isEqualTo(3);
    assertThat(recorded.line()).endsWith("; recorded 3 new; remote: 0 fetched, 3 written");
    assertThat(objects(s, "v1/runtime/")).hasSize(3).allMatch(k -> k.startsWith("v1/runtime/" + sha + "/"));
    // Another plugin's entry in the same bucket: never listed nor fetched by this plugin's runs.
    Path other = node("other", s);
    try (CacheStore o = CacheStore.open(other, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      o.putRequests(List.of(RequestFixtures.request(9, 1000, RequestFixtures.PLUGIN_B)));
    }
    try (CacheStore o = CacheStore.open(other, CacheStore.Mode.READ_ONLY, Duration.ZERO);
        var remote = dev.xlac.cache.CacheRemote.open(s, notices::add)) {
      remote.push(o, List.of(), notices::add, java.util.Optional.empty(), false);
    }
    assertThat(objects(s, "v1/runtime/" + RequestFixtures.PLUGIN_B + "/")).hasSize(1);

    Path b = node("b", s);
    Path seen = tmp.resolve("seen");
    RunResult fetched = run(b, RemotePolicy.USE, false, countLayout(seen));
    assertThat(fetched.remote().downloaded()).isEqualTo(3);
    assertThat(fetched.remote().rejected()).isZero();
    assertThat(fetched.line()).endsWith("; remote: 3 fetched, 0 written");
    assertThat(Files.readString(seen).strip()).as("layout entries the command found").isEqualTo("3");
    try (CacheStore store = CacheStore.open(b, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      assertThat(store.requests()).hasSize(3).allMatch(r -> r.pluginSha256().equals(sha));
      for (int n = 0; n < 3; n++) {
        RecordedRequest want = RequestFixtures.request(n, 20_000 + n, sha);
        assertThat(store.readRequest(want.key()).orElseThrow().executable()).isEqualTo(want.executable());
      }
      assertThat(store.verify(false).problems()).isEmpty();
    }
    Map<String, Object> json = fetched.toJson();
    assertThat(json.get("remote")).asString().contains("fetched=3").contains("written=0").contains("failures=0")
        .contains("unavailable=null");

    // The next run: one listing, nothing fetched, the cache not opened before the command (the stamp holds).
    notices.clear();
    RunResult again = run(b, RemotePolicy.USE, false, countLayout(seen));
    assertThat(again.remote().downloaded()).isZero();
    assertThat(again.materialized()).as("the layout was current: nothing written before the command").isNull();
    assertThat(notices).isEmpty();

    // --no-remote: no remote counts at all.
    RunResult off = run(b, RemotePolicy.OFF, false, "true");
    assertThat(off.remote()).isNull();
    assertThat(off.line()).doesNotContain("remote");
    assertThat(off.toJson()).containsEntry("remote", null);
  }

  @Test
  void damagedObject_isRejectedByName_andTheRestIsFetched() throws Exception {
    RemoteSetting s = setting("damaged");
    Path a = node("a", s);
    run(a, RemotePolicy.USE, true, recording(0, 3, sha));
    RecordedRequest victim = RequestFixtures.request(1, 20_001, sha);
    String key = s.key(RemoteObjects.runtimeKey(sha, victim.key()));
    try (S3Client c = server.client()) {
      byte[] body = c.getObjectAsBytes(r -> r.bucket(BUCKET).key(key)).asByteArray();
      body[body.length / 2] ^= 0x20;
      c.putObject(PutObjectRequest.builder().bucket(BUCKET).key(key).build(), RequestBody.fromBytes(body));
    }
    Path b = node("b", s);
    RunResult r = run(b, RemotePolicy.REQUIRE, false, "true");
    assertThat(r.exitStatus()).isZero();
    assertThat(r.remote().downloaded()).isEqualTo(2);
    assertThat(r.remote().rejected()).isEqualTo(1);
    assertThat(r.line()).endsWith("; remote: 2 fetched, 0 written, 1 rejected");
    assertThat(r.remoteFailure()).as("a rejected object is not the remote failing").isNull();
    assertThat(notices).filteredOn(n -> n.startsWith("rejected ")).singleElement().asString()
        .contains("s3://" + BUCKET + "/" + key).contains("SHA-256 does not match");
    try (CacheStore store = CacheStore.open(b, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      assertThat(store.requestInfo(victim.key())).isEmpty();
      assertThat(store.requests()).hasSize(2);
      assertThat(store.verify(false).problems()).isEmpty();
    }
  }

  @Test
  void remoteDown_isOneWarning_andTheCommandRuns_butWithRequireRemoteItIsExit3BeforeTheCommand(
      @TempDir Path ownServer) throws Exception {
    SeaweedServer stopped = SeaweedServer.start(ownServer, BUCKET, server.accessKey(), server.secretKey());
    RemoteSetting s = RemoteSetting.parse("s3://" + BUCKET + "/down", stopped.endpoint());
    Path a = node("a", s);
    stopped.close();
    Path ran = tmp.resolve("ran");
    RunResult r = run(a, RemotePolicy.USE, true, "touch " + ran + "; " + recording(0, 2, sha));
    assertThat(r.exitStatus()).isZero();
    assertThat(ran).exists();
    assertThat(r.ingested().added()).isEqualTo(2);
    assertThat(r.remote().unavailable()).contains("cannot connect");
    assertThat(r.remote().failed()).as("the recorded entries not written through").isEqualTo(2);
    assertThat(r.line()).endsWith("; remote: 0 fetched, 0 written, 2 failed (unavailable)");
    assertThat(notices).filteredOn(n -> n.startsWith("remote ")).singleElement().asString()
        .contains("cannot connect").contains("going on without it");
    Files.delete(ran);
    assertThatThrownBy(() -> run(a, RemotePolicy.REQUIRE, false, "touch " + ran))
        .isInstanceOfSatisfying(XlacException.class, e -> {
          assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
          assertThat(e.getMessage()).contains("cannot connect").doesNotContain("\n");
        });
    assertThat(ran).as("the command must not have started").doesNotExist();
  }

  @Test
  void requireRemote_withoutARemote_isBadInput_andNoRemoteIsNoCounts() throws Exception {
    Path a = node("a", null);
    Path ran = tmp.resolve("ran");
    assertThatThrownBy(() -> run(a, RemotePolicy.REQUIRE, false, "touch " + ran))
        .isInstanceOfSatisfying(XlacException.class, e -> {
          assertThat(e.exitCode()).isEqualTo(ExitCode.BAD_INPUT);
          assertThat(e.getMessage()).contains("has no remote tier");
        });
    assertThat(ran).doesNotExist();
    RunResult r = run(a, RemotePolicy.USE, false, "true");
    assertThat(r.remote()).isNull();
    assertThat(r.line()).doesNotContain("remote");
    assertThat(RuntimeRemote.memoFile(a)).as("the setting remembered: the next run need not read it").exists();
  }

  /** A memo of "no remote" must not outlive a change of the setting. */
  @Test
  void settingMemo_followsTheCache() throws Exception {
    Path a = node("a", null);
    assertThat(RuntimeRemote.setting(a, notices::add)).isEmpty();
    RemoteSetting s = setting("memo");
    try (CacheStore store = CacheStore.open(a, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      store.setRemoteSetting(Optional.of(s));
    }
    assertThat(RuntimeRemote.setting(a, notices::add)).contains(s);
    assertThat(RuntimeRemote.setting(a, notices::add)).contains(s); // from the memo this time
    assertThat(Files.readString(RuntimeRemote.memoFile(a))).contains("url " + s.url())
        .contains("endpoint " + server.endpoint());
  }

  /** A remote that takes connections and never answers: one warning within the tier's timeouts, the command runs. */
  @Test
  void silentRemote_isBoundedInTime_andTheCommandRuns() throws Exception {
    try (java.net.ServerSocket silent = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
      List<java.net.Socket> held = Collections.synchronizedList(new ArrayList<>());
      Thread acceptor = Thread.ofVirtual().start(() -> {
        try {
          while (true) {
            held.add(silent.accept());
          }
        } catch (java.io.IOException e) {
          // closed
        }
      });
      Path a = node("a", RemoteSetting.parse("s3://" + BUCKET + "/silent", "http://127.0.0.1:" + silent.getLocalPort()));
      RuntimeRemote.connectTimeoutForTests = Duration.ofSeconds(1);
      RuntimeRemote.readTimeoutForTests = Duration.ofSeconds(1);
      long start = System.nanoTime();
      RunResult r = run(a, RemotePolicy.USE, false, "true");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(15));
      assertThat(r.exitStatus()).isZero();
      assertThat(r.remote().unavailable()).contains("timed out");
      assertThat(notices).filteredOn(n -> n.startsWith("remote ")).singleElement().asString().contains("timed out");
      silent.close();
      acceptor.join();
      for (java.net.Socket sock : held) {
        sock.close();
      }
    }
  }

  /** More entries than the time bound allows: what was not started is not fetched, said once, counted. */
  @Test
  void fetchTimeBound_leavesTheRestUnfetched_withOneLine() throws Exception {
    RemoteSetting s = setting("bound");
    Path a = node("a", s);
    run(a, RemotePolicy.USE, true, recording(0, 3, sha));
    RuntimeRemote.fetchTimeForTests = Duration.ZERO;
    Path b = node("b", s);
    RunResult r = run(b, RemotePolicy.USE, false, "true");
    assertThat(r.remote().downloaded()).isZero();
    assertThat(r.remote().skipped()).isEqualTo(3);
    assertThat(r.line()).endsWith("; remote: 0 fetched, 0 written, 3 failed");
    assertThat(notices).filteredOn(n -> n.contains("were not fetched within")).hasSize(1);
    assertThatThrownBy(() -> run(b, RemotePolicy.REQUIRE, false, "true"))
        .isInstanceOfSatisfying(XlacException.class, e -> assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT));
    assertThat(notices.stream().collect(Collectors.joining("\n"))).doesNotContain("Exception");
  }
}
