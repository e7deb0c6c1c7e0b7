package dev.xlac.hlo;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * What a {@link GraphDiff} (relative -> graph) says in a few words: "batch size (32 -> 48)", "dimension 0
 * of parameter 2 (8 -> 16)", "a constant (1.5 -> 2.5)", "dtype (f32 -> bf16)", "12 added instructions",
 * else the diff's verdict. Also how far apart the two are ({@link #distance}), so that the nearest of
 * several relatives can be chosen, and whether one under another name is close enough to count.
 * pipeline/README.md, "Why a graph is new", has the rules.
 *
 * @param verdict the diff's verdict
 * @param label what differs, as a noun phrase: {@code batch size}, {@code sequence length}, {@code dtype},
 *     {@code a constant}, {@code 3 constants}, {@code 12 added instructions}, {@code entry parameter shapes},
 *     or the verdict's first clause
 * @param change the values, e.g. {@code 32 -> 48}, or null
 * @param only nothing else differs (beyond shapes and constants that follow from the change)
 */
public record DiffReason(String verdict, String label, String change, boolean only) {
  public static final String BATCH = "batch size";
  public static final String SEQUENCE = "sequence length";

  /** Attributes that hold sizes: a change of a dimension changes them too (a slice's bounds over the batch). */
  private static final Set<String> SIZE_FIELDS = Set.of("slice_dimensions", "dynamic_slice_sizes", "window",
      "padding_config");

  /** An array's element type in a shape written as XLA's text writes it: the {@code f32} of {@code f32[8]}. */
  private static final Pattern ARRAY_TYPE = Pattern.compile("([a-z][a-z0-9]*)\\[");

  /** E.g. {@code batch size (32 -> 48)}, {@code 12 added instructions}. */
  public String text() {
    return change == null ? label : label + " (" + change + ")";
  }

  /** The label is the diff's verdict (its first clause): no shorter reason was found. */
  public boolean inVerdictsWords() {
    return verdict != null && change == null && (verdict.equals(label) || verdict.startsWith(label + "; "));
  }

  /**
   * What a plain dimension label is called when other graphs of the same run give evidence for it (the
   * same change, called so): {@link #BATCH} for "dimension 0 of ...", {@link #SEQUENCE} for "dimension 1
   * of ...", else null.
   */
  public static String evidencedAs(String label) {
    return label.startsWith("dimension 0 of ") ? BATCH : label.startsWith("dimension 1 of ") ? SEQUENCE : null;
  }

  /**
   * A relative under another name counts only when the structure was matched, no matched instruction
   * changed its opcode, and the instructions added or removed are at most half of the larger module
   * (shapes and constants may differ freely): the same program up to shapes, constants and a few
   * instructions, not another small program that happens to align (an add where a multiply was).
   */
  public static boolean closeUnderAnotherName(GraphDiff d) {
    if (!d.matching().matched() || !d.replaced().isEmpty()) {
      return false;
    }
    long changed = 0;
    for (int delta : d.opcodeDeltas().values()) {
      changed += Math.abs(delta);
    }
    return 2 * changed <= Math.max(d.a().instructions(), d.b().instructions());
  }

  /** How far apart two modules are: the number of changes the diff found; an unmatched pair is farthest. */
  public static long distance(GraphDiff d) {
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
  public static DiffReason of(GraphDiff d) {
    String verdict = d.verdict();
    List<GraphDiff.Kind> kinds = d.kinds();
    List<GraphDiff.ParameterChange> params = d.parameters();
    if (d.a().parameters().size() != d.b().parameters().size()) {
      DiffReason r = parameterCount(d);
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
        return new DiffReason(verdict, label, c.from() + " -> " + c.to(), only);
      }
      boolean only = onlyFollowing(d, Set.of(GraphDiff.Kind.PARAMETERS), -1, -1);
      return new DiffReason(verdict, "entry parameter shapes", null, only);
    }
    String dtype = d.matching().matched() ? dtypeChange(d) : null;
    if (dtype != null) {
      // Every element type that changed (entry parameters, result, matched instructions) changed one way.
      boolean retypedOnly = params.stream().allMatch(p -> p.from() != null && p.to() != null && p.elementType()
          && p.dims().isEmpty() && sameRank(p.from(), p.to()));
      boolean only = retypedOnly && Set.of(GraphDiff.Kind.PARAMETERS, GraphDiff.Kind.SHAPES).containsAll(kinds);
      return new DiffReason(verdict, "dtype", dtype, only);
    }
    if (params.isEmpty() && kinds.contains(GraphDiff.Kind.SHAPES)) {
      // Nothing in changed shape but the instructions and the result: say how the result changed.
      String ra = HloShapes.withoutLayout(d.a().result());
      String rb = HloShapes.withoutLayout(d.b().result());
      if (!ra.equals(rb)) {
        boolean only = Set.of(GraphDiff.Kind.SHAPES).containsAll(kinds);
        return new DiffReason(verdict, "result shape", ra + " -> " + rb, only);
      }
    }
    if (kinds.equals(List.of(GraphDiff.Kind.CONSTANTS))) {
      if (d.constants().size() == 1) {
        GraphDiff.ConstantChange c = d.constants().getFirst();
        String change = c.from() != null && c.to() != null && c.from().length() <= 40 && c.to().length() <= 40
            ? c.from() + " -> " + c.to() : null;
        return new DiffReason(verdict, "a constant", change, true);
      }
      List<String> pairs = d.constants().stream().filter(c -> c.from() != null && c.to() != null
          && c.from().length() <= 40 && c.to().length() <= 40).map(c -> c.from() + " -> " + c.to()).distinct().toList();
      String change = pairs.isEmpty() ? null : pairs.size() <= 2 ? String.join(", ", pairs)
          : String.join(", ", pairs.subList(0, 2)) + " and " + (pairs.size() - 2) + " more";
      return new DiffReason(verdict, d.constants().size() + " constants", change, true);
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
      return new DiffReason(verdict, label, null, only);
    }
    String first = verdict.split("; ", 2)[0];
    return new DiffReason(verdict, first, null, false);
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
  private static String dimensionLabel(GraphDiff d, List<GraphDiff.ParameterChange> params, Set<Integer> dims) {
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
  private static String dtypeChange(GraphDiff d) {
    Set<String> pairs = new TreeSet<>();
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
    Matcher m = ARRAY_TYPE.matcher(shape);
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
  private static DiffReason parameterCount(GraphDiff d) {
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
    return new DiffReason(d.verdict(), label, null, false);
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
