package dev.xlac.cache;

import dev.xlac.cache.store.Store;
import static dev.xlac.cache.Fixtures.CPU;
import static dev.xlac.cache.Fixtures.bytes;
import static dev.xlac.cache.Fixtures.fp;
import static dev.xlac.cache.Fixtures.graph;
import static dev.xlac.cache.Fixtures.key;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.Fixtures.ManualClock;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue #10 item 2: what a compile run uses is pinned against the automatic size limit. */
class RunPinsTest {
  @TempDir
  Path dir;
  final ManualClock clock = new ManualClock();
  final List<String> notices = new CopyOnWriteArrayList<>();
  CacheStore store;
  long before;

  @BeforeEach
  void fill() throws Exception {
    store = Internals.open(dir, notices::add, clock);
    // Earlier runs' entries: graph n (n < 6) and its 10 kB CPU artifact, last used at hour n.
    for (int n = 0; n < 6; n++) {
      graph(store, n);
      store.putArtifact(key(n, CPU), bytes(n, 10_000), CompileInfo.of(n, ""));
      clock.advance(Duration.ofHours(1));
    }
    before = stored();
  }

  @AfterEach
  void close() {
    store.close();
  }

  long stored() {
    return store.statistics().storedBytes();
  }

  /** As a compile run does it: its graphs stored (pending) first, then their artifacts one by one. */
  void compileRun(int from, int to) {
    IntStream.range(from, to).forEach(n -> graph(store, n));
    for (int n = from; n < to; n++) {
      clock.advance(Duration.ofMinutes(1));
      store.putArtifact(key(n, CPU), bytes(n, 10_000), CompileInfo.of(1, ""));
    }
  }

  @Test
  void automaticLimit_neverRemovesPinnedEntries_butRemovesOlderUnpinnedOnes() {
    long limit = before + 25_000;
    store.setMaxSize(OptionalLong.of(limit));
    try (RunPins run = store.pinForRun()) {
      clock.advance(Duration.ofHours(1));
      assertThat(store.lookup(key(0, CPU))).isPresent(); // found cached: the least recently used entry of all
      compileRun(10, 14); // 40 kB more: over the limit

      assertThat(store.statistics().cleanups()).isPositive();
      assertThat(stored()).isLessThanOrEqualTo(limit);
      assertThat(store.graph(fp(1))).isEmpty(); // older, not used by the run
      assertThat(store.graph(fp(0))).isPresent();
      assertThat(store.artifactInfo(key(0, CPU))).isPresent();
      for (int n = 10; n < 14; n++) {
        assertThat(store.readGraph(fp(n))).isPresent();
        assertThat(store.getArtifact(key(n, CPU))).isPresent();
      }
      assertThat(run.pinnedGraphs()).isEqualTo(5);
      assertThat(run.pinnedArtifacts()).isEqualTo(5);
      assertThat(notices).isEmpty();
    }
    assertThat(store.verify(false).clean()).isTrue();
  }

  @Test
  void pinnedEntriesAloneOverTheLimit_stayForTheRun_saidOnce_thenTheRunsEndEnforcesTheLimit() {
    long limit = 50_000;
    store.setMaxSize(OptionalLong.of(before + 1)); // within it: nothing removed yet
    assertThat(stored()).isEqualTo(before);
    try (RunPins run = store.pinForRun()) {
      store.setMaxSize(OptionalLong.of(limit)); // lowered during the run: unpinned entries go at once
      assertThat(stored()).isLessThanOrEqualTo((long) (limit * Store.CLEANUP_TARGET));
      compileRun(10, 20); // 100 kB, all pinned

      assertThat(stored()).isGreaterThan(limit);
      for (int n = 10; n < 20; n++) {
        assertThat(store.readGraph(fp(n))).as("graph %d", n).isPresent();
        assertThat(store.artifactInfo(key(n, CPU))).as("artifact %d", n).isPresent();
      }
      IntStream.range(0, 6).forEach(n -> assertThat(store.graph(fp(n))).isEmpty());
      assertThat(notices).singleElement().asString().startsWith("cache " + store.directory() + " holds ")
          .contains("over its max-size of 48.8 KiB, all of it in use by this run");
    }
    // The run ended: the limit holds again, least recently used first.
    assertThat(stored()).isLessThanOrEqualTo((long) (limit * Store.CLEANUP_TARGET));
    assertThat(store.graph(fp(10))).isEmpty();
    assertThat(store.graph(fp(19))).isPresent();
    assertThat(notices).hasSize(1);
    assertThat(store.verify(false).clean()).isTrue();
  }

  @Test
  void anUnpinnedEntryWrittenAfterOnlyPinnedOnesWereLeft_isStillRemovedByTheLimit() {
    store.setMaxSize(OptionalLong.of(30_000));
    try (RunPins run = store.pinForRun()) {
      compileRun(10, 14); // pinned alone over the limit: the cleanups stop scanning
      Fixtures.bulk(store, 50, 51, 10_000); // a write that pins nothing (as an import's)
      compileRun(14, 15);
      assertThat(store.graph(fp(50))).isEmpty();
      assertThat(store.graph(fp(14))).isPresent();
    }
  }

  @Test
  void oneRunAtATime_andClosingTwiceIsHarmless() {
    RunPins run = store.pinForRun();
    assertThatThrownBy(store::pinForRun).isInstanceOf(IllegalStateException.class);
    run.close();
    run.close();
    store.pinForRun().close();
  }
}
