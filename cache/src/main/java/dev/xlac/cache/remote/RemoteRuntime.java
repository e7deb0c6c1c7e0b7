package dev.xlac.cache.remote;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RemoteUnavailableException;
import dev.xlac.cache.RequestInfo;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * One plugin's runtime entries between the local cache and the remote tier, as {@code xlac run} moves them: the
 * entries the remote files under the plugin's SHA-256 (one listing of {@code v1/runtime/<plugin sha256>/}), those
 * the local cache lacks fetched {@value RemoteSync#PARALLEL} at a time and checked as {@code cache pull} checks them,
 * and the entries a recording run added written through as {@code cache push} writes them. A remote that fails is
 * counted (and said once by the tier); with a tier whose failures are fatal it is an exit-3 {@code XlacException}.
 */
public final class RemoteRuntime {
  private RemoteRuntime() {}

  /** The runtime objects the remote files under {@code pluginSha256} (64 lowercase hex digits). */
  public static List<RemoteObjects.RuntimeObject> list(RemoteTier tier, String pluginSha256)
      throws RemoteUnavailableException, InterruptedException {
    List<RemoteObjects.RuntimeObject> out = new ArrayList<>();
    for (RemoteTier.Listed o : tier.list(RemoteObjects.runtimePrefix(pluginSha256))) {
      RemoteObjects.RuntimeObject r = RemoteObjects.runtimeOf(o.key());
      if (r != null && pluginSha256.equals(r.pluginSha256())) {
        out.add(r);
      }
    }
    return out;
  }

  /**
   * Downloads each object whose request {@code store} does not hold, checked before it is stored (a cache with
   * {@code require-signed on} takes only objects signed by a key it trusts). Counted into {@code stats}: downloaded,
   * already local, rejected (each named through {@code problems}), failed (the remote became unavailable: the rest
   * is not tried), skipped (not started before {@code deadlineNanos}, a {@link System#nanoTime} value).
   */
  public static void fetch(CacheStore store, RemoteTier tier, Collection<RemoteObjects.RuntimeObject> objects,
      long deadlineNanos, RemoteStats stats, Consumer<String> problems) throws InterruptedException {
    RemoteTrust trust = RemoteTrust.of(store);
    try (RemoteSync.Parallel p = new RemoteSync.Parallel()) {
      for (RemoteObjects.RuntimeObject o : objects) {
        p.submit(() -> {
          if (!tier.available()) {
            stats.failed.incrementAndGet();
          } else if (System.nanoTime() - deadlineNanos > 0) {
            stats.skipped.incrementAndGet();
          } else {
            try {
              RemoteSync.pullRuntime(store, tier, o, stats, problems, trust);
            } catch (RemoteUnavailableException e) {
              stats.failed.incrementAndGet();
            }
          }
        });
      }
    }
  }

  /**
   * Uploads the runtime entries named, each as {@code cache push} writes it (a conditional put: one another node
   * wrote first counts as already there). Entries whose plugin SHA-256 is not valid or that cannot be read are
   * skipped or failed, the store having said why; a remote that is unavailable fails the rest at once.
   */
  public static void writeThrough(CacheStore store, RemoteTier tier, Collection<RequestInfo> entries, RemoteStats stats)
      throws InterruptedException {
    try (RemoteSync.Parallel p = new RemoteSync.Parallel()) {
      for (RequestInfo r : entries) {
        if (!RemoteObjects.validPluginSha256(r.pluginSha256())) {
          stats.skipped.incrementAndGet();
          continue;
        }
        p.submit(() -> {
          if (!tier.available()) {
            stats.failed.incrementAndGet();
            return;
          }
          Optional<byte[]> body = RemoteEntries.runtimeObject(store, r.pluginSha256(), r.key());
          if (body.isEmpty()) {
            stats.failed.incrementAndGet();
            return;
          }
          try {
            stats.put(tier.putIfAbsent(RemoteObjects.runtimeKey(r.pluginSha256(), r.key()), body.get()),
                body.get().length);
          } catch (RemoteUnavailableException e) {
            stats.failed.incrementAndGet();
          } catch (RemoteObjects.TooLargeException e) {
            stats.skipped.incrementAndGet();
          }
        });
      }
    }
  }

  /** Counts the entries named as failed uploads: the remote was unavailable before they could be tried. */
  public static void notWritten(Collection<RequestInfo> entries, RemoteStats stats) {
    stats.failed.addAndGet(entries.size());
  }
}
