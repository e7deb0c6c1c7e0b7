package dev.xlac.hlo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HloBatchReaderTest {
  private static final int THREADS = 4;

  /** More than two windows of files; every seventh is not a module. */
  private static List<Path> files(Path dir) throws IOException {
    List<Path> files = new ArrayList<>();
    for (int i = 0; i < 2 * HloBatchReader.WINDOW + 30; i++) {
      Path f = dir.resolve(String.format("m_%04d.hlo_module.pb", i));
      if (i % 7 == 3) {
        Files.writeString(f, "not a module " + i, StandardCharsets.US_ASCII);
      } else {
        Files.write(f, TestModules.mulAdd(i).toByteArray());
      }
      files.add(f);
    }
    return files;
  }

  private static HloBatchReader reader(long byteBudget) {
    return new HloBatchReader(new HloModuleReader(), THREADS, byteBudget);
  }

  @Test
  void readEach_handsEveryOutcomeOverInInputOrder_failuresInTheirPlace(@TempDir Path dir) throws Exception {
    List<Path> files = files(dir);
    List<HloBatchReader.Outcome<GraphFingerprint>> seen = new ArrayList<>();
    reader(1L << 30).readEach(files, LoadedModule::fingerprint, seen::add);

    assertThat(seen).extracting(HloBatchReader.Outcome::file).containsExactlyElementsOf(files);
    for (int i = 0; i < files.size(); i++) {
      HloBatchReader.Outcome<GraphFingerprint> o = seen.get(i);
      if (i % 7 == 3) {
        assertThat(o.ok()).as(o.file().toString()).isFalse();
        assertThat(o.error().getMessage()).contains(o.file().toString());
      } else {
        assertThat(o.value()).isEqualTo(GraphFingerprint.of(TestModules.mulAdd(i)));
      }
    }
  }

  @Test
  void read_returnsTheSameOutcomesAsReadEach(@TempDir Path dir) throws Exception {
    List<Path> files = files(dir);
    List<String> each = new ArrayList<>();
    reader(1L << 30).readEach(files, m -> m.fingerprint().value(), o -> each.add(describe(o)));
    assertThat(reader(1L << 30).read(files, m -> m.fingerprint().value()))
        .extracting(HloBatchReaderTest::describe).containsExactlyElementsOf(each);
  }

  private static String describe(HloBatchReader.Outcome<String> o) {
    return o.file() + " " + (o.ok() ? o.value() : "error: " + o.error().getMessage());
  }

  @Test
  void aLongList_isReadOnOnePool(@TempDir Path dir) throws Exception {
    List<Path> files = files(dir);
    Set<Thread> threads = ConcurrentHashMap.newKeySet();
    reader(1L << 30).readEach(files, m -> threads.add(Thread.currentThread()), o -> { });
    // A pool per window (or per chunk of 64, as the cache's intake once did) would start more threads than this.
    assertThat(threads).hasSizeBetween(1, THREADS)
        .allSatisfy(t -> assertThat(t.getName()).isEqualTo("xlac-hlo-reader"));
  }

  @Test
  void outcomesStreamOut_beforeTheWholeListIsRead(@TempDir Path dir) throws Exception {
    List<Path> files = files(dir);
    AtomicInteger started = new AtomicInteger();
    List<Integer> startedAtEachOutcome = new ArrayList<>();
    reader(1L << 30).readEach(files, m -> started.incrementAndGet(), o -> startedAtEachOutcome.add(started.get()));
    assertThat(startedAtEachOutcome).hasSize(files.size());
    assertThat(startedAtEachOutcome.getFirst()).isLessThanOrEqualTo(HloBatchReader.WINDOW);
  }

  @Test
  void theByteBudget_boundsTheReadsInFlight(@TempDir Path dir) throws Exception {
    List<Path> files = files(dir).subList(0, 40);
    AtomicInteger inFlight = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    // Each small file costs 1 MiB of the budget: two at a time, whatever the number of threads.
    reader(2L << 20).readEach(files, m -> {
      most.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return inFlight.decrementAndGet();
    }, o -> assertThat(o.file()).isNotNull());
    assertThat(most.get()).isBetween(1, 2);
  }

  @Test
  void aFailingConsumer_stopsTheReadAndItsExceptionComesOut(@TempDir Path dir) throws Exception {
    List<Path> files = files(dir);
    AtomicInteger consumed = new AtomicInteger();
    assertThatThrownBy(() -> reader(1L << 30).readEach(files, LoadedModule::moduleName, o -> {
      if (consumed.incrementAndGet() == 3) {
        throw new IllegalStateException("consumer gave up");
      }
    })).isInstanceOf(IllegalStateException.class).hasMessage("consumer gave up");
    assertThat(consumed.get()).isEqualTo(3);
  }

  /**
   * An exception from the function (a damaged or full cache, in the intake) is no file's error: it once came back
   * as one error per file, and a damaged cache was reported once per dump file. It stops the reading, on one thread
   * and on a pool alike.
   */
  @Test
  void anExceptionFromTheFunction_stopsTheReading_andIsThrown_notReportedPerFile(@TempDir Path dir) throws Exception {
    List<Path> files = files(dir);
    for (int threads : new int[] {1, THREADS}) {
      AtomicInteger calls = new AtomicInteger();
      List<HloBatchReader.Outcome<Object>> seen = new ArrayList<>();
      HloBatchReader r = new HloBatchReader(new HloModuleReader(), threads, 1L << 30);
      assertThatThrownBy(() -> r.readEach(files, m -> {
        calls.incrementAndGet();
        throw new dev.xlac.core.XlacException(dev.xlac.core.ExitCode.WORK_FAILED, "the cache is damaged");
      }, seen::add)).as("%d threads", threads).isInstanceOf(dev.xlac.core.XlacException.class)
          .hasMessage("the cache is damaged");
      assertThat(seen).as("%d threads: nothing was handed over as a file's outcome", threads)
          .allSatisfy(o -> assertThat(o.ok() || !o.error().getMessage().contains("damaged")).isTrue());
      assertThat(calls.get()).as("%d threads: the reading stopped", threads).isLessThan(files.size());
    }
  }

  /** A module's file read again inside the function (its bytes, when stored) and found changed is that file's error. */
  @Test
  void aFileThatChangedBeforeTheFunctionReadItAgain_isThatFilesError_andTheReadingGoesOn(@TempDir Path dir)
      throws Exception {
    List<Path> files = files(dir);
    for (int threads : new int[] {1, THREADS}) {
      List<HloBatchReader.Outcome<String>> seen = new ArrayList<>();
      new HloBatchReader(new HloModuleReader(), threads, 1L << 30).readEach(files, m -> {
        if (m.file().getFileName().toString().endsWith("0.hlo_module.pb")) {
          throw new HloReadException(m.file(), "file changed since it was read");
        }
        return "ok";
      }, seen::add);
      assertThat(seen).as("%d threads", threads).hasSize(files.size());
      assertThat(seen).filteredOn(o -> o.file().getFileName().toString().endsWith("0.hlo_module.pb"))
          .isNotEmpty().allSatisfy(o -> assertThat(o.ok()).isFalse())
          .anySatisfy(o -> assertThat(o.error().getMessage()).contains("file changed"));
      assertThat(seen).as("the others went on").filteredOn(HloBatchReader.Outcome::ok).isNotEmpty();
    }
  }
}
