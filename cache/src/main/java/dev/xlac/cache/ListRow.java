package dev.xlac.cache;

import dev.xlac.core.CompilerIdentity;
import dev.xlac.hlo.GraphFingerprint;
import java.time.Duration;
import java.time.Instant;

/**
 * One row of {@code cache ls}: a graph and one compiler it was compiled with, or the graph alone
 * ({@link EntryStatus#PENDING}, no compiler) when nothing compiled it.
 *
 * @param compilerDigest hex digest of the compiler identity; null for a pending row
 * @param compiler the identity; null for a pending row or when its record is missing
 * @param artifactBytes artifact size (0 for pending and failed rows)
 * @param created when the artifact or failure was recorded (pending: when the graph was first seen)
 */
public record ListRow(GraphFingerprint fingerprint, String module, EntryStatus status, String compilerDigest,
    CompilerIdentity compiler, long artifactBytes, long hloBytes, Duration compileTime, Instant created,
    Instant lastAccess) {

  /** The compiler as users filter by it: its short name, or a digest prefix when the identity is unknown. */
  public String compilerName() {
    if (compiler != null) {
      return compiler.shortName();
    }
    return compilerDigest == null ? null : compilerDigest.substring(0, 12);
  }
}
