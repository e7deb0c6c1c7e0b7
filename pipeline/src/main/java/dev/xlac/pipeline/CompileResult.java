package dev.xlac.pipeline;

import dev.xlac.core.ExitCode;
import dev.xlac.pipeline.explain.WhyNew;

/**
 * A {@code parallel-compile} run over a fixed list of graphs.
 *
 * @param report every graph considered
 * @param inputs what reading the PATHs adds to the exit code (BAD_INPUT when a file was unreadable)
 * @param whyNew why each graph the PATHs added to the cache was new ({@link WhyNew}); {@link WhyNew.Summary#NONE}
 *     for a run over the cache itself
 */
public record CompileResult(RunReport report, ExitCode inputs, WhyNew.Summary whyNew) {
  public CompileResult(RunReport report, ExitCode inputs) {
    this(report, inputs, WhyNew.Summary.NONE);
  }

  /** The run's exit code: the report's, or the inputs' when that is worse. */
  public ExitCode exitCode() {
    return report.exitCode().worst(inputs);
  }
}
