package dev.xlac.compiler.schedule;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.core.FailureKind;
import dev.xlac.core.ProgramKey;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * What became of one graph in a run: one row of the summary and the reports.
 *
 * @param compileTime the wall time the compiler spent on it, summed over attempts (zero when not compiled)
 * @param attempts how many times the compiler ran on it (0 for cached and skipped graphs)
 * @param failureKind the driver's classification of the last failure; null unless it failed in the compiler
 * @param error one line; null unless the status is a failure
 */
public record GraphResult(ProgramKey fingerprint, String moduleName, Status status, Duration compileTime,
    int attempts, FailureKind failureKind, String error) {

  /** Where a graph ended up. Everything except COMPILED and CACHED counts as failed. */
  public enum Status {
    /** Compiled in this run; the artifact is in the cache. */
    COMPILED,
    /** The cache already held an artifact for this compiler; nothing ran. */
    CACHED,
    /** The compiler ran and failed (after any retries); the failure is in the cache. */
    FAILED,
    /** An earlier run's compile failed and this run did not retry it ({@code --retry-failed} does). */
    PREVIOUSLY_FAILED,
    /** Not compiled: the run was stopped (Ctrl-C) or its compiler became unusable first. */
    NOT_RUN;

    /** The report's status: {@code compiled}, {@code cached} or {@code failed}. */
    public String reportName() {
      return switch (this) {
        case COMPILED -> "compiled";
        case CACHED -> "cached";
        default -> "failed";
      };
    }

    public boolean failed() {
      return this != COMPILED && this != CACHED;
    }
  }

  public GraphResult {
    Objects.requireNonNull(fingerprint, "fingerprint");
    Objects.requireNonNull(moduleName, "moduleName");
    Objects.requireNonNull(status, "status");
    compileTime = compileTime == null ? Duration.ZERO : compileTime;
    if (status.failed() && error == null) {
      throw new IllegalArgumentException("a failed graph needs an error: " + moduleName);
    }
    if (error != null && error.contains("\n")) {
      throw new IllegalArgumentException("an error is one line: " + error);
    }
  }

  public static GraphResult cached(ProgramKey fp, String moduleName) {
    return new GraphResult(fp, moduleName, Status.CACHED, Duration.ZERO, 0, null, null);
  }

  /** A graph whose compile failed in an earlier run ({@code kind} as the cache recorded it). */
  public static GraphResult previouslyFailed(ProgramKey fp, String moduleName, String kind, String message) {
    return new GraphResult(fp, moduleName, Status.PREVIOUSLY_FAILED, Duration.ZERO, 0, null,
        "failed in an earlier run (" + kind + "): " + CompileOutcome.oneLine(message) + "; not retried without --retry-failed");
  }

  /** {@code compile-error}, {@code crash}, ...: how failure kinds are written to the cache and reports. */
  public static String kindName(FailureKind kind) {
    return kind.name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  public String describe() {
    return fingerprint.describe(moduleName);
  }
}
