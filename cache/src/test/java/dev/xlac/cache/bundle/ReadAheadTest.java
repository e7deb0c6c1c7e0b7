package dev.xlac.cache.bundle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class ReadAheadTest {

  @Test
  void resultsComeInOrder_whateverTheReadTimes() {
    List<Integer> items = IntStream.range(0, 200).boxed().toList();
    List<Integer> out = new ArrayList<>();
    try (ReadAhead<Integer, Integer> r = new ReadAhead<>(items, i -> {
      if (i % 7 == 0) {
        Thread.onSpinWait();
        Thread.yield();
      }
      return i * 10;
    }, v -> 1L, 16, "test-reader")) {
      while (r.hasNext()) {
        out.add(r.next());
      }
    }
    assertThat(out).isEqualTo(items.stream().map(i -> i * 10).toList());
  }

  @Test
  void theReaderNeverHoldsMoreThanTheBudget_butOneLargeValueMayWaitAlone() throws Exception {
    AtomicLong readBytes = new AtomicLong();
    AtomicLong maxAhead = new AtomicLong();
    AtomicLong consumed = new AtomicLong();
    List<Integer> sizes = List.of(10, 10, 10, 100, 10, 10, 10, 10, 10, 10);
    try (ReadAhead<Integer, byte[]> r = new ReadAhead<>(sizes, n -> {
      // what has been read, including this value, minus what the consumer took: at most the
      // budget plus this one value (which waits for room before it is queued)
      long ahead = readBytes.addAndGet(n) - consumed.get();
      maxAhead.accumulateAndGet(ahead, Math::max);
      return new byte[n];
    }, b -> (long) b.length, 25, "test-reader")) {
      int i = 0;
      while (r.hasNext()) {
        Thread.sleep(5); // a slow consumer: the reader runs ahead as far as it may
        // Counted as taken before next() returns: next() frees room at once, and the reader may read
        // on before this thread could count the value afterwards.
        consumed.addAndGet(sizes.get(i));
        assertThat(r.next()).hasSize(sizes.get(i++));
      }
    }
    assertThat(readBytes.get()).isEqualTo(sizes.stream().mapToLong(Integer::longValue).sum());
    // queued <= 25 (or the single 100-byte value alone) plus the value being read
    assertThat(maxAhead.get()).isLessThanOrEqualTo(100 + 10 + 10);
  }

  @Test
  void aFailedRead_surfacesInItsPlace_andNothingAfterItIsReadOrReturned() {
    AtomicInteger reads = new AtomicInteger();
    List<Integer> got = new ArrayList<>();
    try (ReadAhead<Integer, Integer> r = new ReadAhead<>(List.of(1, 2, 3, 4, 5), i -> {
      reads.incrementAndGet();
      if (i == 3) {
        throw new IllegalStateException("value 3 is damaged");
      }
      return i;
    }, v -> 1L, 100, "test-reader")) {
      got.add(r.next());
      got.add(r.next());
      assertThatThrownBy(r::next).isInstanceOf(IllegalStateException.class).hasMessage("value 3 is damaged");
      assertThat(r.hasNext()).isFalse();
    }
    assertThat(got).containsExactly(1, 2);
    assertThat(reads.get()).isEqualTo(3);
  }

  @Test
  void close_stopsTheReaderBeforeTheEnd_andWaitsForIt() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    AtomicInteger reads = new AtomicInteger();
    List<Integer> items = IntStream.range(0, 1000).boxed().toList();
    ReadAhead<Integer, Integer> r = new ReadAhead<>(items, i -> {
      reads.incrementAndGet();
      started.countDown();
      return i;
    }, v -> 1L, 4, "test-reader");
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(r.next()).isZero();
    r.close();
    int after = reads.get();
    Thread.sleep(50);
    assertThat(reads.get()).isEqualTo(after).isLessThan(1000);
    assertThat(Thread.getAllStackTraces().keySet().stream().map(Thread::getName)).doesNotContain("test-reader");
    r.close(); // twice is fine
  }
}
