package dev.xlac.pipeline.ray;

import dev.xlac.core.XlacException;
import dev.xlac.pipeline.CompileExecutor;
import dev.xlac.pipeline.shard.ShardedCompiles;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * {@code parallel-compile --executor ray}: the run's shards ({@link ShardedCompiles}) are compiled by one Ray job each
 * on an existing cluster, submitted through its dashboard's Jobs API ({@link RayEngine}). A job that ended without
 * results is submitted again, its shard alone; a shutdown (Ctrl-C, SIGTERM) stops every job of the run
 * ({@code ray job stop}). Without a dashboard that answers, the run is one line, exit 3, before anything is read.
 * Each use opens a client of its own and closes it (the run's is its engine's), so nothing is left to close here.
 */
public final class RayExecutor implements CompileExecutor {
  private final RaySettings ray;

  public RayExecutor(RaySettings ray) {
    this.ray = ray;
  }

  private RayJobsClient client() {
    return new RayJobsClient(ray.address(), ray.headers());
  }

  @Override
  public void checkReady() {
    try (RayJobsClient client = client()) {
      client.version();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw XlacException.environment("interrupted while asking Ray's dashboard at " + ray.address());
    }
  }

  @Override
  public boolean compilesHere() {
    return false;
  }

  /** The jobs run in the Ray nodes' environment, which is not known here: this process's stands for it. */
  @Override
  public Map<String, String> compileEnvironment() {
    return new HashMap<>(System.getenv());
  }

  @Override
  public Compiles start(Run run) {
    return new ShardedCompiles(run, ray.shards(), "Ray", (dir, transport) ->
        new RayEngine(client(), ray, dir, transport.taskArguments()));
  }

  /**
   * Stops the jobs still pending or running that a submitter on this host left behind when it died (its pid is
   * gone): they are found by their metadata, this host's name and id ({@link RayEngine.Host}) both; a job of
   * another host, or of a submitter still alive, is left alone. One line per job to {@code progress}; how many
   * were stopped.
   */
  public int stopOrphans(Consumer<String> progress) throws InterruptedException {
    int stopped = 0;
    try (RayJobsClient client = client()) {
      for (RayJobsClient.Job job : client.jobs()) {
        Map<String, String> m = job.metadata();
        if (job.ended() || !RayEngine.Host.NAME.equals(m.get(RayEngine.HOST))
            || !RayEngine.Host.ID.equals(m.get(RayEngine.HOST_ID)) || !m.containsKey(RayEngine.RUN)
            || alive(m.get(RayEngine.PID))) {
          continue;
        }
        if (client.stop(job.submissionId())) {
          stopped++;
          progress.accept("stopped Ray job " + job.submissionId() + " (shard " + m.get(RayEngine.SHARD) + " of "
              + m.get(RayEngine.RUN) + ", whose submitter, pid " + m.get(RayEngine.PID) + ", is gone)");
        }
      }
    }
    return stopped;
  }

  private static boolean alive(String pid) {
    try {
      return ProcessHandle.of(Long.parseLong(pid)).map(ProcessHandle::isAlive).orElse(false);
    } catch (NumberFormatException e) {
      return true; // not ours to judge: leave it
    }
  }
}
