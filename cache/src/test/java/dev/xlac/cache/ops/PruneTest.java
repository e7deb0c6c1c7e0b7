package dev.xlac.cache.ops;

import dev.xlac.cache.Internals;
import dev.xlac.cache.store.StoreInternals;
import dev.xlac.cache.store.Store;
import static dev.xlac.cache.Fixtures.CPU;
import static dev.xlac.cache.Fixtures.TRN1;
import static dev.xlac.cache.Fixtures.bytes;
import static dev.xlac.cache.Fixtures.fp;
import static dev.xlac.cache.Fixtures.graph;
import static dev.xlac.cache.Fixtures.key;
import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.CompilerFilter;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.Fixtures.ManualClock;
import dev.xlac.cache.PruneRequest;
import dev.xlac.cache.PruneResult;
import dev.xlac.cache.store.Totals;
import dev.xlac.core.XlacException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PruneTest {
  @TempDir
  Path dir;
  final ManualClock clock = new ManualClock();
  CacheStore store;

  @BeforeEach
  void fill() throws Exception {
    store = Internals.open(dir, m -> { }, clock);
    // Graph n is used at hour n: its CPU artifact (10 kB) and, for odd n, a failed trn1 compile.
    for (int n = 0; n < 6; n++) {
      graph(store, n);
      store.putArtifact(key(n, CPU), bytes(n, 10_000), CompileInfo.of(n, ""));
      if (n % 2 == 1) {
        store.recordFailure(key(n, TRN1), "compile-error", "failed", "log of " + n);
      }
      clock.advance(Duration.ofHours(1));
    }
  }

  @org.junit.jupiter.api.AfterEach
  void close() {
    store.close();
  }

  static PruneRequest request(Long maxSize, Duration olderThan, boolean failed, String compiler, boolean dry) {
    return new PruneRequest(maxSize == null ? OptionalLong.empty() : OptionalLong.of(maxSize), olderThan, failed,
        compiler == null ? null : CompilerFilter.parse(compiler), null, dry, false);
  }

  @Test
  void maxSize_removesLeastRecentlyUsedFirst_artifactsBeforeTheirGraphs() {
    long total = store.statistics().storedBytes();
    PruneResult r = store.prune(request(total / 2, null, false, null, false));
    assertThat(r.bytesAfter()).isLessThanOrEqualTo(total / 2);
    assertThat(store.statistics().storedBytes()).isEqualTo(r.bytesAfter());
    assertThat(r.removed().getFirst().fingerprint()).isEqualTo(fp(0));
    assertThat(r.removed().getFirst().isGraph()).isFalse(); // the artifact of graph 0 goes before graph 0
    assertThat(store.graph(fp(5))).isPresent();
    assertThat(store.getArtifact(key(5, CPU))).isPresent();
    assertThat(store.graph(fp(0))).isEmpty();
    assertThat(store.verify(false).clean()).isTrue();
  }

  @Test
  void aHit_makesAnEntryRecentlyUsed() {
    clock.advance(Duration.ofHours(1));
    assertThat(store.getArtifact(key(0, CPU))).isPresent(); // graph 0 is now the most recently used
    long total = store.statistics().storedBytes();
    store.prune(request(total / 2, null, false, null, false));
    assertThat(store.graph(fp(0))).isPresent();
    assertThat(store.graph(fp(1))).isEmpty();
  }

  /**
   * A compile run that finds an artifact cached ({@code lookup}) is using it, as much as one that
   * loads it: it used to keep its old last-access time, so the end-of-run trim of a size-limited
   * cache removed exactly the artifacts the run had just found cached before older unused ones.
   */
  @Test
  void aCompileRunsCacheHit_makesAnEntryRecentlyUsed() {
    clock.advance(Duration.ofHours(1));
    assertThat(store.lookup(key(0, CPU))).isPresent();
    long total = store.statistics().storedBytes();
    store.prune(request(total / 2, null, false, null, false));
    assertThat(store.graph(fp(0))).isPresent();
    assertThat(store.artifactInfo(key(0, CPU))).isPresent();
    assertThat(store.graph(fp(1))).isEmpty();
  }

  @Test
  void dryRun_reportsWithoutRemoving() {
    long before = store.statistics().storedBytes();
    PruneResult r = store.prune(request(0L, null, false, null, true));
    assertThat(r.dryRun()).isTrue();
    assertThat(r.graphsRemoved()).isEqualTo(6);
    assertThat(r.bytesFreed()).isEqualTo(before);
    assertThat(store.statistics().storedBytes()).isEqualTo(before);
  }

  @Test
  void olderThan_andFilters_chooseTheCandidates() {
    PruneResult failed = store.prune(request(null, null, true, null, false));
    assertThat(failed.removed()).hasSize(3).allSatisfy(x -> assertThat(x.status()).isEqualTo(EntryStatus.FAILED));
    assertThat(store.statistics().failed()).isZero();

    PruneResult old = store.prune(request(null, Duration.ofMinutes(150), false, null, false));
    // now is hour 6: entries last used before hour 3.5 go (graphs 0..3 and their artifacts)
    assertThat(old.graphsRemoved()).isEqualTo(4);
    assertThat(store.statistics().graphs()).isEqualTo(2);

    PruneResult cpu = store.prune(request(null, null, false, "pjrt:cpu", false));
    assertThat(cpu.artifactsRemoved()).isEqualTo(2);
    assertThat(cpu.graphsRemoved()).isZero();
    assertThat(store.statistics().pendingGraphs()).isEqualTo(2);
    assertThat(store.verify(false).clean()).isTrue();
  }

  @Test
  void aConfiguredMaxSize_isEnforcedAfterWrites() {
    long total = store.statistics().storedBytes();
    store.setMaxSize(OptionalLong.of(total / 2));
    assertThat(store.statistics().storedBytes()).isLessThanOrEqualTo((long) (total / 2 * Store.CLEANUP_TARGET));
    assertThat(store.statistics().cleanups()).isEqualTo(1);
    graph(store, 10);
    store.putArtifact(key(10, CPU), bytes(10, 10_000), CompileInfo.of(1, ""));
    assertThat(store.statistics().storedBytes()).isLessThanOrEqualTo(total / 2);
    assertThat(store.getArtifact(key(10, CPU))).isPresent();
    assertThat(store.verify(false).clean()).isTrue();
  }

  /**
   * Issue #10 item 2: the automatic cleanup planned outside the write lock, so writers on other
   * threads made it remove more than it planned (a graph planned as pending gained an artifact that
   * went with it; two cleanups trimmed from the same starting size), and a compile run's cache ended
   * far below the 90 % target. Now every cleanup ends within one entry of its target. The race is
   * timing-dependent: on the old code each round went below that bound in every run tried (5 of 5).
   */
  @Test
  void automaticCleanup_withConcurrentWriters_stopsAtItsTarget_notFarBelowIt() throws Exception {
    long limit = 1_000_000;
    long target = (long) (limit * Store.CLEANUP_TARGET);
    long largestEntry = 2_100 + 10_000; // a graph with its artifact
    for (int round = 0; round < 5; round++) {
      try (CacheStore s = CacheStore.open(dir.resolve("round-" + round), CacheStore.Mode.READ_WRITE, Duration.ZERO,
          m -> { })) {
        s.setMaxSize(OptionalLong.of(limit));
        int base = 1000 * (round + 1);
        for (int n = base; n < base + 300; n++) { // 600 kB of pending graphs, as a compile run's start
          s.putGraph(fp(n), "jit_g" + n, bytes(n, 2_000), "test/" + n);
        }
        AtomicInteger next = new AtomicInteger(base);
        AtomicLong lowest = new AtomicLong(Long.MAX_VALUE);
        List<Thread> writers = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
          writers.add(Thread.ofPlatform().start(() -> {
            for (int n = next.getAndIncrement(); n < base + 300; n = next.getAndIncrement()) {
              try {
                s.putArtifact(key(n, CPU), bytes(n, 10_000), CompileInfo.of(1, ""));
              } catch (XlacException e) {
                continue; // its graph was removed (nothing is pinned here)
              }
              Totals t1 = Internals.store(s).totals();
              if (t1.cleanups > 0) {
                lowest.accumulateAndGet(t1.storedBytes(), Math::min);
              }
            }
          }));
        }
        for (Thread w : writers) {
          w.join();
        }
        assertThat(Internals.store(s).totals().cleanups).isPositive();
        assertThat(lowest.get()).as("round %d: lowest size after a cleanup", round)
            .isGreaterThan(target - largestEntry);
        assertThat(Internals.store(s).totals().storedBytes()).isLessThanOrEqualTo(limit);
        assertThat(s.verify(false).clean()).isTrue();
      }
    }
  }

  @Test
  void pruning_reallyShrinksTheDatabaseOnDisk() {
    for (int n = 20; n < 30; n++) {
      graph(store, n);
      store.putArtifact(key(n, CPU), bytes(n, 2_000_000), CompileInfo.of(1, "")); // blob files
    }
    StoreInternals.db(Internals.store(store)).compactAll();
    PruneResult r = store.prune(request(0L, null, false, null, false));
    assertThat(r.bytesFreed()).isGreaterThan(20_000_000);
    assertThat(r.diskBefore()).isGreaterThan(20_000_000);
    assertThat(r.diskAfter()).isLessThan(r.diskBefore() / 4);
  }
}
