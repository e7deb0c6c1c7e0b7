package dev.xlac.cache;

import java.util.List;

/**
 * What {@code cache verify} found.
 *
 * @param problems every damaged entry or file and index inconsistency found (before any repair), and every
 *     directory or runtime file that its group or others can write ({@code store.CacheModes})
 * @param repaired whether the problems were repaired (damaged entries recovered or dropped, indexes rebuilt)
 * @param requestsChecked runtime entries (recorded PJRT requests with their executables) checked
 */
public record VerifyReport(long graphsChecked, long artifactsChecked, long bytesChecked, List<Problem> problems,
    boolean repaired, long requestsChecked) {

  /** A report of a cache without runtime entries. */
  public VerifyReport(long graphsChecked, long artifactsChecked, long bytesChecked, List<Problem> problems,
      boolean repaired) {
    this(graphsChecked, artifactsChecked, bytesChecked, problems, repaired, 0);
  }

  /**
   * One problem.
   *
   * @param entry what it concerns, e.g. {@code graph 1a2b3c4d5e6f (jit_step)}, {@code artifact 1a2b.../pjrt:cpu}
   *     or {@code blob file 000030.blob}
   * @param damage whether an entry or file is damaged rather than an index being out of step
   * @param action what a repair did about it ({@code recovered}, {@code dropped}, {@code repaired},
   *     {@code rebuilt}); null when nothing was done
   */
  public record Problem(String entry, String description, boolean damage, String action) {
    public Problem(String entry, String description, boolean damage) {
      this(entry, description, damage, null);
    }

    public Problem withAction(String a) {
      return new Problem(entry, description, damage, a);
    }
  }

  /** This report with {@code more} problems after its own. */
  public VerifyReport plus(List<Problem> more) {
    if (more.isEmpty()) {
      return this;
    }
    List<Problem> all = new java.util.ArrayList<>(problems);
    all.addAll(more);
    return new VerifyReport(graphsChecked, artifactsChecked, bytesChecked, List.copyOf(all), repaired, requestsChecked);
  }

  public boolean clean() {
    return problems.isEmpty();
  }

  public long damagedEntries() {
    return problems.stream().filter(Problem::damage).count();
  }
}
