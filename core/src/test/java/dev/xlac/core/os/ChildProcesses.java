package dev.xlac.core.os;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Children for the os tests: a shell leading a group of its own with a grandchild, and liveness checks. */
final class ChildProcesses {
  private ChildProcesses() {}

  /** A shell and its own group, through setsid when there is one, that started a sleeping grandchild. */
  record Family(Process shell, long grandchild) {}

  static Family shellWithGrandchild(boolean ownGroup) throws IOException {
    List<String> cmd = new ArrayList<>();
    if (ownGroup) {
      cmd.add(ProcessGroups.setsid().orElseThrow().toString());
    }
    cmd.addAll(List.of("sh", "-c", "sleep 300 & echo $!; wait"));
    Process shell = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String line = new BufferedReader(new InputStreamReader(shell.getInputStream(), StandardCharsets.UTF_8)).readLine();
    return new Family(shell, Long.parseLong(line.strip()));
  }

  /** Whether {@code pid} runs, waiting up to 10 s for it to go; a zombie (dead, not yet reaped) does not run. */
  static boolean runsAfterAWhile(long pid) throws InterruptedException {
    for (int i = 0; i < 1000; i++) {
      if (!runs(pid)) {
        return false;
      }
      Thread.sleep(10);
    }
    return runs(pid);
  }

  private static boolean runs(long pid) {
    if (ProcessHandle.of(pid).filter(ProcessHandle::isAlive).isEmpty()) {
      return false;
    }
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      return !stat.substring(stat.lastIndexOf(')') + 2).startsWith("Z");
    } catch (IOException e) {
      return false; // gone
    }
  }
}
