package dev.xlac.capture;

import dev.xlac.core.os.ProcessGroups;
import dev.xlac.core.os.Signals;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Starts a user's command the one way xlac does: looked up on the child's {@code PATH} as a shell
 * would (127 not found, 126 not runnable), in a session and process group of its own (util-linux
 * {@code setsid --wait}, so the pid is the group id and signals reach the whole group), with xlac's
 * stdin, stdout and stderr, and exactly the environment given. Shared by the traced run
 * ({@link CommandTracer}) and the plain one ({@link CommandRunner}).
 */
final class GroupChild {
  /** @param ownGroup false when there was no {@code setsid}: the command shares xlac's group */
  record Started(Process process, boolean ownGroup) {}

  private GroupChild() {}

  static Started start(List<String> command, Map<String, String> env) {
    CommandTracer.requireRunnable(command.getFirst(), env.get("PATH"));
    List<String> argv = new ArrayList<>();
    Path setsid = ProcessGroups.setsid().orElse(null);
    if (setsid != null) {
      argv.add(setsid.toString());
      argv.add("--wait");
    }
    argv.addAll(command);
    ProcessBuilder pb = new ProcessBuilder(argv).inheritIO();
    // Only what differs is set: a variable that is put is encoded anew from its string, and one whose
    // bytes are not valid in the JVM's character set would reach the command changed.
    pb.environment().keySet().retainAll(env.keySet());
    env.forEach((k, v) -> {
      if (!v.equals(pb.environment().get(k))) {
        pb.environment().put(k, v);
      }
    });
    try {
      return new Started(pb.start(), setsid != null);
    } catch (IOException e) {
      throw new CommandNotRunnableException(CommandNotRunnableException.NOT_EXECUTABLE,
          "cannot run " + command.getFirst() + ": " + e.getMessage());
    }
  }

  static String noSetsidNote() {
    return "setsid not found: the command runs in xlac's process group; signals reach only the command itself";
  }

  /**
   * Waits for a command started by {@link #start}. An interrupt sends SIGTERM to its process group, waits up
   * to 10 s for it to go, and is rethrown.
   */
  static int waitFor(Process child) throws InterruptedException {
    try {
      return child.waitFor();
    } catch (InterruptedException e) {
      Signals.killGroup(child.pid(), Signals.SIGTERM);
      child.waitFor(10, TimeUnit.SECONDS);
      throw e;
    }
  }
}
