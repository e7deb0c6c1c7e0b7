package dev.xlac.cache.store;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.xlac.cache.Artifact;
import dev.xlac.cache.ArtifactKey;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * Artifacts kept in memory (a weighted Caffeine cache), and one load per key at a time: the first
 * caller reads the artifact, later ones wait for its outcome. Misses and failed loads are never
 * kept (a caller that shared a failed load looks again).
 */
final class ArtifactMemory {
  /** An artifact kept in memory, and when its last access was last written to the database. */
  record Remembered(Artifact artifact, AtomicLong touched) {}

  private final Cache<ArtifactKey, Remembered> memory;
  private final ConcurrentHashMap<ArtifactKey, CompletableFuture<Artifact>> inFlight = new ConcurrentHashMap<>();
  /** Tests only: runs before each load from the database (see SingleFlightTest). */
  volatile Consumer<ArtifactKey> beforeLoad = k -> { };

  ArtifactMemory(long maxBytes) {
    this.memory = Caffeine.newBuilder().maximumWeight(maxBytes)
        .weigher((ArtifactKey k, Remembered r) -> r.artifact().bytes().length + 64).executor(Runnable::run).build();
  }

  /**
   * The artifact for {@code key}: the one kept in memory (passed to {@code kept} first, which may
   * record the access), else what {@code load} reads, shared with concurrent callers for the same
   * key; null on a miss. {@code now} stamps a newly kept artifact (after its load).
   */
  Artifact get(ArtifactKey key, Consumer<Remembered> kept, Function<ArtifactKey, Artifact> load, LongSupplier now) {
    while (true) {
      Remembered cached = memory.getIfPresent(key);
      if (cached != null) {
        kept.accept(cached);
        return cached.artifact();
      }
      CompletableFuture<Artifact> mine = new CompletableFuture<>();
      CompletableFuture<Artifact> existing = inFlight.putIfAbsent(key, mine);
      if (existing != null) {
        try {
          return existing.join();
        } catch (CompletionException e) {
          continue; // someone else's load failed; look again
        }
      }
      try {
        beforeLoad.accept(key);
        Artifact a = load.apply(key);
        if (a != null) {
          memory.put(key, new Remembered(a, new AtomicLong(now.getAsLong())));
        }
        inFlight.remove(key, mine);
        mine.complete(a);
        return a;
      } catch (Throwable t) {
        inFlight.remove(key, mine);
        mine.completeExceptionally(t);
        throw unwrap(new CompletionException(t));
      }
    }
  }

  void invalidate(ArtifactKey key) {
    memory.invalidate(key);
  }

  void invalidateAll() {
    memory.invalidateAll();
  }

  private static RuntimeException unwrap(CompletionException e) {
    Throwable c = e.getCause();
    if (c instanceof RuntimeException r) {
      return r;
    }
    if (c instanceof Error err) {
      throw err;
    }
    return e;
  }
}
