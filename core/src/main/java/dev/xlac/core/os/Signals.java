package dev.xlac.core.os;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Sending a signal to a process or to a whole process group: libc's {@code kill(2)}, the one FFM binding of it in
 * xlac. The JDK can signal a process ({@link ProcessHandle#destroy()}) but not a group, and not with a signal of the
 * caller's choice, so {@code kill} is looked up once, when this class loads.
 *
 * <p>Every call is safe inside a signal handler and never throws: without the binding (no libc {@code kill}, native
 * access refused) or when the kernel refuses, it returns false and the caller falls back to what Java can do.
 */
public final class Signals {
  public static final int SIGHUP = 1;
  public static final int SIGINT = 2;
  public static final int SIGKILL = 9;
  public static final int SIGTERM = 15;

  /** libc's {@code int kill(pid_t pid, int sig)}; null where it cannot be bound. */
  private static final MethodHandle KILL = bind();

  private Signals() {}

  /** Whether libc's {@code kill} could be bound; without it every call here returns false. */
  public static boolean available() {
    return KILL != null;
  }

  /** Sends {@code signal} to process {@code pid}; true when the kernel accepted it. */
  public static boolean kill(long pid, int signal) {
    return pid > 0 && call(pid, signal);
  }

  /**
   * Sends {@code signal} to process group {@code pgid} ({@code kill(-pgid, signal)}), or, when there is no such group
   * (the child has not called {@code setsid()} yet, or never will), to process {@code pgid}; true when either was
   * accepted.
   */
  public static boolean killGroup(long pgid, int signal) {
    return pgid > 0 && (call(-pgid, signal) || call(pgid, signal));
  }

  private static boolean call(long pid, int signal) {
    if (KILL == null) {
      return false;
    }
    try {
      return (int) KILL.invokeExact(Math.toIntExact(pid), signal) == 0;
    } catch (Throwable t) {
      return false; // a pid beyond pid_t, or the call failed: as if the kernel had refused
    }
  }

  private static MethodHandle bind() {
    try {
      Linker linker = Linker.nativeLinker();
      return linker.defaultLookup().find("kill").map(address -> linker.downcallHandle(address,
          FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT))).orElse(null);
    } catch (RuntimeException | LinkageError e) {
      return null; // e.g. native access refused, or no native linker on this platform
    }
  }
}
