package dev.xlac.hlo;

import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A validated, indexed view of an HLO module with a canonical order for its computations and
 * instructions, independent of ids and names.
 *
 * <p>Instructions are ordered by a post-order walk from the computation's root, visiting operands
 * in operand order and then control predecessors; instructions the root does not reach (unused
 * parameters, side effects) follow in file order, each walked the same way. Computations are
 * ordered by a post-order walk of the call graph from the entry computation (callees before
 * callers, in the canonical order of the calling instructions); unreachable computations follow
 * in file order. All walks are iterative: hostile graphs cannot overflow the stack.
 *
 * <p>The tests' oracle: production validates and orders on the wire ({@link HloWireIndex}); this is the same
 * specification written a second way, over protobuf-java objects with one generic walk, so that a mistake in either
 * shows up as a disagreement in {@code StreamingFingerprintTest}.
 */
public final class HloGraph {
  private final HloModuleProto module;
  private final List<HloComputationProto> computations;
  private final Map<Long, Integer> computationIndexById;
  private final int entryIndex;
  /** For each canonical computation: file positions of its instructions, in canonical order. */
  private final int[][] instructionOrder;
  /** For each canonical computation: instruction id to canonical index. */
  private final List<Map<Long, Integer>> instructionIndexById;
  private final int[] rootIndex;

  private HloGraph(HloModuleProto module, List<HloComputationProto> computations, Map<Long, Integer> computationIndexById,
      int entryIndex, int[][] instructionOrder, List<Map<Long, Integer>> instructionIndexById, int[] rootIndex) {
    this.module = module;
    this.computations = computations;
    this.computationIndexById = computationIndexById;
    this.entryIndex = entryIndex;
    this.instructionOrder = instructionOrder;
    this.instructionIndexById = instructionIndexById;
    this.rootIndex = rootIndex;
  }

  /** Indexes and validates a module; a structural defect is an {@link IllegalArgumentException} with a one-line reason. */
  public static HloGraph of(HloModuleProto module) {
    int n = module.getComputationsCount();
    if (n == 0) {
      throw new IllegalArgumentException("the HLO module has no computations");
    }
    Map<Long, Integer> positionById = new HashMap<>(n * 2);
    for (int i = 0; i < n; i++) {
      HloComputationProto c = module.getComputations(i);
      if (positionById.putIfAbsent(c.getId(), i) != null) {
        throw new IllegalArgumentException("two computations share id " + c.getId());
      }
    }
    int entryPos = findEntry(module, positionById);

    // Per computation (by file position): id index, canonical instruction order, root.
    int[][] orderByPos = new int[n][];
    List<Map<Long, Integer>> positionOfInstruction = new ArrayList<>(n);
    int[] rootPosByPos = new int[n];
    for (int p = 0; p < n; p++) {
      HloComputationProto c = module.getComputations(p);
      Map<Long, Integer> byId = indexInstructions(c);
      positionOfInstruction.add(byId);
      Integer root = byId.get(c.getRootId());
      if (root == null) {
        if (c.getInstructionsCount() == 0) {
          throw new IllegalArgumentException("computation " + describe(c) + " has no instructions");
        }
        throw new IllegalArgumentException("computation " + describe(c) + " names root id " + c.getRootId()
            + ", which is not one of its instructions");
      }
      rootPosByPos[p] = root;
      orderByPos[p] = instructionOrder(c, byId, root);
    }

    // Call graph walk from the entry: callees before callers.
    int[] compOrder = computationOrder(module, positionById, orderByPos, entryPos);
    int[] canonicalOfPos = new int[n];
    for (int k = 0; k < n; k++) {
      canonicalOfPos[compOrder[k]] = k;
    }
    List<HloComputationProto> comps = new ArrayList<>(n);
    Map<Long, Integer> compIndex = new HashMap<>(n * 2);
    int[][] instrOrder = new int[n][];
    List<Map<Long, Integer>> instrIndex = new ArrayList<>(n);
    int[] roots = new int[n];
    for (int k = 0; k < n; k++) {
      int p = compOrder[k];
      HloComputationProto c = module.getComputations(p);
      comps.add(c);
      compIndex.put(c.getId(), k);
      instrOrder[k] = orderByPos[p];
      int[] canonicalOfInstrPos = new int[c.getInstructionsCount()];
      for (int j = 0; j < orderByPos[p].length; j++) {
        canonicalOfInstrPos[orderByPos[p][j]] = j;
      }
      Map<Long, Integer> idx = new HashMap<>(c.getInstructionsCount() * 2);
      for (Map.Entry<Long, Integer> e : positionOfInstruction.get(p).entrySet()) {
        idx.put(e.getKey(), canonicalOfInstrPos[e.getValue()]);
      }
      instrIndex.add(idx);
      roots[k] = canonicalOfInstrPos[rootPosByPos[p]];
    }
    return new HloGraph(module, List.copyOf(comps), compIndex, canonicalOfPos[entryPos], instrOrder, instrIndex, roots);
  }

  private static int findEntry(HloModuleProto module, Map<Long, Integer> positionById) {
    Integer byId = positionById.get(module.getEntryComputationId());
    if (byId != null) {
      return byId;
    }
    if (!module.getEntryComputationName().isEmpty()) {
      for (int i = 0; i < module.getComputationsCount(); i++) {
        if (module.getComputations(i).getName().equals(module.getEntryComputationName())) {
          return i;
        }
      }
    }
    throw new IllegalArgumentException("the entry computation (id " + module.getEntryComputationId()
        + (module.getEntryComputationName().isEmpty() ? "" : ", name " + module.getEntryComputationName())
        + ") is not in the module");
  }

  private static Map<Long, Integer> indexInstructions(HloComputationProto c) {
    Map<Long, Integer> byId = new HashMap<>(Math.max(4, c.getInstructionsCount() * 2));
    for (int i = 0; i < c.getInstructionsCount(); i++) {
      HloInstructionProto in = c.getInstructions(i);
      if (byId.putIfAbsent(in.getId(), i) != null) {
        throw new IllegalArgumentException("computation " + describe(c) + " has two instructions with id " + in.getId());
      }
    }
    for (int i = 0; i < c.getInstructionsCount(); i++) {
      HloInstructionProto in = c.getInstructions(i);
      for (long op : in.getOperandIdsList()) {
        if (!byId.containsKey(op)) {
          throw new IllegalArgumentException("instruction " + describe(in) + " in computation " + describe(c)
              + " uses operand id " + op + ", which is not in that computation");
        }
      }
      for (long op : in.getControlPredecessorIdsList()) {
        if (!byId.containsKey(op)) {
          throw new IllegalArgumentException("instruction " + describe(in) + " in computation " + describe(c)
              + " has control predecessor id " + op + ", which is not in that computation");
        }
      }
    }
    return byId;
  }

  /** Post-order over operands, then control predecessors, from the root; then the rest in file order. */
  private static int[] instructionOrder(HloComputationProto c, Map<Long, Integer> byId, int root) {
    return postOrder(c.getInstructionsCount(), root, pos -> {
      HloInstructionProto in = c.getInstructions(pos);
      return java.util.stream.LongStream.concat(in.getOperandIdsList().stream().mapToLong(Long::longValue),
          in.getControlPredecessorIdsList().stream().mapToLong(Long::longValue))
          .mapToInt(id -> byId.get(id)).toArray();
    });
  }

  /**
   * The oracle's one graph walk, written apart from production's on purpose: post-order of the nodes reachable from
   * {@code first} (children in the order given), then of every node not yet reached, in index order. The stack is a
   * heap-allocated deque, so deep graphs cannot overflow the thread's stack.
   */
  private static int[] postOrder(int n, int first, java.util.function.IntFunction<int[]> children) {
    int[] order = new int[n];
    int done = 0;
    boolean[] reached = new boolean[n];
    int[][] kids = new int[n][]; // each node's children, asked for once
    java.util.ArrayDeque<int[]> path = new java.util.ArrayDeque<>(); // {node, index of its next child}
    for (int i = -1; i < n; i++) {
      int start = i < 0 ? first : i;
      if (reached[start]) {
        continue;
      }
      reached[start] = true;
      path.push(new int[] {start, 0});
      while (!path.isEmpty()) {
        int[] top = path.peek();
        if (kids[top[0]] == null) {
          kids[top[0]] = children.apply(top[0]);
        }
        int[] next = kids[top[0]];
        if (top[1] == next.length) {
          order[done++] = path.pop()[0];
        } else {
          int child = next[top[1]++];
          if (!reached[child]) {
            reached[child] = true;
            path.push(new int[] {child, 0});
          }
        }
      }
    }
    return order;
  }

  /** Post-order of the call graph from the entry (callees before callers); then the rest in file order. */
  private static int[] computationOrder(HloModuleProto module, Map<Long, Integer> positionById, int[][] orderByPos,
      int entryPos) {
    int n = module.getComputationsCount();
    List<int[]> calleesByPos = new ArrayList<>(n);
    for (int p = 0; p < n; p++) {
      calleesByPos.add(callees(module.getComputations(p), orderByPos[p], positionById));
    }
    return postOrder(n, entryPos, calleesByPos::get);
  }

  private static int[] callees(HloComputationProto c, int[] instrOrder, Map<Long, Integer> positionById) {
    int total = 0;
    for (int pos : instrOrder) {
      total += c.getInstructions(pos).getCalledComputationIdsCount();
    }
    int[] out = new int[total];
    int k = 0;
    for (int pos : instrOrder) {
      HloInstructionProto in = c.getInstructions(pos);
      for (long id : in.getCalledComputationIdsList()) {
        Integer callee = positionById.get(id);
        if (callee == null) {
          throw new IllegalArgumentException("instruction " + describe(in) + " in computation " + describe(c)
              + " calls computation id " + id + ", which is not in the module");
        }
        out[k++] = callee;
      }
    }
    return out;
  }

  static String describe(HloComputationProto c) {
    return c.getName().isEmpty() ? "#" + c.getId() : c.getName();
  }

  static String describe(HloInstructionProto in) {
    return (in.getName().isEmpty() ? "#" + in.getId() : in.getName()) + " (" + in.getOpcode() + ")";
  }

  public HloModuleProto module() {
    return module;
  }

  /** Computations in canonical order (callees before callers). */
  public List<HloComputationProto> computations() {
    return computations;
  }

  public int entryIndex() {
    return entryIndex;
  }

  public HloComputationProto entry() {
    return computations.get(entryIndex);
  }

  public int computationIndex(long id) {
    return computationIndexById.get(id);
  }

  /** The instructions of canonical computation {@code k}, in canonical order. */
  public List<HloInstructionProto> instructions(int k) {
    HloComputationProto c = computations.get(k);
    int[] order = instructionOrder[k];
    return new java.util.AbstractList<>() {
      @Override
      public HloInstructionProto get(int i) {
        return c.getInstructions(order[i]);
      }

      @Override
      public int size() {
        return order.length;
      }
    };
  }

  /** Canonical index, within canonical computation {@code k}, of the instruction with this id. */
  public int instructionIndex(int k, long id) {
    return instructionIndexById.get(k).get(id);
  }

  public int rootIndex(int k) {
    return rootIndex[k];
  }

  public int instructionCount() {
    return Arrays.stream(instructionOrder).mapToInt(a -> a.length).sum();
  }
}
