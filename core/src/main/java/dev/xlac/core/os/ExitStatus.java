package dev.xlac.core.os;

import java.util.OptionalInt;

/**
 * What a child process's exit status says, in the one wording xlac uses. Java reports a child that a signal ended
 * as exit status 128 + N (as a shell does), so 129 to 192 stand for Linux's signals 1 to 64.
 */
public final class ExitStatus {
  /** The highest signal number on Linux ({@code SIGRTMAX}). */
  private static final int MAX_SIGNAL = 64;
  private static final String[] NAMES = {null, "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT",
      "SIGBUS", "SIGFPE", "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM", "SIGSTKFLT",
      "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGXCPU", "SIGXFSZ", "SIGVTALRM",
      "SIGPROF", "SIGWINCH", "SIGIO", "SIGPWR", "SIGSYS"};

  private ExitStatus() {}

  /** The signal that ended a child with exit status {@code status} (128 + N); empty for an ordinary exit. */
  public static OptionalInt signal(int status) {
    int n = status - 128;
    return n >= 1 && n <= MAX_SIGNAL ? OptionalInt.of(n) : OptionalInt.empty();
  }

  /** Linux's name of signal {@code n} ({@code SIGSEGV}); {@code signal N} for one without a name (real-time ones). */
  public static String signalName(int n) {
    return n >= 1 && n < NAMES.length ? NAMES[n] : "signal " + n;
  }

  /**
   * How the child ended, to follow its name: {@code died with SIGSEGV (signal 11)}, {@code died with signal 40}, or
   * {@code exited with code 3}.
   */
  public static String describe(int status) {
    OptionalInt signal = signal(status);
    if (signal.isEmpty()) {
      return "exited with code " + status;
    }
    int n = signal.getAsInt();
    return n < NAMES.length ? "died with " + NAMES[n] + " (signal " + n + ")" : "died with signal " + n;
  }
}
