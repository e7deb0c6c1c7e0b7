package dev.xlac.compiler.schedule;

import dev.xlac.compiler.CompilerDriver;
import dev.xlac.core.CompilerIdentity;
import java.util.function.Supplier;

/**
 * Makes the drivers of one run: one per worker, each used by one thread at a time. The scheduler
 * calls {@link #open()} lazily, when a worker takes its first job, so a run with nothing to
 * compile starts no compiler.
 */
public interface DriverFactory extends AutoCloseable {

  /**
   * The identity every driver of this factory has; the cache key of the artifacts. It may start a
   * compiler once to ask it (or answer from a record of an earlier probe).
   */
  CompilerIdentity identity();

  /**
   * A new driver, owned by the caller. Throws {@code XlacException} (ENVIRONMENT) when the
   * compiler cannot be started; the scheduler then stops the run.
   */
  CompilerDriver open();

  /** Releases what the factory holds that no driver owns yet (e.g. a probe's spare driver). */
  @Override
  default void close() {}

  /** A factory for drivers whose identity is known without starting one. */
  static DriverFactory of(CompilerIdentity identity, Supplier<? extends CompilerDriver> open) {
    return new DriverFactory() {
      @Override
      public CompilerIdentity identity() {
        return identity;
      }

      @Override
      public CompilerDriver open() {
        return open.get();
      }
    };
  }
}
