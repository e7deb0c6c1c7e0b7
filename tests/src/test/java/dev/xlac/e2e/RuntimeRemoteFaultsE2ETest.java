package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RequestFixtures;
import dev.xlac.cache.RequestInfo;
import dev.xlac.cache.remote.SeaweedServer;
import dev.xlac.runtime.RecordedRequest;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code xlac run}'s fetching from the remote tier under faults, through the real launcher and a real S3 server
 * (SeaweedFS): the run killed with {@code kill -9} in the middle of its fetching (the cache verifies, every entry it
 * holds is whole, and the next run fetches exactly the rest), and two runs of one cache fetching at once (both run
 * their command, each entry is fetched once, the cache verifies). The entries are made for the real CPU plugin's
 * SHA-256; the command is {@code true}, so nothing is compiled.
 */
class RuntimeRemoteFaultsE2ETest {
  static final String BUCKET = "xlac-run-faults";
  static final int ENTRIES = 96;
  static final int EXECUTABLE_BYTES = 768 << 10;
  @TempDir
  static Path serverDir;
  @TempDir
  static Path shared;
  static SeaweedServer server;
  static String sha;
  static List<RecordedRequest> requests = new ArrayList<>();

  @TempDir
  Path work;

  @BeforeAll
  static void fill() throws Exception {
    server = SeaweedServer.startOrSkip(serverDir, BUCKET);
    MessageDigest d = MessageDigest.getInstance("SHA-256");
    try (InputStream in = Files.newInputStream(Path.of(Launcher.cpuPlugin()).toRealPath())) {
      in.transferTo(new java.security.DigestOutputStream(java.io.OutputStream.nullOutputStream(), d));
    }
    sha = HexFormat.of().formatHex(d.digest());
    Path source = shared.resolve("source");
    try (CacheStore s = CacheStore.open(source, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      for (int n = 0; n < ENTRIES; n++) {
        requests.add(RequestFixtures.request(n, EXECUTABLE_BYTES, sha));
      }
      s.putRequests(requests);
    }
    config(source);
    Launcher.Result push = xlac("cache", "push", "--cache", source.toString());
    assertThat(push.exitCode()).as(push.err()).isZero();
  }

  @AfterAll
  static void stop() throws Exception {
    SeaweedServer.stop(server);
  }

  static Launcher.Result xlac(String... args) throws Exception {
    return Launcher.xlac(server.environment(), args);
  }

  static void config(Path cache) throws Exception {
    Launcher.Result r = xlac("cache", "config", "remote", "s3://" + BUCKET + "/faults", "--endpoint", server.endpoint(),
        "--cache", cache.toString());
    assertThat(r.exitCode()).as(r.err()).isZero();
  }

  private static Process start(Path cache, Path report, Path log) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(Launcher.root().resolve("xlac").toString(), "run", "--cache",
        cache.toString(), "--wait", "120s", "--plugin", Launcher.cpuPlugin(), "--report", report.toString(), "--",
        "true").directory(Launcher.root().toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().putAll(server.environment());
    return pb.start();
  }

  private static long fetched(Path report) throws Exception {
    Matcher m = Pattern.compile("\"fetched\": (\\d+)").matcher(Files.readString(report));
    assertThat(m.find()).as(Files.readString(report)).isTrue();
    return Long.parseLong(m.group(1));
  }

  /** Every entry the cache holds is whole and the one recorded; the cache verifies. How many it holds. */
  private static int assertWhole(Path cache) throws Exception {
    Launcher.Result verify = xlac("cache", "verify", "--cache", cache.toString());
    assertThat(verify.exitCode()).as(verify.out() + verify.err()).isZero();
    Map<String, RecordedRequest> byKey = new HashMap<>();
    requests.forEach(r -> byKey.put(r.key().text(), r));
    try (CacheStore c = CacheStore.open(cache, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      List<RequestInfo> held = c.requests();
      for (RequestInfo i : held) {
        assertThat(c.readRequest(i.key()).orElseThrow().executable()).isEqualTo(byKey.get(i.key().text()).executable());
      }
      return held.size();
    }
  }

  private static long layoutEntries(Path cache) throws Exception {
    try (Stream<Path> s = Files.walk(cache.resolve("runtime/pjrt"))) {
      return s.filter(p -> p.toString().endsWith(".xpx")).count();
    }
  }

  private static long dbBytes(Path cache) throws Exception {
    if (!Files.isDirectory(cache.resolve("db"))) {
      return 0;
    }
    try (Stream<Path> s = Files.list(cache.resolve("db"))) {
      return s.filter(p -> p.toString().endsWith(".blob") || p.toString().endsWith(".log"))
          .mapToLong(p -> p.toFile().length()).sum();
    }
  }

  @Test
  void killedInTheMiddleOfItsFetching_leavesWholeEntries_andTheNextRunFetchesTheRest() throws Exception {
    Path cache = work.resolve("killed");
    config(cache);
    Process run = start(cache, work.resolve("killed.json"), work.resolve("killed.log"));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    // Killed once a fifth of the executables are in the database's files, well before all of them are.
    while (dbBytes(cache) < (long) ENTRIES * EXECUTABLE_BYTES / 5) {
      assertThat(run.isAlive()).as("the run ended before it was killed: %s", Files.readString(work.resolve("killed.log")))
          .isTrue();
      assertThat(System.nanoTime()).as("fetching did not start").isLessThan(deadline);
      Thread.sleep(5);
    }
    run.descendants().forEach(ProcessHandle::destroyForcibly);
    run.destroyForcibly(); // SIGKILL: the launcher exec'd the JVM, so this is xlac itself
    run.waitFor();
    int held = assertWhole(cache);
    assertThat(held).as("killed in the middle").isBetween(1, ENTRIES - 1);

    Process next = start(cache, work.resolve("next.json"), work.resolve("next.log"));
    assertThat(next.waitFor(180, TimeUnit.SECONDS)).isTrue();
    assertThat(next.exitValue()).as(Files.readString(work.resolve("next.log"))).isZero();
    assertThat(fetched(work.resolve("next.json"))).isEqualTo(ENTRIES - held);
    assertThat(assertWhole(cache)).isEqualTo(ENTRIES);
    assertThat(layoutEntries(cache)).isEqualTo(ENTRIES);
    assertThat(Files.list(cache).map(p -> p.getFileName().toString())).noneMatch(n -> n.contains("remote-runtime"));
  }

  @Test
  void twoRunsOfOneCacheFetchingAtOnce_bothRun_andEachEntryIsFetchedOnce() throws Exception {
    Path cache = work.resolve("two");
    config(cache);
    Process first = start(cache, work.resolve("1.json"), work.resolve("1.log"));
    Process second = start(cache, work.resolve("2.json"), work.resolve("2.log"));
    for (Process p : List.of(first, second)) {
      assertThat(p.waitFor(180, TimeUnit.SECONDS)).isTrue();
    }
    assertThat(first.exitValue()).as(Files.readString(work.resolve("1.log"))).isZero();
    assertThat(second.exitValue()).as(Files.readString(work.resolve("2.log"))).isZero();
    assertThat(fetched(work.resolve("1.json")) + fetched(work.resolve("2.json"))).isEqualTo(ENTRIES);
    assertThat(assertWhole(cache)).isEqualTo(ENTRIES);
    assertThat(layoutEntries(cache)).isEqualTo(ENTRIES);
  }
}
