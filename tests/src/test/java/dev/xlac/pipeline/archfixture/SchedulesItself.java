package dev.xlac.pipeline.archfixture;

import dev.xlac.compiler.schedule.CompileScheduler;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.schedule.MemoryProbe;
import dev.xlac.compiler.schedule.ResultSink;
import dev.xlac.compiler.schedule.SchedulerSettings;

/**
 * A pipeline class that starts workers of its own, beside the run's executor: a second orchestration, what
 * {@code ExecutorRulesTest} must report. Test sources only, so the product import never sees it.
 */
public final class SchedulesItself {
  private SchedulesItself() {}

  public static CompileScheduler compileHere(DriverFactory drivers, SchedulerSettings settings, ResultSink sink) {
    return new CompileScheduler(drivers, settings, sink, null, MemoryProbe.system());
  }
}
