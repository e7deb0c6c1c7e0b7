package dev.xlac.pipeline.slurm;

import dev.xlac.pipeline.shard.ShardEngine;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Slurm as a {@link ShardEngine}: a submission is one job array ({@code RUN/task.sh}, task I compiling shard I), an
 * attempt is its job id, a task {@code JOB_I}; its log is {@code RUN/logs/JOB_I.out}.
 */
final class SlurmEngine implements ShardEngine {
  private final SlurmClient client;
  private final SlurmSettings slurm;
  private final Path run;
  private final List<String> jobs = new ArrayList<>();

  SlurmEngine(SlurmClient client, SlurmSettings slurm, Path run) {
    this.client = client;
    this.slurm = slurm;
    this.run = run;
  }

  @Override
  public String name() {
    return "Slurm";
  }

  @Override
  public Submitted submit(List<Integer> shards) throws InterruptedException {
    String indices = String.join(",", shards.stream().map(String::valueOf).toList());
    if (shards.size() > 1 && shards.getLast() - shards.getFirst() == shards.size() - 1) {
      indices = shards.getFirst() + "-" + shards.getLast();
    }
    String job = client.submit(indices, slurm.sbatchArgs(), run.resolve("logs"), run.resolve("task.sh"),
        "xlac:" + run.getFileName());
    synchronized (this) {
      jobs.add(job);
    }
    Map<Integer, String> attempts = new HashMap<>();
    shards.forEach(s -> attempts.put(s, job));
    return new Submitted(attempts, "Slurm job array " + job, "job " + job);
  }

  @Override
  public Map<Task, Boolean> queued(List<Task> tasks) throws InterruptedException {
    Map<String, List<SlurmClient.Queued>> queued = client.queued(tasks.stream().map(Task::attempt).distinct().toList());
    if (queued == null) {
      return null;
    }
    Set<Task> asked = new LinkedHashSet<>(tasks);
    Map<Task, Boolean> out = new HashMap<>();
    queued.forEach((job, list) -> list.forEach(q -> {
      Task t = new Task(q.index(), job);
      if (asked.contains(t)) {
        out.put(t, q.state().equals("PENDING"));
      }
    }));
    return out;
  }

  @Override
  public Ended ended(Task task) throws InterruptedException {
    String how = client.ended(task.attempt(), task.shard());
    return new Ended(how.startsWith("COMPLETED (exit 0:0"), how);
  }

  @Override
  public void cancel(List<Task> tasks) {
    client.cancel(tasks.stream().map(t -> t.attempt() + "_" + t.shard()).toList());
  }

  @Override
  public void cancelAll() {
    List<String> all;
    synchronized (this) {
      all = List.copyOf(jobs);
    }
    client.cancel(all);
  }

  @Override
  public String describe(Task task) {
    return "job " + task.attempt() + "_" + task.shard();
  }

  @Override
  public String logWhere(Task task) {
    return log(task).toString();
  }

  private Path log(Task task) {
    return run.resolve("logs").resolve(task.attempt() + "_" + task.shard() + ".out");
  }

  @Override
  public String logTail(Task task) {
    try {
      List<String> lines = Files.readAllLines(log(task)).stream().filter(l -> !l.isBlank()).toList();
      return lines.isEmpty() ? null : lines.getLast().strip();
    } catch (IOException | java.io.UncheckedIOException e) {
      return null;
    }
  }
}
