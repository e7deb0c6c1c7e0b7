package dev.xlac.cache;

import static dev.xlac.cache.Fixtures.CPU;
import static dev.xlac.cache.Fixtures.bytes;
import static dev.xlac.cache.Fixtures.graph;
import static dev.xlac.cache.Fixtures.key;
import static dev.xlac.cache.Fixtures.open;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SingleFlightTest {
  @TempDir
  Path dir;

  @Test
  void concurrentRequestsForOneKey_shareOneCompile() throws Exception {
    try (CacheStore s = open(dir)) {
      graph(s, 1);
      AtomicInteger compiles = new AtomicInteger();
      CountDownLatch release = new CountDownLatch(1);
      ExecutorService pool = Executors.newFixedThreadPool(8);
      try {
        List<Future<Artifact>> results = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
          results.add(pool.submit(() -> s.getOrCompile(key(1, CPU), () -> {
            compiles.incrementAndGet();
            release.await(10, TimeUnit.SECONDS);
            return new CacheStore.Compiled(bytes(1, 1000), CompileInfo.of(5, "compiled"));
          })));
        }
        Thread.sleep(200); // let every request arrive while the first compile is still running
        release.countDown();
        for (Future<Artifact> f : results) {
          assertThat(f.get(10, TimeUnit.SECONDS).bytes()).isEqualTo(bytes(1, 1000));
        }
      } finally {
        pool.shutdownNow();
      }
      assertThat(compiles).hasValue(1);
      assertThat(s.artifactInfo(key(1, CPU)).orElseThrow().status()).isEqualTo(EntryStatus.COMPILED);
    }
  }

  @Test
  void aFailedCompile_isNotCached() throws Exception {
    try (CacheStore s = open(dir)) {
      graph(s, 1);
      AtomicInteger compiles = new AtomicInteger();
      assertThatThrownBy(() -> s.getOrCompile(key(1, CPU), () -> {
        compiles.incrementAndGet();
        throw new IllegalStateException("compiler crashed");
      })).hasMessageContaining("compiler crashed");
      assertThat(s.getArtifact(key(1, CPU))).isEmpty();
      Artifact a = s.getOrCompile(key(1, CPU), () -> {
        compiles.incrementAndGet();
        return new CacheStore.Compiled(bytes(2, 10), CompileInfo.of(1, ""));
      });
      assertThat(a.bytes()).isEqualTo(bytes(2, 10));
      assertThat(compiles).hasValue(2);
      assertThat(s.getArtifact(key(1, CPU))).isPresent();
    }
  }
}
