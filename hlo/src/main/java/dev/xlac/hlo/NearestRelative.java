package dev.xlac.hlo;

/**
 * The nearest of a graph's candidate relatives: each is diffed (relative -> graph), and the one the fewest changes
 * away ({@link DiffReason#distance}) is kept; the first of equals wins. A diff that fails explains nothing and is
 * skipped, so that explaining never fails a run.
 *
 * @param <C> what the caller knows of a candidate (its cache entry, its recorded request)
 */
public final class NearestRelative<C> {
  private final LoadedModule graph;
  private C candidate;
  private GraphDiff diff;
  private long distance = Long.MAX_VALUE;
  private int compared;

  public NearestRelative(LoadedModule graph) {
    this.graph = graph;
  }

  /**
   * Compares one candidate.
   *
   * @param relative the candidate read for diffing, or null when it could not be (skipped, not counted)
   * @param onlyIfClose count it only when {@link DiffReason#closeUnderAnotherName} (a graph under another name)
   */
  public void consider(C candidate, LoadedModule relative, boolean onlyIfClose) {
    if (relative == null) {
      return;
    }
    GraphDiff d;
    try {
      d = GraphDiff.of(relative, graph);
    } catch (RuntimeException e) { // a diff that fails explains nothing; the run goes on
      return;
    }
    compared++;
    if (onlyIfClose && !DiffReason.closeUnderAnotherName(d)) {
      return;
    }
    long cost = DiffReason.distance(d);
    if (cost < distance) {
      this.candidate = candidate;
      diff = d;
      distance = cost;
    }
  }

  /** The nearest so far, or null. */
  public C candidate() {
    return candidate;
  }

  /** Its diff (relative -> graph), or null. */
  public GraphDiff diff() {
    return diff;
  }

  /** Whether the nearest so far matched the graph's structure (none: false). */
  public boolean matched() {
    return diff != null && diff.matching().matched();
  }

  /** How many candidates were diffed. */
  public int compared() {
    return compared;
  }
}
