package dev.xlac.bench;

import dev.xlac.capture.CaptureListener;
import dev.xlac.capture.CapturedModule;
import dev.xlac.capture.CommandProcesses;
import dev.xlac.capture.CommandTracer;
import dev.xlac.capture.DumpWatcher;
import dev.xlac.capture.Frontend;
import dev.xlac.hlo.HloReadException;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The cost of one {@link DumpWatcher} poll (issue #5 §1), run by bench/poll.sh: a staging tree of
 * DIRS x FILES files (a fifth of them compiler inputs, copies of a real module; the rest named
 * like XLA's other dump files), captured once, then polled again and again as the watcher does
 * while the command runs. Measured in the same run: polls with the open-file check over a live
 * command tree (a shell with three children), against polls without process information (the
 * directory walk alone). CPU time of the polling thread, median of ROUNDS polls.
 *
 * <p>Usage: {@code PollBench WORKDIR MODULE.hlo.pb [DIRS=4] [FILES=100] [ROUNDS=300]}
 */
public final class PollBench {
  private PollBench() {}

  public static void main(String[] args) throws Exception {
    Path work = Path.of(args[0]);
    byte[] module = Files.readAllBytes(Path.of(args[1]));
    int dirs = args.length > 2 ? Integer.parseInt(args[2]) : 4;
    int perDir = args.length > 3 ? Integer.parseInt(args[3]) : 100;
    int rounds = args.length > 4 ? Integer.parseInt(args[4]) : 300;
    Path staging = Files.createDirectories(work.resolve("staging"));
    int inputs = generate(staging, module, dirs, perDir);

    Process command = new ProcessBuilder("sh", "-c", "sleep 600 & sleep 600 & sleep 600 & wait").start();
    try {
      CaptureListener ignore = new CaptureListener() {
        @Override
        public void captured(CapturedModule m) {}

        @Override
        public void unreadable(HloReadException e) {}
      };
      DumpWatcher walkOnly = new DumpWatcher(staging, Frontend.JAX, null, ignore);
      DumpWatcher withFds = new DumpWatcher(staging, Frontend.JAX, null, ignore,
          CommandProcesses.treeOf(command.toHandle()));
      for (int i = 0; i < 3; i++) { // capture everything, and warm up
        walkOnly.poll(false);
        withFds.poll(false);
      }
      if (walkOnly.counts().captured() != inputs || withFds.counts().captured() != inputs) {
        throw new IllegalStateException("expected " + inputs + " captures, got " + walkOnly.counts() + " and "
            + withFds.counts());
      }
      // A poll re-walks the tree, and with the check, finds the command's processes (a scan of /proc)
      // and reads their fd links. A pending file is what makes the check run; keep one there.
      Path pending = staging.resolve("pid-0/module_9999.jit_pending.before_optimizations.hlo.pb");
      Files.write(pending, new byte[0]);
      long[] a = new long[rounds];
      long[] b = new long[rounds];
      ThreadMXBean threads = ManagementFactory.getThreadMXBean();
      for (int i = 0; i < rounds; i++) { // interleaved, so that load from others hits both alike
        long t0 = threads.getCurrentThreadCpuTime();
        walkOnly.poll(false);
        long t1 = threads.getCurrentThreadCpuTime();
        withFds.poll(false);
        long t2 = threads.getCurrentThreadCpuTime();
        a[i] = t1 - t0;
        b[i] = t2 - t1;
      }
      long processes;
      try (Stream<Path> s = Files.list(Path.of("/proc"))) {
        processes = s.filter(p -> p.getFileName().toString().chars().allMatch(Character::isDigit)).count();
      }
      double ma = median(a) / 1e6;
      double mb = median(b) / 1e6;
      double interval = CommandTracer.DEFAULT_POLL_INTERVAL.toMillis();
      System.out.printf(Locale.ROOT, "staging: %d files in %d directories, %d compiler inputs; command tree: %d processes;"
          + " processes on the machine: %d; %d polls each%n", dirs * perDir, dirs, inputs,
          1 + command.toHandle().descendants().count(), processes, rounds);
      System.out.printf(Locale.ROOT, "poll, directory walk only (old rule): %.3f ms CPU (median)%n", ma);
      System.out.printf(Locale.ROOT, "poll, walk + open-file check:          %.3f ms CPU (median), %.2fx the walk%n", mb,
          mb / ma);
      System.out.printf(Locale.ROOT, "at one poll per %.0f ms: %.1f%% of one core%n", interval, 100 * mb / interval);
    } finally {
      command.descendants().forEach(ProcessHandle::destroy);
      command.destroy();
      command.waitFor(10, TimeUnit.SECONDS);
    }
  }

  /** DIRS process directories of FILES files each; every fifth a compiler input. Returns their count. */
  private static int generate(Path staging, byte[] module, int dirs, int perDir) throws IOException {
    List<String> others = List.of("before_optimizations.txt", "cpu_after_optimizations.txt",
        "cpu_after_optimizations-buffer-assignment.txt", "cpu_after_optimizations.hlo.pb");
    int inputs = 0;
    for (int d = 0; d < dirs; d++) {
      Path dir = Files.createDirectories(staging.resolve("pid-" + d));
      for (int i = 0; i < perDir; i++) {
        String stem = String.format(Locale.ROOT, "module_%04d.jit_f%d.", i / 5, i / 5);
        if (i % 5 == 0) {
          Files.write(dir.resolve(stem + "before_optimizations.hlo.pb"), module);
          inputs++;
        } else {
          Files.writeString(dir.resolve(stem + others.get(i % 5 - 1)), "x");
        }
      }
    }
    return inputs;
  }

  private static double median(long[] v) {
    long[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2.0;
  }
}
