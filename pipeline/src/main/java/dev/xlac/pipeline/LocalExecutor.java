package dev.xlac.pipeline;

import dev.xlac.compiler.schedule.CompileScheduler;
import dev.xlac.compiler.schedule.GraphResult;
import java.util.List;
import java.util.Map;

/** Compiles in this process's workers, on the one {@link CompileScheduler} of the run. */
public final class LocalExecutor implements CompileExecutor {
  public static final LocalExecutor INSTANCE = new LocalExecutor();

  private LocalExecutor() {}

  @Override
  public boolean compilesHere() {
    return true;
  }

  @Override
  public Map<String, String> compileEnvironment() {
    return System.getenv();
  }

  @Override
  public Compiles start(Run run) {
    CompileScheduler scheduler = new CompileScheduler(run.drivers(), run.settings(), run.cache(), run.listener(),
        run.memory());
    return new Compiles() {
      @Override
      public void submit(CompileWork work) {
        scheduler.submit(run.cache().job(work));
      }

      @Override
      public List<GraphResult> finish() throws InterruptedException {
        return scheduler.finish();
      }

      @Override
      public void cancel() {
        scheduler.cancel();
      }

      @Override
      public int jobs() {
        return run.settings().jobs();
      }

      @Override
      public void close() throws InterruptedException {
        scheduler.close();
      }
    };
  }
}
