package dev.xlac.compiler.schedule;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.compiler.CompilerDriver;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/** {@link DriverFactory#prestart()} through {@link DriverFactory#of} and {@link WarmDriver}, with in-JVM drivers. */
class PrestartTest {
  private static final CompilerIdentity ID = new CompilerIdentity("test", "1", "cpu", List.of(), Map.of());

  /** A driver that knows its number and whether it was closed. */
  private static final class Numbered implements CompilerDriver {
    final int n;
    volatile boolean closed;

    Numbered(int n) {
      this.n = n;
    }

    @Override
    public CompilerIdentity identity() {
      return ID;
    }

    @Override
    public CompileOutcome compile(CompileRequest request) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  /** Counts opens; the n-th open (from 1) runs {@code before.apply(n)} first. Keeps every driver made. */
  private static final class Opens {
    final List<Numbered> made = new CopyOnWriteArrayList<>();
    final CountDownLatch firstEntered = new CountDownLatch(1);
    final IntFunction<RuntimeException> before;
    int count;

    Opens(IntFunction<RuntimeException> before) {
      this.before = before;
    }

    Numbered open() {
      int n;
      synchronized (this) {
        n = ++count;
      }
      firstEntered.countDown();
      RuntimeException failure = before.apply(n);
      if (failure != null) {
        throw failure;
      }
      Numbered d = new Numbered(n);
      made.add(d);
      return d;
    }

    synchronized int count() {
      return count;
    }

    boolean allClosed() {
      return made.stream().allMatch(d -> d.closed);
    }
  }

  /** Opens whose start waits for {@code release}, and when interrupted meanwhile still delivers its driver. */
  private static Opens ignoringInterrupts(CountDownLatch release) {
    return new Opens(n -> {
      try {
        release.await();
      } catch (InterruptedException e) {
        // a start that ignores the interrupt and still delivers its driver
      }
      return null;
    });
  }

  /** A factory of {@code opens} whose prestart has begun its open. */
  private static DriverFactory prestarted(Opens opens) throws InterruptedException {
    DriverFactory f = DriverFactory.of(ID, opens::open);
    f.prestart();
    opens.firstEntered.await();
    return f;
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  @Test
  void prestart_firstOpenGetsThePrestartedDriver_laterOpensFreshOnes() throws Exception {
    Opens opens = new Opens(n -> null);
    try (DriverFactory f = DriverFactory.of(ID, opens::open)) {
      f.prestart();
      opens.firstEntered.await();
      f.prestart(); // one is already starting or held: no second
      try (CompilerDriver first = f.open(); CompilerDriver second = f.open()) {
        assertThat(((Numbered) first).n).isEqualTo(1);
        assertThat(((Numbered) second).n).isEqualTo(2);
        assertThat(opens.count()).isEqualTo(2);
      }
    }
    assertThat(opens.allClosed()).isTrue();
  }

  @Test
  void open_waitsForAPrestartStillStarting() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    Opens opens = new Opens(n -> {
      if (n == 1) {
        await(release);
      }
      return null;
    });
    try (DriverFactory f = DriverFactory.of(ID, opens::open)) {
      f.prestart();
      opens.firstEntered.await();
      CompletableFuture<CompilerDriver> opened = CompletableFuture.supplyAsync(f::open);
      // An open() that did not wait would make driver 2 at once and be done before the release.
      assertThat(opened).isNotDone();
      release.countDown();
      try (CompilerDriver d = opened.get(1, TimeUnit.MINUTES)) {
        assertThat(((Numbered) d).n).isEqualTo(1);
      }
      assertThat(opens.count()).isEqualTo(1);
    }
    assertThat(opens.allClosed()).isTrue();
  }

  @Test
  void failingPrestart_surfacesOnOpen_asTheSameException() {
    XlacException startFailure = new XlacException(ExitCode.ENVIRONMENT, "cannot use the test compiler: gone");
    Opens opens = new Opens(n -> n == 1 ? startFailure : null);
    try (DriverFactory f = DriverFactory.of(ID, opens::open)) {
      f.prestart();
      assertThatThrownBy(f::open).isSameAs(startFailure);
      try (CompilerDriver next = f.open()) { // the failure is not kept: the next open starts afresh
        assertThat(((Numbered) next).n).isEqualTo(2);
      }
    }
    assertThat(opens.allClosed()).isTrue();
  }

  @Test
  void close_stopsAnUntakenPrestartStillStarting_withoutWaitingForIt() throws Exception {
    CountDownLatch never = new CountDownLatch(1);
    CompletableFuture<Boolean> sawInterrupt = new CompletableFuture<>();
    Opens opens = new Opens(n -> {
      try {
        never.await(); // a start that would not end by itself
        return null;
      } catch (InterruptedException e) {
        sawInterrupt.complete(true);
        return new XlacException(ExitCode.ENVIRONMENT, "interrupted while starting");
      }
    });
    DriverFactory f = prestarted(opens);
    f.close();
    assertThat(sawInterrupt).isCompletedWithValue(true); // close() stopped it and waited only for that
    assertThat(opens.made).isEmpty();
  }

  @Test
  void close_closesADriverThatArrivesAfterAnInterruptedStart() throws Exception {
    Opens opens = ignoringInterrupts(new CountDownLatch(1));
    DriverFactory f = prestarted(opens);
    f.close();
    assertThat(opens.made).hasSize(1);
    assertThat(opens.allClosed()).isTrue();
  }

  @Test
  void close_closesAStartedDriverNobodyTook_butNotOneThatWasTaken() throws Exception {
    Opens opens = new Opens(n -> null);
    DriverFactory f = prestarted(opens);
    f.close();
    assertThat(opens.made).hasSize(1);
    assertThat(opens.allClosed()).isTrue();

    Opens taken = new Opens(n -> null);
    DriverFactory g = DriverFactory.of(ID, taken::open);
    g.prestart();
    CompilerDriver d = g.open();
    g.close();
    assertThat(((Numbered) d).closed).isFalse();
    d.close();
  }

  @Test
  void interruptedOpen_isEnvironment_andStopsThePrestart() throws Exception {
    Opens opens = ignoringInterrupts(new CountDownLatch(1));
    DriverFactory f = prestarted(opens);
    Thread.currentThread().interrupt();
    assertThatThrownBy(f::open).isInstanceOfSatisfying(XlacException.class,
        e -> assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT));
    assertThat(Thread.interrupted()).isTrue(); // the status is kept (and cleared here)
    assertThat(opens.made).hasSize(1);
    assertThat(opens.allClosed()).isTrue();
    f.close();
  }

  @Test
  void firstDriver_isTheFirstOpens_andPrestartStartsNothingWhileItIsHeld() throws Exception {
    Numbered given = new Numbered(0);
    Opens opens = new Opens(n -> null);
    try (DriverFactory f = DriverFactory.of(ID, opens::open, given)) {
      f.prestart();
      try (CompilerDriver first = f.open(); CompilerDriver second = f.open()) {
        assertThat(first).isSameAs(given);
        assertThat(((Numbered) second).n).isEqualTo(1);
        assertThat(opens.count()).isEqualTo(1);
      }
    }
    assertThat(given.closed).isTrue();
    assertThat(opens.allClosed()).isTrue();
  }

  @Test
  void firstDriver_nobodyTook_isClosedWithTheFactory() {
    Numbered given = new Numbered(0);
    Opens opens = new Opens(n -> null);
    DriverFactory f = DriverFactory.of(ID, opens::open, given);
    f.close();
    assertThat(given.closed).isTrue();
    assertThat(opens.count()).isZero();

    Numbered taken = new Numbered(0);
    DriverFactory g = DriverFactory.of(ID, opens::open, taken);
    CompilerDriver d = g.open();
    g.close();
    assertThat(((Numbered) d).closed).isFalse();
  }
}
