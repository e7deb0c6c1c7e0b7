package dev.xlac.pipeline.recording;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RequestIngest;
import dev.xlac.cache.layout.PjrtRecordSpool;
import dev.xlac.capture.ProxyEnvironment;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.FileTrees;
import dev.xlac.core.io.PrivateFiles;
import dev.xlac.runtime.RecordSpool;
import dev.xlac.runtime.RunStatistics;
import dev.xlac.runtime.RuntimeLibrary;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Recording through the runtime proxy while a command runs traced ({@code TraceSpec.Recording}):
 * made before the command starts (the plugin is checked: exit 3 before anything runs), it gives the
 * command's environment and, after it ended, puts the spool into the cache. The proxy serves
 * nothing here: a served compile would not be compiled, so XLA would dump nothing for it.
 */
public final class RuntimeRecording implements AutoCloseable {
  private final RealPlugin plugin;
  private final boolean fresh;
  private final Path cacheDir;
  private final Path proxy;
  private final Path stats;
  private final Path spool;
  private boolean ingested;

  private RuntimeRecording(RealPlugin plugin, boolean fresh, Path cacheDir, Path proxy, Path stats, Path spool) {
    this.plugin = plugin;
    this.fresh = fresh;
    this.cacheDir = cacheDir;
    this.proxy = proxy;
    this.stats = stats;
    this.spool = spool;
  }

  /** Recording compiles for {@code plugin} into the cache at {@code cacheDir} ({@code TraceSpec.Recording}). */
  public static RuntimeRecording prepare(Path pluginPath, Path cacheDir) {
    boolean[] fresh = {false};
    RealPlugin plugin = RealPlugin.identify(pluginPath, RealPlugin.memoDir(cacheDir), fresh);
    Path proxy = RuntimeLibrary.path();
    Path stats = null;
    try {
      stats = StatsDirectories.create(StatsDirectories.RECORD_PREFIX);
      Path root = OrphanedSpools.spoolRoot(cacheDir);
      PrivateFiles.createDirectories(root);
      Path spool = Files.createTempDirectory(root, OrphanedSpools.prefix("dump"));
      return new RuntimeRecording(plugin, fresh[0], cacheDir, proxy, stats, spool);
    } catch (IOException e) {
      FileTrees.deleteTreeQuietly(stats);
      throw XlacException.environment("cannot make a record spool under " + OrphanedSpools.spoolRoot(cacheDir)
          + ": " + XlacException.reason(e));
    }
  }

  /** {@code user} with the proxy in front of the plugin, recording; the notes go to {@code notes}. */
  public Map<String, String> environment(Map<String, String> user, List<String> notes) {
    ProxyEnvironment env = ProxyEnvironment.of(user, new ProxyEnvironment.Settings(proxy, plugin.path(),
        plugin.proxyValue(), null, stats, spool));
    notes.addAll(env.notes());
    return env.variables();
  }

  /**
   * After the command: the recording into {@code store} (the spool's files are deleted as they are
   * taken), the plugin's memo written. Problems go to {@code problems}.
   */
  public RecordingResult ingest(CacheStore store, Consumer<String> problems) {
    if (fresh) {
      plugin.remember(RealPlugin.memoDir(cacheDir));
    }
    RunStatistics s = StatsDirectories.statistics(stats, problems);
    RequestIngest in = PjrtRecordSpool.ingest(spool, store, problems);
    RecordingResult r = new RecordingResult(in.plus(OrphanedSpools.adopt(cacheDir, store, problems)), s);
    // records the cache could not take (each named by the ingest) keep the spool, for `xlac cache add`
    ingested = in.leftInSpool() == 0;
    if (!ingested) {
      problems.accept(in.leftInSpool() + " recorded compile" + (in.leftInSpool() == 1 ? "" : "s") + " stay in " + spool
          + " (add them later with xlac cache add " + spool + ")");
    }
    return r;
  }

  /** Removes the run's temporaries; a spool that was not ingested is kept when it holds records. */
  @Override
  public void close() {
    FileTrees.deleteTreeQuietly(stats);
    try {
      if (ingested || !holdsRecords(spool)) {
        FileTrees.deleteTreeQuietly(spool);
      }
    } catch (IOException e) {
      // left for `xlac cache add`
    }
  }

  /** Whether the spool holds a record, taken in or not, or one an ingest moved aside as {@code *.rejected}. */
  private static boolean holdsRecords(Path spool) throws IOException {
    if (!RecordSpool.files(spool).isEmpty()) {
      return true;
    }
    try (var names = Files.list(spool)) {
      return names.anyMatch(f -> f.getFileName().toString().endsWith(".rejected"));
    }
  }

}
