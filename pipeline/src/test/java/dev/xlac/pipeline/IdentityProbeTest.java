package dev.xlac.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.CacheStore;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.compiler.CompilerDriver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IdentityProbeTest {
  @TempDir
  Path tmp;

  /** A factory whose compiler cannot start; remembers being closed. */
  private static final class Broken implements DriverFactory {
    final AtomicBoolean closed = new AtomicBoolean();
    private final java.util.function.Supplier<? extends RuntimeException> runtimeFailure;
    private final Error error;

    Broken() {
      this(() -> XlacException.environment("cannot use PJRT plugin /nowhere.so: no such file"), null);
    }

    private Broken(java.util.function.Supplier<? extends RuntimeException> runtimeFailure, Error error) {
      this.runtimeFailure = runtimeFailure;
      this.error = error;
    }

    /** One whose identity throws {@code error}. */
    static Broken erring(Error error) {
      return new Broken(null, error);
    }

    @Override
    public CompilerIdentity identity() {
      if (error != null) {
        throw error;
      }
      throw runtimeFailure.get();
    }

    @Override
    public CompilerDriver open() {
      throw new AssertionError("no driver is opened without an identity");
    }

    @Override
    public void close() {
      closed.set(true);
    }
  }

  @Test
  void failure_interruptsCaller_andClosesTheFactory() throws Exception {
    Broken broken = new Broken();
    try (CacheStore store = CacheStore.open(tmp, CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
        CompileFeed feed = new CompileFeed(store, new SchedulerSettings(1, 0, 0), false, RunListener.NONE,
            () -> Long.MAX_VALUE)) {
      IdentityProbe probe = IdentityProbe.start(() -> broken, feed, Thread.currentThread());
      // The caller (a traced command in the one-shot mode) is busy; the probe's failure stops it.
      assertThatThrownBy(() -> Thread.sleep(TimeUnit.SECONDS.toMillis(30))).isInstanceOf(InterruptedException.class);
      probe.join();
      assertThat(probe.failure()).isNotNull();
      assertThat(probe.failure().exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
      assertThat(probe.failure().getMessage()).contains("/nowhere.so");
      assertThat(broken.closed).isTrue();
      // A fixed list waiting for the compiler gets the same failure.
      assertThatThrownBy(() -> feed.offerAll(new LinkedHashMap<>())).isSameAs(probe.failure());
    }
  }

  @Test
  void failure_withNoCallerToInterrupt_isOnlyRecorded() throws Exception {
    try (CacheStore store = CacheStore.open(tmp, CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
        CompileFeed feed = new CompileFeed(store, new SchedulerSettings(1, 0, 0), false, RunListener.NONE,
            () -> Long.MAX_VALUE)) {
      IdentityProbe probe = IdentityProbe.start(() -> {
        throw new IllegalStateException("boom");
      }, feed, null);
      probe.join();
      assertThat(Thread.interrupted()).isFalse();
      assertThat(probe.failure().exitCode()).isEqualTo(ExitCode.INTERNAL);
      assertThat(probe.failure().getMessage()).isEqualTo("cannot start the compiler: boom");
    }
  }

  @Test
  void anError_inTheProbe_failsAWaitingFixedList_insteadOfHangingIt() throws Exception {
    Broken erring = Broken.erring(new ExceptionInInitializerError("the plugin's bindings could not be made"));
    try (CacheStore store = CacheStore.open(tmp, CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
        CompileFeed feed = new CompileFeed(store, new SchedulerSettings(1, 0, 0), false, RunListener.NONE,
            () -> Long.MAX_VALUE)) {
      IdentityProbe probe = IdentityProbe.start(() -> erring, feed, null);
      var waiting = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
        try {
          return feed.offerAll(new LinkedHashMap<>());
        } catch (InterruptedException e) {
          throw new IllegalStateException(e);
        }
      });
      assertThatThrownBy(() -> waiting.get(30, TimeUnit.SECONDS))
          .hasCauseInstanceOf(ExceptionInInitializerError.class);
      probe.join();
      assertThat(erring.closed).isTrue();
      assertThat(probe.failure().exitCode()).isEqualTo(ExitCode.INTERNAL);
    }
  }

  @Test
  void anUnexpectedException_reachesAFixedListAsItself_soItReadsAsAnInternalError() throws Exception {
    IllegalStateException boom = new IllegalStateException("boom");
    try (CacheStore store = CacheStore.open(tmp, CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
        CompileFeed feed = new CompileFeed(store, new SchedulerSettings(1, 0, 0), false, RunListener.NONE,
            () -> Long.MAX_VALUE)) {
      IdentityProbe probe = IdentityProbe.start(() -> {
        throw boom;
      }, feed, null);
      probe.join();
      assertThatThrownBy(() -> feed.offerAll(new LinkedHashMap<>())).isSameAs(boom);
    }
  }

  @Test
  void awaitEnd_usesUpTheFailedProbesInterrupt_butKeepsAnyOther() throws Exception {
    try (CacheStore store = CacheStore.open(tmp, CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
        CompileFeed feed = new CompileFeed(store, new SchedulerSettings(1, 0, 0), false, RunListener.NONE,
            () -> Long.MAX_VALUE)) {
      IdentityProbe failed = IdentityProbe.start(Broken::new, feed, Thread.currentThread());
      assertThat(failed.awaitEnd()).isNotNull();
      assertThat(Thread.interrupted()).as("the probe's interrupt is used up").isFalse();
    }
  }
}
