package dev.xlac.cache;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;

/**
 * The cache's database cannot be opened, or a scan of it meets a damaged table block: only
 * {@code xlac cache verify --repair} ({@link CacheRepair#repair}) can fix that, by rebuilding it
 * from what can still be read. {@code cache clear} ({@link CacheRepair#clearDamaged}) also works on such a
 * cache. Exit code 1, as for other damage.
 */
public final class DamagedCacheException extends XlacException {
  private static final long serialVersionUID = 1L;
  private final String damage;
  private final String summary;

  public DamagedCacheException(java.nio.file.Path cacheDir, String damage, Throwable cause) {
    this(damage, "cache " + cacheDir + " is damaged (" + damage + ")", cause);
  }

  private DamagedCacheException(String damage, String summary, Throwable cause) {
    super(ExitCode.WORK_FAILED, summary + "; run 'xlac cache verify --repair'", cause);
    this.damage = damage;
    this.summary = summary;
  }

  /** The message without its advice: {@code cache DIR is damaged (...)}, for a command that has acted on it. */
  public String summary() {
    return summary;
  }

  /** What is damaged, in words, without the advice: {@code cannot open the database: CURRENT file does not end with newline}. */
  public String damage() {
    return damage;
  }
}
