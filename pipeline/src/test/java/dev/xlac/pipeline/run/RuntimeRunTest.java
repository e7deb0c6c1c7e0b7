package dev.xlac.pipeline.run;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.CacheStore;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.pipeline.TestPlugin;
import dev.xlac.pipeline.recording.OrphanedSpools;
import dev.xlac.pipeline.recording.RealPlugin;
import dev.xlac.pipeline.recording.StatsDirectories;
import dev.xlac.pipeline.sources.CacheIntake;
import dev.xlac.runtime.LayoutEntry;
import dev.xlac.runtime.LayoutManifest;
import dev.xlac.runtime.RequestKey;
import dev.xlac.runtime.RunStatistics;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code xlac run} in-process, with a shell command standing in for the framework: it writes what the
 * proxy would (statistics, records) into the directories xlac gives it. The plugin is compiler-drivers'
 * C test plugin (a real PJRT plugin for the checks), the proxy library a path that is never loaded.
 */
class RuntimeRunTest {
  private static final String KEY_A = "pjrt1:" + "a".repeat(64);
  private static final String KEY_B = "pjrt1:" + "b".repeat(64);

  @TempDir
  Path tmp;

  private Path plugin;
  private final List<String> notices = new ArrayList<>();

  @BeforeEach
  void buildPlugin() throws Exception {
    plugin = TestPlugin.build(Files.createDirectories(tmp.resolve("plugin")));
  }

  private Path cacheDir() {
    return tmp.resolve("cache");
  }

  private CacheStore open() throws InterruptedException {
    return CacheStore.open(cacheDir(), CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
  }

  private CacheStore.WriterLock lock() throws InterruptedException {
    return CacheStore.lock(cacheDir(), Duration.ZERO, m -> {});
  }

  private RunResult run(Path plugin, Path layout, boolean record, String script) throws Exception {
    Map<String, String> env = new HashMap<>(Map.of("PATH", System.getenv("PATH")));
    return RuntimeRun.run(new RunSpec(List.of("sh", "-c", script), cacheDir(), plugin, layout, record, env),
        this::lock, notices::add, () -> Path.of("/opt/xlac/libxlac_pjrt.so"));
  }

  @Test
  void run_givesTheCommandsExitStatus_andSumsWhatTheProxyCounted() throws Exception {
    RunResult r = run(plugin, null, false, "printf 'hit\\t" + KEY_A + "\\t1\\t2\\t3000000000\\n' > $XLAC_PJRT_STATS/stats-1.tsv;"
        + " printf 'miss\\t" + KEY_B + "\\t1\\t500000000\\n' > $XLAC_PJRT_STATS/stats-2.tsv; exit 5");
    assertThat(r.exitStatus()).isEqualTo(5);
    assertThat(r.stats().compiles()).isEqualTo(2);
    assertThat(r.stats().hits()).isEqualTo(1);
    assertThat(r.line()).isEqualTo("xlac run: 2 compiles: 1 served from the cache, 1 compiled; 3.00 s of compiling"
        + " saved, 0.50 s spent compiling");
    assertThat(r.toJson()).containsEntry("compiles", 2L).containsEntry("hits", 1L).containsEntry("misses", 1L)
        .containsEntry("fallbacks", 0L).containsEntry("compile_seconds", 0.5).containsEntry("saved_seconds", 3.0)
        .containsEntry("exit_status", 5);
    assertThat(Files.list(tmp).filter(p -> p.getFileName().toString().startsWith("xlac-run-stats"))).isEmpty();
  }

  /**
   * The summary line's seconds in a locale with a decimal comma: the JVM wrote "3,00 s" where the fast start's finish
   * without a JVM writes "3.00 s", so one run's line changed with the path it took.
   */
  @Test
  void summaryLine_inALocaleWithADecimalComma_keepsItsPoint() throws Exception {
    java.util.Locale was = java.util.Locale.getDefault();
    java.util.Locale.setDefault(java.util.Locale.GERMANY);
    try {
      RunResult r = run(plugin, null, false, "printf 'hit\\t" + KEY_A + "\\t1\\t2\\t3005000000\\n'"
          + " > $XLAC_PJRT_STATS/stats-1.tsv; printf 'miss\\t" + KEY_B + "\\t1\\t500000000\\n'"
          + " > $XLAC_PJRT_STATS/stats-2.tsv");
      assertThat(r.line()).endsWith("; 3.01 s of compiling saved, 0.50 s spent compiling");
    } finally {
      java.util.Locale.setDefault(was);
    }
  }

  /**
   * {@code --no-remote} never asks whether the cache has a remote tier, so it must not remember "no remote": the
   * memo it wrote made the next plain run of a cache with a remote skip the remote altogether.
   */
  @Test
  void noRemoteRun_doesNotRememberNoRemote_forACacheThatHasOne() throws Exception {
    dev.xlac.cache.RemoteSetting remote = dev.xlac.cache.RemoteSetting.parse("s3://bucket/prefix",
        "http://127.0.0.1:9");
    try (CacheStore store = open()) {
      store.setRemoteSetting(java.util.Optional.of(remote));
    }
    Map<String, String> env = new HashMap<>(Map.of("PATH", System.getenv("PATH")));
    RunResult r = RuntimeRun.run(new RunSpec(List.of("true"), cacheDir(), plugin, null, false, env,
        dev.xlac.cache.RemotePolicy.OFF), this::lock, notices::add,
        () -> Path.of("/opt/xlac/libxlac_pjrt.so"));
    assertThat(r.exitStatus()).isZero();
    assertThat(r.remote()).isNull();
    assertThat(RuntimeRemote.setting(cacheDir(), notices::add)).as("what the next plain run finds").contains(remote);
  }

  @Test
  void run_givesTheProxyItsEnvironment() throws Exception {
    Path out = tmp.resolve("env.txt");
    RunResult r = run(plugin, null, false, "env > " + out);
    assertThat(r.exitStatus()).isZero();
    Map<String, String> env = new HashMap<>();
    for (String line : Files.readAllLines(out)) {
      int eq = line.indexOf('=');
      if (eq > 0) {
        env.put(line.substring(0, eq), line.substring(eq + 1));
      }
    }
    assertThat(env).containsEntry("XLAC_PJRT_REAL_PLUGIN", plugin.toRealPath().toString())
        .containsEntry("XLAC_PJRT_LAYOUT", cacheDir().resolve("runtime/pjrt").toAbsolutePath().toString())
        .containsEntry("XLAC_PJRT_PROXY", "/opt/xlac/libxlac_pjrt.so")
        .doesNotContainKeys("PJRT_NAMES_AND_LIBRARY_PATHS", "JAX_PLATFORMS")
        .containsKey("XLAC_PJRT_STATS")
        .doesNotContainKey("XLAC_PJRT_RECORD");
    assertThat(env.get("XLAC_PJRT_PLUGIN_SHA256")).matches("[0-9a-f]{64}:" + Files.size(plugin) + ":\\d+:\\d+:\\d+");
  }

  @Test
  void run_missingOrForeignPlugin_isExit3_beforeTheCommandStarts() throws Exception {
    Path ran = tmp.resolve("ran");
    for (Path bad : List.of(tmp.resolve("absent.so"), Files.writeString(tmp.resolve("text.so"), "not a plugin"))) {
      assertThatThrownBy(() -> run(bad, null, false, "touch " + ran))
          .isInstanceOfSatisfying(XlacException.class, e -> {
            assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
            assertThat(e.getMessage()).startsWith("cannot use PJRT plugin ").doesNotContain("\n");
          });
    }
    assertThat(ran).doesNotExist();
  }

  /** The proxy library is found on a second thread (while the plugin is identified); its failure is still exit 3. */
  @Test
  void run_proxyLibraryFailure_isRethrownAsItWas_andTheCommandNeverRan() throws Exception {
    Path ran = tmp.resolve("ran");
    XlacException noLibrary = XlacException.environment("this xlac build has no PJRT runtime library for test");
    Map<String, String> env = new HashMap<>(Map.of("PATH", System.getenv("PATH")));
    assertThatThrownBy(() -> RuntimeRun.run(new RunSpec(List.of("sh", "-c", "touch " + ran), cacheDir(), plugin,
        null, false, env), this::lock, notices::add, () -> {
          throw noLibrary;
        })).isSameAs(noLibrary);
    assertThat(ran).doesNotExist();
    // A plugin problem is still the one reported when both fail, as before.
    assertThatThrownBy(() -> RuntimeRun.run(new RunSpec(List.of("true"), cacheDir(), tmp.resolve("absent.so"), null,
        false, env), this::lock, notices::add, () -> {
          throw noLibrary;
        })).isInstanceOfSatisfying(XlacException.class,
            e -> assertThat(e.getMessage()).startsWith("cannot use PJRT plugin "));
  }

  /**
   * An xlac run inside another: the inner one finds the outer run's proxy where the real plugin should be (here as
   * the plugin torch_xla would load, PJRT_LIBRARY_PATH, which the outer run points at its proxy), and the proxy in
   * front of itself waited for its own start for ever. One line and exit 3, before the command (issue 22).
   */
  @Test
  void nestedRun_withTheProxyAsItsRealPlugin_isExit3_beforeTheCommandStarts() throws Exception {
    String arch = System.getProperty("os.arch").equals("amd64") ? "x86_64" : System.getProperty("os.arch");
    Path proxy = tmp.resolve("outer/libxlac_pjrt.so");
    Files.createDirectories(proxy.getParent());
    try (var in = RuntimeRun.class.getResourceAsStream("/dev/xlac/runtime/native/linux-" + arch + "/libxlac_pjrt.so")) {
      assertThat(in).as("the runtime jar packs the proxy").isNotNull();
      Files.write(proxy, in.readAllBytes());
    }
    Path ran = tmp.resolve("ran");
    Map<String, String> env = new HashMap<>(Map.of("PATH", System.getenv("PATH"), "PJRT_DEVICE", "LIBRARY",
        "PJRT_LIBRARY_PATH", proxy.toString()));
    assertThatThrownBy(() -> RuntimeRun.run(new RunSpec(List.of("sh", "-c", "touch " + ran), cacheDir(), null, null,
        false, env), this::lock, notices::add, () -> Path.of("/opt/xlac/libxlac_pjrt.so")))
        .isInstanceOfSatisfying(XlacException.class, e -> {
          assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
          assertThat(e.getMessage()).isEqualTo("cannot use PJRT plugin " + proxy + ": it is xlac's runtime proxy, not"
              + " a real plugin (an xlac run inside another xlac run?); name the real plugin with --plugin PATH or"
              + " $XLAC_PJRT_PLUGIN");
        });
    assertThat(ran).doesNotExist();
  }

  /** A shared group's umask 002 must not leave the layout or the spool group-writable: the proxy would not serve it. */
  @Test
  void run_makesItsLayoutAndSpool_theUsersOnly() throws Exception {
    Path spools = OrphanedSpools.spoolRoot(cacheDir());
    assertThat(run(plugin, null, true, "ls -ld $XLAC_PJRT_RECORD > " + tmp.resolve("spool.txt")).exitStatus())
        .isZero();
    java.util.Set<java.nio.file.attribute.PosixFilePermission> owner =
        java.nio.file.attribute.PosixFilePermissions.fromString("rwx------");
    assertThat(Files.getPosixFilePermissions(RuntimeCache.layoutDir(cacheDir()))).isEqualTo(owner);
    assertThat(Files.getPosixFilePermissions(RuntimeCache.layoutDir(cacheDir()).getParent())).isEqualTo(owner);
    assertThat(Files.getPosixFilePermissions(spools)).isEqualTo(owner);
    assertThat(Files.readString(tmp.resolve("spool.txt"))).startsWith("drwx------");
  }

  @Test
  void run_noPluginAtAll_isAUsageError() {
    assertThatThrownBy(() -> run(null, null, false, "true")).isInstanceOfSatisfying(XlacException.class,
        e -> assertThat(e.exitCode()).isEqualTo(ExitCode.BAD_INPUT));
  }

  @Test
  void run_layoutOfAnotherPlugin_isExit3_beforeTheCommandStarts() throws Exception {
    Path layout = Files.createDirectories(tmp.resolve("layout"));
    LayoutManifest.write(layout, Set.of("0".repeat(64)));
    Path ran = tmp.resolve("ran");
    assertThatThrownBy(() -> run(plugin, layout, false, "touch " + ran)).isInstanceOfSatisfying(XlacException.class,
        e -> {
          assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
          assertThat(e.getMessage()).startsWith("layout " + layout.toAbsolutePath()
              + " was materialized for another plugin");
        });
    Path notALayout = Files.createDirectories(tmp.resolve("empty"));
    assertThatThrownBy(() -> run(plugin, notALayout, false, "touch " + ran)).hasMessageContaining(
        "is not a runtime layout");
    assertThat(ran).doesNotExist();
  }

  @Test
  void run_givenLayoutOfThisPlugin_isServedAsItIs() throws Exception {
    Path layout = Files.createDirectories(tmp.resolve("layout"));
    String sha = RealPlugin.identify(plugin, null, null).sha256();
    LayoutManifest.write(layout, Set.of(sha));
    Path out = tmp.resolve("layout.txt");
    assertThat(run(plugin, layout, false, "echo $XLAC_PJRT_LAYOUT > " + out).exitStatus()).isZero();
    assertThat(Files.readString(out).trim()).isEqualTo(layout.toAbsolutePath().toString());
  }

  @Test
  void run_commandNotFound_is127() throws Exception {
    Map<String, String> env = new HashMap<>(Map.of("PATH", System.getenv("PATH")));
    RunResult r = RuntimeRun.run(new RunSpec(List.of("no-such-command-xlac"), cacheDir(), plugin, null, false, env),
        this::lock, notices::add, () -> Path.of("/opt/xlac/libxlac_pjrt.so"));
    assertThat(r.notRunnable()).isNotNull();
    assertThat(r.exitStatus()).isEqualTo(127);
  }

  @Test
  void damagedEntries_areDeleted_soTheNextMaterializeWritesThemAgain() throws Exception {
    Path layout = tmp.resolve("layout");
    RequestKey a = RequestKey.parse(KEY_A);
    RequestKey b = RequestKey.parse(KEY_B);
    for (RequestKey k : List.of(a, b)) {
      Files.createDirectories(LayoutEntry.path(layout, k).getParent());
      Files.writeString(LayoutEntry.path(layout, k), "damaged");
    }
    Path stats = Files.createDirectories(tmp.resolve("stats"));
    Files.writeString(stats.resolve("stats-9.tsv"), "fallback\t" + KEY_A + "\t1\t2\tchecksum mismatch\n");
    assertThat(RuntimeCache.deleteDamaged(layout, RunStatistics.read(stats))).isEqualTo(1);
    assertThat(LayoutEntry.path(layout, a)).doesNotExist();
    assertThat(LayoutEntry.path(layout, b)).exists();
  }

  @Test
  void pluginMemo_skipsTheCheckAndTheHash_untilTheFileChanges() throws Exception {
    Path copy = Files.copy(plugin, tmp.resolve("copy.so"));
    Path memo = tmp.resolve("memo");
    boolean[] fresh = {false};
    RealPlugin first = RealPlugin.identify(copy, memo, fresh);
    assertThat(fresh[0]).isTrue();
    first.remember(memo);
    // The memo is what is used: change the sha it holds, and identify returns it.
    Path file = RealPlugin.memoFile(memo, copy.toRealPath());
    Files.writeString(file, Files.readString(file).replace(first.sha256(), "f".repeat(64)));
    fresh[0] = false;
    assertThat(RealPlugin.identify(copy, memo, fresh).sha256()).isEqualTo("f".repeat(64));
    assertThat(fresh[0]).isFalse();
    // A changed file (here its time) is checked and hashed again.
    Files.setLastModifiedTime(copy, java.nio.file.attribute.FileTime.fromMillis(1_000_000));
    assertThat(RealPlugin.identify(copy, memo, fresh).sha256()).isEqualTo(first.sha256());
    assertThat(fresh[0]).isTrue();
  }

  @Test
  void aCurrentLayout_isNotMaterializedAgain_untilTheCacheChanges() throws Exception {
    assertThat(run(plugin, null, false, "true").materialized()).as("the first run materializes").isNotNull();
    assertThat(RuntimeCache.layoutCurrent(cacheDir(), RealPlugin.identify(plugin, null, null).sha256())).isTrue();
    assertThat(run(plugin, null, false, "true").materialized()).as("nothing changed: the cache is not opened")
        .isNull();
    try (CacheStore store = open()) {
      // any write; opening for writing is one already
    }
    assertThat(RuntimeCache.layoutCurrent(cacheDir(), RealPlugin.identify(plugin, null, null).sha256())).isFalse();
    assertThat(run(plugin, null, false, "true").materialized()).isNotNull();
    // A run whose proxy fell back on an entry makes the next one materialize again.
    run(plugin, null, false, "printf 'fallback\\t" + KEY_A + "\\t1\\t2\\tchecksum mismatch\\n' > $XLAC_PJRT_STATS/stats-3.tsv");
    assertThat(RuntimeCache.layoutCurrent(cacheDir(), RealPlugin.identify(plugin, null, null).sha256())).isFalse();
  }

  @Test
  void aCacheAnotherWriterHolds_doesNotStopTheRun_andARecordingStaysForCacheAdd() throws Exception {
    try (CacheStore other = open()) { // another xlac process writing, as far as this run can tell
      // The command records one request into the spool, as the proxy would.
      RequestKey key = oneRequest().key();
      Path record = Files.move(dev.xlac.runtime.RecordSpool.write(Files.createDirectories(tmp.resolve("made")),
          oneRequest()), tmp.resolve("record.xpr"));
      RunResult r = run(plugin, null, true, "cp " + record + " $XLAC_PJRT_RECORD/" + key.hex() + ".xpr; exit 3");
      assertThat(r.exitStatus()).as("the command ran and its status is the run's").isEqualTo(3);
      assertThat(notices).anyMatch(n -> n.contains("locked") && n.endsWith("serving the runtime layout as it is"));
      assertThat(r.keptSpool()).isNotNull();
      assertThat(dev.xlac.runtime.RecordSpool.files(r.keptSpool())).hasSize(1);
      assertThat(notices).anyMatch(n -> n.contains("add it with xlac cache add " + r.keptSpool()));
    }
    // Once the other writer is done, cache add takes the recording in.
    try (CacheStore store = open()) {
      Path spool = notices.stream().filter(n -> n.contains("xlac cache add ")).map(n -> Path.of(n.substring(
          n.lastIndexOf(' ') + 1, n.length() - 1))).findFirst().orElseThrow();
      CacheIntake.Added added = CacheIntake.add(store, List.of(spool), notices::add);
      assertThat(added.requests().added()).isEqualTo(1);
      assertThat(store.requests()).hasSize(1);
    }
  }

  /** Regression: a spool whose records the cache did not all take was deleted with them. */
  @Test
  void aRecordTheCacheRejects_keepsTheSpool_soNothingRecordedIsLost() throws Exception {
    RequestKey key = oneRequest().key();
    Path written = dev.xlac.runtime.RecordSpool.write(Files.createDirectories(tmp.resolve("made")), oneRequest());
    byte[] damaged = Files.readAllBytes(written);
    damaged[damaged.length - 40] ^= 1; // the compile time: the record's checksum no longer matches
    Path record = Files.write(tmp.resolve("damaged.xpr"), damaged);
    RunResult r = run(plugin, null, true, "cp " + record + " $XLAC_PJRT_RECORD/" + key.hex() + ".xpr");
    assertThat(r.exitStatus()).isZero();
    assertThat(r.ingested().leftInSpool()).isEqualTo(1);
    assertThat(r.toJson().get("ingested")).asString().contains("left_in_spool=1");
    assertThat(r.keptSpool()).as("the spool is kept").isNotNull();
    try (var names = Files.list(r.keptSpool())) {
      assertThat(names.map(f -> f.getFileName().toString())).anyMatch(n -> n.startsWith(key.hex()));
    }
    assertThat(notices).anyMatch(n -> n.contains("stay in " + r.keptSpool()));
  }

  /** Regression (issue #22, 6): a run killed with kill -9 left its statistics directory, and nothing removed it. */
  @Test
  void killedRunsStatsDir_inTheTemporaryDirectory_isRemovedByTheNextRun() throws Exception {
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    Path mine = StatsDirectories.create(); // named after this process; renamed after the one that is gone
    String me = "-" + ProcessHandle.current().pid() + "-";
    Path killed = Files.move(mine, mine.resolveSibling(mine.getFileName().toString().replace(me, "-" + gone.pid()
        + "-")));
    Files.writeString(killed.resolve("stats-1.tsv"), "hit\n");
    RunResult r = run(plugin, null, false, "true");
    assertThat(r.exitStatus()).isZero();
    assertThat(Files.exists(killed, java.nio.file.LinkOption.NOFOLLOW_LINKS)).isFalse();
  }

  /**
   * A recording run killed with kill -9 leaves its spool behind, with complete records and a write its proxy had
   * not finished; the next recording run of the cache takes the records in, deletes that spool, and leaves
   * alone the spools of a live process and of another host.
   */
  @Test
  void aSpoolOfAKilledRecordingRun_isTakenInByTheNextRecordingRun() throws Exception {
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    Path root = Files.createDirectories(OrphanedSpools.spoolRoot(cacheDir()));
    String mine = OrphanedSpools.prefix("run"); // run-<host>-<this pid>-
    String host = mine.substring("run-".length(), mine.lastIndexOf('-', mine.length() - 2));
    Path orphan = Files.createDirectories(root.resolve("run-" + host + "-" + gone.pid() + "-42"));
    dev.xlac.runtime.RecordSpool.write(orphan, oneRequest());
    Files.write(orphan.resolve(dev.xlac.runtime.RecordSpool.TEMPORARY_PREFIX + "half"), new byte[] {1, 2, 3});
    Path live = Files.createDirectories(root.resolve(mine + "7"));
    dev.xlac.runtime.RecordSpool.write(live, oneRequest());
    Path otherHost = Files.createDirectories(root.resolve("dump-some-other-host-" + gone.pid() + "-9"));
    dev.xlac.runtime.RecordSpool.write(otherHost, oneRequest());

    RunResult r = run(plugin, null, true, "true");

    assertThat(r.ingested().added()).isEqualTo(1);
    assertThat(orphan).doesNotExist();
    assertThat(notices).contains("took in 1 compile recorded by an earlier run that did not finish (process "
        + gone.pid() + ")");
    assertThat(dev.xlac.runtime.RecordSpool.files(live)).as("a live process's spool").hasSize(1);
    assertThat(dev.xlac.runtime.RecordSpool.files(otherHost)).as("another host's spool").hasSize(1);
    try (CacheStore store = open()) {
      assertThat(store.requests()).hasSize(1);
    }
    // Nothing is left to adopt: the next recording run says nothing about it.
    notices.clear();
    run(plugin, null, true, "true");
    assertThat(notices).noneMatch(n -> n.contains("earlier run"));
  }

  /**
   * Regression: the layout was materialized while the command started, so on a loaded machine the first run after
   * the cache changed (a CI bundle just imported) compiled requests the cache held ("11 served, 14 compiled").
   */
  @Test
  void theLayoutHoldsTheCachesEntries_beforeTheCommandStarts() throws Exception {
    RecordedRequestForPlugin r = requestForPlugin();
    try (CacheStore store = open()) {
      assertThat(store.putRequests(List.of(r.request())).added()).isEqualTo(1);
    }
    Path entry = dev.xlac.runtime.LayoutEntry.path(RuntimeCache.layoutDir(cacheDir()), r.request().key());
    RunResult run = run(plugin, null, false, "test -f " + entry);
    assertThat(run.exitStatus()).as("the entry was there when the command started").isZero();
  }

  /**
   * Regression: a run said "1 compiled" and nothing more, so a user who expected a warm cache could not tell a
   * changed setting from a key bug. Each miss's reason comes after the summary line and in the report, whether the
   * run opened the cache anyway (a hit) or not (read-only, only to explain).
   */
  @Test
  void missWithoutReason_saysWhichIdentityLineDiffers_withAndWithoutHits() throws Exception {
    dev.xlac.runtime.RecordedRequest recorded = requestForPlugin().request();
    try (CacheStore store = open()) {
      assertThat(store.putRequests(List.of(recorded)).added()).isEqualTo(1);
    }
    String identity = recorded.identityText() + "xla_flags=--xla_cpu_enable_fast_math=true\n";
    RequestKey key = RequestKey.of(recorded.format(), recorded.program(), recorded.options(),
        identity.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    Path missed = dev.xlac.runtime.RecordSpool.write(tmp.resolve("missed"), new dev.xlac.runtime.RecordedRequest(key,
        recorded.format(), recorded.program(), recorded.options(), identity, new byte[0], 5));
    String miss = "cp " + missed + " $XLAC_PJRT_STATS/; printf 'miss\\t" + key.text() + "\\t1\\t500\\n'"
        + " >> $XLAC_PJRT_STATS/stats-1.tsv;";
    String expected = "xlac run:   1 not served: recorded for another plugin or machine (line xla_flags differs): "
        + key.text().substring(0, 14);
    RunResult alone = run(plugin, null, false, miss);
    assertThat(alone.missLines()).containsExactly(expected);
    RunResult withHit = run(plugin, null, false, miss + " printf 'hit\\t" + recorded.key().text()
        + "\\t1\\t2\\t3\\n' >> $XLAC_PJRT_STATS/stats-1.tsv");
    assertThat(withHit.stats().hits()).isEqualTo(1);
    assertThat(withHit.missLines()).containsExactly(expected);
    assertThat(withHit.toJson().get("miss_reasons")).asList().singleElement()
        .satisfies(j -> {
          Map<?, ?> m = (Map<?, ?>) j;
          assertThat(m.get("reason")).isEqualTo("identity");
          assertThat(m.get("identity_lines")).isEqualTo(List.of("xla_flags"));
          assertThat(m.get("nearest")).isEqualTo(recorded.key().text());
        });
  }

  private record RecordedRequestForPlugin(dev.xlac.runtime.RecordedRequest request) {}

  /** oneRequest(), recorded for the test plugin itself (its SHA-256), so the layout for it holds the entry. */
  private RecordedRequestForPlugin requestForPlugin() {
    byte[] format = "hlo".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    String identity = "xlac-pjrt-plugin/1\nplatform_name=cpu\nplatform_version=cpu\napi_version=0.94\n"
        + "plugin_sha256=" + RealPlugin.identify(plugin, null, null).sha256() + "\n";
    RequestKey key = RequestKey.of(format, new byte[] {1}, new byte[0],
        identity.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    return new RecordedRequestForPlugin(new dev.xlac.runtime.RecordedRequest(key, format, new byte[] {1},
        new byte[0], identity, new byte[] {7}, 5));
  }

  /** The one request the tests' stand-in commands record: an "hlo" program of one byte, for a made-up plugin. */
  private static dev.xlac.runtime.RecordedRequest oneRequest() {
    byte[] format = "hlo".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    String identity = "xlac-pjrt-plugin/1\nplatform_name=cpu\nplatform_version=cpu\napi_version=0.94\n"
        + "plugin_sha256=" + "ab".repeat(32) + "\n";
    RequestKey key = RequestKey.of(format, new byte[] {1}, new byte[0],
        identity.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    return new dev.xlac.runtime.RecordedRequest(key, format, new byte[] {1}, new byte[0], identity, new byte[] {7}, 5);
  }

  @Test
  void pluginPath_isOption_thenXlacPjrtPlugin_thenTheLibraryVariableOfTorchXlasDevice() {
    Map<String, String> tpu = Map.of("PJRT_DEVICE", "TPU", "TPU_LIBRARY_PATH", "/opt/libtpu.so");
    assertThat(ServedCommand.pluginPath(null, tpu)).isEqualTo(Path.of("/opt/libtpu.so"));
    assertThat(ServedCommand.pluginPath(Path.of("/given.so"), tpu)).isEqualTo(Path.of("/given.so"));
    Map<String, String> both = new HashMap<>(tpu);
    both.put("XLAC_PJRT_PLUGIN", "/env.so");
    assertThat(ServedCommand.pluginPath(null, both)).isEqualTo(Path.of("/env.so"));
    assertThat(ServedCommand.pluginPath(null, Map.of("PJRT_DEVICE", "NEURON", "NEURON_LIBRARY_PATH", "/n/libneuronpjrt.so")))
        .isEqualTo(Path.of("/n/libneuronpjrt.so"));
    // CPU is torch_xla's built-in client: no variable names a plugin, so none is the default
    assertThatThrownBy(() -> ServedCommand.pluginPath(null, Map.of("PJRT_DEVICE", "CPU", "PJRT_LIBRARY_PATH", "/x.so")))
        .isInstanceOfSatisfying(XlacException.class, x -> assertThat(x.exitCode()).isEqualTo(ExitCode.BAD_INPUT));
  }
}
