package dev.xlac.cache;

import java.util.List;

/**
 * What {@code cache verify} found.
 *
 * @param problems every damaged entry and index inconsistency found (before any repair)
 * @param repaired whether the problems were repaired (damaged entries dropped, indexes rebuilt)
 */
public record VerifyReport(long graphsChecked, long artifactsChecked, long bytesChecked, List<Problem> problems,
    boolean repaired) {

  /**
   * One problem.
   *
   * @param entry what it concerns, e.g. {@code graph 1a2b3c4d5e6f (jit_step)} or {@code artifact 1a2b.../pjrt:cpu}
   * @param damage whether an entry is damaged (and repair drops it) rather than an index being out of step
   */
  public record Problem(String entry, String description, boolean damage) {}

  public boolean clean() {
    return problems.isEmpty();
  }

  public long damagedEntries() {
    return problems.stream().filter(Problem::damage).count();
  }
}
