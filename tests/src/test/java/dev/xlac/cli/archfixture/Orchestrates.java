package dev.xlac.cli.archfixture;

import dev.xlac.compiler.schedule.CompileScheduler;

/**
 * A CLI class that drives the scheduler itself: what {@code CliRulesTest} must report. Test sources
 * only, so the product import never sees it.
 */
public final class Orchestrates {
  private Orchestrates() {}

  public static void cancel(CompileScheduler scheduler) {
    scheduler.cancel();
  }
}
