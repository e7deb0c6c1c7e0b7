package dev.xlac.pipeline.shard;

import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.GraphInfo;
import dev.xlac.core.ProgramKey;
import dev.xlac.hlo.GraphFingerprint;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

/**
 * Which graphs each of N shards compiles ({@code parallel-compile --executor slurm}), balanced by how
 * long each graph is expected to take.
 *
 * <p>The rule (longest processing time first, LPT): the graphs are sorted by expected cost, largest
 * first, ties by fingerprint; each in turn goes to the shard with the smallest load so far, ties to
 * the lowest shard number. The plan depends only on the set of graphs, their costs and N, not on the
 * order the graphs came in, so a rerun over the same graphs and the same cache puts each graph on the
 * same shard. Within a shard the graphs keep that order, so a node starts its longest compiles first.
 * The largest load is at most 4/3 - 1/(3N) of the best split's (Graham's bound for LPT).
 *
 * <p>The cost of a graph ({@link #costs}) is what the cache remembers: the mean compile time of its
 * artifacts (of any compiler: the same graph on another plugin version or target takes about as long).
 * A graph never compiled gets its serialized size times the milliseconds per byte of the cache's graphs of the
 * same module name that were compiled (an earlier version of the same function: a new model version's
 * {@code jit_train_step} is priced by the last one's), else of all compiled graphs; when no graph was ever
 * compiled, the size alone is the cost (the same unit for all, which is all LPT needs).
 */
public record ShardPlan(List<Shard> shards) {
  /**
   * One graph, or one recorded request to compile for a new plugin ({@code parallel-compile --plugin NEW}: its key
   * is then the runtime entry's, a {@code RequestKey}), with its expected cost, in milliseconds (or bytes, when no
   * time is known at all).
   */
  public record Item(ProgramKey fingerprint, String moduleName, double cost) {
    /** The graph's fingerprint; an IllegalStateException for a request. */
    public GraphFingerprint graph() {
      if (fingerprint instanceof GraphFingerprint fp) {
        return fp;
      }
      throw new IllegalStateException(fingerprint.value() + " is not a graph");
    }
  }

  /** A recorded request to price: its key for the run's plugin, its name and its program's size in bytes. */
  public record SizedRequest(ProgramKey key, String name, long bytes) {}

  /** One shard: its graphs, longest first, and their summed cost. */
  public record Shard(int index, List<Item> items, double load) {
    public Shard {
      items = List.copyOf(items);
    }
  }

  public ShardPlan {
    shards = List.copyOf(shards);
  }

  private static final Comparator<Item> LONGEST_FIRST = Comparator.comparingDouble(Item::cost).reversed()
      .thenComparing(i -> i.fingerprint().value());

  /** The LPT plan of {@code items} over {@code count} shards; shards may be empty when there are fewer graphs. */
  public static ShardPlan plan(List<Item> items, int count) {
    if (count < 1) {
      throw new IllegalArgumentException("shards must be at least 1: " + count);
    }
    List<Item> sorted = new ArrayList<>(items);
    sorted.sort(LONGEST_FIRST);
    List<List<Item>> lists = new ArrayList<>();
    double[] load = new double[count];
    for (int i = 0; i < count; i++) {
      lists.add(new ArrayList<>());
    }
    for (Item item : sorted) {
      int least = 0;
      for (int i = 1; i < count; i++) {
        if (load[i] < load[least]) {
          least = i;
        }
      }
      lists.get(least).add(item);
      load[least] += item.cost();
    }
    List<Shard> shards = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      shards.add(new Shard(i, lists.get(i), load[i]));
    }
    return new ShardPlan(shards);
  }

  /** Shards that have graphs. */
  public List<Shard> nonEmpty() {
    return shards.stream().filter(s -> !s.items().isEmpty()).toList();
  }

  /** The largest load over the mean load: 1 is a perfect balance. */
  public double imbalance() {
    double max = shards.stream().mapToDouble(Shard::load).max().orElse(0);
    double mean = shards.stream().mapToDouble(Shard::load).sum() / shards.size();
    return mean == 0 ? 1 : max / mean;
  }

  /**
   * The expected cost of each of {@code graphs} from what {@code store} remembers (see the class comment), in
   * the order given.
   */
  public static List<Item> costs(CacheStore store, SequencedMap<GraphFingerprint, String> graphs) {
    return costs(store, graphs, List.of());
  }

  /**
   * As {@link #costs(CacheStore, SequencedMap)}, then the recorded {@code requests}: none has a remembered compile
   * time for the new plugin, so each is priced as a graph without one (its program's size times the milliseconds
   * per byte of the cache's compiled graphs of its name, which no graph has, so of all).
   */
  public static List<Item> costs(CacheStore store, SequencedMap<GraphFingerprint, String> graphs,
      List<SizedRequest> requests) {
    List<Known> known = new ArrayList<>();
    for (Map.Entry<GraphFingerprint, String> g : graphs.entrySet()) {
      long bytes = store.graph(g.getKey()).map(GraphInfo::hloBytes).orElse(0L);
      known.add(new Known(g.getKey(), g.getValue(), bytes, rememberedMillis(store, g.getKey())));
    }
    for (SizedRequest r : requests) {
      known.add(new Known(r.key(), r.name(), r.bytes(), -1));
    }
    Rates rates = new Rates();
    if (known.stream().anyMatch(k -> k.millis() < 0)) { // only then is the whole cache looked at
      for (GraphInfo g : store.graphs()) {
        double millis = rememberedMillis(store, g.fingerprint());
        if (millis >= 0) {
          rates.add(g.fingerprint(), g.moduleName(), millis, g.hloBytes());
        }
      }
    }
    return estimate(known, rates);
  }

  private static double rememberedMillis(CacheStore store, GraphFingerprint fp) {
    return store.entries(fp).stream().map(ArtifactInfo::compileTime).filter(d -> d.toNanos() > 0)
        .mapToDouble(d -> d.toNanos() / 1e6).average().orElse(-1);
  }

  /** A graph's size and its remembered compile time in milliseconds (negative: none remembered). */
  record Known(ProgramKey fingerprint, String moduleName, long bytes, double millis) {}

  /** Milliseconds per byte of the graphs with remembered times: over all, and per module name. */
  static final class Rates {
    private final Map<String, double[]> byName = new java.util.HashMap<>();
    private final double[] all = new double[2];
    private final java.util.Set<ProgramKey> counted = new java.util.HashSet<>();

    /** Counts a graph once, however often it is added. */
    void add(ProgramKey fp, String moduleName, double millis, long bytes) {
      if (bytes <= 0 || !counted.add(fp)) {
        return;
      }
      double[] n = byName.computeIfAbsent(moduleName, k -> new double[2]);
      n[0] += millis;
      n[1] += bytes;
      all[0] += millis;
      all[1] += bytes;
    }

    /** The rate of graphs of the same name if there are any, else of all, else 1 (costs are then sizes). */
    double perByte(String moduleName) {
      double[] n = byName.get(moduleName);
      return n != null ? n[0] / n[1] : all[1] > 0 ? all[0] / all[1] : 1;
    }
  }

  /**
   * A graph with a remembered time costs that time; one without, its size times the milliseconds per byte of the
   * graphs of the same module name that have one (an earlier version of the same function), else of all graphs
   * that have one (those of {@code rates}, and those of {@code graphs}).
   */
  static List<Item> estimate(List<Known> graphs, Rates rates) {
    for (Known k : graphs) {
      if (k.millis() >= 0) {
        rates.add(k.fingerprint(), k.moduleName(), k.millis(), k.bytes());
      }
    }
    return graphs.stream().map(k -> new Item(k.fingerprint(), k.moduleName(),
        k.millis() >= 0 ? k.millis() : Math.max(1, k.bytes()) * rates.perByte(k.moduleName()))).toList();
  }

  static List<Item> estimate(List<Known> graphs) {
    return estimate(graphs, new Rates());
  }
}
