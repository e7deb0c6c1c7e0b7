package dev.xlac.core;

/**
 * The one exit-code table of xlac. Every command maps its outcome to one of these; the CLI's
 * exception handler maps {@link XlacException}s through {@link XlacException#exitCode()}.
 */
public enum ExitCode {
  /** Everything asked for was done. */
  OK(0, "success"),
  /** The work itself failed: a graph did not compile, a check found damage. */
  WORK_FAILED(1, "the work failed (a graph did not compile, a check failed)"),
  /** The command line or an input file is wrong. */
  BAD_INPUT(2, "usage error or bad input (unreadable, corrupt or unsupported file)"),
  /** Something outside xlac is missing or busy: a plugin, a compiler, a locked cache. */
  ENVIRONMENT(3, "environment problem (plugin or compiler missing, cache locked, disk full)"),
  /** A bug in xlac. */
  INTERNAL(4, "internal error (a bug in xlac; rerun with --verbose and report it)");

  private final int code;
  private final String meaning;

  ExitCode(int code, String meaning) {
    this.code = code;
    this.meaning = meaning;
  }

  public int code() {
    return code;
  }

  public String meaning() {
    return meaning;
  }

  /** The worse of two outcomes: higher codes win, except that OK never wins. */
  public ExitCode worst(ExitCode other) {
    return other.code > code ? other : this;
  }
}
