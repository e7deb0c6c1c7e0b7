package dev.xlac.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;

/**
 * Runs the real {@code ./xlac} launcher as child processes, each with a timeout after which it is
 * killed (with every process it started). {@code kill -9} at a chosen moment is the same kill, early.
 *
 * <p>Children get their own {@code java.io.tmpdir} and {@code XDG_CACHE_HOME} under the suite's
 * work directory, so what they leave behind is the suite's to inspect and to remove, and nothing
 * of a user's own cache or /tmp is touched.
 */
final class Xlac {
  /** A finished (or killed) run. {@code peakRssKb} is the highest VmHWM seen, 0 when not sampled. */
  record Result(List<String> args, int exit, String out, String err, Duration elapsed, boolean killed,
      boolean timedOut, long peakRssKb) {
    String command() {
      return abbreviate("xlac " + String.join(" ", args));
    }

    /** The last non-empty stderr line, for messages. */
    String lastErr() {
      List<String> lines = err.lines().filter(l -> !l.isBlank()).toList();
      return lines.isEmpty() ? "(nothing on stderr)" : lines.getLast();
    }

    String brief() {
      String how = timedOut ? "timed out after " + seconds(elapsed) : killed ? "killed at " + seconds(elapsed)
          : "exit " + exit + " after " + seconds(elapsed);
      return abbreviate("`" + command() + "` " + how + (exit != 0 && !killed ? ": " + lastErr() : ""));
    }

    boolean ok() {
      return exit == 0 && !killed && !timedOut;
    }
  }

  /** Long paths shown short in messages (the working directory, the golden dumps), set once by the suite. */
  static final Map<String, String> ABBREVIATIONS = new java.util.concurrent.ConcurrentHashMap<>();

  static String abbreviate(String s) {
    for (var e : ABBREVIATIONS.entrySet()) {
      s = s.replace(e.getKey(), e.getValue());
    }
    return s;
  }

  private final Path launcher;
  private final Path scratch;
  private final List<String> wrapper;
  private final Map<String, String> env;
  private final AtomicLong counter = new AtomicLong();

  /**
   * @param scratch where this runner keeps the children's output files and temp directory
   * @param wrapper a command prefix (e.g. {@code nsenter ...} into the disk-full scenario's mount namespace)
   */
  Xlac(Path launcher, Path scratch, List<String> wrapper, Map<String, String> env) throws IOException {
    this.launcher = launcher;
    this.scratch = Files.createDirectories(scratch);
    this.wrapper = List.copyOf(wrapper);
    this.env = Map.copyOf(env);
    Files.createDirectories(tmp());
  }

  /** The children's java.io.tmpdir. */
  Path tmp() {
    return scratch.resolve("tmp");
  }

  Xlac withWrapper(List<String> prefix) throws IOException {
    return new Xlac(launcher, scratch, prefix, env);
  }

  /** A runner whose children also get {@code extraJavaOpts} (e.g. a small -Xmx). */
  Xlac withJavaOpts(String extraJavaOpts) throws IOException {
    Map<String, String> e = new HashMap<>(env);
    e.put("XLAC_EXTRA_JAVA_OPTS", extraJavaOpts);
    return new Xlac(launcher, scratch, wrapper, e);
  }

  Result run(Duration timeout, String... args) throws IOException, InterruptedException {
    return start(List.of(args), false).await(timeout);
  }

  Result run(Duration timeout, List<String> args) throws IOException, InterruptedException {
    return start(args, false).await(timeout);
  }

  /** Runs and SIGKILLs the process (and what it started) after {@code delay}, unless it ended before. */
  Result runKilledAfter(Duration delay, Duration timeout, List<String> args) throws IOException, InterruptedException {
    Running r = start(args, false);
    if (!r.process.waitFor(delay.toNanos(), TimeUnit.NANOSECONDS)) {
      r.kill();
    }
    return r.await(timeout);
  }

  /** Runs and SIGKILLs the process as soon as its stderr so far satisfies {@code when} (polled every 10 ms). */
  Result runKilledWhen(Predicate<String> when, Duration timeout, List<String> args)
      throws IOException, InterruptedException {
    return runKilledWhen(when, Duration.ZERO, timeout, args);
  }

  /**
   * Runs and SIGKILLs the process {@code extra} after its stderr so far (or anything else the
   * predicate looks at, such as a file appearing) first satisfies {@code when}; polled every 10 ms.
   */
  Result runKilledWhen(Predicate<String> when, Duration extra, Duration timeout, List<String> args)
      throws IOException, InterruptedException {
    Running r = start(args, false);
    long deadline = System.nanoTime() + timeout.toNanos();
    while (r.process.isAlive() && System.nanoTime() < deadline) {
      if (when.test(Files.readString(r.err, StandardCharsets.UTF_8))) {
        if (!r.process.waitFor(extra.toNanos(), TimeUnit.NANOSECONDS)) {
          r.kill();
        }
        break;
      }
      Thread.sleep(10);
    }
    return r.await(timeout);
  }

  Running start(List<String> args, boolean sampleRss) throws IOException {
    List<String> cmd = new ArrayList<>(wrapper);
    cmd.add(launcher.toString());
    cmd.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(launcher.getParent().toFile());
    Map<String, String> e = pb.environment();
    e.remove("XLAC_CACHE_DIR");
    e.putAll(env);
    String extra = e.remove("XLAC_EXTRA_JAVA_OPTS");
    e.put("XLAC_JAVA_OPTS", "-Djava.io.tmpdir=" + tmp() + (extra == null ? "" : " " + extra));
    e.put("XDG_CACHE_HOME", scratch.resolve("xdg").toString());
    long n = counter.incrementAndGet();
    Path out = scratch.resolve("run-" + n + ".out");
    Path err = scratch.resolve("run-" + n + ".err");
    pb.redirectOutput(out.toFile()).redirectError(err.toFile()).redirectInput(ProcessBuilder.Redirect.from(
        Path.of("/dev/null").toFile()));
    return new Running(args, pb.start(), out, err, sampleRss);
  }

  /** A started child. */
  static final class Running {
    final List<String> args;
    final Process process;
    final Path out;
    final Path err;
    final long startNanos = System.nanoTime();
    private final AtomicLong peakRss = new AtomicLong();
    private final AtomicReference<Thread> sampler = new AtomicReference<>();
    private volatile boolean killRequested;
    private volatile boolean timedOut;

    Running(List<String> args, Process process, Path out, Path err, boolean sampleRss) {
      this.args = args;
      this.process = process;
      this.out = out;
      this.err = err;
      if (sampleRss) {
        sampler.set(Thread.ofVirtual().start(this::sampleRss));
      }
    }

    /** VmHWM is the process's own high-water mark, so the last sample before it exits is its peak. */
    private void sampleRss() {
      Path status = Path.of("/proc/" + process.pid() + "/status");
      while (process.isAlive()) {
        try {
          for (String l : Files.readAllLines(status)) {
            if (l.startsWith("VmHWM:")) {
              long kb = Long.parseLong(l.replaceAll("[^0-9]", ""));
              peakRss.accumulateAndGet(kb, Math::max);
            }
          }
          Thread.sleep(25);
        } catch (IOException | NumberFormatException e) {
          return; // the process ended between the check and the read
        } catch (InterruptedException e) {
          return;
        }
      }
    }

    /** SIGKILL to the process, then to everything it had started (compile workers lead their own groups). */
    void kill() {
      List<ProcessHandle> descendants = process.descendants().toList();
      killRequested = true;
      process.destroyForcibly();
      descendants.forEach(ProcessHandle::destroyForcibly);
    }

    Result await(Duration timeout) throws IOException, InterruptedException {
      long left = timeout.toNanos() - (System.nanoTime() - startNanos);
      if (!process.waitFor(Math.max(0, left), TimeUnit.NANOSECONDS)) {
        timedOut = true;
        kill();
        process.waitFor(30, TimeUnit.SECONDS);
      }
      Duration elapsed = Duration.ofNanos(System.nanoTime() - startNanos);
      Thread t = sampler.get();
      if (t != null) {
        t.join(1000);
      }
      try {
        // 137 = 128 + SIGKILL: the kill landed (the launcher execs java, so this is the JVM's own status).
        boolean killed = killRequested && process.exitValue() == 137;
        return new Result(args, process.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
            Files.readString(err, StandardCharsets.UTF_8), elapsed, killed && !timedOut, timedOut, peakRss.get());
      } finally {
        Files.deleteIfExists(out);
        Files.deleteIfExists(err);
      }
    }
  }

  static String seconds(Duration d) {
    return String.format("%.2f s", d.toNanos() / 1e9);
  }
}
