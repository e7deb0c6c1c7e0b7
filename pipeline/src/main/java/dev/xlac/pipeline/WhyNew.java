package dev.xlac.pipeline;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.GraphInfo;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphDiff;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloShapes;
import dev.xlac.hlo.LoadedModule;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SequencedMap;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Why a graph was not a cache hit: the nearest graph the cache already had (same module name, the
 * {@link #MAX_CANDIDATES} most recently seen, compared by {@link GraphDiff}; fewest changes wins; when
 * none of them matches structurally, graphs of like structure under other names) and a short reason
 * derived from their diff ("batch size (32 -> 48)", "dimension 0 of parameter 2 (8 -> 16)", "a
 * constant (1.5 -> 2.5)", "dtype (f32 -> bf16)", "12 added instructions", else the diff's verdict; "no
 * relative" when the cache has no related graph). {@link #explain} does it for the new graphs of a run
 * and groups the reasons into one summary line; {@link #explainOne} does it for one graph of the cache
 * ({@code xlac cache why}). pipeline/README.md, "Why a graph is new", has the rules.
 */
public final class WhyNew {
  /** At most this many cached graphs are compared per new graph, so that a run stays fast. */
  public static final int MAX_CANDIDATES = 8;

  private static final String BATCH = "batch size";
  private static final String SEQUENCE = "sequence length";

  /** Serialized bytes of graphs under other names read per run to find relatives by structure. */
  static final long STRUCTURAL_BYTES = 512L << 20;

  /** Names listed per group in the summary line before "and N more". */
  private static final int NAMES_SHOWN = 6;

  /** Attributes that hold sizes: a change of a dimension changes them too (a slice's bounds over the batch). */
  private static final Set<String> SIZE_FIELDS = Set.of("slice_dimensions", "dynamic_slice_sizes", "window",
      "padding_config");

  /** An array's element type in a shape written as XLA's text writes it: the {@code f32} of {@code f32[8]}. */
  private static final java.util.regex.Pattern ARRAY_TYPE = java.util.regex.Pattern.compile("([a-z][a-z0-9]*)\\[");

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
    /** E.g. {@code batch size (32 -> 48)}, {@code 12 added instructions}, {@code no relative}. */
    public String text() {
      return change == null ? label : label + " (" + change + ")";
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
      return verdict != null && change == null && (verdict.equals(label) || verdict.startsWith(label + "; "));
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
      if (r.change() != null && (r.label().equals(BATCH) || r.label().equals(SEQUENCE))) {
        evidenced.computeIfAbsent(r.label(), k -> new java.util.HashSet<>()).add(r.change());
      }
    }
    if (evidenced.isEmpty()) {
      return reasons;
    }
    List<Reason> out = new ArrayList<>(reasons.size());
    for (Reason r : reasons) {
      String label = r.label().startsWith("dimension 0 of ") ? BATCH
          : r.label().startsWith("dimension 1 of ") ? SEQUENCE : null;
      if (label != null && evidenced.getOrDefault(label, Set.of()).contains(r.change())) {
        r = new Reason(r.graph(), r.module(), r.relative(), r.relativeModule(), r.verdict(), label, r.change(),
            r.only(), r.compared());
      }
      out.add(r);
    }
    return out;
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
    Nearest n = new Nearest();
    for (GraphInfo c : sameName.subList(0, Math.min(MAX_CANDIDATES, sameName.size()))) {
      n.consider(c, loaded.computeIfAbsent(c.fingerprint(), k -> load(store, k)), self, false);
    }
    if (n.best == null || !n.best.matching().matched()) {
      for (GraphInfo c : structuralCandidates(name, selfBytes, others)) {
        if (budget[0] < c.hloBytes()) {
          break;
        }
        budget[0] -= c.hloBytes();
        n.consider(c, load(store, c.fingerprint()), self, true); // not kept: each is read for one graph
      }
    }
    if (n.best == null) {
      return noRelative(fp, name, n.compared);
    }
    return describe(fp, name, n.bestInfo.fingerprint(), n.bestInfo.moduleName(), n.best, n.compared);
  }

  /** The nearest candidate so far (fewest changes, {@link #cost}). */
  private static final class Nearest {
    GraphDiff best;
    GraphInfo bestInfo;
    long bestCost = Long.MAX_VALUE;
    int compared;

    void consider(GraphInfo c, LoadedModule other, LoadedModule self, boolean onlyIfClose) {
      if (other == null) {
        return;
      }
      GraphDiff d;
      try {
        d = GraphDiff.of(other, self);
      } catch (RuntimeException e) { // a diff that fails explains nothing; the run goes on
        return;
      }
      compared++;
      if (onlyIfClose && !close(d)) {
        return;
      }
      long cost = cost(d);
      if (cost < bestCost) {
        best = d;
        bestInfo = c;
        bestCost = cost;
      }
    }
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

  /**
   * A relative under another name counts only when the structure was matched, no matched instruction
   * changed its opcode, and the instructions added or removed are at most half of the larger module
   * (shapes and constants may differ freely): the same program up to shapes, constants and a few
   * instructions, not another small program that happens to align (an add where a multiply was).
   */
  static boolean close(GraphDiff d) {
    if (!d.matching().matched() || !d.replaced().isEmpty()) {
      return false;
    }
    long changed = 0;
    for (int delta : d.opcodeDeltas().values()) {
      changed += Math.abs(delta);
    }
    return 2 * changed <= Math.max(d.a().instructions(), d.b().instructions());
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

  /** How far apart two modules are: the number of changes the diff found; an unmatched pair is farthest. */
  static long cost(GraphDiff d) {
    if (d.same()) {
      return 0;
    }
    if (!d.matching().matched()) {
      return Integer.MAX_VALUE + (long) Math.abs(d.a().instructions() - d.b().instructions());
    }
    // An entry parameter change weighs more the more dimensions it changes: of two relatives that
    // differ in as many instructions, the one a single hyperparameter away is the nearer.
    long n = 0;
    for (GraphDiff.ParameterChange p : d.parameters()) {
      n += 1000L * Math.max(1, p.dims().size());
      if (p.elementType() && isInteger(elementType(p.from())) != isInteger(elementType(p.to()))) {
        n += 500; // f32 -> bf16 is nearer than s32 -> bf16: a relative of the same kind of number wins a tie
      }
    }
    n += d.shapeChanges() + d.constants().size() + d.attributes().size()
        + d.replaced().size() + d.rewired() + d.moduleFields().size();
    for (GraphDiff.InstructionGroup g : d.added()) {
      n += g.count();
    }
    for (GraphDiff.InstructionGroup g : d.removed()) {
      n += g.count();
    }
    for (GraphDiff.ComputationDelta c : d.computationsAdded()) {
      n += c.instructions();
    }
    for (GraphDiff.ComputationDelta c : d.computationsRemoved()) {
      n += c.instructions();
    }
    return Math.max(1, n);
  }

  /** The reason a diff (cached relative -> new graph) gives. */
  static Reason describe(GraphFingerprint fp, String name, GraphFingerprint relative, String relativeModule,
      GraphDiff d, int compared) {
    String verdict = d.verdict();
    List<GraphDiff.Kind> kinds = d.kinds();
    List<GraphDiff.ParameterChange> params = d.parameters();
    if (d.a().parameters().size() != d.b().parameters().size()) {
      Reason r = parameterCount(fp, name, relative, relativeModule, d, compared);
      if (r != null) {
        return r;
      }
    }
    boolean allResized = !params.isEmpty() && params.stream().allMatch(p -> p.from() != null && p.to() != null
        && !p.elementType() && !p.dims().isEmpty());
    if (allResized) {
      // One size changing the same way in every changed entry parameter.
      Set<String> changes = params.stream().flatMap(p -> p.dims().stream())
          .map(x -> x.from() + " -> " + x.to()).collect(Collectors.toSet());
      Set<Integer> dims = params.stream().flatMap(p -> p.dims().stream()).map(GraphDiff.DimChange::dim)
          .collect(Collectors.toSet());
      if (changes.size() == 1) {
        GraphDiff.DimChange c = params.getFirst().dims().getFirst();
        String label = dimensionLabel(d, params, dims);
        boolean only = onlyFollowing(d, Set.of(GraphDiff.Kind.PARAMETERS), c.from(), c.to());
        return new Reason(fp, name, relative, relativeModule, verdict, label, c.from() + " -> " + c.to(), only,
            compared);
      }
      boolean only = onlyFollowing(d, Set.of(GraphDiff.Kind.PARAMETERS), -1, -1);
      return new Reason(fp, name, relative, relativeModule, verdict, "entry parameter shapes", null, only, compared);
    }
    String dtype = d.matching().matched() ? dtypeChange(d) : null;
    if (dtype != null) {
      // Every element type that changed (entry parameters, result, matched instructions) changed one way.
      boolean retypedOnly = params.stream().allMatch(p -> p.from() != null && p.to() != null && p.elementType()
          && p.dims().isEmpty() && sameRank(p.from(), p.to()));
      boolean only = retypedOnly && Set.of(GraphDiff.Kind.PARAMETERS, GraphDiff.Kind.SHAPES).containsAll(kinds);
      return new Reason(fp, name, relative, relativeModule, verdict, "dtype", dtype, only, compared);
    }
    if (params.isEmpty() && kinds.contains(GraphDiff.Kind.SHAPES)) {
      // Nothing in changed shape but the instructions and the result: say how the result changed.
      String ra = HloShapes.withoutLayout(d.a().result());
      String rb = HloShapes.withoutLayout(d.b().result());
      if (!ra.equals(rb)) {
        boolean only = Set.of(GraphDiff.Kind.SHAPES).containsAll(kinds);
        return new Reason(fp, name, relative, relativeModule, verdict, "result shape", ra + " -> " + rb, only,
            compared);
      }
    }
    if (kinds.equals(List.of(GraphDiff.Kind.CONSTANTS))) {
      if (d.constants().size() == 1) {
        GraphDiff.ConstantChange c = d.constants().getFirst();
        String change = c.from() != null && c.to() != null && c.from().length() <= 40 && c.to().length() <= 40
            ? c.from() + " -> " + c.to() : null;
        return new Reason(fp, name, relative, relativeModule, verdict, "a constant", change, true, compared);
      }
      List<String> pairs = d.constants().stream().filter(c -> c.from() != null && c.to() != null
          && c.from().length() <= 40 && c.to().length() <= 40).map(c -> c.from() + " -> " + c.to()).distinct().toList();
      String change = pairs.isEmpty() ? null : pairs.size() <= 2 ? String.join(", ", pairs)
          : String.join(", ", pairs.subList(0, 2)) + " and " + (pairs.size() - 2) + " more";
      return new Reason(fp, name, relative, relativeModule, verdict, d.constants().size() + " constants", change, true,
          compared);
    }
    int added = d.added().stream().mapToInt(GraphDiff.InstructionGroup::count).sum()
        + d.computationsAdded().stream().mapToInt(GraphDiff.ComputationDelta::instructions).sum();
    int removed = d.removed().stream().mapToInt(GraphDiff.InstructionGroup::count).sum()
        + d.computationsRemoved().stream().mapToInt(GraphDiff.ComputationDelta::instructions).sum();
    boolean grew = added > 0 && removed == 0 && params.stream().allMatch(p -> p.from() == null);
    boolean shrank = removed > 0 && added == 0 && params.stream().allMatch(p -> p.to() == null);
    if (d.matching().matched() && (grew || shrank)) {
      String what = grew ? " added" : " removed";
      int n = grew ? added : removed;
      String label = n + what + " instruction" + (n == 1 ? "" : "s");
      if (!params.isEmpty()) {
        label += " and " + params.size() + what + " entry parameter" + (params.size() == 1 ? "" : "s");
      }
      boolean only = Set.of(GraphDiff.Kind.INSTRUCTIONS, GraphDiff.Kind.COMPUTATIONS, GraphDiff.Kind.PARAMETERS,
          GraphDiff.Kind.OPERANDS).containsAll(kinds);
      return new Reason(fp, name, relative, relativeModule, verdict, label, null, only, compared);
    }
    String first = verdict.split("; ", 2)[0];
    return new Reason(fp, name, relative, relativeModule, verdict, first, null, false, compared);
  }

  /**
   * What a size change of {@code dims} (one way in every changed entry parameter) is called. Dimension
   * 0 is the batch size only when the evidence says so: two or more entry parameters change it (inputs
   * and labels), or the one that changes is a batch of arrays (rank 2 or more) passed beside entry
   * parameters that did not change (the step's weights). Dimension 1 is the sequence length when a
   * changed parameter is a batch of token ids (an integer array of rank 2) and only dimension 1 changed.
   * Anything else is said plainly: {@code dimension 0 of parameter 2}, {@code dimension 1 of 3 entry
   * parameters}, or {@code entry parameter dimension} when the size changes in several dimensions.
   */
  static String dimensionLabel(GraphDiff d, List<GraphDiff.ParameterChange> params, Set<Integer> dims) {
    if (dims.size() != 1) {
      return "entry parameter dimension";
    }
    int dim = dims.iterator().next();
    if (dim == 0 && (params.size() >= 2 || (rank(params.getFirst().from()) >= 2
        && d.b().parameters().size() > params.size()))) {
      return BATCH;
    }
    if (dim == 1 && params.stream().anyMatch(p -> rank(p.from()) == 2 && isInteger(elementType(p.from())))) {
      return SEQUENCE;
    }
    return params.size() == 1 ? "dimension " + dim + " of parameter " + params.getFirst().number()
        : "dimension " + dim + " of " + params.size() + " entry parameters";
  }

  /**
   * The element type change {@code f32 -> bf16} when every element type that changed, in the entry
   * parameters, the result and the matched instructions, changed that one way; else null.
   */
  static String dtypeChange(GraphDiff d) {
    Set<String> pairs = new java.util.TreeSet<>();
    for (GraphDiff.ParameterChange p : d.parameters()) {
      if (p.from() != null && p.to() != null && p.elementType()) {
        pairs.add(elementType(p.from()) + " -> " + elementType(p.to()));
      }
    }
    List<String> ra = leafTypes(d.a().result());
    List<String> rb = leafTypes(d.b().result());
    if (ra.size() == rb.size()) {
      for (int i = 0; i < ra.size(); i++) {
        if (!ra.get(i).equals(rb.get(i))) {
          pairs.add(ra.get(i) + " -> " + rb.get(i));
        }
      }
    }
    d.elementTypes().forEach(t -> pairs.add(t.from() + " -> " + t.to()));
    return pairs.size() == 1 ? pairs.iterator().next() : null;
  }

  /** The element types of a shape's arrays, tuples flattened: {@code (f32[2], s32[])} -> f32, s32. */
  private static List<String> leafTypes(String shape) {
    List<String> out = new ArrayList<>();
    java.util.regex.Matcher m = ARRAY_TYPE.matcher(shape);
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  private static boolean sameRank(String a, String b) {
    return rank(a) == rank(b);
  }

  /** The rank of an array shape written as {@code f32[8,16]{1,0}}; -1 for anything else. */
  private static int rank(String shape) {
    int open = shape.indexOf('[');
    int close = shape.indexOf(']');
    if (shape.startsWith("(") || open < 0 || close < open) {
      return -1;
    }
    String dims = shape.substring(open + 1, close).strip();
    return dims.isEmpty() ? 0 : dims.split(",").length;
  }

  private static boolean isInteger(String type) {
    return type.matches("[su](2|4|8|16|32|64)");
  }

  /**
   * Entry parameters added or removed where the numbering shifts (a layer's weights in the middle of a
   * flattened pytree): when one side's parameter shapes are the other's plus some, the reason counts
   * them and the instructions that came or went with them.
   */
  private static Reason parameterCount(GraphFingerprint fp, String name, GraphFingerprint relative,
      String relativeModule, GraphDiff d, int compared) {
    List<String> a = d.a().parameters().stream().map(p -> HloShapes.withoutLayout(p.shape())).toList();
    List<String> b = d.b().parameters().stream().map(p -> HloShapes.withoutLayout(p.shape())).toList();
    boolean grew = b.size() > a.size();
    List<String> rest = new ArrayList<>(grew ? b : a);
    for (String x : grew ? a : b) {
      if (!rest.remove(x)) {
        return null;
      }
    }
    int k = rest.size();
    int delta = Math.abs(d.b().instructions() - d.a().instructions());
    String what = grew ? " added" : " removed";
    String label = k + what + " entry parameter" + (k == 1 ? "" : "s");
    if (delta > 0) {
      label += " and " + delta + (d.b().instructions() > d.a().instructions() ? " added" : " removed")
          + " instruction" + (delta == 1 ? "" : "s");
    }
    return new Reason(fp, name, relative, relativeModule, d.verdict(), label, null, false, compared);
  }

  /**
   * Whether the diff holds nothing but {@code kinds}, shape changes and constants that follow the
   * dimension change {@code from -> to}: a constant that changed shape, or a scalar-like one whose
   * values are the sizes or their reciprocals (a mean over the batch).
   */
  private static boolean onlyFollowing(GraphDiff d, Set<GraphDiff.Kind> kinds, long from, long to) {
    for (GraphDiff.Kind k : d.kinds()) {
      if (kinds.contains(k) || k == GraphDiff.Kind.SHAPES) {
        continue;
      }
      if (k == GraphDiff.Kind.ATTRIBUTES && from > 0 && d.attributes().stream()
          .allMatch(a -> SIZE_FIELDS.containsAll(a.fields()))) {
        continue;
      }
      if (k == GraphDiff.Kind.CONSTANTS && from > 0
          && d.constants().stream().allMatch(c -> followsDim(c, from, to))) {
        continue;
      }
      return false;
    }
    return true;
  }

  private static boolean followsDim(GraphDiff.ConstantChange c, long from, long to) {
    if (!Objects.equals(c.shapeA(), c.shapeB())) {
      return true;
    }
    Double a = uniform(c.from());
    Double b = uniform(c.to());
    if (a == null || b == null) {
      return false;
    }
    a = Math.abs(a); // -1/32 -> -1/64: a mean's factor, negated
    b = Math.abs(b);
    double ratio = (double) to / from;
    return (close(a, from) && close(b, to)) || (close(a, 1.0 / from) && close(b, 1.0 / to))
        || (a != 0 && (close(b / a, ratio) || close(a / b, ratio))); // a mean over more than the one dimension
  }

  private static boolean close(double x, double y) {
    return Math.abs(x - y) <= 1e-6 * Math.max(1, Math.abs(y));
  }

  /** The one value of a written-out constant whose elements are all equal, or null. */
  private static Double uniform(String values) {
    if (values == null) {
      return null;
    }
    String v = values.strip();
    if (v.startsWith("{") && v.endsWith("}")) {
      v = v.substring(1, v.length() - 1);
    }
    Double value = null;
    for (String part : v.split(",")) {
      double x;
      try {
        x = Double.parseDouble(part.strip());
      } catch (NumberFormatException e) {
        return null;
      }
      if (value != null && value != x) {
        return null;
      }
      value = x;
    }
    return value;
  }

  /** {@code f32} of {@code f32[8,8]{1,0}}. */
  private static String elementType(String shape) {
    int i = shape.indexOf('[');
    return i < 0 ? shape : shape.substring(0, i);
  }
}
