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
public final class FakeCompiler {
  public static final CompilerIdentity IDENTITY = new CompilerIdentity("fake", "1.0", "cpu", List.of(), Map.of());
  /** What a PJRT driver of this "plugin" reports for the plugin identity text. */
  public static final dev.xlac.compiler.pjrt.PjrtPluginFacts FACTS = new dev.xlac.compiler.pjrt.PjrtPluginFacts("fake", "1.0",
      0, 94, "f".repeat(64), List.of("fake device"), List.of(new dev.xlac.compiler.pjrt.PjrtPluginFacts.Attribute(
          "fake_version", dev.xlac.compiler.pjrt.PjrtPluginFacts.Attribute.INT64, 3L)));
  public static final String IDENTITY_TEXT = RecordedRequests.identityText(FACTS, System.getenv());

  public final AtomicInteger opened = new AtomicInteger();
  public final AtomicInteger compiles = new AtomicInteger();
  /** The identity of a fake PJRT plugin: runs with it compile recorded requests too. */
  public static final CompilerIdentity PJRT_IDENTITY = new CompilerIdentity("pjrt", "fake 1.0; plugin api 0.94", "fake",
      List.of(), Map.of());

  private final CountDownLatch gate;
  private final CompilerIdentity identity;

  /** @param held whether compiles wait for {@link #release()} */
  public FakeCompiler(boolean held) {
    this(held, IDENTITY);
  }

  public FakeCompiler(boolean held, CompilerIdentity identity) {
    gate = new CountDownLatch(held ? 1 : 0);
    this.identity = identity;
  }

  public void release() {
    gate.countDown();
  }

  public DriverFactory factory() {
    return DriverFactory.of(identity, () -> {
      opened.incrementAndGet();
      return new CompilerDriver() {
        @Override
        public CompilerIdentity identity() {
          return identity;
        }

        @Override
        public java.util.Optional<dev.xlac.compiler.pjrt.PjrtPluginFacts> pluginFacts() {
          return java.util.Optional.of(FACTS);
        }

        @Override
        public CompileOutcome compile(CompileRequest request) {
          compiles.incrementAndGet();
          if (new String(request.hloModule(), StandardCharsets.UTF_8).contains("reject")) {
            return new CompileOutcome.Failure(dev.xlac.core.FailureKind.COMPILE_ERROR, request.describe()
                + ": PJRT_Client_Compile: INVALID_ARGUMENT: rejected", "the fake plugin's log\nline 2",
                Duration.ofMillis(1));
          }
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
