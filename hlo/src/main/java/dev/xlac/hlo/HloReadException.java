package dev.xlac.hlo;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.nio.file.Path;

/** A file that cannot be read as an HLO module; the message is "cannot read FILE: REASON". */
public final class HloReadException extends XlacException {
  private static final long serialVersionUID = 1L;
  private final transient Path file;
  private final String reason;

  public HloReadException(Path file, String reason) {
    this(file, reason, null);
  }

  public HloReadException(Path file, String reason, Throwable cause) {
    super(ExitCode.BAD_INPUT, "cannot read " + file + ": " + reason, cause);
    this.file = file;
    this.reason = reason;
  }

  public Path file() {
    return file;
  }

  public String reason() {
    return reason;
  }
}
