package dev.xlac.core.os;

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
 * one. The JDK has no call that signals a process group, so {@link Signals#killGroup} sends it.
 */
public final class SignalForwarding implements AutoCloseable {
  private static final String[] FORWARDED = {"INT", "TERM", "HUP"};

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
    Signals.killGroup(pgid, sig.getNumber()); // never throws: the child runs on if it fails, and xlac waits
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
