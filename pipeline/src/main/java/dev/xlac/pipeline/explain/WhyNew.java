package dev.xlac.pipeline.explain;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.GraphInfo;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.DiffReason;
import dev.xlac.hlo.GraphDiff;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.NearestRelative;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Why a graph was not a cache hit: the nearest graph the cache already had (same module name, the
 * {@link #MAX_CANDIDATES} most recently seen, compared by {@link GraphDiff}; fewest changes wins; when
 * none of them matches structurally, graphs of like structure under other names) and the short reason
 * their diff gives ({@link DiffReason}: "batch size (32 -> 48)", "dtype (f32 -> bf16)", ...; "no
 * relative" when the cache has no related graph). {@link #explain} does it for the new graphs of a run
 * and groups the reasons into one summary line; {@link #explainOne} does it for one graph of the cache
 * ({@code xlac cache why}). pipeline/README.md, "Why a graph is new", has the rules.
 */
public final class WhyNew {
  /** At most this many cached graphs are compared per new graph, so that a run stays fast. */
  public static final int MAX_CANDIDATES = 8;

  /** Serialized bytes of graphs under other names read per run to find relatives by structure. */
  static final long STRUCTURAL_BYTES = 512L << 20;

  /** Names listed per group in the summary line before "and N more". */
  private static final int NAMES_SHOWN = 6;

  private WhyNew() {}

  /**
   * Why one graph is new.
   *
   * @param graph the new graph
   * @param module its module name
   * @param relative the nearest cached graph, or null when there is none
   * @param relativeModule its module name, or null
   * @param verdict the diff's verdict against the relative, or null
   * @param label what differs, as a noun phrase: {@code batch size}, {@code sequence length},
   *     {@code dtype}, {@code a constant}, {@code 3 constants}, {@code 12 added instructions},
   *     {@code entry parameter shapes}, the verdict's first clause, or {@code no relative}
   * @param change the values, e.g. {@code 32 -> 48}, or null
   * @param only nothing else differs (beyond shapes and constants that follow from the change)
   * @param compared how many candidates were compared
   */
  public record Reason(GraphFingerprint graph, String module, GraphFingerprint relative, String relativeModule,
      String verdict, String label, String change, boolean only, int compared) {
    /** Against the relative, as {@link DiffReason} words it (or the graph's lack of one). */
    static Reason of(GraphFingerprint graph, String module, GraphFingerprint relative, String relativeModule,
        DiffReason why, int compared) {
      return new Reason(graph, module, relative, relativeModule, why.verdict(), why.label(), why.change(), why.only(),
          compared);
    }

    private DiffReason wording() {
      return new DiffReason(verdict, label, change, only);
    }

    /** E.g. {@code batch size (32 -> 48)}, {@code 12 added instructions}, {@code no relative}. */
    public String text() {
      return wording().text();
    }

    /**
     * How the graph differs from its relative, as one graph's sentence goes on after "differs from its
     * nearest relative": {@code " only in batch size (32 -> 48)"}, {@code " in dtype (f32 -> bf16)"},
     * {@code ": 2 instructions changed opcode"} (the diff's own words); {@code " (no relative)"} without one.
     */
    public String againstRelative() {
      if (relative == null) {
        return " (no relative)";
      }
      return inVerdictsWords() ? ": " + text() : (only ? " only in " : " in ") + text();
    }

    /** The label is the diff's verdict (its first clause): no shorter reason was found. */
    public boolean inVerdictsWords() {
      return wording().inVerdictsWords();
    }

    /** The JSON form: {@code graph}, {@code module}, {@code reason}, {@code only}, {@code relative}, {@code relative_module}, {@code verdict}, {@code compared}. */
    public Map<String, Object> toJson() {
      Map<String, Object> j = new LinkedHashMap<>();
      j.put("graph", graph.value());
      j.put("module", module);
      j.put("reason", text());
      j.put("only", only);
      j.put("relative", relative == null ? null : relative.value());
      j.put("relative_module", relativeModule);
      j.put("verdict", verdict);
      j.put("compared", compared);
      return j;
    }
  }

  /**
   * The reasons of a run's new graphs, in the order they were stored.
   *
   * @param cachedBefore how many graphs the cache held besides the new ones (0: a first fill, nothing to explain)
   */
  public record Summary(List<Reason> reasons, int cachedBefore) {
    public Summary {
      reasons = List.copyOf(reasons);
    }

    public static final Summary NONE = new Summary(List.of(), 0);

    /** Fingerprint -> reason. */
    public Map<GraphFingerprint, Reason> byGraph() {
      Map<GraphFingerprint, Reason> m = new LinkedHashMap<>();
      reasons.forEach(r -> m.put(r.graph(), r));
      return m;
    }

    /**
     * The one line, or null when nothing was new. E.g. {@code 3 new graphs: 2 differ from cached
     * graphs only in batch size (32 -> 48: jit_train_step, jit_eval_step), 1 has no relative
     * (jit_new_metric)}. Groups: same reason and values ("only" when nothing else differs in any of
     * them); the largest first, "no relative" last.
     * Null too when the cache held no other graph (a first run explains nothing).
     */
    public String line() {
      if (reasons.isEmpty() || cachedBefore == 0) {
        return null;
      }
      Map<List<Object>, List<Reason>> groups = new LinkedHashMap<>();
      for (Reason r : reasons) {
        // The diff's own words are one group: each is too long to repeat (cache why has them).
        groups.computeIfAbsent(r.inVerdictsWords() ? List.of("verdict")
            : java.util.Arrays.asList(r.relative() == null, r.label(), r.change()),
            k -> new ArrayList<>()).add(r);
      }
      List<List<Reason>> ordered = new ArrayList<>(groups.values());
      ordered.sort(Comparator.<List<Reason>, Boolean>comparing(g -> g.getFirst().relative() == null)
          .thenComparing(g -> -g.size())); // stable: first appearance breaks ties
      StringBuilder b = new StringBuilder();
      b.append(reasons.size()).append(reasons.size() == 1 ? " new graph: " : " new graphs: ");
      for (int i = 0; i < ordered.size(); i++) {
        if (i > 0) {
          b.append(", ");
        }
        b.append(clause(ordered.get(i)));
      }
      return b.toString();
    }

    private static String clause(List<Reason> g) {
      Reason r = g.getFirst();
      int n = g.size();
      boolean only = g.stream().allMatch(Reason::only);
      String names = names(g);
      if (r.relative() == null) {
        return n + (n == 1 ? " has" : " have") + " no relative (" + names + ")";
      }
      String head = n + (n == 1 ? " differs from a cached graph " : " differ from cached graphs ");
      if (r.change() != null) {
        return head + (only ? "only in " : "in ") + r.label() + " (" + r.change() + ": " + names + ")";
      }
      if (r.inVerdictsWords() && g.stream().map(Reason::label).distinct().count() > 1) {
        return head + "in other ways (" + names + "; see xlac cache why)";
      }
      if (r.inVerdictsWords()) {
        return head + "(" + r.label() + ": " + names + ")";
      }
      return head + (only ? "only in " : "in ") + r.label() + " (" + names + ")";
    }

    private static String names(List<Reason> g) {
      Map<String, Long> counts = g.stream().collect(Collectors.groupingBy(Reason::module, LinkedHashMap::new,
          Collectors.counting()));
      List<String> distinct = counts.entrySet().stream()
          .map(e -> e.getValue() == 1 ? e.getKey() : e.getKey() + " x" + e.getValue()).toList();
      if (distinct.size() <= NAMES_SHOWN) {
        return String.join(", ", distinct);
      }
      return String.join(", ", distinct.subList(0, NAMES_SHOWN)) + " and " + (distinct.size() - NAMES_SHOWN) + " more";
    }
  }

  /**
   * Explains each of a run's new graphs against the graphs the cache held before the run: those
   * with the same module name, not among {@code newGraphs}; when none of them can be matched, those
   * of like structure under other names ({@link #structuralCandidates}). The cache is listed once.
   *
   * @param newGraphs fingerprint -> module name of the graphs this run added, in the order they were added
   */
  public static Summary explain(CacheStore store, SequencedMap<GraphFingerprint, String> newGraphs) {
    if (newGraphs.isEmpty()) {
      return Summary.NONE;
    }
    Set<String> names = Set.copyOf(newGraphs.values());
    Map<String, List<GraphInfo>> byName = new HashMap<>();
    Map<GraphFingerprint, GraphInfo> newInfo = new HashMap<>();
    List<GraphInfo> before = new ArrayList<>();
    for (GraphInfo g : store.graphs()) {
      if (newGraphs.containsKey(g.fingerprint())) {
        newInfo.put(g.fingerprint(), g);
        continue;
      }
      before.add(g);
      if (names.contains(g.moduleName())) {
        byName.computeIfAbsent(g.moduleName(), k -> new ArrayList<>()).add(g);
      }
    }
    Comparator<GraphInfo> newestFirst = Comparator.comparing(GraphInfo::lastSeen).reversed()
        .thenComparing(g -> g.fingerprint().value());
    byName.values().forEach(l -> l.sort(newestFirst));
    before.sort(newestFirst);
    long[] budget = {STRUCTURAL_BYTES};
    // One module name at a time, so that only its candidates are held (read once for all its new graphs).
    Map<String, List<GraphFingerprint>> newByName = new LinkedHashMap<>();
    newGraphs.forEach((fp, name) -> newByName.computeIfAbsent(name, k -> new ArrayList<>()).add(fp));
    Map<GraphFingerprint, Reason> found = new HashMap<>();
    newByName.forEach((name, fps) -> {
      Map<GraphFingerprint, LoadedModule> loaded = new HashMap<>();
      for (GraphFingerprint fp : fps) {
        long bytes = newInfo.containsKey(fp) ? newInfo.get(fp).hloBytes() : 0;
        List<GraphInfo> sameName = byName.getOrDefault(name, List.of());
        // Read (again: the run did not keep it) only a graph that has someone to be compared with.
        LoadedModule self = sameName.isEmpty() && structuralCandidates(name, bytes, before).isEmpty() ? null
            : load(store, fp);
        found.put(fp, self == null ? noRelative(fp, name, 0) : reason(store, fp, name, self, bytes, sameName, before,
            loaded, budget));
      }
    });
    List<Reason> reasons = new ArrayList<>();
    newGraphs.keySet().forEach(fp -> reasons.add(found.get(fp)));
    return new Summary(corroborated(reasons), before.size());
  }

  /**
   * A run's evidence shared: a graph whose dimension 0 (or 1) of its entry parameters changed from
   * a to b, without evidence of its own for calling that the batch size (sequence length), is
   * called so when another graph of the same run has that evidence for the same a -> b (a training
   * step's data inputs beside its weights): jit_argmax of a batch of logits changes with the batch
   * size. A count that changed some other way (jit_unstack of 2 keys, then 16) stays plain.
   */
  static List<Reason> corroborated(List<Reason> reasons) {
    Map<String, Set<String>> evidenced = new HashMap<>();
    for (Reason r : reasons) {
      if (r.change() != null && (r.label().equals(DiffReason.BATCH) || r.label().equals(DiffReason.SEQUENCE))) {
        evidenced.computeIfAbsent(r.label(), k -> new java.util.HashSet<>()).add(r.change());
      }
    }
    if (evidenced.isEmpty()) {
      return reasons;
    }
    List<Reason> out = new ArrayList<>(reasons.size());
    for (Reason r : reasons) {
      String label = DiffReason.evidencedAs(r.label());
      if (label != null && evidenced.getOrDefault(label, Set.of()).contains(r.change())) {
        r = new Reason(r.graph(), r.module(), r.relative(), r.relativeModule(), r.verdict(), label, r.change(),
            r.only(), r.compared());
      }
      out.add(r);
    }
    return out;
  }

  /**
   * {@code xlac cache why FINGERPRINT}: {@link #explainOne(CacheStore, GraphFingerprint)} for the graph a
   * fingerprint names.
   *
   * @param fingerprint a fingerprint or a unique prefix of at least 6 hex digits
   * @throws XlacException exit code 2 when it is not a fingerprint, names no graph or more than one,
   *     or the graph cannot be read
   */
  public static Reason explainOne(CacheStore store, String fingerprint) {
    return explainOne(store, store.resolve(fingerprint));
  }

  /**
   * {@code xlac cache why}: the same for one graph of the cache, against the other graphs of its
   * name (those first seen before it come first, then the most recently seen), and when none of
   * them can be matched, against graphs of like structure under other names.
   */
  public static Reason explainOne(CacheStore store, GraphFingerprint fp) {
    GraphInfo self = store.graph(fp).orElseThrow(() -> XlacException.badInput(
        "no graph in cache " + store.directory() + " has fingerprint " + fp.value()));
    List<GraphInfo> others = new ArrayList<>();
    for (GraphInfo g : store.graphs()) {
      if (!g.fingerprint().equals(fp)) {
        others.add(g);
      }
    }
    others.sort(Comparator.<GraphInfo, Boolean>comparing(g -> g.firstSeen().isAfter(self.firstSeen()))
        .thenComparing(Comparator.comparing(GraphInfo::lastSeen).reversed())
        .thenComparing(g -> g.fingerprint().value()));
    List<GraphInfo> candidates = others.stream().filter(g -> g.moduleName().equals(self.moduleName())).toList();
    LoadedModule module = load(store, fp);
    if (module == null) {
      throw XlacException.badInput("graph " + fp.shortForm() + " in cache " + store.directory()
          + " cannot be read (it is damaged; `xlac cache verify --repair` removes it)");
    }
    return reason(store, fp, self.moduleName(), module, self.hloBytes(), candidates, others, new HashMap<>(),
        new long[] {STRUCTURAL_BYTES});
  }

  /**
   * The nearest relative among {@code sameName} (the first {@link #MAX_CANDIDATES}); when none of them
   * matches structurally, among {@link #structuralCandidates} of {@code others}, of which only a close
   * one (at least half of the larger module matched) counts.
   */
  private static Reason reason(CacheStore store, GraphFingerprint fp, String name, LoadedModule self, long selfBytes,
      List<GraphInfo> sameName, List<GraphInfo> others, Map<GraphFingerprint, LoadedModule> loaded, long[] budget) {
    NearestRelative<GraphInfo> n = new NearestRelative<>(self);
    for (GraphInfo c : sameName.subList(0, Math.min(MAX_CANDIDATES, sameName.size()))) {
      n.consider(c, loaded.computeIfAbsent(c.fingerprint(), k -> load(store, k)), false);
    }
    if (!n.matched()) {
      for (GraphInfo c : structuralCandidates(name, selfBytes, others)) {
        if (budget[0] < c.hloBytes()) {
          break;
        }
        budget[0] -= c.hloBytes();
        n.consider(c, load(store, c.fingerprint()), true); // not kept: each is read for one graph
      }
    }
    if (n.candidate() == null) {
      return noRelative(fp, name, n.compared());
    }
    return Reason.of(fp, name, n.candidate().fingerprint(), n.candidate().moduleName(), DiffReason.of(n.diff()),
        n.compared());
  }

  /**
   * Graphs under other module names that may be the same program up to shapes, constants or a few
   * instructions (a renamed function; PyTorch/XLA's {@code SyncTensorsGraph.N}, whose N changes with
   * the graph): at most {@link #MAX_CANDIDATES}, of a serialized size within 4x of the graph's, those
   * whose name is the same but for a trailing number first, then the nearest in size.
   */
  static List<GraphInfo> structuralCandidates(String name, long bytes, List<GraphInfo> others) {
    String family = family(name);
    double size = Math.max(1, bytes);
    return others.stream()
        .filter(g -> !g.moduleName().equals(name))
        .filter(g -> bytes <= 0 || Math.abs(Math.log(Math.max(1, g.hloBytes()) / size)) <= Math.log(4))
        .sorted(Comparator.<GraphInfo, Boolean>comparing(g -> !family(g.moduleName()).equals(family))
            .thenComparingDouble(g -> Math.abs(Math.log(Math.max(1, g.hloBytes()) / size))))
        .limit(MAX_CANDIDATES)
        .toList();
  }

  /** A module name without a trailing number: {@code SyncTensorsGraph.257} -> {@code SyncTensorsGraph}. */
  static String family(String name) {
    return name.replaceFirst("[._-]?\\d+$", "");
  }

  private static Reason noRelative(GraphFingerprint fp, String name, int compared) {
    return new Reason(fp, name, null, null, null, "no relative", null, false, compared);
  }

  /** A graph of the cache read for diffing, or null when it cannot be (damaged, unreadable). */
  private static LoadedModule load(CacheStore store, GraphFingerprint fp) {
    try {
      return Diffs.readForDiff(store, fp);
    } catch (RuntimeException e) {
      return null;
    }
  }
}
