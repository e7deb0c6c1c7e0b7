package dev.xlac.cache;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;

/**
 * A write, flush, compaction or open of the cache's database met a full disk. Exit code 3 (the
 * environment), with the message {@code cache DIR: disk full (...)} and what helps. A separate type
 * so that work which must not go on after a lost write (a repair's rebuild) can tell it from damage.
 */
public final class DiskFullException extends XlacException {
  private static final long serialVersionUID = 1L;

  public DiskFullException(String message) {
    super(ExitCode.ENVIRONMENT, message);
  }

  /** Whether {@code message} (RocksDB's, an I/O error's, or a {@link XlacException#reason}) reports a full disk. */
  public static boolean isDiskFull(String message) {
    String m = message == null ? "" : message.toLowerCase(java.util.Locale.ROOT);
    return m.contains("no space left") || m.contains("file too large") || m.contains("disk quota exceeded");
  }
}
