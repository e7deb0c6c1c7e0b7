package dev.xlac.core;

/**
 * An error with a one-line, user-facing message and the exit code it maps to. The message names
 * what failed and why; stack traces are for {@code --verbose} only.
 */
public class XlacException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final ExitCode exitCode;

  public XlacException(ExitCode exitCode, String message) {
    super(message);
    this.exitCode = exitCode;
  }

  public XlacException(ExitCode exitCode, String message, Throwable cause) {
    super(message, cause);
    this.exitCode = exitCode;
  }

  public ExitCode exitCode() {
    return exitCode;
  }

  public static XlacException badInput(String message) {
    return new XlacException(ExitCode.BAD_INPUT, message);
  }

  public static XlacException environment(String message) {
    return new XlacException(ExitCode.ENVIRONMENT, message);
  }

  /**
   * Why {@code e} happened, in words, for a one-line message: never a class name, never a bare path. The one
   * place where reasons are worded; see {@link Reasons#of}.
   */
  public static String reason(Throwable e) {
    return Reasons.of(e);
  }
}
