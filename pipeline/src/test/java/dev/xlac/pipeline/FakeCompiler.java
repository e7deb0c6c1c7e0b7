package dev.xlac.pipeline;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.compiler.CompilerDriver;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.core.CompilerIdentity;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A compiler that needs no process: the artifact is the module's name. Counts the drivers opened
 * and the compiles, and can hold every compile until {@link #release()}.
 */
final class FakeCompiler {
  static final CompilerIdentity IDENTITY = new CompilerIdentity("fake", "1.0", "cpu", List.of(), Map.of());

  final AtomicInteger opened = new AtomicInteger();
  final AtomicInteger compiles = new AtomicInteger();
  private final CountDownLatch gate;

  /** @param held whether compiles wait for {@link #release()} */
  FakeCompiler(boolean held) {
    gate = new CountDownLatch(held ? 1 : 0);
  }

  void release() {
    gate.countDown();
  }

  DriverFactory factory() {
    return DriverFactory.of(IDENTITY, () -> {
      opened.incrementAndGet();
      return new CompilerDriver() {
        @Override
        public CompilerIdentity identity() {
          return IDENTITY;
        }

        @Override
        public CompileOutcome compile(CompileRequest request) {
          compiles.incrementAndGet();
          try {
            gate.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return new CompileOutcome.Success(request.moduleName().getBytes(StandardCharsets.UTF_8), "",
              Duration.ofMillis(1), Map.of());
        }

        @Override
        public void close() {}
      };
    });
  }
}
