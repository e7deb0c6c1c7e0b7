package dev.xlac.pipeline.run;

import dev.xlac.cache.CacheRemote;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RemotePolicy;
import dev.xlac.cache.RemoteSetting;
import dev.xlac.cache.RemoteSummary;
import dev.xlac.cache.RemoteUnavailableException;
import dev.xlac.cache.RequestInfo;
import dev.xlac.cache.RequestIngest;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.pipeline.recording.RealPlugin;
import dev.xlac.runtime.LayoutEntry;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * {@code xlac run} and the cache's remote tier (docs/cache-remote.md). Before the layout is brought up
 * to date ({@link #before}): the runtime entries the remote files under this run's plugin are listed (one request per
 * 1,000 entries), those without an entry in the layout and not in the cache are fetched, 8 at a time,
 * each checked as {@code cache pull} checks it, and stored, so that the layout then serves them. After a recording
 * run ({@link #after}): the entries it added to the cache are written through, as {@code cache push} writes them.
 *
 * <p>A remote that is down, silent or refuses access costs one line and the counts; the command runs on the local
 * cache. With {@code --require-remote} that is exit code 3 before the command starts (and a failed write-through
 * is exit code 3 after a command that succeeded: {@link RunResult#remoteFailure}). The fetching is bounded in time
 * ({@link #FETCH_TIME}, plus the tier's timeouts for the listing): what was not started by then is not fetched.
 *
 * <p>The tier is open only while it is used, never while the command runs. Whether the cache has a remote at all
 * is read from a memo ({@code CACHE/runtime/remote.memo}, the setting and the database state it was read at), so
 * a run of a cache without one does not open the database to find out.
 */
final class RuntimeRemote {
  /** How long the fetching before the command may take, listing included. */
  static final Duration FETCH_TIME = Duration.ofSeconds(60);
  private static final String MEMO_FORMAT = "xlac-remote-memo 1";

  /** Tests: other timeouts and another time bound. */
  static volatile Duration connectTimeoutForTests;
  static volatile Duration readTimeoutForTests;
  static volatile Duration fetchTimeForTests;

  private final RemoteSetting setting;
  /** The remote as {@link #before} used it (closed since), opened again by {@link #after}; its figures. */
  private final CacheRemote remote;
  private final Instant since;
  /** Whether {@link #setting} is what the cache holds (a run with {@code --no-remote} never asked). */
  private final boolean known;

  private RuntimeRemote(RemoteSetting setting, CacheRemote remote, Instant since, boolean known) {
    this.setting = setting;
    this.remote = remote;
    this.since = since;
    this.known = known;
  }

  /** A run that did not ask whether the cache has a remote tier ({@code --no-remote}; a fast start's finish). */
  static final RuntimeRemote NONE = new RuntimeRemote(null, null, null, false);
  /** A run on a cache that has no remote tier. */
  private static final RuntimeRemote ABSENT = new RuntimeRemote(null, null, null, true);

  /**
   * Before the layout is brought up to date: the plugin's runtime entries fetched from the remote into the cache
   * (none with {@code --no-remote}, without a remote, or with {@code --layout}, which is served as it is). Exit
   * code 2 for {@code --require-remote} without a remote, 3 when it cannot be used.
   */
  static RuntimeRemote before(RunSpec spec, CacheLocker cache, RealPlugin plugin, Path layout, boolean managed,
      Consumer<String> notices) throws InterruptedException {
    if (spec.remote() == RemotePolicy.OFF) {
      return NONE;
    }
    boolean required = spec.remote() == RemotePolicy.REQUIRE;
    Optional<RemoteSetting> configured = setting(spec.cacheDir(), notices);
    Optional<RemoteSetting> setting = spec.remote().choose(spec.cacheDir(), () -> configured);
    if (setting.isEmpty()) {
      return ABSENT;
    }
    CacheRemote remote = CacheRemote.forRun(setting.get(), required,
        connectTimeoutForTests != null ? connectTimeoutForTests : Duration.ofSeconds(3),
        readTimeoutForTests != null ? readTimeoutForTests : Duration.ofSeconds(10), notices);
    RemoteSummary stats = remote.summary();
    try (CacheRemote tier = remote) {
      long deadline = System.nanoTime() + fetchTime().toNanos();
      if (!managed) {
        if (required) {
          tier.check();
        }
      } else {
        fetch(spec, cache, plugin, layout, tier, deadline, notices);
      }
    } catch (RemoteUnavailableException e) {
      // said once by the tier, and kept in the figures
    }
    if (required && stats.skipped() > 0) {
      throw XlacException.environment("remote " + setting.get().describe() + ": " + stats.skipped() + " runtime"
          + " entries were not fetched within " + fetchTime().toSeconds() + " s; --require-remote: the command does"
          + " not start");
    }
    if (stats.skipped() > 0) {
      notices.accept("remote " + setting.get().url() + ": " + stats.skipped() + " runtime entries were not fetched"
          + " within " + fetchTime().toSeconds() + " s; they are compiled if the command needs them");
    }
    return new RuntimeRemote(setting.get(), remote, Instant.now().plusMillis(1), true);
  }

  private static void fetch(RunSpec spec, CacheLocker cache, RealPlugin plugin, Path layout, CacheRemote tier,
      long deadline, Consumer<String> notices) throws RemoteUnavailableException, InterruptedException {
    // An entry in the layout is one the cache holds (materialize removes the others): only the rest can be new.
    CacheRemote.RuntimeEntries missing = tier.runtimeEntries(plugin.sha256(),
        request -> !Files.exists(LayoutEntry.path(layout, request)));
    if (missing.isEmpty()) {
      return;
    }
    try (CacheStore.WriterLock lock = cache.lock(); CacheStore store = lock.open()) {
      tier.fetchRuntime(store, missing, deadline, notices);
    } catch (XlacException e) { // the cache is locked, or its disk full: the command runs on what the cache holds
      if (spec.remote() == RemotePolicy.REQUIRE && !(e instanceof dev.xlac.cache.DiskFullException)) {
        throw e;
      }
      tier.noteUnavailable(e.getMessage());
      notices.accept(e.getMessage() + "; the command runs without the remote's runtime entries");
    } finally {
      if (tier.summary().downloaded() > 0) {
        RuntimeCache.forget(spec.cacheDir());
      }
    }
  }

  /**
   * After the command, the cache closed: the entries a recording added to it ({@code ingested}, null without
   * {@code --record}) written through, and the memo brought up to date. The figures, or null when the run did not
   * use a remote.
   */
  RemoteSummary after(RunSpec spec, RequestIngest ingested, Consumer<String> notices) throws InterruptedException {
    if (known) { // a run that never asked (--no-remote) must not remember "no remote" for a cache that has one
      rememberSetting(spec.cacheDir(), Optional.ofNullable(setting));
    }
    if (setting == null) {
      return null;
    }
    RemoteSummary stats = remote.summary();
    if (ingested == null || ingested.added() == 0) {
      return stats;
    }
    List<RequestInfo> added;
    try (CacheStore store = CacheStore.open(spec.cacheDir(), CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      added = store.requests().stream().filter(r -> !r.created().isBefore(since)).toList();
      if (stats.unavailable() != null) { // said before the command: not tried again
        remote.notWritten(added);
        return stats;
      }
      try (CacheRemote tier = remote.reopen(false)) {
        tier.writeRuntimeThrough(store, added);
      }
    } catch (XlacException e) {
      remote.noteUnavailable(e.getMessage());
      notices.accept(e.getMessage() + "; the recorded entries are not written through ('xlac cache push' sends"
          + " them)");
    }
    return stats;
  }

  private static Duration fetchTime() {
    return fetchTimeForTests != null ? fetchTimeForTests : FETCH_TIME;
  }

  // ---------------------------------------------------------------- the memo of the setting

  static Path memoFile(Path cacheDir) {
    return cacheDir.resolve("runtime").resolve("remote.memo");
  }

  /**
   * The cache's remote setting: from the memo while the database is as it was when the memo was written, else read
   * from the cache (opened read-only, so it works while another process writes) and remembered.
   */
  static Optional<RemoteSetting> setting(Path cacheDir, Consumer<String> notices) throws InterruptedException {
    String state = RuntimeCache.databaseState(cacheDir);
    if (state != null) {
      try {
        List<String> lines = Files.readAllLines(memoFile(cacheDir));
        if (lines.size() == 4 && lines.get(0).equals(MEMO_FORMAT) && lines.get(1).equals("db " + state)) {
          String url = lines.get(2).substring("url ".length());
          String endpoint = lines.get(3).substring("endpoint ".length());
          return url.equals("-") ? Optional.empty()
              : Optional.of(RemoteSetting.parse(url, endpoint.equals("-") ? null : endpoint));
        }
      } catch (IOException | RuntimeException e) {
        // no memo, or not one this xlac wrote: read the cache
      }
    }
    Optional<RemoteSetting> setting;
    try (CacheStore store = CacheStore.open(cacheDir, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      setting = store.remoteSetting();
    } catch (XlacException e) {
      notices.accept(e.getMessage() + "; the run does not use the cache's remote tier");
      return Optional.empty();
    }
    rememberSetting(cacheDir, setting);
    return setting;
  }

  /**
   * After a run changed the database (its hits recorded), the memo for its new state, with the setting the run read
   * while it held the cache, so that the next run need not open the cache to learn it.
   */
  static void remember(Path cacheDir, Optional<RemoteSetting> setting) {
    rememberSetting(cacheDir, setting);
  }

  /** Writes the memo for the database as it is now (closed); removes it when that cannot be told. */
  private static void rememberSetting(Path cacheDir, Optional<RemoteSetting> setting) {
    String state = RuntimeCache.databaseState(cacheDir);
    try {
      if (state == null) {
        Files.deleteIfExists(memoFile(cacheDir));
        return;
      }
      String memo = MEMO_FORMAT + "\ndb " + state + "\nurl " + setting.map(RemoteSetting::url).orElse("-")
          + "\nendpoint " + setting.flatMap(RemoteSetting::endpoint).map(URI::toString).orElse("-") + "\n";
      Path file = memoFile(cacheDir);
      if (Files.isRegularFile(file) && Files.readString(file).equals(memo)) {
        return; // a warm run writes nothing
      }
      Files.createDirectories(file.getParent());
      AtomicFiles.writeString(file, memo);
    } catch (IOException | RuntimeException e) {
      // the memo names the database state: a stale one cannot match a changed cache
    }
  }
}
