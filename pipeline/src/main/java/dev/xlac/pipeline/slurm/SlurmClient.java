package dev.xlac.pipeline.slurm;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.os.Executables;
import dev.xlac.core.os.OutputTail;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Slurm's client commands, as {@code parallel-compile --executor slurm} uses them: {@code sbatch --parsable
 * --array}, {@code squeue -r} for the tasks still queued or running, {@code scontrol -o show job} for how a task
 * ended (there is no accounting without slurmdbd, so not {@code sacct}), {@code scancel}. Each runs with a time
 * limit; nothing here holds a process past its call.
 */
final class SlurmClient {
  private static final Duration TIMEOUT = Duration.ofSeconds(60);
  private static final Pattern JOB_ID = Pattern.compile("^(\\d+)(;.*)?$");

  /** A task in the queue: its array index and state (PENDING, RUNNING, COMPLETING, ...). */
  record Queued(int index, String state) {}

  private final Map<String, String> env;
  private final Duration timeout;

  SlurmClient(Map<String, String> env) {
    this(env, TIMEOUT);
  }

  /** {@code timeout}: how long one command may take before it is killed (tests make it short). */
  SlurmClient(Map<String, String> env, Duration timeout) {
    this.env = Map.copyOf(env);
    this.timeout = timeout;
  }

  /** Exit 3 with one line when {@code sbatch} is not on PATH. */
  static void requireSbatch(String path) {
    if (Executables.onPath("sbatch", path).isEmpty()) {
      throw new XlacException(ExitCode.ENVIRONMENT, "sbatch not found on PATH: --executor slurm needs Slurm's client"
          + " commands (sbatch, squeue, scontrol, scancel; Debian: slurm-client) on the submitting host");
    }
  }

  /** Submits {@code script} as an array of {@code indices} (e.g. {@code 0-3} or {@code 1,3}); returns the job id. */
  String submit(String indices, List<String> sbatchArgs, Path logs, Path script) throws InterruptedException {
    return submit(indices, sbatchArgs, logs, script, null);
  }

  /**
   * As {@link #submit(String, List, Path, Path)}, the job's comment set to {@code marker} (a run's own name, no
   * spaces): an sbatch that does not answer in time may still have queued the array, unknown to us but by that
   * comment, so such a job is found ({@code squeue --me}) and cancelled before the failure is thrown.
   */
  String submit(String indices, List<String> sbatchArgs, Path logs, Path script, String marker)
      throws InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("sbatch", "--parsable", "--array=" + indices,
        "--job-name=xlac-compile", "--output=" + logs.resolve("%A_%a.out")));
    if (marker != null) {
      cmd.add("--comment=" + marker);
    }
    cmd.addAll(sbatchArgs); // last, so that a site's own --output or --job-name wins
    cmd.add(script.toString());
    Ran r;
    try {
      r = run(cmd);
    } catch (XlacException e) {
      if (marker == null) {
        throw e;
      }
      int cancelled = cancelMarked(marker);
      throw new XlacException(e.exitCode(), e.getMessage() + (cancelled == 0 ? "" : "; the " + cancelled + " job"
          + (cancelled == 1 ? "" : "s") + " it queued meanwhile " + (cancelled == 1 ? "was" : "were") + " cancelled"),
          e);
    }
    Matcher m = JOB_ID.matcher(r.out().strip());
    if (r.status() != 0 || !m.matches()) {
      throw new XlacException(ExitCode.ENVIRONMENT, "sbatch refused the job array (exit " + r.status() + "): "
          + firstLine(r.err().isBlank() ? r.out() : r.err()));
    }
    return m.group(1);
  }

  /** The tasks of {@code jobs} that are still queued or running, by job id; null when squeue did not answer. */
  Map<String, List<Queued>> queued(List<String> jobs) throws InterruptedException {
    Ran r = run(List.of("squeue", "-h", "-r", "-j", String.join(",", jobs), "-o", "%F %K %T"));
    if (r.status() != 0) {
      // squeue says "Invalid job id specified" once every job of the list has left slurmctld's memory.
      return r.err().contains("Invalid job id") ? Map.of() : null;
    }
    Map<String, List<Queued>> out = new HashMap<>();
    for (String line : r.out().lines().toList()) {
      String[] f = line.trim().split("\\s+");
      if (f.length == 3 && f[1].matches("\\d+")) {
        out.computeIfAbsent(f[0], k -> new ArrayList<>()).add(new Queued(Integer.parseInt(f[1]), f[2]));
      }
    }
    return out;
  }

  /** How task {@code index} of {@code job} ended, e.g. {@code FAILED (exit 3:0, NonZeroExitCode)}; "unknown" when Slurm forgot it. */
  String ended(String job, int index) throws InterruptedException {
    Ran r = run(List.of("scontrol", "-o", "show", "job", job + "_" + index));
    if (r.status() != 0) {
      return "unknown";
    }
    String state = field(r.out(), "JobState");
    String exit = field(r.out(), "ExitCode");
    String reason = field(r.out(), "Reason");
    return state + (exit == null ? "" : " (exit " + exit + (reason == null || reason.equals("None") ? "" : ", "
        + reason) + ")");
  }

  /** Cancels this user's jobs whose comment is {@code marker}; how many; never throws. */
  int cancelMarked(String marker) throws InterruptedException {
    List<String> marked = new ArrayList<>();
    try {
      Ran r = run(List.of("squeue", "--me", "-h", "-o", "%F %k"));
      for (String line : r.out().lines().toList()) {
        String[] f = line.trim().split("\\s+", 2);
        if (f.length == 2 && f[1].equals(marker) && f[0].matches("\\d+") && !marked.contains(f[0])) {
          marked.add(f[0]);
        }
      }
    } catch (XlacException e) {
      return 0; // squeue did not answer either: nothing more can be done from here
    }
    cancel(marked);
    return marked.size();
  }

  /** Cancels whole jobs; waits for scancel, never throws. */
  void cancel(List<String> jobs) {
    if (jobs.isEmpty()) {
      return;
    }
    List<String> cmd = new ArrayList<>(List.of("scancel"));
    cmd.addAll(jobs);
    try {
      run(cmd);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (XlacException e) {
      // nothing more to do: the hook is on its way out
    }
  }

  private static String field(String text, String name) {
    Matcher m = Pattern.compile("(?:^|\\s)" + name + "=(\\S+)").matcher(text);
    return m.find() ? m.group(1) : null;
  }

  static String firstLine(String s) {
    return s.strip().lines().findFirst().orElse("no output");
  }

  private record Ran(int status, String out, String err) {}

  /**
   * Runs {@code cmd} (its command looked up on the PATH of {@link #env}, which the child gets), both pipes drained
   * on threads of their own, so the time limit holds whatever the command does with its output; a command past
   * the limit is killed with its children and is one line, exit 3.
   */
  private Ran run(List<String> cmd) throws InterruptedException {
    List<String> argv = new ArrayList<>(cmd);
    Executables.onPath(cmd.getFirst(), env.get("PATH")).ifPresent(p -> argv.set(0, p.toString()));
    ProcessBuilder pb = new ProcessBuilder(argv).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
    pb.environment().putAll(env);
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot run " + cmd.getFirst() + ": " + XlacException.reason(e), e);
    }
    try {
      OutputTail out = OutputTail.drain(p.getInputStream(), 4 << 20, "xlac-" + cmd.getFirst() + "-out");
      OutputTail err = OutputTail.drain(p.getErrorStream(), 64 << 10, "xlac-" + cmd.getFirst() + "-err");
      if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new XlacException(ExitCode.ENVIRONMENT, cmd.getFirst() + " did not answer within " + seconds(timeout)
            + "; is slurmctld up?");
      }
      out.join(Duration.ofSeconds(5)); // a stray child may hold the pipe open: what came so far
      err.join(Duration.ofSeconds(5));
      return new Ran(p.exitValue(), out.text(), err.text());
    } finally {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
    }
  }

  static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : String.format(java.util.Locale.ROOT, "%.1f s",
        d.toMillis() / 1000.0);
  }
}
