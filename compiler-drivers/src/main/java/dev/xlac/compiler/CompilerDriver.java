package dev.xlac.compiler;

import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.FailureKind;

/**
 * A compiler that turns one HLO module into one artifact. Implementations: the in-process PJRT
 * driver, its process-isolated variant, and (later) neuronx-cc.
 *
 * <p>Contract: {@link #compile} never throws for a problem with the graph or the compiler: every
 * such problem is a {@link CompileOutcome.Failure} with a {@link FailureKind}. It throws only for
 * misuse (a closed driver) and bugs. A driver may hold native resources or child processes, so it
 * is closed by its one owner; {@code close()} is safe to call twice. Whether {@code compile} may
 * be called from several threads at once is documented by each implementation.
 */
public interface CompilerDriver extends AutoCloseable {

  /** What this driver compiles with: part of every artifact key it produces. Fixed for the driver's life. */
  CompilerIdentity identity();

  /**
   * For a PJRT driver, what xlac's runtime proxy puts into the plugin identity text that keys recorded requests
   * when a training run uses this plugin (runtime/README.md); empty for other compilers, which cannot compile
   * recorded requests.
   */
  default java.util.Optional<dev.xlac.compiler.pjrt.PjrtPluginFacts> pluginFacts() {
    return java.util.Optional.empty();
  }

  /** Compiles one module. */
  CompileOutcome compile(CompileRequest request);

  /** Releases what the driver owns. Safe to call twice. */
  @Override
  void close();
}
