package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.Fixtures;
import dev.xlac.cache.GraphInfo;
import dev.xlac.cache.RemoteSetting;
import dev.xlac.cache.RequestFixtures;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.remote.RemoteObjects;
import dev.xlac.cache.remote.SeaweedServer;
import dev.xlac.hlo.TestModules;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * Remote objects fetched into a cache on a full disk, through the real launcher: the cache is on a real
 * tmpfs in a private mount namespace ({@code unshare -Urm}, as {@code CacheImportLargeBundleTest} does), the remote
 * is a real S3 server (SeaweedFS, {@code $XLAC_WEED}), and a ballast file leaves less room than the objects need.
 * {@code cache pull} and a compile run's read-through each stop with one line saying the disk is full, exit code 3;
 * the cache then verifies, and once the ballast is gone the same command completes with every entry intact (nothing
 * lost). Skipped, saying why, where either cannot be had.
 */
class RemoteDiskFullE2ETest {
  static final String BUCKET = "xlac-full";
  static final int OBJECT_BYTES = 4 << 20;
  /** The room a ballast file leaves on the tmpfs: less than the objects need, more than an empty cache. */
  static final long ROOM = 14L << 20;
  @TempDir
  static Path serverDir;
  static SeaweedServer server;

  @TempDir
  Path tmp;

  @BeforeAll
  static void start() throws Exception {
    String why = SeaweedServer.unavailableReason();
    assumeTrue(why == null, why);
    try {
      Process p = new ProcessBuilder("unshare", "-Urm", "true").redirectErrorStream(true).start();
      String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      assumeTrue(p.waitFor() == 0, "cannot make a private mount namespace here (unshare -Urm: " + said + ")");
    } catch (IOException e) {
      assumeTrue(false, "no unshare here: " + e.getMessage());
    }
    server = SeaweedServer.start(serverDir, BUCKET);
    server.useAsDefaultCredentials();
  }

  @AfterAll
  static void stop() throws Exception {
    if (server != null) {
      server.close();
    }
    SeaweedServer.forgetCredentials();
  }

  /** One step in the namespace: the CLI's arguments, or a shell line (first word "sh"). */
  record Step(List<String> args) {
    static Step xlac(String... args) {
      return new Step(List.of(args));
    }

    static Step sh(String line) {
      return new Step(List.of("sh", "-c", line));
    }
  }

  /**
   * Runs the steps one after another in one private mount namespace where a tmpfs of {@code bytes} is mounted on
   * {@code mount} (the cache's directory goes inside it); each step's exit code and output.
   */
  List<Launcher.Result> inSmallFs(Path mount, long bytes, List<Step> steps) throws Exception {
    Files.createDirectories(mount);
    StringBuilder script = new StringBuilder("mount -t tmpfs -o size=" + bytes + " xlac-test " + q(mount.toString())
        + " || exit 97\n");
    for (int i = 0; i < steps.size(); i++) {
      List<String> cmd = new ArrayList<>();
      if (steps.get(i).args().getFirst().equals("sh")) {
        cmd.addAll(steps.get(i).args());
      } else {
        cmd.add(Launcher.root().resolve("xlac").toString());
        cmd.addAll(steps.get(i).args());
      }
      for (String c : cmd) {
        script.append(q(c)).append(' ');
      }
      script.append(">").append(q(tmp.resolve("out-" + i).toString())).append(" 2>")
          .append(q(tmp.resolve("err-" + i).toString())).append("; echo $? >")
          .append(q(tmp.resolve("code-" + i).toString())).append('\n');
    }
    ProcessBuilder pb = new ProcessBuilder("unshare", "-Urm", "--propagation", "private", "sh", "-c",
        script.toString()).directory(Launcher.root().toFile()).redirectErrorStream(true)
        .redirectOutput(tmp.resolve("ns.log").toFile());
    pb.environment().putAll(server.environment());
    Process p = pb.start();
    if (!p.waitFor(300, TimeUnit.SECONDS)) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      throw new AssertionError("the steps did not end within 300 s");
    }
    assertThat(p.exitValue()).as("the namespace's shell: %s", Files.readString(tmp.resolve("ns.log"))).isNotEqualTo(97);
    List<Launcher.Result> results = new ArrayList<>();
    for (int i = 0; i < steps.size(); i++) {
      Path code = tmp.resolve("code-" + i);
      assertThat(code).as("step %d ran: %s", i, Files.readString(tmp.resolve("ns.log"))).exists();
      results.add(new Launcher.Result(Integer.parseInt(Files.readString(code).strip()),
          Files.readString(tmp.resolve("out-" + i)), Files.readString(tmp.resolve("err-" + i))));
    }
    return results;
  }

  static Launcher.Result xlac(String... args) throws Exception {
    return Launcher.xlac(server.environment(), args);
  }

  private static String q(String s) {
    return "'" + s.replace("'", "'\\''") + "'";
  }

  /** A ballast file that leaves {@link #ROOM} bytes free on the file system of {@code dir}. */
  private static Step ballast(Path dir) {
    return Step.sh("b=" + q(dir.resolve("ballast").toString()) + "; free=$(df -B1 --output=avail " + q(dir.toString())
        + " | tail -1); fallocate -l $((free - " + ROOM + ")) \"$b\" || head -c $((free - " + ROOM + ")) /dev/zero"
        + " > \"$b\"");
  }

  private static void assertDiskFullLine(Launcher.Result r, Path cache) {
    assertThat(r.exitCode()).as("exit code; it said %s", r.err()).isEqualTo(3);
    assertThat(r.err()).startsWith("xlac: ").doesNotContain("Exception").doesNotContain("\tat ");
    assertThat(r.err().lines().filter(l -> !l.isBlank())).as(r.err()).singleElement().asString()
        .contains("cache " + cache + ": disk full (");
  }

  private static String remote(String prefix) {
    return "s3://" + BUCKET + "/" + prefix;
  }

  @Test
  void pull_ontoAFullDisk_stopsWithOneLine_theCacheVerifies_andWithRoomItCompletes() throws Exception {
    // The remote: 5 graphs with 4 MiB artifacts and 3 runtime entries of 4 MiB (32 MiB in all), pushed from a cache.
    Path source = tmp.resolve("source");
    try (CacheStore s = CacheStore.open(source, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      for (int i = 1; i <= 5; i++) {
        Fixtures.graph(s, i);
        s.putArtifact(new ArtifactKey(Fixtures.fp(i), Fixtures.CPU), Fixtures.bytes(i, OBJECT_BYTES),
            CompileInfo.of(1, ""));
      }
      for (int n = 1; n <= 3; n++) {
        s.putRequests(List.of(RequestFixtures.request(n, OBJECT_BYTES)));
      }
      s.setRemoteSetting(Optional.of(RemoteSetting.parse(remote("pull"), server.endpoint())));
    }
    Launcher.Result push = xlac("cache", "push", "--cache", source.toString());
    assertThat(push.exitCode()).as(push.err()).isZero();

    Path mount = tmp.resolve("fs");
    Path cache = mount.resolve("cache");
    List<Launcher.Result> r = inSmallFs(mount, 64L << 20, List.of(
        Step.xlac("cache", "config", "remote", remote("pull"), "--endpoint", server.endpoint(), "--cache",
            cache.toString()),
        ballast(mount),
        Step.xlac("cache", "pull", "--cache", cache.toString()),
        Step.xlac("cache", "verify", "--cache", cache.toString()),
        Step.sh("rm " + q(mount.resolve("ballast").toString())),
        Step.xlac("cache", "pull", "--cache", cache.toString()),
        Step.xlac("cache", "verify", "--cache", cache.toString()),
        Step.sh("cp -r " + q(cache.toString()) + " " + q(tmp.resolve("copy").toString()))));
    assertThat(r.get(0).exitCode()).as(r.get(0).err()).isZero();
    assertThat(r.get(1).exitCode()).as("the ballast: %s", r.get(1).err()).isZero();
    assertDiskFullLine(r.get(2), cache);
    assertThat(r.get(3).exitCode()).as("verify after the full disk: %s %s", r.get(3).out(), r.get(3).err()).isZero();
    assertThat(r.get(5).exitCode()).as("pull with room: %s", r.get(5).err()).isZero();
    assertThat(r.get(5).out()).containsPattern("Pulled from " + Pattern.quote(remote("pull")) + ": downloaded \\d+ ");
    assertThat(r.get(6).exitCode()).as("verify at the end: %s %s", r.get(6).out(), r.get(6).err()).isZero();
    // Nothing lost: the cache holds every entry, with its bytes.
    try (CacheStore c = CacheStore.open(tmp.resolve("copy"), CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      for (int i = 1; i <= 5; i++) {
        assertThat(c.getArtifact(new ArtifactKey(Fixtures.fp(i), Fixtures.CPU)).orElseThrow().bytes())
            .isEqualTo(Fixtures.bytes(i, OBJECT_BYTES));
      }
      for (int n = 1; n <= 3; n++) {
        var want = RequestFixtures.request(n, OBJECT_BYTES);
        assertThat(c.readRequest(want.key()).orElseThrow().executable()).isEqualTo(want.executable());
      }
    }
  }

  @Test
  void compileReadThrough_ontoAFullDisk_stopsWithOneLine_theCacheVerifies_andWithRoomItIsAllCached()
      throws Exception {
    Path plugin = Launcher.buildTestPlugin(Files.createDirectories(tmp.resolve("plugin")));
    Path dumps = tmp.resolve("dumps");
    for (int i = 1; i <= 4; i++) {
      TestModules.writeDump(dumps, "module_000" + i + ".jit_step_ok.before_optimizations.hlo.pb",
          TestModules.mulAdd(i, 1, "_ok", 1));
    }
    // The graphs compiled once, for their keys (the plugin's compiler identity); then the remote gets their graphs
    // and artifacts of 4 MiB each, as another node's compiler might have written them.
    Path source = tmp.resolve("source");
    Launcher.Result compiled = xlac("parallel-compile", "--cache", source.toString(), "--plugin", plugin.toString(),
        dumps.toString());
    assertThat(compiled.exitCode()).as(compiled.err()).isZero();
    RemoteSetting setting = RemoteSetting.parse(remote("read-through"), server.endpoint());
    List<ArtifactKey> keys = new ArrayList<>();
    try (CacheStore s = CacheStore.open(source, CacheStore.Mode.READ_ONLY, Duration.ZERO);
        S3Client raw = server.client()) {
      for (GraphInfo g : s.graphs()) {
        raw.putObject(PutObjectRequest.builder().bucket(BUCKET).key(setting.key(RemoteObjects.graphKey(g.fingerprint())))
            .build(), RequestBody.fromBytes(RemoteObjects.graph(g.fingerprint(), g.moduleName(),
            s.readGraph(g.fingerprint()).orElseThrow(), List.of())));
        for (ArtifactInfo a : s.entries(g.fingerprint())) {
          keys.add(a.key());
          raw.putObject(PutObjectRequest.builder().bucket(BUCKET).key(setting.key(RemoteObjects.artifactKey(a.key())))
              .build(), RequestBody.fromBytes(RemoteObjects.artifact(a.key(), Fixtures.bytes(keys.size(),
              OBJECT_BYTES), 1000)));
        }
      }
    }
    assertThat(keys).hasSize(4);

    Path mount = tmp.resolve("fs");
    Path cache = mount.resolve("cache");
    List<String> compile = List.of("parallel-compile", "--cache", cache.toString(), "--plugin", plugin.toString(),
        dumps.toString());
    List<Launcher.Result> r = inSmallFs(mount, 40L << 20, List.of(
        Step.xlac("cache", "config", "remote", setting.url(), "--endpoint", server.endpoint(), "--cache",
            cache.toString()),
        Step.xlac("cache", "add", "--cache", cache.toString(), dumps.toString()),
        ballast(mount),
        new Step(compile),
        Step.xlac("cache", "verify", "--cache", cache.toString()),
        Step.sh("rm " + q(mount.resolve("ballast").toString())),
        new Step(compile),
        Step.xlac("cache", "verify", "--cache", cache.toString()),
        Step.sh("cp -r " + q(cache.toString()) + " " + q(tmp.resolve("copy").toString()))));
    assertThat(r.get(0).exitCode()).as(r.get(0).err()).isZero();
    assertThat(r.get(1).exitCode()).as(r.get(1).err()).isZero();
    assertThat(r.get(2).exitCode()).as("the ballast: %s", r.get(2).err()).isZero();
    assertDiskFullLine(r.get(3), cache);
    assertThat(r.get(4).exitCode()).as("verify after the full disk: %s %s", r.get(4).out(), r.get(4).err()).isZero();
    assertThat(r.get(6).exitCode()).as("the run with room: %s %s", r.get(6).out(), r.get(6).err()).isZero();
    assertThat(r.get(6).out()).contains("4 graphs: 0 compiled, 4 cached, 0 failed");
    assertThat(r.get(7).exitCode()).as("verify at the end: %s %s", r.get(7).out(), r.get(7).err()).isZero();
    try (CacheStore c = CacheStore.open(tmp.resolve("copy"), CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      for (int i = 0; i < keys.size(); i++) {
        assertThat(c.getArtifact(keys.get(i)).orElseThrow().bytes()).isEqualTo(Fixtures.bytes(i + 1, OBJECT_BYTES));
      }
    }
  }

  /**
   * {@code xlac run} fetching its plugin's runtime entries onto a full disk: the line says so, and the command runs
   * (exit 0) on what the cache holds; the cache verifies, and with room the next run fetches every entry whole.
   * Regression: when the scratch file a runtime entry is checked through met the full disk first, the line said
   * "cannot write a scratch file ...: No space left on device" instead of the cache's "disk full" line.
   */
  @Test
  void runFetch_ontoAFullDisk_saysSo_theCommandRuns_andWithRoomTheNextRunFetchesEverything() throws Exception {
    java.security.MessageDigest d = java.security.MessageDigest.getInstance("SHA-256");
    d.update(Files.readAllBytes(Path.of(Launcher.cpuPlugin()).toRealPath()));
    String sha = java.util.HexFormat.of().formatHex(d.digest());
    Path source = tmp.resolve("source");
    List<dev.xlac.runtime.RecordedRequest> requests = new ArrayList<>();
    try (CacheStore s = CacheStore.open(source, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      for (int n = 1; n <= 6; n++) {
        requests.add(RequestFixtures.request(n, OBJECT_BYTES, sha));
      }
      s.putRequests(requests);
      s.setRemoteSetting(Optional.of(RemoteSetting.parse(remote("run"), server.endpoint())));
    }
    Launcher.Result push = xlac("cache", "push", "--cache", source.toString());
    assertThat(push.exitCode()).as(push.err()).isZero();

    Path mount = tmp.resolve("fs");
    Path cache = mount.resolve("cache");
    Path ran = tmp.resolve("ran");
    List<String> run = List.of("run", "--cache", cache.toString(), "--plugin", Launcher.cpuPlugin(), "--", "touch",
        ran.toString());
    List<Launcher.Result> r = inSmallFs(mount, 64L << 20, List.of(
        Step.xlac("cache", "config", "remote", remote("run"), "--endpoint", server.endpoint(), "--cache",
            cache.toString()),
        ballast(mount),
        new Step(run),
        Step.sh("test -e " + q(ran.toString())),
        Step.xlac("cache", "verify", "--cache", cache.toString()),
        Step.sh("rm " + q(mount.resolve("ballast").toString()) + " " + q(ran.toString())),
        new Step(run),
        Step.xlac("cache", "verify", "--cache", cache.toString()),
        Step.sh("find " + q(cache.resolve("runtime/pjrt").toString()) + " -name '*.xpx' | wc -l"),
        Step.sh("cp -r " + q(cache.toString()) + " " + q(tmp.resolve("copy").toString()))));
    assertThat(r.get(2).exitCode()).as("the run on the full disk: %s", r.get(2).err()).isZero();
    assertThat(r.get(3).exitCode()).as("the command ran").isZero();
    assertThat(r.get(2).err()).contains("cache " + cache + ": disk full").contains("the command runs without the"
        + " remote's runtime entries").doesNotContain("Exception").doesNotContain("\tat ");
    assertThat(r.get(4).exitCode()).as("verify after the full disk: %s %s", r.get(4).out(), r.get(4).err()).isZero();
    assertThat(r.get(6).exitCode()).as("the run with room: %s", r.get(6).err()).isZero();
    assertThat(r.get(6).runSummary()).containsPattern("; remote: \\d+ fetched, 0 written$");
    assertThat(r.get(7).exitCode()).as("verify at the end: %s %s", r.get(7).out(), r.get(7).err()).isZero();
    assertThat(r.get(8).out().strip()).as("layout entries").isEqualTo("6");
    try (CacheStore c = CacheStore.open(tmp.resolve("copy"), CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      for (var want : requests) {
        assertThat(c.readRequest(want.key()).orElseThrow().executable()).isEqualTo(want.executable());
      }
    }
  }
}
