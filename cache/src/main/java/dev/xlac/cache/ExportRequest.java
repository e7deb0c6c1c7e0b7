package dev.xlac.cache;

import java.time.Duration;

/**
 * What {@code cache export} puts in a bundle.
 *
 * @param compiler only artifacts of a matching compiler, and the graphs they were made from (null:
 *     every artifact and every graph, pending ones included)
 * @param since only artifacts recorded and graphs seen within this long (null: all)
 */
public record ExportRequest(CompilerFilter compiler, Duration since) {
  public static ExportRequest all() {
    return new ExportRequest(null, null);
  }
}
