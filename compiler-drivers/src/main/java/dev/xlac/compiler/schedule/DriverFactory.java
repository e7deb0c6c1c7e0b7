package dev.xlac.compiler.schedule;

import dev.xlac.compiler.CompilerDriver;
import dev.xlac.core.CompilerIdentity;
import java.util.function.Supplier;

/**
 * Makes the drivers of one run: one per worker, each used by one thread at a time. The scheduler
 * calls {@link #open()} lazily, when a worker takes its first job, so a run with nothing to
 * compile starts no compiler. A caller that knows compiles are coming can {@link #prestart()} the
 * first driver, so that its start-up overlaps the caller's own work.
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

  /**
   * Starts opening, in the background, the driver that the next {@link #open()} returns (which
   * waits for it if it is still starting, and throws what its start threw, as an {@code open()}
   * on demand would). Does nothing when such a driver is already held or starting. A factory
   * whose drivers cost nothing to start may ignore it.
   */
  default void prestart() {}

  /**
   * The plugin identity text that recorded runtime requests were keyed with on an earlier run on this machine, for
   * this {@code context} (the caller's other inputs to the text, such as the compile environment's flags), from a
   * record, without starting a driver; empty when none is recorded, or the compiler is not a PJRT plugin. A record
   * may be stale: good only for finding that nothing is to be compiled, never for keying what is (that takes the
   * facts of a driver opened for it).
   */
  default java.util.Optional<String> rememberedIdentityText(String context) {
    return java.util.Optional.empty();
  }

  /** Records the identity text a driver's facts gave for {@code context}, for {@link #rememberedIdentityText}. */
  default void rememberIdentityText(String context, String identityText) {}

  /**
   * Releases what the factory holds that no driver owns yet (a probe's or {@link #prestart()}'s
   * spare driver), without waiting for one still starting: that start is stopped.
   */
  @Override
  default void close() {}

  /** A factory for drivers whose identity is known without starting one. */
  static DriverFactory of(CompilerIdentity identity, Supplier<? extends CompilerDriver> open) {
    return new SuppliedDrivers(identity, open, null);
  }

  /**
   * As {@link #of(CompilerIdentity, Supplier)}, with a driver already open (e.g. the one that was started to learn
   * the identity): the first {@link #open()} returns it, and {@link #close()} closes it if no {@code open()} did.
   * While it is held, {@link #prestart()} starts nothing.
   */
  static DriverFactory of(CompilerIdentity identity, Supplier<? extends CompilerDriver> open, CompilerDriver first) {
    return new SuppliedDrivers(identity, open, first);
  }
}
