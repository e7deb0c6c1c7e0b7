package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.remote.SeaweedServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * {@code xlac run} with a remote tier, through the real launcher, real JAX ({@code samples/jax/decoder.py}), the real
 * XLA CPU plugin and a real S3 server (SeaweedFS {@code weed mini}, started for the class and stopped): node A records
 * with a remote set and writes its entries through; node B, an empty cache on the same remote, is all hits with the
 * losses, bit for bit, of the run without xlac; a runtime object damaged in the bucket is rejected by name and that
 * compile compiled, with the same losses; with the remote stopped a fresh node still runs (it compiles) after one
 * warning, exit 0, and {@code --require-remote} is exit 3 before the command starts.
 */
class RuntimeRemoteE2ETest {
  static final String BUCKET = "xlac-run-e2e";
  @TempDir
  static Path serverDir;
  static SeaweedServer server;

  @TempDir
  Path work;

  @BeforeAll
  static void startServer() throws Exception {
    server = SeaweedServer.startOrSkip(serverDir, BUCKET);
  }

  @AfterAll
  static void stopServer() throws Exception {
    SeaweedServer.stop(server);
  }

  private static List<String> decoderCommand() {
    return List.of(Launcher.python(), Launcher.root().resolve("samples/jax/decoder.py").toString(), "--steps", "2",
        "--loss-bits");
  }

  private static Map<String, String> env() {
    Map<String, String> env = new HashMap<>(server.environment());
    env.put("JAX_PLATFORMS", "");
    env.put("XLAC_PJRT_PLUGIN", "");
    return env;
  }

  private static List<String> losses(String out) {
    return out.lines().filter(l -> l.startsWith("step ") || l.startsWith("done: ")).toList();
  }

  private static Launcher.Result xlac(List<String> args) throws Exception {
    return Launcher.xlac(env(), args.toArray(String[]::new));
  }

  private Path node(String name, String endpoint) throws Exception {
    Path cache = work.resolve(name);
    Launcher.Result r = xlac(List.of("cache", "config", "remote", "s3://" + BUCKET + "/fleet", "--endpoint", endpoint,
        "--cache", cache.toString()));
    assertThat(r.exitCode()).as(r.err()).isZero();
    return cache;
  }

  /** {@code xlac run [options] -- decoder.py}, its report read back as numbers. */
  private Launcher.Result run(Path cache, Path report, String... options) throws Exception {
    List<String> args = new ArrayList<>(List.of("run", "--cache", cache.toString(), "--plugin", Launcher.cpuPlugin(),
        "--report", report.toString()));
    args.addAll(List.of(options));
    args.add("--");
    args.addAll(decoderCommand());
    return xlac(args);
  }

  private static Map<String, Double> report(Path file) throws Exception {
    return Launcher.reportNumbers(file);
  }

  private static List<String> warnings(Launcher.Result r) {
    return r.err().lines().filter(l -> l.startsWith("xlac: ") && !l.startsWith("xlac: buil")).toList();
  }

  @Test
  void recordedOnOneNode_servedOnAnother_throughTheRemote_andARemoteThatIsDownNeverFailsTheRun() throws Exception {
    Map<String, String> plain = env();
    plain.put("PJRT_NAMES_AND_LIBRARY_PATHS", "realcpu:" + Launcher.cpuPlugin());
    plain.put("JAX_PLATFORMS", "realcpu");
    Launcher.Result without = Launcher.run(decoderCommand(), plain, 300);
    assertThat(without.exitCode()).as(without.err()).isZero();
    List<String> reference = losses(without.out());
    assertThat(reference).hasSize(3);

    // Node A records, with the remote set: every entry written through.
    Path a = node("node-a", server.endpoint());
    Launcher.Result recording = run(a, work.resolve("a.json"), "--record");
    assertThat(recording.exitCode()).as(recording.err()).isZero();
    assertThat(losses(recording.out())).isEqualTo(reference);
    Map<String, Double> ra = report(work.resolve("a.json"));
    int compiles = ra.get("compiles").intValue();
    assertThat(compiles).isPositive();
    assertThat(ra.get("added")).isEqualTo(compiles);
    assertThat(ra.get("written")).as("%s", ra).isEqualTo(compiles);
    assertThat(recording.runSummary()).endsWith("; recorded " + compiles + " new; remote: 0"
        + " fetched, " + compiles + " written");
    List<String> objects;
    try (S3Client s3 = server.client()) {
      objects = s3.listObjectsV2(r -> r.bucket(BUCKET).prefix("fleet/v1/runtime/")).contents().stream()
          .map(S3Object::key).toList();
    }
    assertThat(objects).hasSize(compiles).allMatch(k -> k.matches("fleet/v1/runtime/[0-9a-f]{64}/[0-9a-f]{64}"));

    // Node B, an empty cache on the same remote: every compile served, the same losses.
    Path b = node("node-b", server.endpoint());
    Launcher.Result served = run(b, work.resolve("b.json"));
    assertThat(served.exitCode()).as(served.err()).isZero();
    assertThat(losses(served.out())).as("the losses, bit for bit, of the run without xlac").isEqualTo(reference);
    Map<String, Double> rb = report(work.resolve("b.json"));
    assertThat(rb.get("hits")).as("%s", rb).isEqualTo(compiles);
    assertThat(rb.get("misses") + rb.get("fallbacks")).isZero();
    assertThat(rb.get("fetched")).isEqualTo(compiles);
    assertThat(served.runSummary()).endsWith("; remote: " + compiles + " fetched, 0 written");
    assertThat(warnings(served)).isEmpty();

    // A runtime object damaged in the bucket: rejected by name, that compile compiled, the same losses.
    String victim = objects.get(objects.size() / 2);
    try (S3Client s3 = server.client()) {
      byte[] body = s3.getObjectAsBytes(r -> r.bucket(BUCKET).key(victim)).asByteArray();
      body[body.length / 3] ^= 0x01;
      s3.putObject(PutObjectRequest.builder().bucket(BUCKET).key(victim).build(), RequestBody.fromBytes(body));
    }
    Path d = node("node-d", server.endpoint());
    Launcher.Result damaged = run(d, work.resolve("d.json"));
    assertThat(damaged.exitCode()).as(damaged.err()).isZero();
    assertThat(losses(damaged.out())).isEqualTo(reference);
    Map<String, Double> rd = report(work.resolve("d.json"));
    assertThat(rd.get("fetched")).as("%s", rd).isEqualTo(compiles - 1);
    assertThat(rd.get("rejected")).isEqualTo(1);
    assertThat(rd.get("hits")).isEqualTo(compiles - 1);
    assertThat(rd.get("misses")).isEqualTo(1);
    assertThat(warnings(damaged)).singleElement().asString().startsWith("xlac: rejected s3://" + BUCKET + "/" + victim
        + ": its SHA-256 does not match");

    // The remote stopped: a fresh node runs (and compiles) after one warning; --require-remote stops before the command.
    server.close();
    Path c = node("node-c", server.endpoint());
    Launcher.Result down = run(c, work.resolve("c.json"));
    assertThat(down.exitCode()).as(down.err()).isZero();
    assertThat(losses(down.out())).isEqualTo(reference);
    Map<String, Double> rc = report(work.resolve("c.json"));
    assertThat(rc.get("misses")).as("%s", rc).isEqualTo(compiles);
    assertThat(warnings(down)).singleElement().asString().contains("remote s3://" + BUCKET + "/fleet")
        .contains("cannot connect").contains("going on without it");
    assertThat(down.runSummary()).endsWith("; remote: 0 fetched, 0 written (unavailable)");

    Path marker = work.resolve("ran");
    Launcher.Result required = xlac(List.of("run", "--require-remote", "--cache", c.toString(), "--plugin",
        Launcher.cpuPlugin(), "--", "touch", marker.toString()));
    assertThat(required.exitCode()).as(required.err()).isEqualTo(3);
    assertThat(warnings(required)).singleElement().asString().contains("cannot connect");
    assertThat(marker).as("the command must not have started").doesNotExist();
  }
}
