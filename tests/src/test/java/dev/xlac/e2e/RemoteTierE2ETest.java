package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.Fixtures;
import dev.xlac.cache.remote.RemoteObjects;
import dev.xlac.cache.remote.SeaweedServer;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * The remote tier through the CLI, against a real S3 server (SeaweedFS {@code weed mini}, started once for the class
 * on free ports and stopped): the JAX sample compiled on one node and read through on another, push and pull,
 * {@code ls --remote}, a remote that is down or refuses the credentials, and {@code cache push} killed with
 * {@code kill -9} in the middle of its uploads.
 */
class RemoteTierE2ETest {
  static final String BUCKET = "xlac-e2e";
  @TempDir
  static Path serverDir;
  static SeaweedServer server;

  @TempDir
  Path dir;

  @BeforeAll
  static void startServer() throws Exception {
    server = SeaweedServer.startOrSkip(serverDir, BUCKET);
  }

  @AfterAll
  static void stopServer() throws Exception {
    SeaweedServer.stop(server);
  }

  static Launcher.Result xlac(Map<String, String> env, String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Launcher.root().resolve("xlac").toString());
    cmd.addAll(List.of(args));
    return Launcher.run(cmd, env, 300);
  }

  static Launcher.Result xlac(String... args) throws IOException, InterruptedException {
    return xlac(server.environment(), args);
  }

  static void configure(Path cache, String prefix, String endpoint) throws Exception {
    Launcher.Result r = xlac("cache", "config", "remote", "s3://" + BUCKET + "/" + prefix, "--endpoint", endpoint,
        "--cache", cache.toString());
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out().strip()).isEqualTo("remote s3://" + BUCKET + "/" + prefix + " --endpoint " + endpoint);
  }

  @Test
  void jaxSample_compiledOnOneNode_isReadThroughOnAnother_andPushPullAgree() throws Exception {
    Path dumps = dir.resolve("dumps");
    Launcher.traceJax(Launcher.root().resolve("samples/jax/mlp.py"), dumps, "--steps", "1");
    Path a = dir.resolve("node-a");
    Path b = dir.resolve("node-b");
    configure(a, "jax", server.endpoint());
    configure(b, "jax", server.endpoint());

    Launcher.Result first = xlac("parallel-compile", "--require-remote", "--cache", a.toString(), "--plugin",
        Launcher.cpuPlugin(), dumps.toString());
    assertThat(first.exitCode()).as(first.err()).isZero();
    Matcher total = Pattern.compile("(\\d+) graphs: (\\d+) compiled, 0 cached, 0 failed").matcher(first.out());
    assertThat(total.find()).as(first.out()).isTrue();
    int graphs = Integer.parseInt(total.group(1));
    assertThat(first.out()).contains("remote s3://" + BUCKET + "/jax: read through 0 (0 B), not there " + graphs
        + ", rejected 0; uploaded " + (2 * graphs) + " (");

    Launcher.Result second = xlac("parallel-compile", "--require-remote", "--cache", b.toString(), "--plugin",
        Launcher.cpuPlugin(), dumps.toString());
    assertThat(second.exitCode()).as(second.err()).isZero();
    assertThat(second.out()).contains(graphs + " graphs: 0 compiled, " + graphs + " cached, 0 failed")
        .contains("read through " + graphs + " (").contains("uploaded 0 (0 B), already there 0, failed 0");
    assertThat(second.err()).doesNotContain("remote s3://");

    Launcher.Result ls = xlac("cache", "ls", "--remote", "--json", "--cache", b.toString());
    assertThat(ls.exitCode()).as(ls.err()).isZero();
    assertThat(count(ls.out(), "\"kind\": *\"graph\"")).isEqualTo(graphs);
    assertThat(count(ls.out(), "\"kind\": *\"artifact\"")).isEqualTo(graphs);
    System.out.println("JAX mlp.py --steps 1 in the remote tier: " + objectFigures("jax/"));

    Launcher.Result push = xlac("cache", "push", "--cache", a.toString());
    assertThat(push.exitCode()).as(push.err()).isZero();
    assertThat(push.out().strip()).isEqualTo("Pushed to s3://" + BUCKET + "/jax: uploaded 0 (0 B), already there "
        + (2 * graphs) + ", failed 0, skipped 0");

    Path c = dir.resolve("node-c");
    configure(c, "jax", server.endpoint());
    Launcher.Result pull = xlac("cache", "pull", "--cache", c.toString());
    assertThat(pull.exitCode()).as(pull.err()).isZero();
    assertThat(pull.out()).startsWith("Pulled from s3://" + BUCKET + "/jax: downloaded " + (2 * graphs) + " (")
        .contains("already local 0, rejected 0");
    Launcher.Result stat = xlac("cache", "ls", "--status", "compiled", "--json", "--cache", c.toString());
    assertThat(count(stat.out(), "\"status\": *\"compiled\"")).isEqualTo(graphs);
  }

  static long count(String text, String regex) {
    return Pattern.compile(regex).matcher(text).results().count();
  }

  /** Objects and bytes under a prefix, by kind, for the report. */
  static String objectFigures(String prefix) {
    Map<String, long[]> byKind = new HashMap<>();
    try (S3Client s3 = server.client()) {
      for (var page : s3.listObjectsV2Paginator(ListObjectsV2Request.builder().bucket(BUCKET).prefix(prefix).build())) {
        for (S3Object o : page.contents()) {
          String kind = o.key().substring(prefix.length()).split("/")[1];
          long[] f = byKind.computeIfAbsent(kind, k -> new long[2]);
          f[0]++;
          f[1] += o.size();
        }
      }
    }
    StringBuilder s = new StringBuilder();
    byKind.forEach((k, f) -> s.append(k).append(' ').append(f[0]).append(" objects ").append(f[1]).append(" bytes; "));
    return s.toString();
  }

  @Test
  void remoteDown_warnsOnce_andRequireRemoteFailsWithExit3() throws Exception {
    int closed;
    try (ServerSocket s = new ServerSocket(0)) {
      closed = s.getLocalPort();
    }
    Path dumps = dir.resolve("dumps");
    Files.createDirectories(dumps);
    Files.write(dumps.resolve("g1.hlo_module.pb"), Fixtures.module(1));
    Path cache = dir.resolve("cache");
    configure(cache, "down", "http://127.0.0.1:" + closed);

    Launcher.Result warned = xlac("parallel-compile", "--cache", cache.toString(), "--plugin", Launcher.cpuPlugin(),
        dumps.toString());
    assertThat(warned.exitCode()).as(warned.err()).isZero();
    assertThat(warned.out()).contains("1 graph: 1 compiled").contains("failed 1, skipped 0 (unavailable)");
    assertThat(warned.err().lines().filter(l -> l.contains("remote s3://"))).singleElement().asString()
        .contains("cannot connect").contains("going on without it");

    Launcher.Result required = xlac("parallel-compile", "--require-remote", "--cache", cache.toString(), "--plugin",
        Launcher.cpuPlugin(), dumps.toString());
    assertThat(required.exitCode()).isEqualTo(3);
    assertThat(required.err().strip()).startsWith("xlac: remote s3://" + BUCKET + "/down").contains("cannot connect")
        .doesNotContain("\n").doesNotContain("Exception");

    Launcher.Result push = xlac("cache", "push", "--cache", cache.toString());
    assertThat(push.exitCode()).isEqualTo(3);
    assertThat(push.err().strip()).contains("cannot connect").doesNotContain("\n");
  }

  @Test
  void wrongCredentials_areOneClearLine() throws Exception {
    Path dumps = dir.resolve("dumps");
    Files.createDirectories(dumps);
    Files.write(dumps.resolve("g2.hlo_module.pb"), Fixtures.module(2));
    Path cache = dir.resolve("cache");
    configure(cache, "creds", server.endpoint());
    Map<String, String> wrong = new HashMap<>(server.environment());
    wrong.put("AWS_SECRET_ACCESS_KEY", "not-" + server.secretKey());

    Launcher.Result warned = xlac(wrong, "parallel-compile", "--cache", cache.toString(), "--plugin",
        Launcher.cpuPlugin(), dumps.toString());
    assertThat(warned.exitCode()).as(warned.err()).isZero();
    assertThat(warned.err().lines().filter(l -> l.contains("remote s3://"))).singleElement().asString()
        .contains("access refused (S3 said 403").contains("check the AWS credentials");

    Launcher.Result required = xlac(wrong, "parallel-compile", "--require-remote", "--cache", cache.toString(),
        "--plugin", Launcher.cpuPlugin(), dumps.toString());
    assertThat(required.exitCode()).isEqualTo(3);
    assertThat(required.err().strip()).contains("access refused").doesNotContain("\n");

    Launcher.Result ls = xlac(wrong, "cache", "ls", "--remote", "--cache", cache.toString());
    assertThat(ls.exitCode()).isEqualTo(3);
    assertThat(ls.err().strip()).contains("access refused").doesNotContain("\n");
  }

  @Test
  void pushKilledMidUpload_leavesNoTornObject_andARerunCompletes() throws Exception {
    Path cache = dir.resolve("cache");
    int entries = 64;
    int size = 2 << 20;
    try (CacheStore store = CacheStore.open(cache, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      for (int n = 0; n < entries; n++) {
        Fixtures.graph(store, 1000 + n);
        store.putArtifact(new ArtifactKey(Fixtures.fp(1000 + n), Fixtures.CPU), Fixtures.bytes(n, size),
            CompileInfo.of(1, ""));
      }
    }
    configure(cache, "killed", server.endpoint());
    List<String> cmd = List.of(Launcher.root().resolve("xlac").toString(), "cache", "push", "--cache",
        cache.toString());
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve("push.out").toFile());
    pb.environment().putAll(server.environment());
    Process push = pb.start();
    int seen = 0;
    try (S3Client s3 = server.client()) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
      while (push.isAlive() && System.nanoTime() < deadline) {
        seen = s3.listObjectsV2(ListObjectsV2Request.builder().bucket(BUCKET).prefix("killed/v1/artifacts/").build())
            .contents().size();
        if (seen >= 4) {
          break;
        }
        Thread.sleep(20);
      }
      push.destroyForcibly(); // SIGKILL
      push.waitFor(30, TimeUnit.SECONDS);
      assertThat(seen).as("push uploaded artifacts before it was killed: %s", Files.readString(dir.resolve("push.out")))
          .isGreaterThanOrEqualTo(4);
      List<S3Object> left = s3.listObjectsV2(ListObjectsV2Request.builder().bucket(BUCKET).prefix("killed/").build())
          .contents();
      assertThat(left.size()).as("killed before the end").isLessThan(2 * entries);
      for (S3Object o : left) { // every object there is whole: the envelope's SHA-256 and its key check out
        byte[] body = s3.getObjectAsBytes(GetObjectRequest.builder().bucket(BUCKET).key(o.key()).build()).asByteArray();
        RemoteObjects.open(o.key().substring("killed/".length()), body);
      }
      Launcher.Result again = xlac("cache", "push", "--cache", cache.toString());
      assertThat(again.exitCode()).as(again.err()).isZero();
      assertThat(again.out().strip()).startsWith("Pushed to s3://" + BUCKET + "/killed: uploaded "
          + (2 * entries - left.size()) + " (").endsWith("already there " + left.size() + ", failed 0, skipped 0");
    }
    Path other = dir.resolve("other");
    configure(other, "killed", server.endpoint());
    Launcher.Result pull = xlac("cache", "pull", "--cache", other.toString());
    assertThat(pull.exitCode()).as(pull.err()).isZero();
    assertThat(pull.out()).startsWith("Pulled from s3://" + BUCKET + "/killed: downloaded " + (2 * entries) + " (")
        .contains("rejected 0");
  }

  /** A damaged remote object could never be repaired: push skipped it as present and every pull rejected it. */
  @Test
  void damagedObject_isRejectedByPull_repairedByPushRepair_andThenPulls() throws Exception {
    Path cache = dir.resolve("cache");
    ArtifactKey one = new ArtifactKey(Fixtures.fp(2001), Fixtures.CPU);
    try (CacheStore store = CacheStore.open(cache, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      Fixtures.graph(store, 2001);
      store.putArtifact(one, Fixtures.bytes(1, 4096), CompileInfo.of(1, ""));
    }
    configure(cache, "repair", server.endpoint());
    assertThat(xlac("cache", "push", "--cache", cache.toString()).exitCode()).isZero();
    String key = "repair/" + RemoteObjects.artifactKey(one);
    try (S3Client s3 = server.client()) {
      byte[] body = s3.getObjectAsBytes(GetObjectRequest.builder().bucket(BUCKET).key(key).build()).asByteArray();
      body[body.length / 2] ^= 0x10;
      s3.putObject(software.amazon.awssdk.services.s3.model.PutObjectRequest.builder().bucket(BUCKET).key(key).build(),
          software.amazon.awssdk.core.sync.RequestBody.fromBytes(body));
    }
    Path other = dir.resolve("other");
    configure(other, "repair", server.endpoint());
    Launcher.Result rejected = xlac("cache", "pull", "--cache", other.toString());
    assertThat(rejected.exitCode()).as(rejected.err()).isEqualTo(1);
    assertThat(rejected.err()).contains("rejected s3://" + BUCKET + "/" + key).contains("'xlac cache push --repair'");
    Launcher.Result repair = xlac("cache", "push", "--repair", "--cache", cache.toString());
    assertThat(repair.exitCode()).as(repair.err()).isZero();
    assertThat(repair.out().strip()).startsWith("Pushed to s3://" + BUCKET + "/repair: uploaded 0 (")
        .endsWith("already there 1, failed 0, skipped 0, repaired 1");
    assertThat(repair.err().strip()).startsWith("xlac: repaired s3://" + BUCKET + "/" + key).doesNotContain("\n");
    Launcher.Result pull = xlac("cache", "pull", "--cache", other.toString());
    assertThat(pull.exitCode()).as(pull.err()).isZero();
    assertThat(pull.out()).contains("downloaded 1 (").contains("rejected 0");
  }

  /** An endpoint URL with user-info was stored, credentials and all. */
  @Test
  void endpointWithCredentials_isExit2_inOneLine() throws Exception {
    Launcher.Result r = xlac("cache", "config", "remote", "s3://" + BUCKET + "/p", "--endpoint",
        "http://user:secret@127.0.0.1:1", "--cache", dir.resolve("cache").toString());
    assertThat(r.exitCode()).as(r.err()).isEqualTo(2);
    assertThat(r.err().strip()).startsWith("xlac: --endpoint must not carry credentials").doesNotContain("secret")
        .doesNotContain("\n");
  }
}
