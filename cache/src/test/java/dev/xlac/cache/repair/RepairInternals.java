package dev.xlac.cache.repair;

import java.util.function.Consumer;

/** Test-only door into the repair package, for tests outside it that kill or fail a repair at one of its steps. */
public final class RepairInternals {
  private RepairInternals() {}

  /** Told each step of a rebuild ({@link DatabaseRepair#stepsForTests}); a no-op resets it. */
  public static void steps(Consumer<String> steps) {
    DatabaseRepair.stepsForTests = steps;
  }
}
