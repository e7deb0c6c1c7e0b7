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
import java.util.Optional;
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
  void getArtifact_concurrentCallers_shareOneLoad() throws Exception {
    try (CacheStore s = open(dir)) {
      graph(s, 1);
      s.putArtifact(key(1, CPU), bytes(1, 1000), CompileInfo.of(5, "compiled"));
      AtomicInteger loads = new AtomicInteger();
      CountDownLatch release = new CountDownLatch(1);
      Internals.beforeLoad(s, k -> {
        loads.incrementAndGet();
        try {
          release.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      ExecutorService pool = Executors.newFixedThreadPool(8);
      try {
        List<Future<Optional<Artifact>>> results = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
          results.add(pool.submit(() -> s.getArtifact(key(1, CPU))));
        }
        Thread.sleep(200); // let every request arrive while the first load is still running
        release.countDown();
        for (Future<Optional<Artifact>> f : results) {
          assertThat(f.get(10, TimeUnit.SECONDS).orElseThrow().bytes()).isEqualTo(bytes(1, 1000));
        }
      } finally {
        pool.shutdownNow();
      }
      assertThat(loads).hasValue(1);
      assertThat(s.getArtifact(key(1, CPU))).isPresent(); // kept in memory: no second load
      assertThat(loads).hasValue(1);
    }
  }

  @Test
  void getArtifact_aFailedLoad_isNotRemembered() throws Exception {
    try (CacheStore s = open(dir)) {
      graph(s, 1);
      s.putArtifact(key(1, CPU), bytes(1, 10), CompileInfo.of(1, ""));
      AtomicInteger loads = new AtomicInteger();
      Internals.beforeLoad(s, k -> {
        if (loads.incrementAndGet() == 1) {
          throw new IllegalStateException("read failed");
        }
      });
      assertThatThrownBy(() -> s.getArtifact(key(1, CPU))).hasMessageContaining("read failed");
      assertThat(s.getArtifact(key(1, CPU))).hasValueSatisfying(a -> assertThat(a.bytes()).isEqualTo(bytes(1, 10)));
      assertThat(loads).hasValue(2);
    }
  }
}
