package dev.xlac.hlo;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What differs between two HLO modules, and a one-line verdict first (what {@code xlac diff}
 * prints; hlo/README.md, "Diffs"). The verdict is "same program" exactly when the fingerprints
 * are equal. Otherwise it is the shortest true description of the difference that the structural
 * match finds, or, where the structure cannot be matched, a line that says so.
 *
 * <p>The structured fields are the verdict's parts, for callers that explain in their own words
 * (why a graph is new): which entry parameters changed shape and in which dimensions, how many
 * instructions changed shape with them, which constants and attributes changed, which
 * instructions and computations were added or removed, and the per-opcode count deltas.
 *
 * @param same the fingerprints are equal
 * @param verdict the one line
 * @param kinds what kinds of difference were found, most telling first (empty when {@code same})
 * @param a the first module
 * @param b the second module
 * @param matching how the structure was matched
 * @param parameters entry parameters whose shape changed, or that were added or removed
 * @param shapeChanges instructions other than entry parameters whose only change is their shape
 * @param constants changed constants
 * @param attributes instructions with changed attributes (fields other than shape and literal)
 * @param replaced matched instructions whose opcode changed
 * @param added instructions added in matched computations, grouped by computation and opcode
 * @param removed instructions removed from matched computations, grouped the same way
 * @param computationsAdded computations of B with no match in A
 * @param computationsRemoved computations of A with no match in B
 * @param rewired matched instructions that are the same but take other operands or callees
 * @param opcodeDeltas opcode -> count in B minus count in A, for opcodes whose count changed
 * @param moduleFields module-level fields that differ (aliasing, SPMD settings, ...)
 * @param elementTypes matched instructions (entry parameters included) whose array element type changed,
 *     grouped by the change, most frequent first
 */
public record GraphDiff(
    boolean same,
    String verdict,
    List<Kind> kinds,
    Side a,
    Side b,
    Matching matching,
    List<ParameterChange> parameters,
    int shapeChanges,
    List<ConstantChange> constants,
    List<AttributeChange> attributes,
    List<Replacement> replaced,
    List<InstructionGroup> added,
    List<InstructionGroup> removed,
    List<ComputationDelta> computationsAdded,
    List<ComputationDelta> computationsRemoved,
    int rewired,
    Map<String, Integer> opcodeDeltas,
    List<String> moduleFields,
    List<ElementTypeChange> elementTypes) {

  /** The kinds of difference, in the order the verdict names them. */
  public enum Kind {
    PARAMETERS, CONSTANTS, INSTRUCTIONS, COMPUTATIONS, ATTRIBUTES, OPCODES, SHAPES, OPERANDS, MODULE, UNMATCHED, UNLOCATED;

    public String jsonName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** One module: where it came from, its size, and its entry computation's parameters and result. */
  public record Side(String source, String module, GraphFingerprint fingerprint, int computations, int instructions,
      List<Parameter> parameters, String result) {}

  /** An entry parameter by its number, with its shape and layout as XLA's text writes them. */
  public record Parameter(long number, String shape) {}

  /**
   * @param matched every matched computation's instructions were matched
   * @param reason why not, when not matched
   */
  public record Matching(boolean matched, int computations, int instructions, String reason) {}

  /** One dimension of a parameter that changed size. */
  public record DimChange(int dim, long from, long to) {}

  /**
   * An entry parameter whose shape changed ({@code from} and {@code to} set), or that was added
   * ({@code from} null) or removed ({@code to} null). {@code dims} lists changed dimension sizes
   * when the element type and rank stayed; {@code elementType} says whether the element type changed.
   */
  public record ParameterChange(long number, String from, String to, List<DimChange> dims, boolean elementType) {}

  /**
   * A changed constant: where it is ({@code computation} is null for the entry computation), its
   * shape before and after, its values before and after (written out for up to 8 elements, else a
   * size), and how many instructions use it.
   */
  public record ConstantChange(String computation, String shapeA, String shapeB, String from, String to, int users) {}

  /** An instruction whose attributes changed: which one ("parameter 1", "`all-reduce`"), and the fields. */
  public record AttributeChange(String computation, String instruction, String opcode, List<String> fields) {}

  /** A matched instruction whose opcode changed. */
  public record Replacement(String computation, String from, String to) {}

  /** {@code count} instructions of one opcode added to or removed from one computation (null: the entry). */
  public record InstructionGroup(String computation, String opcode, int count) {}

  /**
   * {@code instructions} matched instructions (entry parameters included) whose array shape's element
   * type changed from {@code from} to {@code to} ({@code f32}, {@code bf16}, as XLA's text writes them).
   */
  public record ElementTypeChange(String from, String to, int instructions) {}

  /** A computation added or removed, by name (for display only), with its instruction count. */
  public record ComputationDelta(String computation, int instructions) {}

  /** One entry parameter number with its shape in A and in B (null where that side has no such parameter). */
  public record ParameterRow(long number, String a, String b) {}

  /** Both sides' entry parameters aligned by number, in number order (what the details print). */
  public List<ParameterRow> parameterRows() {
    return parameterRows(a, b);
  }

  static List<ParameterRow> parameterRows(Side a, Side b) {
    java.util.TreeMap<Long, String[]> rows = new java.util.TreeMap<>();
    a.parameters().forEach(p -> rows.computeIfAbsent(p.number(), k -> new String[2])[0] = p.shape());
    b.parameters().forEach(p -> rows.computeIfAbsent(p.number(), k -> new String[2])[1] = p.shape());
    return rows.entrySet().stream().map(e -> new ParameterRow(e.getKey(), e.getValue()[0], e.getValue()[1])).toList();
  }

  /** Compares two modules; both must be valid (as {@link HloModuleReader} returns them). */
  public static GraphDiff of(LoadedModule a, LoadedModule b) {
    GraphDiff d;
    try {
      d = new GraphDiffer(a, b).diff();
    } catch (InternalError | RuntimeException e) {
      // A module read from a mapping of its file (a large file) fails this way when the file changes meanwhile.
      a.checkUnchanged();
      b.checkUnchanged();
      throw e;
    }
    a.checkUnchanged();
    b.checkUnchanged();
    return d;
  }

  /** The stable {@code --json} form (hlo/README.md, "Diffs": the key set is stable). */
  public Map<String, Object> toJson() {
    Map<String, Object> j = new LinkedHashMap<>();
    j.put("same", same);
    j.put("verdict", verdict);
    j.put("kinds", kinds.stream().map(Kind::jsonName).toList());
    j.put("a", side(a));
    j.put("b", side(b));
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("matched", matching.matched());
    m.put("computations", matching.computations());
    m.put("instructions", matching.instructions());
    m.put("reason", matching.reason());
    j.put("matching", m);
    j.put("parameters", parameters.stream().map(p -> {
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("number", p.number());
      o.put("from", p.from());
      o.put("to", p.to());
      o.put("dims", p.dims().stream().map(d -> Map.of("dim", d.dim(), "from", d.from(), "to", d.to())).toList());
      o.put("element_type", p.elementType());
      return o;
    }).toList());
    j.put("shape_changes", shapeChanges);
    j.put("constants", constants.stream().map(c -> {
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("computation", c.computation());
      o.put("shape_a", c.shapeA());
      o.put("shape_b", c.shapeB());
      o.put("from", c.from());
      o.put("to", c.to());
      o.put("users", c.users());
      return o;
    }).toList());
    j.put("attributes", attributes.stream().map(c -> {
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("computation", c.computation());
      o.put("instruction", c.instruction());
      o.put("opcode", c.opcode());
      o.put("fields", c.fields());
      return o;
    }).toList());
    j.put("replaced", replaced.stream().map(r -> {
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("computation", r.computation());
      o.put("from", r.from());
      o.put("to", r.to());
      return o;
    }).toList());
    j.put("instructions_added", groups(added));
    j.put("instructions_removed", groups(removed));
    j.put("computations_added", deltas(computationsAdded));
    j.put("computations_removed", deltas(computationsRemoved));
    j.put("rewired", rewired);
    j.put("opcodes", opcodeDeltas);
    j.put("module_fields", moduleFields);
    j.put("element_types", elementTypes.stream().map(e -> {
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("from", e.from());
      o.put("to", e.to());
      o.put("instructions", e.instructions());
      return o;
    }).toList());
    return j;
  }

  private static Map<String, Object> side(Side s) {
    Map<String, Object> o = new LinkedHashMap<>();
    o.put("source", s.source());
    o.put("module", s.module());
    o.put("fingerprint", s.fingerprint().value());
    o.put("computations", s.computations());
    o.put("instructions", s.instructions());
    o.put("parameters", s.parameters().stream().map(p -> {
      Map<String, Object> q = new LinkedHashMap<>();
      q.put("number", p.number());
      q.put("shape", p.shape());
      return q;
    }).toList());
    o.put("result", s.result());
    return o;
  }

  private static List<Object> groups(List<InstructionGroup> g) {
    return g.stream().map(x -> {
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("computation", x.computation());
      o.put("opcode", x.opcode());
      o.put("count", x.count());
      return (Object) o;
    }).toList();
  }

  private static List<Object> deltas(List<ComputationDelta> d) {
    return d.stream().map(x -> {
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("computation", x.computation());
      o.put("instructions", x.instructions());
      return (Object) o;
    }).toList();
  }
}
