package dev.xlac.compiler.schedule;

/**
 * How a run schedules its compiles.
 *
 * @param jobs the most compiles at once (workers, each with its own driver)
 * @param memoryPerJob bytes a compile is expected to need: a job is admitted while others run only
 *     if the machine has that much available beyond what the jobs started in the last few seconds
 *     have reserved
 * @param retries how many times a transient failure (crash, timeout, out of memory) is retried;
 *     compile errors never are. An out-of-memory failure is always retried at least once, with one
 *     parallel job fewer.
 */
public record SchedulerSettings(int jobs, long memoryPerJob, int retries) {
  /**
   * The least memory per job a user may give: no compile fits in less. A PJRT compile worker (a JVM with
   * the plugin loaded) takes about 250 MiB before its first graph; neuronx-cc takes far more.
   */
  public static final long MIN_MEMORY_PER_JOB = 256L << 20;

  public SchedulerSettings {
    if (jobs < 1) {
      throw new IllegalArgumentException("jobs must be at least 1, not " + jobs);
    }
    if (memoryPerJob < 0) {
      throw new IllegalArgumentException("memory per job must not be negative");
    }
    if (retries < 0) {
      throw new IllegalArgumentException("retries must not be negative, not " + retries);
    }
  }

  /** min(cores, available memory / memory per job), at least 1: the default number of jobs. */
  public static int defaultJobs(long memoryPerJob, MemoryProbe memory) {
    int cores = Runtime.getRuntime().availableProcessors();
    if (memoryPerJob <= 0) {
      return cores;
    }
    long byMemory = memory.availableBytes() / memoryPerJob;
    return (int) Math.max(1, Math.min(cores, byMemory));
  }
}
