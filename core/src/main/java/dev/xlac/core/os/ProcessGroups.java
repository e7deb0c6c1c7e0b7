package dev.xlac.core.os;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Starting a child in a process group of its own and killing that whole group. Java cannot make a
 * child a group leader, so the child is started through util-linux {@code setsid}, which (the child
 * of a JVM never being a group leader) calls {@code setsid()} and execs in the same process: the
 * child's pid is its group id. Killing sends SIGKILL to the group with libc's {@code kill(-pgid)},
 * so grandchildren that outlived or left their parent go too, and then to every descendant Java
 * still sees, for a child that made a group of its own.
 *
 * <p>A group of its own also keeps a terminal's Ctrl-C (sent to the foreground group, which is
 * xlac's) away from compilers and worker JVMs: xlac decides what to stop, and a compile it did not
 * stop is never mistaken for a crash.
 */
public final class ProcessGroups {
  private static final int SIGKILL = 9;
  private static final MethodHandle KILL = lookupKill();

  private ProcessGroups() {}

  /** {@code setsid} from the usual places or PATH; empty where there is none (then only descendants are killed). */
  public static Optional<Path> findSetsid() {
    for (String dir : List.of("/usr/bin", "/bin")) {
      Path p = Path.of(dir, "setsid");
      if (Files.isExecutable(p)) {
        return Optional.of(p);
      }
    }
    return onPath("setsid");
  }

  /** The first executable regular file called {@code name} in {@code PATH}'s directories. */
  public static Optional<Path> onPath(String name) {
    String path = System.getenv("PATH");
    if (path == null) {
      return Optional.empty();
    }
    for (String dir : path.split(java.io.File.pathSeparator)) {
      if (!dir.isEmpty()) {
        Path p = Path.of(dir, name);
        if (Files.isRegularFile(p) && Files.isExecutable(p)) {
          return Optional.of(p);
        }
      }
    }
    return Optional.empty();
  }

  /** Kills the group led by {@code process} and every descendant, then waits (bounded) for the process. */
  public static void killTree(Process process, boolean ownGroup) {
    List<ProcessHandle> descendants = process.descendants().toList();
    if (ownGroup && KILL != null) {
      try {
        int unused = (int) KILL.invokeExact(-Math.toIntExact(process.pid()), SIGKILL);
      } catch (Throwable e) {
        // fall through to killing the processes one by one
      }
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

  private static MethodHandle lookupKill() {
    try {
      Linker linker = Linker.nativeLinker();
      return linker.defaultLookup().find("kill").map(addr -> linker.downcallHandle(addr,
          FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT))).orElse(null);
    } catch (RuntimeException e) {
      return null;
    }
  }
}
