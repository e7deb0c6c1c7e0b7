package dev.xlac.core.os;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * While open, SIGINT, SIGTERM and SIGHUP sent to this JVM are forwarded to the traced command's
 * process group instead of ending the JVM, so xlac lives on to ingest what the command captured
 * and to exit with the command's status.
 *
 * <p>{@code sun.misc.Signal} (module {@code jdk.unsupported}) is the supported way to handle
 * signals on Java 25 without {@code --add-exports}; {@code jdk.internal.misc.Signal} would need
 * one. The JDK has no call that signals a process group, so libc's {@code kill(-pgid, sig)} is
 * called through the FFM API.
 */
public final class SignalForwarding implements AutoCloseable {
  private static final String[] FORWARDED = {"INT", "TERM", "HUP"};
  private static volatile MethodHandle kill;

  private final long pgid;
  private final List<Signal> installed = new ArrayList<>();
  private final List<SignalHandler> previous = new ArrayList<>();
  private volatile String received;

  private SignalForwarding(long pgid) {
    this.pgid = pgid;
  }

  /** Starts forwarding to process group {@code pgid} (the child's pid, as it leads its own group). */
  public static SignalForwarding forwardTo(long pgid) {
    SignalForwarding s = new SignalForwarding(pgid);
    for (String name : FORWARDED) {
      try {
        Signal sig = new Signal(name);
        s.previous.add(Signal.handle(sig, s::forward));
        s.installed.add(sig);
      } catch (IllegalArgumentException e) {
        // The JVM uses this signal itself (or -Xrs is set): leave it as it is.
      }
    }
    return s;
  }

  /** The last signal forwarded, e.g. {@code TERM}; null if none. */
  public String received() {
    return received;
  }

  private void forward(Signal sig) {
    received = sig.getName();
    send(pgid, sig.getNumber());
  }

  /** Sends {@code signal} to process group {@code pgid}, or to process {@code pgid} if there is no such group yet. */
  public static void send(long pgid, int signal) {
    try {
      int rc = (int) killHandle().invokeExact(-(int) pgid, signal);
      if (rc != 0) {
        rc = (int) killHandle().invokeExact((int) pgid, signal);
      }
    } catch (Throwable t) {
      // Nothing better to do inside a signal handler; the child keeps running and xlac waits for it.
    }
  }

  private static MethodHandle killHandle() {
    MethodHandle h = kill;
    if (h == null) {
      Linker linker = Linker.nativeLinker();
      h = linker.downcallHandle(linker.defaultLookup().find("kill").orElseThrow(),
          FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
      kill = h;
    }
    return h;
  }

  @Override
  public void close() {
    for (int i = installed.size() - 1; i >= 0; i--) {
      Signal.handle(installed.get(i), previous.get(i));
    }
    installed.clear();
    previous.clear();
  }
}
