package dev.xlac.capture;

import java.util.ArrayList;
import java.util.List;

/**
 * The processes of a traced command, for {@link DumpWatcher}'s open-file check: a dump file that
 * none of them holds open is complete.
 */
@FunctionalInterface
public interface CommandProcesses {
  /**
   * The command's processes now, the command itself first. Empty when that is not known (the
   * command has ended, so its orphaned descendants can no longer be found): then
   * {@link DumpWatcher} falls back to its two-stable-polls rule.
   */
  List<ProcessHandle> now();

  /** {@code command} and all its descendants (torchrun workers, a shell script's children). */
  static CommandProcesses treeOf(ProcessHandle command) {
    return () -> {
      if (!command.isAlive()) {
        return List.of();
      }
      List<ProcessHandle> all = new ArrayList<>();
      all.add(command);
      command.descendants().forEach(all::add);
      return all;
    };
  }
}
