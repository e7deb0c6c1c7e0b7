package dev.xlac.compiler.pjrt;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;

/**
 * A {@code PJRT_Error} returned by a plugin, read and destroyed at the call site. The message is
 * one line: the PJRT function, the error code, and the first line of the plugin's message; the
 * plugin's full text is {@link #pluginMessage()}.
 */
public final class PjrtException extends XlacException {
  private static final long serialVersionUID = 1L;
  private final transient PjrtErrorCode code;
  private final String function;
  private final String pluginMessage;

  PjrtException(ExitCode exitCode, String function, PjrtErrorCode code, String pluginMessage) {
    super(exitCode, function + " failed: " + code + ": " + firstLine(pluginMessage));
    this.function = function;
    this.code = code;
    this.pluginMessage = pluginMessage;
  }

  /** The PJRT error code, e.g. {@link PjrtErrorCode#INVALID_ARGUMENT}. */
  public PjrtErrorCode code() {
    return code;
  }

  /** The C API function that failed, e.g. {@code PJRT_Client_Compile}. */
  public String function() {
    return function;
  }

  /** The plugin's message, complete (it may span lines). */
  public String pluginMessage() {
    return pluginMessage;
  }

  static String firstLine(String text) {
    String t = text.strip();
    int nl = t.indexOf('\n');
    if (nl < 0) {
      return t.isEmpty() ? "(no message)" : t;
    }
    long more = t.substring(nl + 1).lines().filter(l -> !l.isBlank()).count();
    return t.substring(0, nl).strip() + (more > 0 ? " (+" + more + " more lines)" : "");
  }
}
