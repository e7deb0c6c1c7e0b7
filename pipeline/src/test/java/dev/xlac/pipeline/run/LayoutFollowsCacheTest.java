package dev.xlac.pipeline.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.PruneRequest;
import dev.xlac.pipeline.TestPlugin;
import dev.xlac.pipeline.recording.RealPlugin;
import dev.xlac.runtime.LayoutEntry;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Issue #22, 6: the runtime layout follows the cache whatever another process does to the cache during a run
 * ({@code cache clear}, {@code prune}, {@code import}, done here through the store as those commands do), at each
 * moment of a run. The command is a shell script that reports a hit on the entry, as the proxy would, so the finish
 * opens the cache; the moments are reached by hand-shakes, not by timing.
 */
class LayoutFollowsCacheTest {
  @TempDir
  Path tmp;

  private Path plugin;
  private String pluginSha;
  private final List<String> notices = new ArrayList<>();

  /** When, in a run, the other process's change lands. */
  enum Moment {
    /** After the stamp was found stale, before the run takes the lock to bring the layout up to date. */
    BEFORE_THE_LAYOUT,
    /** While the command runs (the layout was current when it started). */
    DURING_THE_COMMAND,
    /** After the command ended, before the run's finish takes the lock. */
    BEFORE_THE_FINISH
  }

  @FunctionalInterface
  interface Change {
    void apply(CacheStore store) throws Exception;
  }

  @BeforeEach
  void buildPlugin() throws Exception {
    plugin = TestPlugin.build(Files.createDirectories(tmp.resolve("plugin")));
    pluginSha = RealPlugin.identify(plugin, null, null).sha256();
  }

  private Path cacheDir() {
    return tmp.resolve("cache");
  }

  private CacheStore open() throws InterruptedException {
    return CacheStore.open(cacheDir(), CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
  }

  private Path entry(RecordedRequest r) {
    return LayoutEntry.path(RuntimeCache.layoutDir(cacheDir()), r.key());
  }

  private RunResult run(String script, CacheLocker locker) throws Exception {
    return RuntimeRun.run(new RunSpec(List.of("sh", "-c", script), cacheDir(), plugin, null, false,
        Map.of("PATH", System.getenv("PATH"))), locker, notices::add, () -> Path.of("/opt/xlac/libxlac_pjrt.so"));
  }

  private RunResult plainRun(String script) throws Exception {
    return run(script, () -> CacheStore.lock(cacheDir(), Duration.ZERO, m -> {}));
  }

  /** Whether the entry file of {@code r} is in the layout when a next, plain run's command starts. */
  private boolean servedByTheNextRun(RecordedRequest r) throws Exception {
    return plainRun("test -f " + entry(r)).exitStatus() == 0;
  }

  /**
   * A run with a hit on {@code hit}, with {@code change} applied at {@code moment}; for
   * {@link Moment#DURING_THE_COMMAND}, {@code duringCheck} runs right after it, while the command still waits.
   */
  private RunResult runWithChange(Moment moment, RecordedRequest hit, Change change, Runnable duringCheck)
      throws Exception {
    Path started = tmp.resolve("started");
    Path go = tmp.resolve("go");
    Path ended = tmp.resolve("ended");
    for (Path p : List.of(started, go, ended)) {
      Files.deleteIfExists(p);
    }
    if (moment == Moment.BEFORE_THE_LAYOUT) {
      RuntimeCache.forget(cacheDir()); // so that this run takes the lock before its command
    }
    String wait = moment == Moment.DURING_THE_COMMAND
        ? "touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.01; done; " : "";
    String script = wait + "printf 'hit\\t" + hit.key().text() + "\\t1\\t2\\t3000000000\\n' > $XLAC_PJRT_STATS/stats-1.tsv;"
        + " touch " + ended;
    AtomicBoolean done = new AtomicBoolean();
    CacheLocker locker = () -> {
      boolean due = moment == Moment.BEFORE_THE_LAYOUT && !Files.exists(started) && !Files.exists(ended)
          || moment == Moment.BEFORE_THE_FINISH && Files.exists(ended);
      if (due && done.compareAndSet(false, true)) {
        applyChange(change);
      }
      return CacheStore.lock(cacheDir(), Duration.ZERO, m -> {});
    };
    CompletableFuture<RunResult> running = CompletableFuture.supplyAsync(() -> {
      try {
        return run(script, locker);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    if (moment == Moment.DURING_THE_COMMAND) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!Files.exists(started) && System.nanoTime() < deadline && !running.isDone()) {
        Thread.sleep(5);
      }
      assertThat(started).as("the command started; notices %s", notices).exists();
      applyChange(change);
      done.set(true);
      duringCheck.run();
      Files.createFile(go);
    }
    RunResult r = running.get(60, TimeUnit.SECONDS);
    assertThat(done).as("the change was made").isTrue();
    assertThat(r.exitStatus()).as("notices %s", notices).isZero();
    return r;
  }

  private void applyChange(Change change) {
    try (CacheStore store = open()) {
      change.apply(store);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** The cache holds {@code r} and a first run brought the layout up to date for it. */
  private void servedAlready(RecordedRequest r) throws Exception {
    try (CacheStore store = open()) {
      assertThat(store.putRequests(List.of(r)).added()).isEqualTo(1);
    }
    assertThat(servedByTheNextRun(r)).isTrue();
    assertThat(RuntimeCache.layoutCurrent(cacheDir(), pluginSha)).isTrue();
  }

  /**
   * Regression: a {@code cache clear} 0.3 to 1 s into a run left the layout serving every cleared entry to every
   * later run (the run's end stamped the layout current for the cleared database), and the space stayed used.
   */
  @ParameterizedTest
  @EnumSource(Moment.class)
  void clearDuringRun_nextRunDoesNotServeClearedEntries(Moment moment) throws Exception {
    RecordedRequest r = request(1);
    servedAlready(r);
    runWithChange(moment, r, CacheStore::clear, () -> assertThat(entry(r))
        .as("a proxy running now stops serving it, and its space is freed").doesNotExist());
    assertThat(entry(r)).doesNotExist();
    assertThat(servedByTheNextRun(r)).isFalse();
  }

  /** Regression: as {@link #clearDuringRun_nextRunDoesNotServeClearedEntries}, for {@code cache prune}. */
  @ParameterizedTest
  @EnumSource(Moment.class)
  void pruneDuringRun_nextRunDoesNotServePrunedEntries(Moment moment) throws Exception {
    RecordedRequest r = request(2);
    servedAlready(r);
    runWithChange(moment, r, s -> assertThat(s.prune(new PruneRequest(OptionalLong.of(0), null, false, null, null,
        false, false)).requestsRemoved()).hasSize(1), () -> assertThat(entry(r)).doesNotExist());
    assertThat(servedByTheNextRun(r)).isFalse();
  }

  /**
   * Regression: entries a {@code cache import} added during a run were never served by later runs (0 of 25), until
   * the stamp was deleted by hand: the run's end stamped the layout current for the database with them in it.
   */
  @ParameterizedTest
  @EnumSource(Moment.class)
  void importDuringRun_nextRunServesImportedEntries(Moment moment) throws Exception {
    RecordedRequest served = request(3);
    RecordedRequest imported = request(4);
    servedAlready(served);
    runWithChange(moment, served, s -> assertThat(s.putRequests(List.of(imported)).added()).isEqualTo(1), () -> { });
    assertThat(servedByTheNextRun(imported)).isTrue();
    assertThat(servedByTheNextRun(served)).isTrue();
    assertThat(RuntimeCache.layoutCurrent(cacheDir(), pluginSha)).as("and the layout is current again").isTrue();
  }

  /**
   * Regression: a pruned entry whose file could not leave the layout (only a notice said so) was taken as gone: the
   * next run stamped the layout current, and every later run served what the cache no longer held without trying
   * again. The stamp stays stale until the removal succeeds.
   */
  @org.junit.jupiter.api.Test
  void prunedEntryThatCannotLeaveTheLayout_keepsTheStampStale_untilItIsRemoved() throws Exception {
    RecordedRequest r = request(5);
    servedAlready(r);
    Path entry = entry(r);
    Files.delete(entry);
    Files.createDirectories(entry.resolve("kept")); // its removal fails, as a file on a read-only mount's would
    try (CacheStore store = open()) {
      assertThat(store.prune(new PruneRequest(OptionalLong.of(0), null, false, null, null, false, false))
          .requestsRemoved()).hasSize(1);
    }
    assertThat(plainRun("true").exitStatus()).isZero();
    assertThat(RuntimeCache.layoutCurrent(cacheDir(), pluginSha)).as("notices %s", notices).isFalse();
    assertThat(notices).anyMatch(n -> n.startsWith("cannot remove 1 entry the cache no longer holds"));
    Files.delete(entry.resolve("kept"));
    assertThat(plainRun("true").exitStatus()).isZero();
    assertThat(entry).doesNotExist();
    assertThat(RuntimeCache.layoutCurrent(cacheDir(), pluginSha)).as("removed at last: current again").isTrue();
  }

  /** A request recorded for the test plugin itself (its SHA-256), so the layout for it holds the entry. */
  private RecordedRequest request(int program) {
    byte[] format = "hlo".getBytes(StandardCharsets.UTF_8);
    String identity = "xlac-pjrt-plugin/1\nplatform_name=cpu\nplatform_version=cpu\napi_version=0.94\n"
        + "plugin_sha256=" + pluginSha + "\n";
    byte[] code = {(byte) program};
    RequestKey key = RequestKey.of(format, code, new byte[0], identity.getBytes(StandardCharsets.UTF_8));
    return new RecordedRequest(key, format, code, new byte[0], identity, new byte[] {7, (byte) program}, 5);
  }
}
