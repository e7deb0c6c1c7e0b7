package dev.xlac.cache.store;

import static dev.xlac.cache.RequestFixtures.request;
import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.CacheStatistics;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.DiskFullException;
import dev.xlac.cache.Fixtures;
import dev.xlac.cache.Internals;
import dev.xlac.cache.PendingHitRecords;
import dev.xlac.cache.RequestInfo;
import dev.xlac.cache.store.CacheFaultTest.Child;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runtime-hit records the fast start leaves (cache/README.md, "Runtime-hit records"), counted by the next open
 * for writing: once, crash-safe, and never from a file the cache's user did not write privately.
 */
class PendingHitsTest {
  static final long T0 = 1_700_000_000_000L; // the manual clock's start: when the entries were stored

  @TempDir
  Path tmp;
  Path cache;
  final List<String> notices = new CopyOnWriteArrayList<>();
  final RecordedRequest a = request(1, 100);
  final RecordedRequest b = request(2, 100);
  final RecordedRequest c = request(3, 100);
  final RequestKey notStored = request(77, 1).key();

  @BeforeEach
  void entries() throws Exception {
    cache = tmp.resolve("cache");
    try (CacheStore s = open()) {
      s.putRequests(List.of(a, b, c));
    }
    notices.clear();
  }

  @AfterEach
  void noHook() {
    PendingHits.stepsForTests = step -> { };
  }

  CacheStore open() throws InterruptedException {
    return Internals.open(cache, notices::add, new Fixtures.ManualClock());
  }

  CacheStore reader() throws InterruptedException {
    return CacheStore.open(cache, CacheStore.Mode.READ_ONLY, Duration.ZERO, notices::add);
  }

  static Map<RequestKey, Long> hits(Object... keyThenCount) {
    Map<RequestKey, Long> m = new LinkedHashMap<>();
    for (int i = 0; i < keyThenCount.length; i += 2) {
      m.put((RequestKey) keyThenCount[i], ((Number) keyThenCount[i + 1]).longValue());
    }
    return m;
  }

  List<String> files() throws Exception {
    Path dir = PendingHitRecords.dir(cache);
    if (!Files.exists(dir)) {
      return List.of();
    }
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  /** Hits of a, b and c, the runtime hits and the runtime time saved in ms. */
  List<Long> counts() throws Exception {
    try (CacheStore r = reader()) {
      CacheStatistics st = r.statistics();
      return List.of(r.requestInfo(a.key()).orElseThrow().hits(), r.requestInfo(b.key()).orElseThrow().hits(),
          r.requestInfo(c.key()).orElseThrow().hits(), st.runtimeHits(), st.runtimeTimeSaved().toMillis());
    }
  }

  @Test
  void recordsOfTwoRuns_areCountedOnce_withTheirEndAsLastAccess_andInTheRuntimeCounters() throws Exception {
    long end1 = T0 + 3_600_000;
    long end2 = T0 + 7_200_000;
    PendingHitRecords.write(cache, end1, 1_500_000_000L, hits(a.key(), 2, b.key(), 1));
    PendingHitRecords.write(cache, end2, 2_500_999_999L, hits(a.key(), 1, notStored, 4));
    try (CacheStore r = reader()) {
      assertThat(r.statistics().pendingRuntimeHitRecords()).as("waiting, seen read-only").isEqualTo(2);
      assertThat(r.statistics().runtimeHits()).isZero();
    }
    assertThat(files()).as("a read-only open counts and removes nothing").hasSize(2);

    try (CacheStore s = open()) {
      RequestInfo ia = s.requestInfo(a.key()).orElseThrow();
      RequestInfo ib = s.requestInfo(b.key()).orElseThrow();
      assertThat(ia.hits()).isEqualTo(3);
      assertThat(ia.lastAccess()).as("the later run's end, not now").isEqualTo(Instant.ofEpochMilli(end2));
      assertThat(ib.hits()).isEqualTo(1);
      assertThat(ib.lastAccess()).isEqualTo(Instant.ofEpochMilli(end1));
      assertThat(s.requestInfo(c.key()).orElseThrow().hits()).isZero();
      assertThat(s.requestInfo(notStored)).as("a key the cache does not hold counts in the totals only").isEmpty();
      CacheStatistics st = s.statistics();
      assertThat(st.runtimeHits()).isEqualTo(8);
      assertThat(st.runtimeTimeSaved()).isEqualTo(Duration.ofMillis(1500 + 2500));
      assertThat(st.pendingRuntimeHitRecords()).isZero();
      assertThat(st.hits()).as("a compile run's lookups are counted apart").isZero();
      assertThat(s.verify(false).problems()).as("the access index follows the new last access").isEmpty();
    }
    assertThat(files()).isEmpty();
    assertThat(notices).isEmpty();
    try (CacheStore s = open()) {
      assertThat(s.requestInfo(a.key()).orElseThrow().hits()).as("counted once").isEqualTo(3);
    }
    assertThat(counts()).containsExactly(3L, 1L, 0L, 8L, 4000L);
    // the LRU prune keeps what the runtime used last: b (used at end1) outlives c (stored at T0, never used)
    try (CacheStore s = open()) {
      s.prune(new dev.xlac.cache.PruneRequest(java.util.OptionalLong.of(s.statistics().storedBytes() - 1), null,
          false, null, null, false, false));
      assertThat(s.requestInfo(c.key())).isEmpty();
      assertThat(s.requestInfo(b.key())).isPresent();
    }
  }

  @Test
  void aRecordOlderThanTheEntrysLastAccess_leavesItsLastAccess() throws Exception {
    long later = T0 + 9_000_000;
    PendingHitRecords.write(cache, later, 0, hits(a.key(), 1));
    try (CacheStore s = open()) {
      assertThat(s.requestInfo(a.key()).orElseThrow().lastAccess()).isEqualTo(Instant.ofEpochMilli(later));
    }
    PendingHitRecords.write(cache, T0 + 1, 0, hits(a.key(), 1));
    try (CacheStore s = open()) {
      RequestInfo ia = s.requestInfo(a.key()).orElseThrow();
      assertThat(ia.hits()).isEqualTo(2);
      assertThat(ia.lastAccess()).isEqualTo(Instant.ofEpochMilli(later));
    }
  }

  @Test
  void theWriterLockOpen_countsThemToo() throws Exception {
    PendingHitRecords.write(cache, T0 + 5, 7_000_000L, hits(c.key(), 5));
    try (CacheStore.WriterLock lock = CacheStore.lock(cache, Duration.ZERO, notices::add);
        CacheStore s = lock.open()) {
      assertThat(s.requestInfo(c.key()).orElseThrow().hits()).isEqualTo(5);
    }
    assertThat(files()).isEmpty();
    assertThat(counts()).containsExactly(0L, 0L, 5L, 5L, 7L);
  }

  /**
   * A writer killed with {@code kill -9} after the commit that counted the records was durable, before it deleted
   * their files: the next open deletes them without counting them again, and counts a new record beside them; a
   * clear in between (while the directory could not be read) does not forget which records were counted.
   */
  @Test
  void killedAfterCountingBeforeDeleting_theNextOpenCountsNothingTwice() throws Exception {
    PendingHitRecords.write(cache, T0 + 10, 1_000_000_000L, hits(a.key(), 2));
    Path dir = PendingHitRecords.write(cache, T0 + 20, 2_000_000_000L, hits(a.key(), 1, b.key(), 1)).getParent();
    List<String> before = files();
    Child child = new Child(null, "count-hits", cache.toString());
    child.awaitLine("step counted", 1);
    child.kill();
    assertThat(child.lines).doesNotContain("done");
    assertThat(files()).as("the files the killed writer counted").isEqualTo(before);
    try (CacheStore r = reader()) {
      assertThat(r.statistics().pendingRuntimeHitRecords()).as("counted already: not waiting").isZero();
    }
    assertThat(counts()).containsExactly(3L, 1L, 0L, 4L, 3000L);

    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwx---"));
    try (CacheStore s = open()) {
      s.clear(); // keeps the counters, and must keep what they counted
    }
    assertThat(notices).singleElement().satisfies(n -> assertThat(n).contains("is not private"));
    notices.clear();
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
    PendingHitRecords.write(cache, T0 + 30, 500_000_000L, hits(c.key(), 1));
    try (CacheStore s = open()) {
      CacheStatistics st = s.statistics();
      assertThat(st.pendingRuntimeHitRecords()).isZero();
      assertThat(st.runtimeHits()).as("the killed writer's records not counted again").isEqualTo(5);
      assertThat(st.runtimeTimeSaved()).isEqualTo(Duration.ofMillis(3500));
    }
    assertThat(files()).isEmpty();
    assertThat(notices).isEmpty();
  }

  /**
   * A writer that died between the counting commit and the deletions (simulated in-process), then a repair that
   * rebuilds the database (CURRENT deleted): the rebuilt database keeps the counters and which records they include.
   */
  @Test
  void aRebuildAfterCountingBeforeDeleting_keepsWhichRecordsWereCounted() throws Exception {
    PendingHitRecords.write(cache, T0 + 10, 1_000_000_000L, hits(a.key(), 2));
    PendingHitRecords.write(cache, T0 + 20, 0, hits(notStored, 1));
    PendingHits.stepsForTests = step -> {
      if (step.equals("counted")) {
        throw new IllegalStateException("died here");
      }
    };
    open().close();
    PendingHits.stepsForTests = step -> { };
    assertThat(files()).hasSize(2);
    assertThat(counts()).containsExactly(2L, 0L, 0L, 3L, 1000L);
    Files.delete(cache.resolve("db/CURRENT"));
    dev.xlac.cache.RepairReport r = dev.xlac.cache.CacheRepair.repair(cache, Duration.ZERO, notices::add);
    assertThat(r.rebuildReason()).as("rebuilt").isNotNull();
    try (CacheStore s = open()) {
      assertThat(s.statistics().runtimeHits()).as("not counted again after the rebuild").isEqualTo(3);
    }
    assertThat(files()).isEmpty();
    assertThat(counts()).containsExactly(2L, 0L, 0L, 3L, 1000L);
  }

  @Test
  void aFailedCommit_leavesTheRecords_andTheOpenSucceeds_andTheNextOpenCountsThem() throws Exception {
    PendingHitRecords.write(cache, T0 + 10, 1_000_000_000L, hits(a.key(), 2));
    PendingHitRecords.write(cache, T0 + 20, 0, hits(b.key(), 1));
    PendingHits.stepsForTests = step -> {
      if (step.equals("commit")) {
        throw new DiskFullException("cache " + cache + ": disk full (No space left on device)");
      }
    };
    try (CacheStore s = open()) {
      assertThat(s.requestInfo(a.key()).orElseThrow().hits()).isZero();
      assertThat(s.statistics().runtimeHits()).isZero();
      assertThat(s.statistics().pendingRuntimeHitRecords()).isEqualTo(2);
    }
    assertThat(notices).singleElement().satisfies(n -> assertThat(n)
        .startsWith("cache " + cache.toAbsolutePath() + ": cannot count the runtime hits of 2 runs now: ")
        .contains("disk full", "to be counted at the next open").doesNotContain("Exception"));
    assertThat(files()).hasSize(2);
    PendingHits.stepsForTests = step -> { };
    try (CacheStore s = open()) {
      assertThat(s.requestInfo(a.key()).orElseThrow().hits()).isEqualTo(2);
    }
    assertThat(counts()).containsExactly(2L, 1L, 0L, 3L, 1000L);
    assertThat(files()).isEmpty();
  }

  static String good(RequestKey k) {
    return PendingHitRecords.text(T0 + 1, 1_000_000L, Map.of(k, 1L));
  }

  @Test
  void damagedRecords_areEachDroppedWithOneNotice_andTheOthersCounted() throws Exception {
    String ok = good(a.key());
    String keyLine = "hit " + b.key().text() + " 1\n";
    String head = "xlac-pending-hits 1\nat 5\nsaved_ns 9\n";
    List<String[]> damaged = List.of( // reason, text
        new String[] {"cut short: it has no 'end' line", ok.substring(0, ok.length() - 10)},
        new String[] {"cut short: it has no 'end' line", head + keyLine},
        new String[] {"text follows its 'end' line", ok + "hit " + c.key().text() + " 1\n"},
        new String[] {"its key is not 64 lowercase hex digits",
            head + keyLine.toUpperCase(java.util.Locale.ROOT).replace("HIT PJRT1", "hit pjrt1") + "end\n"},
        new String[] {"key " + b.key().text() + " comes twice", head + keyLine + keyLine + "end\n"},
        new String[] {"'-3' is not a number", head.replace("at 5", "at -3") + "end\n"},
        new String[] {"a count of 0", head + keyLine.replace(" 1\n", " 0\n") + "end\n"},
        new String[] {"its first line is not 'xlac-pending-hits 1'", ok.replace("hits 1\n", "hits 2\n")},
        new String[] {"line 2 does not start with 'at'", head.replace("at 5\n", "") + keyLine + "end\n"},
        new String[] {"it lacks its 'at' or 'saved_ns' line", "xlac-pending-hits 1\nat 5\nend\n"},
        new String[] {"line 4 is not 'hit pjrt1:<64 hex digits> <count>'", head + "hit pjrt1:abc 1\nend\n"},
        new String[] {"line 4 is not 'hit pjrt1:<64 hex digits> <count>'",
            head + keyLine.replace(" 1\n", " 1 \n") + "end\n"});
    List<Path> bad = new ArrayList<>();
    for (String[] d : damaged) {
      bad.add(PendingHitRecords.writeBytes(cache, d[1].getBytes(StandardCharsets.UTF_8)));
    }
    bad.add(PendingHitRecords.writeBytes(cache, new byte[] {'x', (byte) 0xff, '\n'}));
    byte[] huge = new byte[(int) PendingHits.MAX_FILE_BYTES + 1];
    java.util.Arrays.fill(huge, (byte) '\n');
    bad.add(PendingHitRecords.writeBytes(cache, huge));
    StringBuilder many = new StringBuilder(head);
    for (int i = 0; i <= PendingHits.MAX_KEYS; i++) {
      many.append("hit pjrt1:").append(String.format("%064x", i)).append(" 1\n");
    }
    bad.add(PendingHitRecords.writeBytes(cache, many.append("end\n").toString().getBytes(StandardCharsets.UTF_8)));
    // a name that would break the list of counted names (a line break in it), however good its text
    Path oddName = Files.move(PendingHitRecords.write(cache, T0, 0, hits(b.key(), 1)),
        PendingHitRecords.dir(cache).resolve("odd\nname.hits"));
    PendingHitRecords.write(cache, T0 + 1, 2_000_000L, hits(a.key(), 1));
    PendingHitRecords.write(cache, T0 + 2, 3_000_000L, hits(c.key(), 2));

    try (CacheStore s = open()) {
      assertThat(s.requestInfo(a.key()).orElseThrow().hits()).isEqualTo(1);
    }
    assertThat(files()).as("every record gone, damaged or counted").isEmpty();
    assertThat(counts()).containsExactly(1L, 0L, 2L, 3L, 5L);
    assertThat(notices).as("one notice per damaged record").hasSize(bad.size() + 1);
    assertThat(notices).anySatisfy(n -> assertThat(n).contains(
        "record runtime/pending-hits/odd?name.hits: its name is not one a record has (those hits are not counted)"));
    assertThat(oddName).doesNotExist();
    for (Path f : bad) {
      assertThat(notices).filteredOn(n -> n.contains(f.getFileName().toString())).singleElement()
          .satisfies(n -> assertThat(n).startsWith("cache " + cache.toAbsolutePath()
              + ": dropped the runtime-hit record runtime/pending-hits/" + f.getFileName() + ": ")
              .endsWith(" (those hits are not counted)"));
    }
    for (int i = 0; i < damaged.size(); i++) {
      String name = bad.get(i).getFileName().toString();
      String reason = damaged.get(i)[0];
      assertThat(notices).filteredOn(n -> n.contains(name)).singleElement()
          .satisfies(n -> assertThat(n).contains(": " + reason));
    }
    assertThat(notices).anySatisfy(n -> assertThat(n).contains("a byte that no record has (255)"))
        .anySatisfy(n -> assertThat(n).contains("larger than a record can be (8388609 bytes"))
        .anySatisfy(n -> assertThat(n).contains("more than 65536 request keys"));
  }

  @Test
  void hostileFiles_aFifoALinkAnOthersWritableAndAForeignFile_areDroppedUnread() throws Exception {
    Path good = PendingHitRecords.write(cache, T0 + 1, 0, hits(a.key(), 1));
    Path dir = good.getParent();
    Path fifo = dir.resolve("fifo.hits");
    Process mk = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start();
    assertThat(mk.waitFor()).isZero();
    Path elsewhere = Files.writeString(tmp.resolve("elsewhere"), good(b.key()));
    Path link = Files.createSymbolicLink(dir.resolve("link.hits"), elsewhere);
    Path shared = PendingHitRecords.write(cache, T0 + 1, 0, hits(b.key(), 1));
    Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rw-rw-rw-"));
    Path subdir = Files.createDirectory(dir.resolve("sub.hits"));
    List<Path> hostile = new ArrayList<>(List.of(fifo, link, shared, subdir));
    boolean root = Files.getAttribute(tmp, "unix:uid").equals(0);
    Path foreign = null;
    if (root) { // only root can give a file away
      foreign = PendingHitRecords.write(cache, T0 + 1, 0, hits(c.key(), 1));
      Files.setAttribute(foreign, "unix:uid", 12345);
      hostile.add(foreign);
    }

    try (CacheStore s = open()) {
      assertThat(s.requestInfo(a.key()).orElseThrow().hits()).isEqualTo(1);
    }
    assertThat(counts()).as("only the good record counted").containsExactly(1L, 0L, 0L, 1L, 0L);
    assertThat(files()).isEmpty();
    assertThat(elsewhere).as("a link's target is not touched").exists();
    assertThat(notices).hasSize(hostile.size());
    assertThat(notices).anySatisfy(n -> assertThat(n).contains("fifo.hits: not a regular file"))
        .anySatisfy(n -> assertThat(n).contains("link.hits: a symbolic link, not a record"))
        .anySatisfy(n -> assertThat(n).contains(shared.getFileName()
            + ": its group or others can write it (rw-rw-rw-)"))
        .anySatisfy(n -> assertThat(n).contains("sub.hits: not a regular file"));
    if (foreign != null) {
      String name = foreign.getFileName().toString();
      assertThat(notices).anySatisfy(n -> assertThat(n).contains(name + ": it belongs to another user (uid 12345)"));
    }
  }

  @Test
  void aDirectoryThatIsALinkOrNotPrivate_isNotRead_withOneNotice_andTheOpenSucceeds() throws Exception {
    Path real = PendingHitRecords.write(tmp.resolve("other"), T0 + 1, 0, hits(a.key(), 1)).getParent();
    Files.createDirectories(cache.resolve("runtime"));
    Files.createSymbolicLink(PendingHitRecords.dir(cache), real);
    try (CacheStore s = open()) {
      assertThat(s.statistics().runtimeHits()).isZero();
    }
    assertThat(notices).singleElement().satisfies(n -> assertThat(n).isEqualTo("cache " + cache.toAbsolutePath()
        + ": runtime/pending-hits is a symbolic link, not followed (remove it); the runtime hits recorded there are"
        + " not counted"));
    try (Stream<Path> left = Files.list(real)) {
      assertThat(left).as("nothing removed through the link").hasSize(1);
    }

    Files.delete(PendingHitRecords.dir(cache));
    notices.clear();
    Path dir = PendingHitRecords.write(cache, T0 + 1, 0, hits(a.key(), 1)).getParent();
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxr-x"));
    try (CacheStore s = open()) {
      assertThat(s.statistics().runtimeHits()).isZero();
    }
    assertThat(notices).singleElement().satisfies(n -> assertThat(n).contains(
        "runtime/pending-hits is not private: its group or others can write it (rwxrwxr-x; run 'xlac cache verify"
            + " --repair')", "are not counted"));
    assertThat(files()).hasSize(1);
    notices.clear();
    try (CacheStore s = open()) {
      assertThat(s.verify(true).problems()).anySatisfy(p -> assertThat(p.entry()).contains("runtime/pending-hits"));
    }
    try (CacheStore s = open()) {
      assertThat(s.statistics().runtimeHits()).as("counted once the directory is private").isEqualTo(1);
    }
    assertThat(files()).isEmpty();
  }

  @Test
  void temporaries_olderThanAnHour_areRemoved_youngerOnesLeft() throws Exception {
    Path dir = PendingHitRecords.write(cache, T0, 0, hits(a.key(), 1)).getParent();
    Path stale = Files.writeString(dir.resolve(".tmp-abc123"), "xlac-pending-hits 1\n");
    Files.setLastModifiedTime(stale, FileTime.from(Instant.now().minus(Duration.ofMinutes(61))));
    Path young = Files.writeString(dir.resolve(".tmp-def456"), "xlac-pending-hits 1\nat");
    try (CacheStore s = open()) {
      assertThat(s.statistics().runtimeHits()).isEqualTo(1);
    }
    assertThat(files()).containsExactly(young.getFileName().toString());
    assertThat(notices).isEmpty();
  }

  @Test
  void manyRecords_goInBatches_eachCountedOnce_theirDeletionsSyncedBeforeTheNextBatchForgetsThem() throws Exception {
    int n = PendingHits.BATCH_RECORDS + 10;
    for (int i = 0; i < n; i++) {
      PendingHitRecords.write(cache, T0 + i, 1_000_000L, hits(a.key(), 1, b.key(), 2));
    }
    List<String> commits = new CopyOnWriteArrayList<>();
    PendingHits.stepsForTests = commits::add;
    try (CacheStore s = open()) {
      assertThat(s.requestInfo(a.key()).orElseThrow().lastAccess()).isEqualTo(Instant.ofEpochMilli(T0 + n - 1));
    }
    // (a crash after the second batch counted the first again) the first batch's deletions are synced before the
    // commit that drops their names from the counted list.
    assertThat(commits).containsExactly("commit", "counted", "sync", "commit", "counted", "sync");
    assertThat(counts()).containsExactly((long) n, 2L * n, 0L, 3L * n, (long) n);
    assertThat(files()).isEmpty();
  }

  /** Writers leave records while two threads keep opening the cache for writing: each record is counted once. */
  @Test
  void twoWritersOpeningAtOnce_whileRunsLeaveRecords_countEachRecordOnce() throws Exception {
    int runs = 150;
    AtomicInteger written = new AtomicInteger();
    Thread producer = Thread.ofPlatform().start(() -> {
      try {
        for (int i = 0; i < runs; i++) {
          PendingHitRecords.write(cache, T0 + i, 2_000_000L, hits(a.key(), 1, notStored, 1));
          written.incrementAndGet();
        }
      } catch (Exception e) {
        throw new RuntimeException(e);
      }
    });
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    List<Thread> openers = new ArrayList<>();
    for (int t = 0; t < 2; t++) {
      openers.add(Thread.ofPlatform().start(() -> {
        try {
          while (written.get() < runs) {
            try (CacheStore s = CacheStore.open(cache, CacheStore.Mode.READ_WRITE, null, notices::add)) {
              s.requestInfo(a.key());
            }
          }
        } catch (Throwable e) {
          failures.add(e);
        }
      }));
    }
    producer.join();
    for (Thread t : openers) {
      t.join();
    }
    assertThat(failures).isEmpty();
    notices.removeIf(n -> n.startsWith("waiting for cache "));
    try (CacheStore s = open()) {
      assertThat(s.statistics().pendingRuntimeHitRecords()).isZero();
    }
    assertThat(counts()).containsExactly((long) runs, 0L, 0L, 2L * runs, 2L * runs);
    assertThat(files()).isEmpty();
    assertThat(notices).isEmpty();
  }

  @Test
  void noDirectory_orAnEmptyOne_writesNothing() throws Exception {
    long before;
    try (CacheStore s = open()) {
      before = Internals.store(s).totals().runtimeHits;
    }
    Files.createDirectories(PendingHitRecords.dir(cache));
    List<String> commits = new CopyOnWriteArrayList<>();
    PendingHits.stepsForTests = commits::add;
    try (CacheStore s = open()) {
      assertThat(Internals.store(s).totals().runtimeHits).isEqualTo(before);
    }
    assertThat(commits).isEmpty();
    assertThat(notices).isEmpty();
  }
}
