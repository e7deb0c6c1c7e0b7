package dev.xlac.capture;

import dev.xlac.core.XlacException;
import dev.xlac.core.os.Executables;
import dev.xlac.core.os.SignalForwarding;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * Runs a user's command (a training script, {@code torchrun}, a shell script) with a frontend's
 * dump environment and hands every graph it compiles to a {@link CaptureListener} while it runs.
 *
 * <p>The command inherits xlac's stdin, stdout and stderr. It runs in its own session and process
 * group (through util-linux {@code setsid}), and SIGINT, SIGTERM and SIGHUP sent to xlac are
 * forwarded to that whole group, so {@code torchrun} and its workers all get them, while xlac
 * keeps watching and ingests what was dumped before they exit. The dump directories are polled
 * every {@code pollInterval}; a last poll after the command has ended takes what remains. The
 * watcher knows the command's process tree, so a dump file is taken at the first poll after its
 * writer closed it (see {@link DumpWatcher}).
 */
public final class CommandTracer {
  /**
   * The poll interval of {@code xlac dump} and the one-shot {@code parallel-compile}. With the
   * open-file check, waiting for a second poll is no longer what makes a read safe, so the interval
   * only bounds the capture lag (at most one interval after XLA closed the file). One poll of a
   * staging tree of 400 files with the check costs about 3 ms of CPU ({@code bench/poll.sh}), so
   * 100 ms keeps the watcher at about 3% of one core.
   */
  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(100);

  private CommandTracer() {}

  /**
   * @param command the command and its arguments
   * @param frontend which environment to give it ({@link Frontend#AUTO} is resolved here)
   * @param staging an existing, empty directory for the dumps
   * @param moduleFilter null for all modules; else a module is kept when the pattern is found in its name
   * @param userEnvironment the environment to start from (normally {@code System.getenv()})
   */
  public record Request(List<String> command, Frontend frontend, Path staging, Pattern moduleFilter,
      Map<String, String> userEnvironment, Duration pollInterval) {
    public Request {
      command = List.copyOf(command);
      if (command.isEmpty()) {
        throw XlacException.badInput("no command given: write it after '--', e.g. xlac dump -- python train.py");
      }
    }
  }

  /**
   * @param exitStatus the command's exit status; 128 + N when signal N ended it
   * @param frontend the frontend used (resolved)
   * @param signalForwarded the name of the last signal forwarded to the command, or null
   * @param notes what xlac changed in the command's environment, one line each
   */
  public record Outcome(int exitStatus, Frontend frontend, DumpWatcher.Counts counts, String signalForwarded,
      List<String> notes) {}

  public static Outcome run(Request r, CaptureListener listener) throws InterruptedException {
    Frontend frontend = r.frontend().resolve(r.userEnvironment());
    TraceEnvironment env = TraceEnvironment.of(frontend, r.userEnvironment(), r.staging());
    GroupChild.Started started = GroupChild.start(r.command(), env.variables());
    Process child = started.process();
    DumpWatcher watcher = new DumpWatcher(r.staging(), frontend, r.moduleFilter(), listener,
        CommandProcesses.treeOf(child.toHandle()));
    List<String> notes = new ArrayList<>(env.notes());
    if (!started.ownGroup()) {
      notes.add(GroupChild.noSetsidNote());
    }
    RuntimeException[] watchFailure = {null};
    Thread poller = Thread.ofPlatform().daemon().name("xlac-dump-watcher").start(() -> {
      try {
        while (!child.waitFor(r.pollInterval().toMillis(), TimeUnit.MILLISECONDS)) {
          watcher.poll(false);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (RuntimeException e) {
        watchFailure[0] = e; // e.g. the cache failed: the command runs on; the error is raised at the end
      }
    });
    String signal;
    try (SignalForwarding signals = SignalForwarding.forwardTo(child.pid())) {
      int status = GroupChild.waitFor(child);
      poller.join();
      signal = signals.received();
      if (watchFailure[0] != null) {
        throw watchFailure[0];
      }
      watcher.poll(true);
      return new Outcome(status, frontend, watcher.counts(), signal, List.copyOf(notes));
    }
  }

  /** Fails with 127 or 126, as a shell would, when {@code program} cannot be run. */
  static void requireRunnable(String program, String path) {
    Path p;
    if (program.contains("/")) {
      p = Path.of(program);
      if (!Files.exists(p)) {
        throw new CommandNotRunnableException(CommandNotRunnableException.NOT_FOUND,
            "command not found: " + program + " (no such file)");
      }
    } else {
      p = Executables.onPath(program, path).orElse(null);
      if (p == null) {
        throw new CommandNotRunnableException(CommandNotRunnableException.NOT_FOUND,
            "command not found: " + program + " (not on PATH)");
      }
    }
    if (Files.isDirectory(p) || !Files.isExecutable(p)) {
      throw new CommandNotRunnableException(CommandNotRunnableException.NOT_EXECUTABLE,
          "cannot run " + program + ": " + (Files.isDirectory(p) ? "is a directory" : "permission denied (not executable)"));
    }
  }
}
