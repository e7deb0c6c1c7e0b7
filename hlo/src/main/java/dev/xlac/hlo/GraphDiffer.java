package dev.xlac.hlo;

import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import dev.xlac.hlo.GraphDiff.AttributeChange;
import dev.xlac.hlo.GraphDiff.ComputationDelta;
import dev.xlac.hlo.GraphDiff.ConstantChange;
import dev.xlac.hlo.GraphDiff.DimChange;
import dev.xlac.hlo.GraphDiff.InstructionGroup;
import dev.xlac.hlo.GraphDiff.Kind;
import dev.xlac.hlo.GraphDiff.Parameter;
import dev.xlac.hlo.GraphDiff.ParameterChange;
import dev.xlac.hlo.GraphDiff.Replacement;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.XlaDataProtos.LiteralProto;
import dev.xlac.hlo.proto.XlaDataProtos.PrimitiveType;
import dev.xlac.hlo.proto.XlaDataProtos.ShapeProto;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Computes a {@link GraphDiff}: both modules are indexed and their canonical forms hashed part by
 * part ({@link CanonicalParts}) in one pass each, the structure is matched ({@link GraphMatcher}),
 * and only the instructions whose canonical parts differ are parsed into protobuf objects and
 * compared field by field. Parameters and results are read from the entry computations' few
 * instructions. So a diff costs about two fingerprints plus the differences.
 */
final class GraphDiffer {
  /** Instruction fields that never count as a difference (names, ids, references, debug data), as in the fingerprint. */
  private static final Set<String> NOT_COMPARED = Set.of("name", "id", "operand_ids", "control_predecessor_ids",
      "called_computation_ids", "metadata", "statistics_viz", "original_value", "channel_id", "all_reduce_id");
  /** Module fields the fingerprint leaves out or the diff reports on its own. */
  private static final Set<String> MODULE_NOT_COMPARED = Set.of("name", "entry_computation_name", "id",
      "entry_computation_id", "computations", "schedule", "profile_info", "stack_frame_index",
      "original_value_recovery_table", "host_program_shape");
  private static final int MAX_LISTED = 1000;

  private final LoadedModule ma;
  private final LoadedModule mb;
  private HloWireIndex a;
  private HloWireIndex b;

  GraphDiffer(LoadedModule a, LoadedModule b) {
    this.ma = a;
    this.mb = b;
  }

  GraphDiff diff() {
    a = ma.index();
    b = mb.index();
    HloWireIndex.Opcodes opcodesA = a.opcodes();
    HloWireIndex.Opcodes opcodesB = b.opcodes();
    String[] opsA = opcodesA.names();
    String[] opsB = opcodesB.names();
    Map<Long, ShapeProto> paramsA = parameterShapes(a, opsA);
    Map<Long, ShapeProto> paramsB = parameterShapes(b, opsB);
    GraphDiff.Side sideA = side(ma, a, paramsA);
    GraphDiff.Side sideB = side(mb, b, paramsB);
    if (ma.fingerprint().equals(mb.fingerprint())) {
      return new GraphDiff(true, "same program", List.of(), sideA, sideB,
          new GraphDiff.Matching(true, a.computationCount(), a.instructionCount(), null), List.of(), 0, List.of(),
          List.of(), List.of(), List.of(), List.of(), List.of(), List.of(), 0, Map.of(), List.of(), List.of());
    }
    int[][] ids = GraphMatcher.opcodeIds(opcodesA, opcodesB);
    GraphMatcher m = new GraphMatcher(a, b, parts(ma, a), parts(mb, b), ids[0], ids[1]);
    m.run();
    return new Analysis(m, opcodesA, opcodesB, sideA, sideB, paramsA, paramsB).result();
  }

  private static CanonicalParts parts(LoadedModule m, HloWireIndex x) {
    CanonicalParts kept = m.keptParts();
    return kept != null ? kept : CanonicalParts.of(x);
  }

  static HloInstructionProto instruction(HloWireIndex x, int g) {
    try {
      return HloInstructionProto.parseFrom(x.buf.asSlice(x.instrStart[g], x.instrEnd[g] - x.instrStart[g])
          .asByteBuffer());
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException("a checked instruction failed to parse", e);
    }
  }

  private static GraphDiff.Side side(LoadedModule m, HloWireIndex x, Map<Long, ShapeProto> params) {
    int entry = x.entryPosition();
    String result = HloShapes.format(instruction(x, x.firstInstr[entry] + x.rootPosition(entry)).getShape());
    List<Parameter> list = params.entrySet().stream()
        .map(e -> new Parameter(e.getKey(), HloShapes.format(e.getValue()))).toList();
    return new GraphDiff.Side(m.file().toString(), m.moduleName(), m.fingerprint(), x.computationCount(),
        x.instructionCount(), list, result);
  }

  /** The entry computation's parameters by number, parsed once for the sides and the comparison. */
  private static Map<Long, ShapeProto> parameterShapes(HloWireIndex x, String[] ops) {
    Map<Long, ShapeProto> out = new TreeMap<>();
    int entry = x.entryPosition();
    int first = x.firstInstr[entry];
    for (int j = 0; j < x.instructionCount(entry); j++) {
      int g = first + x.canonicalInstruction(entry, j);
      if (ops[g].equals("parameter")) {
        HloInstructionProto in = instruction(x, g);
        out.put(in.getParameterNumber(), in.getShape());
      }
    }
    return out;
  }

  /** The comparison of two different modules once matched. */
  private final class Analysis {
    private final GraphMatcher m;
    private final HloWireIndex.Opcodes opcodesA;
    private final HloWireIndex.Opcodes opcodesB;
    private final String[] opsA;
    private final String[] opsB;
    private final GraphDiff.Side sideA;
    private final GraphDiff.Side sideB;
    private final List<ParameterChange> parameters = new ArrayList<>();
    private final List<ConstantChange> constants = new ArrayList<>();
    private final List<AttributeChange> attributes = new ArrayList<>();
    private final List<Replacement> replaced = new ArrayList<>();
    private final Map<List<String>, Integer> added = new LinkedHashMap<>();
    private final Map<List<String>, Integer> removed = new LinkedHashMap<>();
    private final List<ComputationDelta> computationsAdded = new ArrayList<>();
    private final List<ComputationDelta> computationsRemoved = new ArrayList<>();
    private final List<String> moduleFields = new ArrayList<>();
    private final Map<List<String>, Integer> retyped = new LinkedHashMap<>();
    private int shapeChanges;
    private int retypedShapeChanges;
    private int rewired;
    private int attributeChanges;
    private int constantChanges;
    private int otherChanges;

    private final Map<Long, ShapeProto> shapesA;
    private final Map<Long, ShapeProto> shapesB;

    Analysis(GraphMatcher m, HloWireIndex.Opcodes opcodesA, HloWireIndex.Opcodes opcodesB, GraphDiff.Side sideA,
        GraphDiff.Side sideB, Map<Long, ShapeProto> shapesA, Map<Long, ShapeProto> shapesB) {
      this.m = m;
      this.opcodesA = opcodesA;
      this.opcodesB = opcodesB;
      this.opsA = opcodesA.names();
      this.opsB = opcodesB.names();
      this.sideA = sideA;
      this.sideB = sideB;
      this.shapesA = shapesA;
      this.shapesB = shapesB;
    }

    /** A computation's name for display (null for the entry computation). */
    private String name(HloWireIndex x, int p) {
      if (p == x.entryPosition()) {
        return null;
      }
      String n = x.computationName(p);
      return n.isEmpty() ? "#" + x.compCanonical[p] : n;
    }

    GraphDiff result() {
      compareParameters();
      for (int ca = 0; ca < a.computationCount(); ca++) {
        int cb = m.compAtoB[ca];
        if (cb < 0) {
          computationsRemoved.add(new ComputationDelta(name(a, ca), a.instructionCount(ca)));
          continue;
        }
        compareComputation(ca, cb);
      }
      for (int cb = 0; cb < b.computationCount(); cb++) {
        if (m.compBtoA[cb] < 0) {
          computationsAdded.add(new ComputationDelta(name(b, cb), b.instructionCount(cb)));
        }
      }
      if (m.pa.module != m.pb.module) {
        compareModuleFields();
      }
      Map<String, Integer> deltas = opcodeDeltas();
      List<Kind> kinds = new ArrayList<>();
      List<String> clauses = new ArrayList<>();
      verdict(kinds, clauses, deltas);
      String line = clauses.size() <= 3 ? String.join("; ", clauses)
          : String.join("; ", clauses.subList(0, 3)) + "; and " + (clauses.size() - 3) + " more kinds of difference";
      boolean matched = m.unmatchedReason == null;
      return new GraphDiff(false, line, List.copyOf(kinds), sideA, sideB,
          new GraphDiff.Matching(matched, m.matchedComputations, m.matchedInstructions, m.unmatchedReason),
          List.copyOf(parameters), shapeChanges, List.copyOf(constants), List.copyOf(attributes), List.copyOf(replaced),
          groups(added), groups(removed), List.copyOf(computationsAdded), List.copyOf(computationsRemoved), rewired,
          deltas, List.copyOf(moduleFields), elementTypes());
    }

    private List<GraphDiff.ElementTypeChange> elementTypes() {
      return retyped.entrySet().stream().sorted(Map.Entry.<List<String>, Integer>comparingByValue().reversed())
          .map(e -> new GraphDiff.ElementTypeChange(e.getKey().get(0), e.getKey().get(1), e.getValue())).toList();
    }

    private List<InstructionGroup> groups(Map<List<String>, Integer> g) {
      return g.entrySet().stream().map(e -> new InstructionGroup(e.getKey().get(0), e.getKey().get(1), e.getValue()))
          .toList();
    }

    private Map<String, Integer> opcodeDeltas() {
      Map<String, Integer> d = new TreeMap<>();
      addCounts(opcodesA, -1, d);
      addCounts(opcodesB, 1, d);
      d.values().removeIf(v -> v == 0);
      return d;
    }

    /** Adds {@code sign} times each opcode's count to {@code d}, counted by the module's own opcode ids. */
    private static void addCounts(HloWireIndex.Opcodes ops, int sign, Map<String, Integer> d) {
      int[] counts = new int[ops.table().length];
      for (int id : ops.ids()) {
        counts[id]++;
      }
      for (int t = 0; t < counts.length; t++) {
        d.merge(ops.table()[t], sign * counts[t], Integer::sum);
      }
    }

    private void compareParameters() {
      for (GraphDiff.ParameterRow row : GraphDiff.parameterRows(sideA, sideB)) {
        long n = row.number();
        String from = row.a();
        String to = row.b();
        if (Objects.equals(from, to)) {
          continue;
        }
        List<DimChange> dims = new ArrayList<>();
        boolean type = false;
        if (from != null && to != null) {
          ShapeProto sa = shapesA.get(n);
          ShapeProto sb = shapesB.get(n);
          type = sa.getElementType() != sb.getElementType();
          if (sa.getDimensionsCount() == sb.getDimensionsCount()) {
            for (int d = 0; d < sa.getDimensionsCount(); d++) {
              if (sa.getDimensions(d) != sb.getDimensions(d)) {
                dims.add(new DimChange(d, sa.getDimensions(d), sb.getDimensions(d)));
              }
            }
          }
        }
        parameters.add(new ParameterChange(n, from, to, List.copyOf(dims), type));
      }
    }

    private void compareComputation(int ca, int cb) {
      String where = name(a, ca);
      boolean entry = ca == a.entryPosition();
      int firstA = a.firstInstr[ca];
      for (int j = 0; j < a.instructionCount(ca); j++) {
        int ga = firstA + a.canonicalInstruction(ca, j);
        int gb = m.instrAtoB[ga];
        if (gb < 0) {
          removed.merge(List.of(Objects.toString(where, ""), opsA[ga]), 1, Integer::sum);
          continue;
        }
        if (m.pa.local[ga] != m.pb.local[gb]) {
          compareInstruction(where, entry, ca, ga, gb);
        } else if (!sameReferences(ca, ga, gb)) {
          rewired++;
        }
      }
      int firstB = b.firstInstr[cb];
      for (int j = 0; j < b.instructionCount(cb); j++) {
        int gb = firstB + b.canonicalInstruction(cb, j);
        if (m.instrBtoA[gb] < 0) {
          added.merge(List.of(Objects.toString(where, ""), opsB[gb]), 1, Integer::sum);
        }
      }
    }

    private boolean sameReferences(int ca, int ga, int gb) {
      int na = a.opFrom[ga + 1] - a.opFrom[ga];
      if (na != b.opFrom[gb + 1] - b.opFrom[gb]) {
        return false;
      }
      int firstA = a.firstInstr[ca];
      int firstB = b.firstInstr[m.compAtoB[ca]];
      boolean explained = false;
      for (int e = 0; e < na; e++) {
        int opA = firstA + a.opPos[a.opFrom[ga] + e];
        int opB = firstB + b.opPos[b.opFrom[gb] + e];
        // An operand that was added or removed explains the change: the instruction is not rewired.
        explained |= m.instrAtoB[opA] < 0 || m.instrBtoA[opB] < 0;
        if (m.instrAtoB[opA] != opB && !explained) {
          return false;
        }
      }
      int nc = a.callFrom[ga + 1] - a.callFrom[ga];
      if (nc != b.callFrom[gb + 1] - b.callFrom[gb]) {
        return false;
      }
      for (int e = 0; e < nc; e++) {
        if (m.compAtoB[a.callPos[a.callFrom[ga] + e]] != b.callPos[b.callFrom[gb] + e]) {
          return false;
        }
      }
      return m.pa.refs[ga] == m.pb.refs[gb] || a.ctrlFrom[ga + 1] - a.ctrlFrom[ga] == b.ctrlFrom[gb + 1] - b.ctrlFrom[gb];
    }

    private void compareInstruction(String where, boolean entry, int ca, int ga, int gb) {
      HloInstructionProto ia = instruction(a, ga);
      HloInstructionProto ib = instruction(b, gb);
      if (!ia.getOpcode().equals(ib.getOpcode())) {
        if (replaced.size() < MAX_LISTED) {
          replaced.add(new Replacement(where, ia.getOpcode(), ib.getOpcode()));
        }
        otherChanges++;
        return;
      }
      List<String> fields = changedFields(ia, ib);
      boolean shape = fields.remove("shape");
      boolean literal = fields.remove("literal");
      boolean parameter = entry && ia.getOpcode().equals("parameter");
      boolean typeChanged = false;
      if (shape) {
        ShapeProto sa = ia.getShape();
        ShapeProto sb = ib.getShape();
        typeChanged = sa.getElementType() != sb.getElementType() && sa.getElementType() != PrimitiveType.TUPLE
            && sb.getElementType() != PrimitiveType.TUPLE;
        if (typeChanged) {
          retyped.merge(List.of(HloShapes.elementType(sa), HloShapes.elementType(sb)), 1, Integer::sum);
        }
      }
      if (!fields.isEmpty()) {
        attributeChanges++;
        if (attributes.size() < MAX_LISTED) {
          String which = ia.getOpcode().equals("parameter") ? "parameter " + ia.getParameterNumber()
              : "`" + ia.getOpcode() + "`";
          attributes.add(new AttributeChange(where, which, ia.getOpcode(), List.copyOf(fields)));
        }
      }
      if (literal) {
        constantChanges++;
        if (constants.size() < MAX_LISTED) {
          constants.add(new ConstantChange(where, HloShapes.format(ia.getShape()), HloShapes.format(ib.getShape()),
              Literals.describe(ia.getLiteral()), Literals.describe(ib.getLiteral()), users(a, ca, ga)));
        }
      } else if (shape && !parameter) {
        shapeChanges++;
        if (typeChanged) {
          retypedShapeChanges++;
        }
      }
      if (!shape && !literal && fields.isEmpty()) {
        // Equal field by field, yet canonically different: a channel numbering or an equivalent form.
        otherChanges++;
      }
    }

    private static int users(HloWireIndex x, int p, int g) {
      int first = x.firstInstr[p];
      int pos = g - first;
      int users = 0;
      for (int h = first; h < x.firstInstr[p + 1]; h++) {
        for (int e = x.opFrom[h]; e < x.opFrom[h + 1]; e++) {
          if (x.opPos[e] == pos) {
            users++;
            break;
          }
        }
      }
      return users;
    }

    private List<String> changedFields(Message ia, Message ib) {
      List<String> out = new ArrayList<>();
      for (FieldDescriptor f : ia.getDescriptorForType().getFields()) {
        if (NOT_COMPARED.contains(f.getName())) {
          continue;
        }
        if (!Objects.equals(ia.getField(f), ib.getField(f))) {
          out.add(f.getName());
        }
      }
      if (!ia.getUnknownFields().equals(ib.getUnknownFields())) {
        out.add("unknown fields");
      }
      return out;
    }

    private void compareModuleFields() {
      HloModuleProto x = ma.module();
      HloModuleProto y = mb.module();
      for (FieldDescriptor f : x.getDescriptorForType().getFields()) {
        if (!MODULE_NOT_COMPARED.contains(f.getName()) && !Objects.equals(x.getField(f), y.getField(f))) {
          moduleFields.add(f.getName());
        }
      }
      if (!x.getUnknownFields().equals(y.getUnknownFields())) {
        moduleFields.add("unknown fields");
      }
    }

    private void verdict(List<Kind> kinds, List<String> clauses, Map<String, Integer> deltas) {
      int addedCount = added.values().stream().mapToInt(Integer::intValue).sum();
      int removedCount = removed.values().stream().mapToInt(Integer::intValue).sum();
      if (!parameters.isEmpty()) {
        kinds.add(Kind.PARAMETERS);
        String p = parameters.stream().limit(2).map(GraphDiffer::describe).collect(Collectors.joining(", "))
            + (parameters.size() > 2 ? " and " + (parameters.size() - 2) + " more entry parameters" : "");
        if (shapeChanges > 0) {
          p += ", and " + count(shapeChanges, "instruction") + (shapeChanges == 1 ? " changes" : " change")
              + " shape with " + (parameters.size() == 1 ? "it" : "them");
        }
        clauses.add(p);
      }
      if (constantChanges > 0) {
        kinds.add(Kind.CONSTANTS);
        String c = count(constantChanges, "constant") + (constantChanges == 1 ? " differs" : " differ");
        if (constantChanges == 1) {
          ConstantChange k = constants.getFirst();
          c += ": " + (k.shapeA().equals(k.shapeB()) ? brief(k.shapeA()) : brief(k.shapeA()) + " -> " + brief(k.shapeB())) + " "
              + k.from() + " -> " + k.to() + " in " + computation(k.computation()) + " (used by "
              + count(k.users(), "instruction") + ")";
        }
        clauses.add(c);
      }
      if (addedCount > 0 || removedCount > 0) {
        kinds.add(Kind.INSTRUCTIONS);
        if (addedCount > 0) {
          clauses.add(count(addedCount, "instruction") + " added: " + listed(added));
        }
        if (removedCount > 0) {
          clauses.add(count(removedCount, "instruction") + " removed: " + listed(removed));
        }
      }
      if (!computationsAdded.isEmpty() || !computationsRemoved.isEmpty()) {
        kinds.add(Kind.COMPUTATIONS);
        if (!computationsAdded.isEmpty()) {
          clauses.add(count(computationsAdded.size(), "computation") + " added: " + computations(computationsAdded));
        }
        if (!computationsRemoved.isEmpty()) {
          clauses.add(count(computationsRemoved.size(), "computation") + " removed: "
              + computations(computationsRemoved));
        }
      }
      if (attributeChanges > 0) {
        kinds.add(Kind.ATTRIBUTES);
        String which = attributes.stream().limit(3)
            .map(x -> String.join(" and ", x.fields()) + " of " + x.instruction()
                + (x.computation() == null ? "" : " in computation `" + x.computation() + "`"))
            .collect(Collectors.joining(", "));
        String more = attributeChanges > 3 ? " and " + (attributeChanges - 3) + " more" : "";
        clauses.add((clauses.isEmpty() && shapeChanges == 0 && otherChanges == 0 && rewired == 0
            ? "same structure, shapes and constants; different compile-relevant attribute"
            : "different compile-relevant attribute") + (attributeChanges == 1 ? "" : "s") + ": " + which + more);
      }
      if (!replaced.isEmpty()) {
        kinds.add(Kind.OPCODES);
        Replacement r = replaced.getFirst();
        clauses.add(count(replaced.size(), "instruction") + " changed opcode" + (replaced.size() == 1
            ? ": `" + r.from() + "` -> `" + r.to() + "` in " + computation(r.computation()) : ""));
      }
      if (shapeChanges > 0 && parameters.isEmpty()) {
        kinds.add(Kind.SHAPES);
        String c = count(shapeChanges, "instruction") + (shapeChanges == 1 ? " changes" : " change") + " shape";
        if (retyped.size() == 1 && retypedShapeChanges > 0) {
          List<String> t = retyped.keySet().iterator().next();
          c += " (" + (retypedShapeChanges == shapeChanges ? "element type " : retypedShapeChanges
              + " of them element type ") + t.get(0) + " -> " + t.get(1) + ")";
        }
        clauses.add(c);
      }
      if (rewired > 0) {
        kinds.add(Kind.OPERANDS);
        clauses.add(count(rewired, "instruction") + (rewired == 1 ? " takes" : " take") + " other operands");
      }
      if (!moduleFields.isEmpty()) {
        kinds.add(Kind.MODULE);
        clauses.add("module-level setting" + (moduleFields.size() == 1 ? "" : "s") + " differ"
            + (moduleFields.size() == 1 ? "s" : "") + ": " + String.join(", ", moduleFields));
      }
      if (m.unmatchedReason != null) {
        // Clauses from a partial match would mislead: say so, and give the summary deltas only.
        kinds.clear();
        clauses.clear();
        kinds.add(Kind.UNMATCHED);
        String summary = deltas.isEmpty() ? "same opcode counts" : deltas.entrySet().stream().limit(4)
            .map(e -> (e.getValue() > 0 ? "+" : "") + e.getValue() + " `" + e.getKey() + "`")
            .collect(Collectors.joining(", ")) + (deltas.size() > 4 ? ", ..." : "");
        clauses.add("different programs whose structure cannot be matched (" + m.unmatchedReason + "); "
            + a.instructionCount() + " -> " + b.instructionCount() + " instructions, " + summary);
      }
      if (clauses.isEmpty()) {
        kinds.add(Kind.UNLOCATED);
        clauses.add("different programs (the fingerprints differ), but no single difference was located: "
            + "the canonical forms differ in an encoding detail such as channel numbering or a computation's own fields");
      }
    }

    private String listed(Map<List<String>, Integer> g) {
      Map<String, List<String>> byComputation = new LinkedHashMap<>();
      g.forEach((k, n) -> {
        List<String> ops = byComputation.computeIfAbsent(k.get(0), x -> new ArrayList<>());
        ops.add(n == 1 ? article(k.get(1)) + " `" + k.get(1) + "`" : n + " `" + k.get(1) + "`");
      });
      return byComputation.entrySet().stream().limit(3)
          .map(e -> joinAnd(e.getValue().stream().limit(4).toList(), e.getValue().size() > 4)
              + " in " + computation(e.getKey().isEmpty() ? null : e.getKey()))
          .collect(Collectors.joining("; ")) + (byComputation.size() > 3 ? "; and more" : "");
    }

    private static String computations(List<ComputationDelta> d) {
      return d.stream().limit(3).map(c -> "`" + c.computation() + "` (" + count(c.instructions(), "instruction") + ")")
          .collect(Collectors.joining(", ")) + (d.size() > 3 ? " and " + (d.size() - 3) + " more" : "");
    }
  }

  static String joinAnd(List<String> items, boolean more) {
    if (more) {
      return String.join(", ", items) + " and more";
    }
    if (items.size() == 1) {
      return items.getFirst();
    }
    return String.join(", ", items.subList(0, items.size() - 1)) + " and " + items.getLast();
  }

  private static String article(String word) {
    return !word.isEmpty() && "aeiou".indexOf(Character.toLowerCase(word.charAt(0))) >= 0 ? "an" : "a";
  }

  static String computation(String name) {
    return name == null ? "the entry computation" : "computation `" + name + "`";
  }

  static String count(int n, String noun) {
    return n + " " + noun + (n == 1 ? "" : "s");
  }

  private static String describe(ParameterChange p) {
    if (p.from() == null) {
      return "entry parameter " + p.number() + " added: " + HloShapes.withoutLayout(p.to());
    }
    if (p.to() == null) {
      return "entry parameter " + p.number() + " removed: " + HloShapes.withoutLayout(p.from());
    }
    String from = HloShapes.withoutLayout(p.from());
    String to = HloShapes.withoutLayout(p.to());
    String s = "entry parameter " + p.number() + ": " + (from.equals(to) ? p.from() + " -> " + p.to() : from + " -> " + to);
    if (!p.dims().isEmpty() && !p.elementType()) {
      s += " (" + p.dims().stream().map(d -> "dim " + d.dim() + ": " + d.from() + " -> " + d.to())
          .collect(Collectors.joining(", ")) + ")";
    }
    return s;
  }

  /** A shape for the verdict: without layouts, and a scalar as {@code scalar f32}. */
  static String brief(String shape) {
    String s = HloShapes.withoutLayout(shape);
    return s.endsWith("[]") && !s.startsWith("(") ? "scalar " + s.substring(0, s.length() - 2) : s;
  }

  /** Literal values written out for small constants (up to 8 elements), else their size. */
  static final class Literals {
    private static final int MAX_ELEMENTS = 8;

    private Literals() {}

    static String describe(LiteralProto l) {
      ShapeProto s = l.getShape();
      if (s.getElementType() == PrimitiveType.TUPLE) {
        return "(tuple of " + l.getTupleLiteralsCount() + ")";
      }
      long elements = 1;
      for (long d : s.getDimensionsList()) {
        elements *= Math.max(0, d);
      }
      List<String> values = elements <= MAX_ELEMENTS ? values(l, s.getElementType()) : null;
      if (values == null || values.size() != elements) {
        return "(" + elements + " elements, " + dev.xlac.core.Sizes.human(HloShapes.byteSize(s)) + ")";
      }
      return s.getDimensionsCount() == 0 ? values.getFirst() : "{" + String.join(", ", values) + "}";
    }

    private static List<String> values(LiteralProto l, PrimitiveType t) {
      List<String> out = new ArrayList<>();
      switch (t) {
        case PRED -> l.getPredsList().forEach(v -> out.add(v.toString()));
        case S32 -> l.getS32SList().forEach(v -> out.add(v.toString()));
        case S64 -> l.getS64SList().forEach(v -> out.add(v.toString()));
        case U32 -> l.getU32SList().forEach(v -> out.add(Integer.toUnsignedString(v)));
        case U64 -> l.getU64SList().forEach(v -> out.add(Long.toUnsignedString(v)));
        case F32 -> floats(l.getF32S(), 4, out);
        case F64 -> floats(l.getF64S(), 8, out);
        case BF16 -> halves(l.getBf16S(), true, out);
        case F16 -> halves(l.getF16S(), false, out);
        case S8 -> l.getS8S().forEach(v -> out.add(Byte.toString(v)));
        case U8 -> l.getU8S().forEach(v -> out.add(Integer.toString(v & 0xFF)));
        default -> {
          return null;
        }
      }
      return out;
    }

    private static void floats(ByteString b, int width, List<String> out) {
      ByteBuffer buf = b.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
      while (buf.remaining() >= width) {
        out.add(width == 4 ? Float.toString(buf.getFloat()) : Double.toString(buf.getDouble()));
      }
    }

    private static void halves(ByteString b, boolean bf16, List<String> out) {
      ByteBuffer buf = b.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
      while (buf.remaining() >= 2) {
        short h = buf.getShort();
        out.add(Float.toString(bf16 ? Float.intBitsToFloat((h & 0xFFFF) << 16) : Float.float16ToFloat(h)));
      }
    }
  }
}
