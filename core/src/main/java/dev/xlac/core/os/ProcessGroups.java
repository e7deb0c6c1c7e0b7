package dev.xlac.core.os;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Starting a child in a process group of its own and killing that whole group. Java cannot make a
 * child a group leader, so the child is started through util-linux {@code setsid}, which (the child
 * of a JVM never being a group leader) calls {@code setsid()} and execs in the same process: the
 * child's pid is its group id. Killing sends SIGKILL to the group ({@link Signals#killGroup}),
 * so grandchildren that outlived or left their parent go too, and then to every descendant Java
 * still sees, for a child that made a group of its own.
 *
 * <p>A group of its own also keeps a terminal's Ctrl-C (sent to the foreground group, which is
 * xlac's) away from compilers and worker JVMs: xlac decides what to stop, and a compile it did not
 * stop is never mistaken for a crash.
 */
public final class ProcessGroups {
  private ProcessGroups() {}

  /**
   * util-linux {@code setsid}: {@code /usr/bin/setsid}, else {@code /bin/setsid}, else the first on this process's
   * {@code PATH} ({@link Executables}); empty where there is none (then children share xlac's group and killing reaches
   * only the descendants Java sees). Looked up once per JVM.
   */
  public static Optional<Path> setsid() {
    return Setsid.PATH;
  }

  /** Kills the group led by {@code process} and every descendant, then waits (bounded) for the process. */
  public static void killTree(Process process, boolean ownGroup) {
    List<ProcessHandle> descendants = process.descendants().toList();
    if (ownGroup) {
      Signals.killGroup(process.pid(), Signals.SIGKILL); // if it fails, the processes are killed one by one below
    }
    process.destroyForcibly();
    descendants.forEach(ProcessHandle::destroyForcibly);
    process.descendants().forEach(ProcessHandle::destroyForcibly); // any started meanwhile
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The lookup, done when {@link #setsid()} is first called. */
  private static final class Setsid {
    static final Optional<Path> PATH = find();

    private static Optional<Path> find() {
      for (String dir : List.of("/usr/bin", "/bin")) {
        Path p = Path.of(dir, "setsid");
        if (Files.isExecutable(p)) {
          return Optional.of(p);
        }
      }
      return Executables.onPath("setsid");
    }
  }
}
