package dev.xlac.pipeline.shard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.TestModules;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.SequencedMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ShardPlanTest {
  @TempDir
  Path tmp;

  private static GraphFingerprint fp(int i) {
    return new GraphFingerprint(String.format("hlo1:%064x", i));
  }

  private static List<ShardPlan.Item> items(double... costs) {
    List<ShardPlan.Item> items = new ArrayList<>();
    for (int i = 0; i < costs.length; i++) {
      items.add(new ShardPlan.Item(fp(i + 1), "m" + i, costs[i]));
    }
    return items;
  }

  private static Map<GraphFingerprint, Integer> assignment(ShardPlan plan) {
    return plan.shards().stream().flatMap(s -> s.items().stream().map(i -> Map.entry(i.graph(), s.index())))
        .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
  }

  @Test
  void plan_isLongestFirstToTheLeastLoadedShard() {
    ShardPlan plan = ShardPlan.plan(items(7, 5, 4, 3, 3, 2), 2);
    // LPT step by step:
    // 7:s0=7 | 5:s1=5 | 4:s1=9 | 3:s0=10 | 3:s1=12 | 2:s0=12
    assertThat(plan.shards().get(0).items()).extracting(ShardPlan.Item::cost).containsExactly(7.0, 3.0, 2.0);
    assertThat(plan.shards().get(1).items()).extracting(ShardPlan.Item::cost).containsExactly(5.0, 4.0, 3.0);
    assertThat(plan.shards()).extracting(ShardPlan.Shard::load).containsExactly(12.0, 12.0);
    assertThat(plan.imbalance()).isEqualTo(1.0);
  }

  @Test
  void plan_doesNotDependOnTheOrderTheGraphsCameIn_soARerunPutsEachGraphOnTheSameShard() {
    List<ShardPlan.Item> items = new ArrayList<>(items(5, 5, 5, 3, 3, 2, 2, 2, 1, 1, 8, 0.5));
    Map<GraphFingerprint, Integer> first = assignment(ShardPlan.plan(items, 3));
    Random random = new Random(42);
    for (int i = 0; i < 20; i++) {
      Collections.shuffle(items, random);
      assertThat(assignment(ShardPlan.plan(items, 3))).isEqualTo(first);
    }
  }

  @Test
  void equalCosts_areBrokenByFingerprint_andShardNumber() {
    ShardPlan plan = ShardPlan.plan(items(1, 1, 1, 1), 2);
    assertThat(plan.shards().get(0).items()).extracting(ShardPlan.Item::fingerprint).containsExactly(fp(1), fp(3));
    assertThat(plan.shards().get(1).items()).extracting(ShardPlan.Item::fingerprint).containsExactly(fp(2), fp(4));
  }

  @Test
  void moreShardsThanGraphs_leavesSomeEmpty() {
    ShardPlan plan = ShardPlan.plan(items(2, 1), 4);
    assertThat(plan.shards()).hasSize(4);
    assertThat(plan.nonEmpty()).extracting(ShardPlan.Shard::index).containsExactly(0, 1);
    assertThatThrownBy(() -> ShardPlan.plan(items(1), 0)).isInstanceOf(IllegalArgumentException.class);
  }

  private static double makespan(ShardPlan plan) {
    return plan.shards().stream().mapToDouble(ShardPlan.Shard::load).max().orElseThrow();
  }

  @Test
  void plan_keepsListSchedulingsBound_onManyRandomInputs() {
    Random random = new Random(7);
    for (int round = 0; round < 200; round++) {
      int n = 1 + random.nextInt(300);
      double[] costs = new double[n];
      double total = 0;
      double longest = 0;
      for (int i = 0; i < n; i++) {
        costs[i] = Math.exp(random.nextGaussian() * 1.5);
        total += costs[i];
        longest = Math.max(longest, costs[i]);
      }
      int k = 1 + random.nextInt(64);
      ShardPlan plan = ShardPlan.plan(items(costs), k);
      assertThat(makespan(plan)).isLessThanOrEqualTo(total / k + (1 - 1.0 / k) * longest + 1e-9);
      assertThat(plan.shards().stream().mapToInt(s -> s.items().size()).sum()).isEqualTo(n);
    }
  }

  /** The best split of {@code costs} over {@code k} shards, by trying every assignment. */
  private static double optimum(double[] costs, int k) {
    double best = Double.MAX_VALUE;
    int[] shard = new int[costs.length];
    int assignments = (int) Math.pow(k, costs.length);
    for (int a = 0; a < assignments; a++) {
      double[] load = new double[k];
      for (int i = 0, rest = a; i < costs.length; i++, rest /= k) {
        shard[i] = rest % k;
        load[shard[i]] += costs[i];
      }
      best = Math.min(best, java.util.Arrays.stream(load).max().orElseThrow());
    }
    return best;
  }

  @Test
  void plan_isWithinGrahamsLptBoundOfTheBestSplit_onSmallInputs() {
    Random random = new Random(11);
    for (int round = 0; round < 300; round++) {
      int n = 2 + random.nextInt(7);
      int k = 2 + random.nextInt(2);
      double[] costs = new double[n];
      for (int i = 0; i < n; i++) {
        costs[i] = 1 + random.nextInt(20);
      }
      double ratio = makespan(ShardPlan.plan(items(costs), k)) / optimum(costs, k);
      assertThat(ratio).isLessThanOrEqualTo(4.0 / 3 - 1.0 / (3 * k) + 1e-9);
    }
    // Graham's instance where LPT is as far off as it gets: 2 shards, costs 3 3 2 2 2 (best 6, LPT 7).
    assertThat(makespan(ShardPlan.plan(items(3, 3, 2, 2, 2), 2))).isEqualTo(7.0);
    assertThat(optimum(new double[] {3, 3, 2, 2, 2}, 2)).isEqualTo(6.0);
  }

  @Test
  void estimate_usesRememberedTimes_andScalesSizeForGraphsNeverCompiled() {
    List<ShardPlan.Item> items = ShardPlan.estimate(List.of(
        new ShardPlan.Known(fp(1), "a", 1000, 2000), // 2 ms per byte
        new ShardPlan.Known(fp(2), "b", 3000, 4000), // together: 6000 ms / 4000 bytes
        new ShardPlan.Known(fp(3), "c", 2000, -1)));
    assertThat(items).extracting(ShardPlan.Item::cost).containsExactly(2000.0, 4000.0, 3000.0);
  }

  @Test
  void estimate_pricesANewGraph_byEarlierGraphsOfTheSameName_beforeAllOthers() {
    ShardPlan.Rates rates = new ShardPlan.Rates();
    rates.add(fp(10), "jit_train_step", 10_000, 1000); // 10 ms a byte: an earlier version of the step
    rates.add(fp(11), "jit_add", 100, 1000); // 0.1 ms a byte
    rates.add(fp(11), "jit_add", 100, 1000); // counted once
    List<ShardPlan.Item> items = ShardPlan.estimate(List.of(
        new ShardPlan.Known(fp(1), "jit_train_step", 2000, -1),
        new ShardPlan.Known(fp(2), "jit_other", 2000, -1)), rates);
    assertThat(items.get(0).cost()).isEqualTo(20_000.0);
    assertThat(items.get(1).cost()).as("no graph of its name: the rate of all, (10000 + 100) / 2000")
        .isEqualTo(2000 * 10_100.0 / 2000);
  }

  @Test
  void estimate_withNoTimeRemembered_isTheSize() {
    List<ShardPlan.Item> items = ShardPlan.estimate(List.of(new ShardPlan.Known(fp(1), "a", 1000, -1),
        new ShardPlan.Known(fp(2), "b", 10, -1)));
    assertThat(items).extracting(ShardPlan.Item::cost).containsExactly(1000.0, 10.0);
  }

  @Test
  void costs_readTheCompileTimesTheCacheRemembers_ofAnyCompiler() throws Exception {
    try (CacheStore store = CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {})) {
      SequencedMap<GraphFingerprint, String> graphs = putGraphs(store, 3);
      List<GraphFingerprint> fps = new ArrayList<>(graphs.keySet());
      CompilerIdentity other = new CompilerIdentity("fake", "0.9", "cpu", List.of(), Map.of());
      store.putArtifact(new ArtifactKey(fps.get(0), other), new byte[] {1}, new CompileInfo(Duration.ofMillis(900), ""));
      store.putArtifact(new ArtifactKey(fps.get(1), other), new byte[] {1}, new CompileInfo(Duration.ofMillis(300), ""));
      List<ShardPlan.Item> items = ShardPlan.costs(store, graphs);
      assertThat(items.get(0).cost()).isEqualTo(900.0);
      assertThat(items.get(1).cost()).isEqualTo(300.0);
      long bytes = store.graph(fps.get(2)).orElseThrow().hloBytes();
      long timedBytes = store.graph(fps.get(0)).orElseThrow().hloBytes() + store.graph(fps.get(1)).orElseThrow().hloBytes();
      assertThat(items.get(2).cost()).isCloseTo(bytes * 1200.0 / timedBytes, org.assertj.core.data.Offset.offset(1e-6));
    }
  }

  @Test
  void costs_ofRecordedRequests_areTheirProgramSize_pricedAsGraphsWithoutATime_andThePlanIgnoresInputOrder()
      throws Exception {
    try (CacheStore store = CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {})) {
      SequencedMap<GraphFingerprint, String> graphs = putGraphs(store, 2);
      List<GraphFingerprint> fps = new ArrayList<>(graphs.keySet());
      CompilerIdentity other = new CompilerIdentity("fake", "0.9", "cpu", List.of(), Map.of());
      store.putArtifact(new ArtifactKey(fps.get(0), other), new byte[] {1}, new CompileInfo(Duration.ofMillis(800), ""));
      long timedBytes = store.graph(fps.get(0)).orElseThrow().hloBytes();
      List<ShardPlan.SizedRequest> requests = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        byte[] digest = new byte[32];
        digest[0] = (byte) i;
        requests.add(new ShardPlan.SizedRequest(new dev.xlac.runtime.RequestKey(digest), "mlir request",
            1000L * (i + 1)));
      }
      List<ShardPlan.Item> items = ShardPlan.costs(store, graphs, requests);
      assertThat(items).hasSize(8);
      assertThat(items.get(0).cost()).isEqualTo(800.0);
      for (int i = 0; i < 6; i++) {
        assertThat(items.get(2 + i).fingerprint()).isEqualTo(requests.get(i).key());
        assertThat(items.get(2 + i).cost()).as("no remembered time for the new plugin: size x the rate of all")
            .isCloseTo(1000.0 * (i + 1) * 800.0 / timedBytes, org.assertj.core.data.Offset.offset(1e-6));
      }
      ShardPlan plan = ShardPlan.plan(items, 3);
      List<ShardPlan.Item> shuffled = new ArrayList<>(items);
      java.util.Collections.shuffle(shuffled, new java.util.Random(7));
      assertThat(ShardPlan.plan(shuffled, 3)).isEqualTo(plan);
      assertThat(plan.imbalance()).isLessThan(4.0 / 3);
    }
  }

  /** {@code n} small graphs put in {@code store}, in the order put. */
  private SequencedMap<GraphFingerprint, String> putGraphs(CacheStore store, int n) throws Exception {
    SequencedMap<GraphFingerprint, String> graphs = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      LoadedModule m = new HloModuleReader().read(TestModules.writeDump(tmp.resolve("d"),
          "m" + i + ".before_optimizations.hlo.pb", TestModules.mulAdd(1.5f + i, 1, "_" + i, 10)));
      store.putGraph(m);
      graphs.put(m.fingerprint(), m.moduleName());
    }
    return graphs;
  }
}
