package dev.xlac.capture;

import dev.xlac.core.os.SignalForwarding;
import java.util.List;
import java.util.Map;

/**
 * Runs a user's command as it is, with an environment the caller made (for {@code xlac run}: the
 * runtime proxy's), the way {@link CommandTracer} runs a traced one but without dumping or
 * watching: xlac's stdin, stdout and stderr pass straight through, the command runs in its own
 * process group, and SIGINT, SIGTERM and SIGHUP sent to xlac are forwarded to that whole group
 * while xlac waits for it.
 */
public final class CommandRunner {
  private CommandRunner() {}

  /**
   * @param exitStatus the command's exit status; 128 + N when signal N ended it
   * @param signalForwarded the name of the last signal forwarded to the command, or null
   * @param notes one line each, e.g. that there was no {@code setsid}
   */
  public record Outcome(int exitStatus, String signalForwarded, List<String> notes) {}

  /**
   * Runs {@code command} in exactly {@code environment} and waits for it: {@link #start} then
   * {@link Running#waitFor()}.
   */
  public static Outcome run(List<String> command, Map<String, String> environment) throws InterruptedException {
    return start(command, environment).waitFor();
  }

  /**
   * Starts {@code command} in exactly {@code environment}; signals are forwarded to its group from
   * now until {@link Running#waitFor()} returns. Throws {@link CommandNotRunnableException} (127 or
   * 126) when it cannot be started.
   */
  public static Running start(List<String> command, Map<String, String> environment) {
    GroupChild.Started started = GroupChild.start(List.copyOf(command), environment);
    return new Running(started.process(), SignalForwarding.forwardTo(started.process().pid()),
        started.ownGroup() ? List.of() : List.of(GroupChild.noSetsidNote()));
  }

  /** A started command; call {@link #waitFor()} exactly once. */
  public static final class Running {
    private final Process child;
    private final SignalForwarding signals;
    private final List<String> notes;

    private Running(Process child, SignalForwarding signals, List<String> notes) {
      this.child = child;
      this.signals = signals;
      this.notes = notes;
    }

    public long pid() {
      return child.pid();
    }

    /**
     * Waits for the command and stops forwarding signals. An interrupt sends SIGTERM to its group,
     * waits up to 10 s and is rethrown.
     */
    public Outcome waitFor() throws InterruptedException {
      try (signals) {
        int status = GroupChild.waitFor(child);
        return new Outcome(status, signals.received(), notes);
      }
    }
  }

  /** The environment {@code user} with the user's own locale back (see {@link TraceEnvironment}). */
  public static Map<String, String> userEnvironment(Map<String, String> user) {
    return TraceEnvironment.withoutLauncherLocale(user);
  }
}
