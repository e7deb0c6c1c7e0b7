package dev.xlac.capture;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;

/**
 * The traced command cannot be started. Like {@code env}, {@code timeout} and the shells,
 * {@code xlac dump} then exits 127 when the command is not found and 126 when it is found but
 * cannot be run, so a caller sees the same status as without xlac.
 */
public final class CommandNotRunnableException extends XlacException {
  private static final long serialVersionUID = 1L;
  public static final int NOT_FOUND = 127;
  public static final int NOT_EXECUTABLE = 126;
  private final int status;

  public CommandNotRunnableException(int status, String message) {
    super(ExitCode.BAD_INPUT, message);
    this.status = status;
  }

  /** 127 or 126. */
  public int status() {
    return status;
  }
}
