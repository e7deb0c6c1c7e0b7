package dev.xlac.hlo;

/**
 * The tests' object-model path to a module's graph and fingerprint ({@link HloGraph}, which
 * production does not have: there {@link HloWireIndex} is the one validation walk), for tests
 * here and in other modules that compare the streaming fingerprint with it.
 */
public final class GraphOracle {
  private GraphOracle() {}

  /** The module of a read file, parsed into objects and indexed by the oracle. */
  public static HloGraph graph(LoadedModule m) {
    return HloGraph.of(m.module());
  }

  /** Fingerprints an indexed module; the same as {@link GraphFingerprint#of} of its module. */
  public static GraphFingerprint fingerprint(HloGraph graph) {
    return GraphFingerprint.of(graph.module());
  }
}
