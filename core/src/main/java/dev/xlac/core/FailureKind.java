package dev.xlac.core;

/** Why a compile produced no artifact. Schedulers retry, report and cache failures by kind. */
public enum FailureKind {
  /** The compiler rejected the graph (invalid or unsupported HLO, a compiler bug it reported). */
  COMPILE_ERROR(ExitCode.WORK_FAILED),
  /** The compiler ran out of memory, or was killed by the OOM killer. Worth retrying with fewer jobs. */
  OUT_OF_MEMORY(ExitCode.WORK_FAILED),
  /** The compile ran past its time limit and was stopped. */
  TIMEOUT(ExitCode.WORK_FAILED),
  /** The compiler died (a signal, an abort, an unexpected exit) without reporting an error. */
  CRASH(ExitCode.WORK_FAILED),
  /** The compiler could not run at all: plugin or tool missing, incompatible, misconfigured. */
  ENVIRONMENT(ExitCode.ENVIRONMENT);

  private final ExitCode exitCode;

  FailureKind(ExitCode exitCode) {
    this.exitCode = exitCode;
  }

  /** The exit code a command reports when this is its worst outcome. */
  public ExitCode exitCode() {
    return exitCode;
  }
}
