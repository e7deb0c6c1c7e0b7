package dev.xlac.pipeline.archfixture;

/** The other of two classes that use each other (with {@link LoopA}). */
public final class LoopB {
  public LoopA back() {
    return new LoopA();
  }
}
