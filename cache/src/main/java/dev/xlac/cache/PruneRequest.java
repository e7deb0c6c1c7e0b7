package dev.xlac.cache;

import java.time.Duration;
import java.util.OptionalLong;

/**
 * What {@code cache prune} removes. Entries are taken least recently used first.
 *
 * <p>Filters choose the candidates: with {@code failedOnly}, {@code compiler} or {@code notCompiler}
 * only artifact entries that match are candidates (graphs are compiler-independent and stay);
 * without filters every graph and artifact is (removing a graph removes its artifacts).
 *
 * <p>Bounds choose how many candidates go: those last used longer ago than {@code olderThan}, then
 * more until the cache's stored bytes are at most {@code maxSize}. With no bound at all, every
 * candidate goes (so {@code --failed} alone removes every failure).
 */
public record PruneRequest(OptionalLong maxSize, Duration olderThan, boolean failedOnly, CompilerFilter compiler,
    CompilerFilter notCompiler, boolean dryRun, boolean automatic) {

  public PruneRequest {
    maxSize = maxSize == null ? OptionalLong.empty() : maxSize;
  }

  public boolean hasFilter() {
    return failedOnly || compiler != null || notCompiler != null;
  }

  public boolean hasBound() {
    return maxSize.isPresent() || olderThan != null;
  }

  /** The cleanup a configured max-size triggers after a write. */
  public static PruneRequest automatic(long targetBytes) {
    return new PruneRequest(OptionalLong.of(targetBytes), null, false, null, null, false, true);
  }
}
