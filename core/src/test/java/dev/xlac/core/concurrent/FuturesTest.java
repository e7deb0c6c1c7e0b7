package dev.xlac.core.concurrent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.FutureTask;
import org.junit.jupiter.api.Test;

class FuturesTest {
  private static <T> FutureTask<T> ran(java.util.concurrent.Callable<T> work) {
    FutureTask<T> task = new FutureTask<>(work);
    task.run();
    return task;
  }

  @Test
  void join_givesTheValue() throws Exception {
    assertThat(Futures.join(CompletableFuture.completedFuture("done"))).isEqualTo("done");
  }

  @Test
  void join_rethrowsUncheckedExceptionsAndErrors_asTheyWere() {
    XlacException bad = XlacException.badInput("the input is bad");
    assertThatThrownBy(() -> Futures.join(ran(() -> {
      throw bad;
    }))).isSameAs(bad).isInstanceOfSatisfying(XlacException.class,
        e -> assertThat(e.exitCode()).isEqualTo(ExitCode.BAD_INPUT));
    StackOverflowError error = new StackOverflowError();
    assertThatThrownBy(() -> Futures.join(ran(() -> {
      throw error;
    }))).isSameAs(error);
  }

  @Test
  void join_wrapsACheckedException() {
    IOException io = new IOException("disk gone");
    assertThatThrownBy(() -> Futures.join(ran(() -> {
      throw io;
    }))).isInstanceOf(IllegalStateException.class).hasCause(io);
  }
}
