package dev.xlac.bench;

import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.GraphInfo;
import dev.xlac.cache.RequestInfo;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.pipeline.shard.ShardPlan;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.function.ToDoubleFunction;

/**
 * The makespan of a distributed compile over K nodes x J jobs, simulated from the compile times a real cache
 * remembers (bench/shards.sh; issue #15, "Scale beyond this machine"). For each K:
 * <ul>
 *   <li>xlac: the graphs are split by {@link ShardPlan} (the plan {@code parallel-compile --executor slurm}
 *       makes), once with the remembered times as costs (a rerun, or a cache that compiled the graphs for another
 *       plugin) and once with no time remembered (costs by size, times the real times); each node then runs its
 *       shard as the local scheduler does: J workers, each taking the next graph in the shard's order when it is
 *       free;
 *   <li>xlac by size with {@code --shards 4K}: four times as many shards as nodes, each node taking the next task
 *       when it is free (an array with more tasks than nodes);
 *   <li>noisy: planned by remembered times, run with real times that differ from them as much as compile times of
 *       graphs of the same name and size differ in the cache (a compile's time is not the same twice on a busy
 *       machine), against LPT knowing the real times;
 *   <li>tail (a proposal, not what xlac does): under the same noise, 80 % of the expected time planned over K
 *       shards, the smallest graphs' 20 % in 4K small shards after them, taken by whichever node is free;
 *   <li>LPT: longest processing time first over all K x J workers at once (one global queue), the bound the
 *       issue names;
 *   <li>the trivial lower bound: max(total / (K x J), the longest compile).
 * </ul>
 * Workloads: the cache's graphs as they are, and GRAPHS graphs drawn (seeded) from their compile times, a big
 * model with the same mix. Also prints the sizes of the objects a remote tier would move.
 *
 * <p>Usage: {@code ShardBench CACHE_DIR [J=4] [GRAPHS=10000]}
 */
public final class ShardBench {
  private ShardBench() {}

  private static double sigma;

  /** A graph: its real compile time (seconds) and its serialized size. */
  record Graph(GraphFingerprint fingerprint, double seconds, long bytes, String module) {}

  public static void main(String[] args) throws Exception {
    Path cache = Path.of(args[0]);
    int jobs = args.length > 1 ? Integer.parseInt(args[1]) : 4;
    int drawn = args.length > 2 ? Integer.parseInt(args[2]) : 10_000;
    List<Graph> graphs = new ArrayList<>();
    List<Long> graphBytes = new ArrayList<>();
    List<Long> artifactBytes = new ArrayList<>();
    List<Long> executableBytes = new ArrayList<>();
    try (CacheStore store = CacheStore.open(cache, CacheStore.Mode.READ_ONLY, Duration.ZERO, m -> {})) {
      for (GraphInfo g : store.graphs()) {
        graphBytes.add(g.storedBytes());
        double seconds = -1;
        for (ArtifactInfo a : store.entries(g.fingerprint())) {
          if (a.status() == EntryStatus.COMPILED) {
            artifactBytes.add(a.bytes());
            seconds = Math.max(seconds, a.compileTime().toNanos() / 1e9);
          }
        }
        if (seconds > 0) {
          graphs.add(new Graph(g.fingerprint(), seconds, g.hloBytes(), g.moduleName()));
        }
      }
      for (RequestInfo r : store.requests()) {
        executableBytes.add(r.storedBytes());
      }
    }
    if (graphs.isEmpty()) {
      throw new IllegalStateException("no compiled graph with a compile time in " + cache);
    }
    System.out.printf(Locale.ROOT, "cache %s: %d graphs with compile times (total %.2f s, longest %.2f s,"
        + " median %.3f s)%n", cache, graphs.size(), graphs.stream().mapToDouble(Graph::seconds).sum(),
        graphs.stream().mapToDouble(Graph::seconds).max().orElseThrow(),
        median(graphs.stream().mapToDouble(Graph::seconds).toArray()));
    System.out.printf(Locale.ROOT, "object sizes: graphs (stored) %s; artifacts %s; runtime entries (stored) %s%n",
        describe(graphBytes), describe(artifactBytes), describe(executableBytes));
    sigma = spread(graphs);
    System.out.printf(Locale.ROOT, "compile time spread between graphs of the same name and size: sigma %.3f"
        + " (log scale; the noisy column draws each real time as remembered x exp(sigma N(0,1)))%n", sigma);
    table("the cache's graphs", graphs, jobs);
    Random random = new Random(15);
    List<Graph> big = new ArrayList<>();
    for (int i = 0; i < drawn; i++) {
      Graph g = graphs.get(random.nextInt(graphs.size()));
      byte[] digest = new byte[32];
      random.nextBytes(digest);
      big.add(new Graph(new GraphFingerprint("hlo1:" + java.util.HexFormat.of().formatHex(digest)), g.seconds(),
          g.bytes(), g.module()));
    }
    table(drawn + " graphs drawn from the cache's compile times", big, jobs);
  }

  private static void table(String title, List<Graph> graphs, int jobs) {
    System.out.printf(Locale.ROOT, "%n== %s, J = %d jobs per node%n", title, jobs);
    System.out.printf(Locale.ROOT, "%4s %10s %10s %10s %10s %10s %9s %9s %9s %9s %9s %9s%n", "K", "lower s", "LPT s",
        "xlac s", "xlac(size)", "size,4K", "xlac/LPT", "size/LPT", "4K/LPT", "noisy/LPT", "tail/LPT", "LPT/lower");
    double worst = 0;
    double worstSize = 0;
    double worstOver = 0;
    double worstNoisy = 0;
    double worstTail = 0;
    for (int k : new int[] {1, 2, 4, 8, 16, 32, 64}) {
      double total = graphs.stream().mapToDouble(Graph::seconds).sum();
      double longest = graphs.stream().mapToDouble(Graph::seconds).max().orElseThrow();
      double lower = Math.max(total / (k * jobs), longest);
      double lpt = listSchedule(sorted(graphs, Graph::seconds), k * jobs);
      double xlac = xlac(graphs, k, jobs, g -> g.seconds() * 1000);
      double bySize = xlac(graphs, k, jobs, Graph::bytes);
      double over = overDecomposed(graphs, k, 4 * k, jobs, Graph::bytes);
      worst = Math.max(worst, xlac / lpt);
      worstSize = Math.max(worstSize, bySize / lpt);
      worstOver = Math.max(worstOver, over / lpt);
      double[] noisy = noisyRatios(graphs, k, jobs);
      worstNoisy = Math.max(worstNoisy, noisy[0]);
      worstTail = Math.max(worstTail, noisy[1]);
      System.out.printf(Locale.ROOT, "%4d %10.2f %10.2f %10.2f %10.2f %10.2f %8.3fx %8.3fx %8.3fx %8.3fx %8.3fx %8.3fx%n",
          k, lower, lpt, xlac, bySize, over, xlac / lpt, bySize / lpt, over / lpt, noisy[0], noisy[1], lpt / lower);
    }
    System.out.printf(Locale.ROOT, "worst with remembered times off by the spread above: %.3fx; the tail proposal"
        + " under the same noise: %.3fx%n", worstNoisy, worstTail);
    System.out.printf(Locale.ROOT, "worst xlac/LPT %.3fx (goal <= 1.10x: %s); with costs by size only %.3fx; by size"
        + " with --shards 4K %.3fx%n", worst, worst <= 1.10 ? "met" : "NOT met", worstSize, worstOver);
  }

  /** xlac's plan with {@code cost} as the estimate, each node running its shard in order on J workers. */
  private static double xlac(List<Graph> graphs, int nodes, int jobs, ToDoubleFunction<Graph> cost) {
    List<ShardPlan.Item> items = graphs.stream().map(g -> new ShardPlan.Item(g.fingerprint(), "g",
        cost.applyAsDouble(g))).toList();
    java.util.Map<GraphFingerprint, Double> seconds = new java.util.HashMap<>();
    graphs.forEach(g -> seconds.put(g.fingerprint(), g.seconds()));
    double makespan = 0;
    for (ShardPlan.Shard s : ShardPlan.plan(items, nodes).shards()) {
      double[] order = s.items().stream().mapToDouble(i -> seconds.get(i.fingerprint())).toArray();
      makespan = Math.max(makespan, listSchedule(order, jobs));
    }
    return makespan;
  }

  /**
   * {@code shards} tasks over {@code nodes} nodes, as Slurm runs an array with more tasks than nodes: each node, when
   * free, takes the next task in index order and runs it on J workers (no overhead per task counted).
   */
  private static double overDecomposed(List<Graph> graphs, int nodes, int shards, int jobs,
      ToDoubleFunction<Graph> cost) {
    List<ShardPlan.Item> items = graphs.stream().map(g -> new ShardPlan.Item(g.fingerprint(), "g",
        cost.applyAsDouble(g))).toList();
    java.util.Map<GraphFingerprint, Double> seconds = new java.util.HashMap<>();
    graphs.forEach(g -> seconds.put(g.fingerprint(), g.seconds()));
    List<ShardPlan.Shard> plan = ShardPlan.plan(items, shards).shards();
    double[] taskTimes = plan.stream().mapToDouble(s -> listSchedule(s.items().stream()
        .mapToDouble(i -> seconds.get(i.fingerprint())).toArray(), jobs)).toArray();
    return listSchedule(taskTimes, nodes);
  }

  /**
   * Planned by the remembered times, run with real times that differ from them by the spread ({@link #spread}),
   * against LPT knowing the real times: how much noisy memories cost.
   */
  private static double[] noisyRatios(List<Graph> graphs, int nodes, int jobs) {
    Random random = new Random(nodes * 31L + jobs);
    List<Graph> real = graphs.stream().map(g -> new Graph(g.fingerprint(), g.seconds()
        * Math.exp(sigma * random.nextGaussian()), g.bytes(), g.module())).toList();
    java.util.Map<GraphFingerprint, Double> remembered = new java.util.HashMap<>();
    graphs.forEach(g -> remembered.put(g.fingerprint(), g.seconds() * 1000));
    double lpt = listSchedule(sorted(real, Graph::seconds), nodes * jobs);
    double xlac = xlac(real, nodes, jobs, g -> remembered.get(g.fingerprint()));
    double tail = tail(real, nodes, jobs, g -> remembered.get(g.fingerprint()), 0.2);
    return new double[] {xlac / lpt, tail / lpt};
  }

  /**
   * A policy not in xlac (measured here as a proposal): the graphs expected to take the largest (1 - f) of the
   * time are split over K shards by the plan, the rest, smallest last, dealt round-robin into 4K small shards
   * that follow them in the array, so a node that finishes early takes the next small task.
   */
  private static double tail(List<Graph> graphs, int nodes, int jobs, ToDoubleFunction<Graph> cost, double f) {
    List<Graph> byCost = new ArrayList<>(graphs);
    byCost.sort(Comparator.comparingDouble(cost).reversed().thenComparing(Graph::fingerprint));
    double total = byCost.stream().mapToDouble(cost).sum();
    double acc = 0;
    int cut = byCost.size();
    for (int i = 0; i < byCost.size(); i++) {
      if (acc >= (1 - f) * total) {
        cut = i;
        break;
      }
      acc += cost.applyAsDouble(byCost.get(i));
    }
    List<Double> taskTimes = new ArrayList<>();
    List<Graph> head = byCost.subList(0, cut);
    java.util.Map<GraphFingerprint, Double> seconds = new java.util.HashMap<>();
    graphs.forEach(g -> seconds.put(g.fingerprint(), g.seconds()));
    List<ShardPlan.Item> items = head.stream().map(g -> new ShardPlan.Item(g.fingerprint(), "g",
        cost.applyAsDouble(g))).toList();
    for (ShardPlan.Shard s : ShardPlan.plan(items, nodes).shards()) {
      taskTimes.add(listSchedule(s.items().stream().mapToDouble(i -> seconds.get(i.fingerprint())).toArray(), jobs));
    }
    int tails = 4 * nodes;
    List<List<Double>> small = new ArrayList<>();
    for (int t = 0; t < tails; t++) {
      small.add(new ArrayList<>());
    }
    for (int i = cut; i < byCost.size(); i++) {
      small.get((i - cut) % tails).add(byCost.get(i).seconds());
    }
    for (List<Double> t : small) {
      taskTimes.add(listSchedule(t.stream().mapToDouble(Double::doubleValue).toArray(), jobs));
    }
    return listSchedule(taskTimes.stream().mapToDouble(Double::doubleValue).toArray(), nodes);
  }

  /** The pooled standard deviation of log compile time within groups of graphs of the same name and size. */
  static double spread(List<Graph> graphs) {
    java.util.Map<String, List<Double>> groups = new java.util.HashMap<>();
    graphs.forEach(g -> groups.computeIfAbsent(g.module() + "/" + g.bytes(), k -> new ArrayList<>())
        .add(Math.log(g.seconds())));
    double sum = 0;
    int freedom = 0;
    for (List<Double> logs : groups.values()) {
      if (logs.size() < 2) {
        continue;
      }
      double mean = logs.stream().mapToDouble(Double::doubleValue).average().orElseThrow();
      sum += logs.stream().mapToDouble(v -> (v - mean) * (v - mean)).sum();
      freedom += logs.size() - 1;
    }
    return freedom == 0 ? 0 : Math.sqrt(sum / freedom);
  }

  private static double[] sorted(List<Graph> graphs, ToDoubleFunction<Graph> key) {
    return graphs.stream().sorted(Comparator.comparingDouble(key).reversed()).mapToDouble(Graph::seconds).toArray();
  }

  /** Each job in order goes to the worker that is free first; the time the last one ends. */
  static double listSchedule(double[] jobsInOrder, int workers) {
    PriorityQueue<Double> free = new PriorityQueue<>();
    for (int i = 0; i < workers; i++) {
      free.add(0.0);
    }
    double end = 0;
    for (double t : jobsInOrder) {
      double at = free.poll() + t;
      end = Math.max(end, at);
      free.add(at);
    }
    return end;
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length == 0 ? 0 : s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  private static String describe(List<Long> sizes) {
    if (sizes.isEmpty()) {
      return "none";
    }
    double[] v = sizes.stream().mapToDouble(Long::doubleValue).toArray();
    double sum = Arrays.stream(v).sum();
    return String.format(Locale.ROOT, "%d, mean %.1f KiB, median %.1f KiB, max %.1f KiB", v.length,
        sum / v.length / 1024, median(v) / 1024, Arrays.stream(v).max().orElseThrow() / 1024);
  }
}
