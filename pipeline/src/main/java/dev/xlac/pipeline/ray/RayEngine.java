package dev.xlac.pipeline.ray;

import dev.xlac.core.XlacException;
import dev.xlac.core.os.HostName;
import dev.xlac.pipeline.shard.ShardEngine;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Ray as a {@link ShardEngine}: one Ray job per shard and attempt (as Slurm's array tasks: each shard is retried and
 * stopped on its own, and Ray places each job on a node with the resources it reserves). An attempt is the job's
 * submission id, {@code xlac_RUN_sI_aN}; the job runs {@code xlac compile-shard --shard I --attempt ID} on its node,
 * which compiles in a node-local cache as a Slurm task does. Every job carries metadata naming the run, the shard,
 * and the submitting host and pid, by which {@link RayExecutor#stopOrphans} finds those of a submitter that died.
 * It owns its client ({@link #close}).
 */
final class RayEngine implements ShardEngine {
  static final String RUN = "xlac_run";
  static final String HOST = "xlac_host";
  static final String HOST_ID = "xlac_host_id";
  static final String PID = "xlac_pid";
  static final String SHARD = "xlac_shard";

  private final RayJobsClient client;
  private final RaySettings ray;
  private final Path run;
  private final List<String> transportArgs;
  private final Map<Integer, Integer> attempts = new HashMap<>();
  private final List<Task> submitted = new ArrayList<>(); // every job posted, or being posted
  private volatile boolean cancelled;

  RayEngine(RayJobsClient client, RaySettings ray, Path run, List<String> transportArgs) {
    this.client = client;
    this.ray = ray;
    this.run = run;
    this.transportArgs = List.copyOf(transportArgs);
  }

  @Override
  public String name() {
    return "Ray";
  }

  /**
   * One POST per shard. All or nothing: when one fails (Ray refused it, the dashboard did not answer, the thread was
   * interrupted) or a {@link #cancelAll} came meanwhile, the jobs this call posted are stopped before it throws,
   * the one whose POST failed included (a POST that timed out may still have made its job).
   */
  @Override
  public Submitted submit(List<Integer> shards) throws InterruptedException {
    Map<Integer, String> ids = new LinkedHashMap<>();
    List<Task> posted = new ArrayList<>();
    try {
      for (int shard : shards) {
        stopIfCancelled();
        int attempt;
        synchronized (this) {
          attempt = attempts.merge(shard, 1, Integer::sum);
        }
        String id = jobPrefix() + "_s" + shard + "_a" + attempt;
        Map<String, String> metadata = new LinkedHashMap<>();
        metadata.put(RUN, run.getFileName().toString());
        metadata.put(SHARD, Integer.toString(shard));
        metadata.put(HOST, Host.NAME);
        metadata.put(HOST_ID, Host.ID);
        metadata.put(PID, Long.toString(ProcessHandle.current().pid()));
        Task task = new Task(shard, id);
        posted.add(task);
        synchronized (this) { // before the call: a submit that timed out may still have made the job
          submitted.add(task);
        }
        client.submit(id, entrypoint(shard, id), metadata, ray.resources(), Map.of());
        ids.put(shard, id);
      }
      stopIfCancelled(); // a cancelAll during the last POST stopped its job before Ray had it
    } catch (InterruptedException | RuntimeException e) { // RuntimeException: XlacException among others
      cancel(posted);
      throw e;
    }
    String first = ids.size() == 1 ? "Ray job " + ids.values().iterator().next()
        : ids.size() + " Ray jobs " + jobPrefix() + "_s*_a1";
    return new Submitted(ids, first, "job " + String.join(", ", ids.values()));
  }

  private void stopIfCancelled() {
    if (cancelled) {
      throw XlacException.environment("the run was stopped while its Ray jobs were submitted");
    }
  }

  /** The run's jobs' common prefix: an attempt's name is a remote tier's key part, so letters, digits and '_' only. */
  private String jobPrefix() {
    return "xlac_" + run.getFileName().toString().replaceAll("[^A-Za-z0-9]", "_");
  }

  /** The job's shell command: the task command, the transport's arguments, the run, the shard and the attempt. */
  private String entrypoint(int shard, String id) {
    List<String> argv = new ArrayList<>(ray.taskCommand());
    argv.addAll(transportArgs);
    argv.addAll(List.of("--run-dir", run.toString(), "--shard", Integer.toString(shard), "--attempt", id));
    StringBuilder s = new StringBuilder("exec");
    argv.forEach(a -> s.append(' ').append("'").append(a.replace("'", "'\\''")).append("'"));
    return s.toString();
  }

  @Override
  public Map<Task, Boolean> queued(List<Task> tasks) throws InterruptedException {
    Map<Task, Boolean> out = new HashMap<>();
    try {
      for (Task t : tasks) {
        Optional<RayJobsClient.Job> job = client.job(t.attempt());
        if (job.isPresent() && !job.get().ended()) {
          out.put(t, job.get().status().equals("PENDING"));
        }
      }
    } catch (XlacException e) {
      return null; // the dashboard did not answer: look again next time
    }
    return out;
  }

  @Override
  public Ended ended(Task task) throws InterruptedException {
    Optional<RayJobsClient.Job> job;
    try {
      job = client.job(task.attempt());
    } catch (XlacException e) {
      return new Ended(false, "unknown (" + e.getMessage() + ")");
    }
    if (job.isEmpty()) {
      return new Ended(false, "unknown (Ray does not know the job)");
    }
    RayJobsClient.Job j = job.get();
    String message = j.message().lines().findFirst().orElse("").strip();
    String how = j.status() + (j.driverExitCode() == null ? "" : " (exit " + j.driverExitCode() + ")")
        + (message.isEmpty() ? "" : ": " + message);
    return new Ended(j.status().equals("SUCCEEDED"), how);
  }

  @Override
  public void cancel(List<Task> tasks) {
    stop(tasks.stream().map(Task::attempt).toList());
  }

  /** Also makes a {@link #submit} under way stop posting and stop what it posted. */
  @Override
  public void cancelAll() {
    cancelled = true;
    stop(submitted().stream().map(Task::attempt).toList());
  }

  @Override
  public synchronized List<Task> submitted() {
    return List.copyOf(submitted);
  }

  @Override
  public void close() {
    client.close();
  }

  private void stop(List<String> ids) {
    boolean interrupted = Thread.interrupted(); // the stops go out even when the run was interrupted
    try {
      for (String id : ids) {
        try {
          client.stop(id);
        } catch (XlacException e) {
          // the dashboard did not answer: nothing more can be done from here (stopOrphans finds it later)
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public String describe(Task task) {
    return "job " + task.attempt();
  }

  @Override
  public String logWhere(Task task) {
    return "ray job logs " + task.attempt() + " --address " + client.address();
  }

  @Override
  public String logTail(Task task) {
    boolean interrupted = false;
    try {
      return client.logs(task.attempt()).flatMap(l -> l.lines().map(String::strip).filter(x -> !x.isEmpty())
          .reduce((a, b) -> b)).orElse(null);
    } catch (XlacException e) {
      return null;
    } catch (InterruptedException e) {
      interrupted = true;
      return null;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * The submitting host, as its jobs' metadata names it: {@code NAME} for people, {@code ID} to tell hosts apart when
   * their names do not (two hosts both called localhost): the machine id, else the boot id, else the name.
   */
  static final class Host {
    static final String NAME = name();
    static final String ID = id();

    private Host() {}

    private static String name() {
      Optional<String> kernel = HostName.kernel().filter(n -> !n.isEmpty());
      if (kernel.isPresent()) {
        return kernel.get();
      }
      try {
        return InetAddress.getLocalHost().getHostName();
      } catch (IOException e) {
        return System.getenv().getOrDefault("HOSTNAME", "unknown");
      }
    }

    private static String id() {
      for (String file : List.of("/etc/machine-id", "/var/lib/dbus/machine-id", "/proc/sys/kernel/random/boot_id")) {
        String id = read(Path.of(file));
        if (id != null) {
          return id;
        }
      }
      return "name:" + NAME;
    }

    private static String read(Path file) {
      try {
        String s = Files.readString(file).strip();
        return s.isEmpty() ? null : s;
      } catch (IOException | RuntimeException e) { // absent, unreadable, not text: the next source
        return null;
      }
    }
  }
}
