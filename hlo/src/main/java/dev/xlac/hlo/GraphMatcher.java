package dev.xlac.hlo;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * Matches the computations and instructions of two validated modules structurally, through the
 * canonical order the fingerprint defines (hlo/README.md), never by names or ids.
 *
 * <p>The entry computations are matched to each other; a computation called by a matched
 * instruction is matched to the one its partner calls at the same place. Within a matched pair of
 * computations, instructions are matched in canonical order: one to one when both have the same
 * count and the same references; else the common prefix and suffix of equal instructions are
 * matched and what lies between is aligned by a longest common subsequence (on the instructions'
 * canonical content, or on their opcodes where contents differ throughout, as when a shape changed
 * everywhere). A middle too large to align makes the pair unmatched, with a reason. Linear in the
 * instructions except for that bounded alignment.
 */
final class GraphMatcher {
  /** Above this many cells (middle of A times middle of B) the alignment is not tried. */
  static final long MAX_ALIGNMENT_CELLS = 4_000_000;

  final HloWireIndex a;
  final HloWireIndex b;
  final CanonicalParts pa;
  final CanonicalParts pb;
  /** Per computation of A (file position): its partner in B, or -1; and the reverse. */
  final int[] compAtoB;
  final int[] compBtoA;
  /** Per instruction of A (global file position): its partner in B, or -1; and the reverse. */
  final int[] instrAtoB;
  final int[] instrBtoA;
  /** Why some matched computation's instructions could not be matched; null when all were. */
  String unmatchedReason;
  int matchedInstructions;
  int matchedComputations;

  private final int[] opcodeIdsA;
  private final int[] opcodeIdsB;

  GraphMatcher(HloWireIndex a, HloWireIndex b, CanonicalParts pa, CanonicalParts pb, int[] opcodeIdsA, int[] opcodeIdsB) {
    this.a = a;
    this.b = b;
    this.pa = pa;
    this.pb = pb;
    this.opcodeIdsA = opcodeIdsA;
    this.opcodeIdsB = opcodeIdsB;
    compAtoB = filled(a.computationCount());
    compBtoA = filled(b.computationCount());
    instrAtoB = filled(a.instructionCount());
    instrBtoA = filled(b.instructionCount());
  }

  private static int[] filled(int n) {
    int[] x = new int[n];
    Arrays.fill(x, -1);
    return x;
  }

  /**
   * Opcodes as small ints shared by both modules, so instructions compare by opcode without strings: each
   * module's own ids mapped through its (short) table of distinct opcodes.
   */
  static int[][] opcodeIds(HloWireIndex.Opcodes a, HloWireIndex.Opcodes b) {
    Map<String, Integer> ids = new HashMap<>();
    int[] fromA = new int[a.table().length];
    for (int t = 0; t < fromA.length; t++) {
      fromA[t] = ids.computeIfAbsent(a.table()[t], k -> ids.size());
    }
    int[] fromB = new int[b.table().length];
    for (int t = 0; t < fromB.length; t++) {
      fromB[t] = ids.computeIfAbsent(b.table()[t], k -> ids.size());
    }
    return new int[][] {mapped(a.ids(), fromA), mapped(b.ids(), fromB)};
  }

  private static int[] mapped(int[] local, int[] global) {
    int[] out = new int[local.length];
    for (int g = 0; g < out.length; g++) {
      out[g] = global[local[g]];
    }
    return out;
  }

  void run() {
    ArrayDeque<int[]> queue = new ArrayDeque<>();
    pairComputations(a.entryPosition(), b.entryPosition(), queue);
    while (!queue.isEmpty()) {
      int[] pair = queue.poll();
      matchInstructions(pair[0], pair[1]);
      int firstA = a.firstInstr[pair[0]];
      for (int j = 0; j < a.instructionCount(pair[0]); j++) {
        int ga = firstA + a.canonicalInstruction(pair[0], j);
        int gb = instrAtoB[ga];
        if (gb < 0 || a.callFrom[ga + 1] - a.callFrom[ga] != b.callFrom[gb + 1] - b.callFrom[gb]) {
          continue;
        }
        for (int k = 0; k < a.callFrom[ga + 1] - a.callFrom[ga]; k++) {
          pairComputations(a.callPos[a.callFrom[ga] + k], b.callPos[b.callFrom[gb] + k], queue);
        }
      }
    }
    // Matched in part: more unmatched than four times the matched ones (plus a few) is not a match.
    long unmatched = (long) a.instructionCount() + b.instructionCount() - 2L * matchedInstructions;
    if (unmatchedReason == null && unmatched > 4L * matchedInstructions + 16) {
      unmatchedReason = "only " + matchedInstructions + " of " + a.instructionCount() + " instructions in A and "
          + b.instructionCount() + " in B match";
    }
  }

  private void pairComputations(int ca, int cb, ArrayDeque<int[]> queue) {
    if (compAtoB[ca] >= 0 || compBtoA[cb] >= 0) {
      return;
    }
    compAtoB[ca] = cb;
    compBtoA[cb] = ca;
    matchedComputations++;
    queue.add(new int[] {ca, cb});
  }

  private void pairInstructions(int ga, int gb) {
    instrAtoB[ga] = gb;
    instrBtoA[gb] = ga;
    matchedInstructions++;
  }

  /** Global positions of computation p's instructions in canonical order. */
  private static int[] canonical(HloWireIndex x, int p) {
    int n = x.instructionCount(p);
    int first = x.firstInstr[p];
    int[] out = new int[n];
    for (int j = 0; j < n; j++) {
      out[j] = first + x.canonicalInstruction(p, j);
    }
    return out;
  }

  private void matchInstructions(int ca, int cb) {
    int[] sa = canonical(a, ca);
    int[] sb = canonical(b, cb);
    int na = sa.length;
    int nb = sb.length;
    if (na == nb) {
      boolean sameRefs = true;
      for (int j = 0; j < na && sameRefs; j++) {
        sameRefs = pa.refs[sa[j]] == pb.refs[sb[j]];
      }
      if (sameRefs) {
        for (int j = 0; j < na; j++) {
          pairInstructions(sa[j], sb[j]);
        }
        return;
      }
    }
    int prefix = 0;
    while (prefix < na && prefix < nb && pa.local[sa[prefix]] == pb.local[sb[prefix]]) {
      prefix++;
    }
    int suffix = 0;
    while (suffix < na - prefix && suffix < nb - prefix
        && pa.local[sa[na - 1 - suffix]] == pb.local[sb[nb - 1 - suffix]]) {
      suffix++;
    }
    for (int j = 0; j < prefix; j++) {
      pairInstructions(sa[j], sb[j]);
    }
    for (int j = 0; j < suffix; j++) {
      pairInstructions(sa[na - 1 - j], sb[nb - 1 - j]);
    }
    int ma = na - prefix - suffix;
    int mb = nb - prefix - suffix;
    if (ma == 0 || mb == 0) {
      return;  // only added or only removed instructions
    }
    if (ma == mb) {
      // Same count in between: matched in place (changed instructions, or changed references).
      for (int j = 0; j < ma; j++) {
        pairInstructions(sa[prefix + j], sb[prefix + j]);
      }
      return;
    }
    if ((long) ma * mb > MAX_ALIGNMENT_CELLS) {
      unmatchedReason = "computation " + a.computationName(ca) + " has " + na + " instructions in A and " + nb
          + " in B, and they differ in too many places to align (" + ma + " and " + mb + " instructions)";
      return;
    }
    int[] keysA = new int[ma];
    int[] keysB = new int[mb];
    // First by canonical content; where that aligns less than half, by opcode.
    int[][] pairs = null;
    for (int pass = 0; pass < 2; pass++) {
      for (int j = 0; j < ma; j++) {
        int g = sa[prefix + j];
        keysA[j] = pass == 0 ? Long.hashCode(pa.local[g]) : opcodeIdsA[g];
      }
      for (int j = 0; j < mb; j++) {
        int g = sb[prefix + j];
        keysB[j] = pass == 0 ? Long.hashCode(pb.local[g]) : opcodeIdsB[g];
      }
      pairs = lcs(keysA, keysB, pass == 0 ? sa : null, sb, prefix);
      if (pairs[0].length * 2 >= Math.min(ma, mb)) {
        break;
      }
    }
    if (pairs[0].length * 2 < Math.min(ma, mb)) {
      unmatchedReason = "computation " + a.computationName(ca) + " has " + na + " instructions in A and " + nb
          + " in B, and fewer than half of the " + Math.min(ma, mb) + " that differ align";
    }
    for (int k = 0; k < pairs[0].length; k++) {
      pairInstructions(sa[prefix + pairs[0][k]], sb[prefix + pairs[1][k]]);
    }
  }

  /**
   * A longest common subsequence of two key arrays (dynamic programming over the bounded middle);
   * returns the matched indices of A and of B in order. With {@code sa} given, keys are content
   * hashes and a match is confirmed on the full 64-bit hashes.
   */
  private int[][] lcs(int[] ka, int[] kb, int[] sa, int[] sb, int offset) {
    int n = ka.length;
    int m = kb.length;
    int[] table = new int[(n + 1) * (m + 1)];
    for (int i = n - 1; i >= 0; i--) {
      for (int j = m - 1; j >= 0; j--) {
        int at = i * (m + 1) + j;
        table[at] = equal(ka, kb, sa, sb, offset, i, j) ? table[at + m + 2] + 1
            : Math.max(table[at + m + 1], table[at + 1]);
      }
    }
    int len = table[0];
    int[] ia = new int[len];
    int[] ib = new int[len];
    int i = 0;
    int j = 0;
    int k = 0;
    while (i < n && j < m) {
      if (equal(ka, kb, sa, sb, offset, i, j)) {
        ia[k] = i++;
        ib[k++] = j++;
      } else if (table[(i + 1) * (m + 1) + j] >= table[i * (m + 1) + j + 1]) {
        i++;
      } else {
        j++;
      }
    }
    return new int[][] {ia, ib};
  }

  private boolean equal(int[] ka, int[] kb, int[] sa, int[] sb, int offset, int i, int j) {
    if (ka[i] != kb[j]) {
      return false;
    }
    return sa == null || pa.local[sa[offset + i]] == pb.local[sb[offset + j]];
  }
}
