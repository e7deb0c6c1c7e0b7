package dev.xlac.cache;

import java.time.Duration;

/** How an artifact was made: the compile's wall time and its log (may be empty). */
public record CompileInfo(Duration compileTime, String log) {
  public CompileInfo {
    compileTime = compileTime == null ? Duration.ZERO : compileTime;
    log = log == null ? "" : log;
  }

  public static CompileInfo of(double seconds, String log) {
    return new CompileInfo(Duration.ofMillis(Math.round(seconds * 1000)), log);
  }
}
