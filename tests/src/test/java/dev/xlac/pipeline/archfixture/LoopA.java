package dev.xlac.pipeline.archfixture;

/** One of two classes that use each other (with {@link LoopB}): what {@code PipelineRulesTest} must report. */
public final class LoopA {
  public LoopB next() {
    return new LoopB();
  }
}
