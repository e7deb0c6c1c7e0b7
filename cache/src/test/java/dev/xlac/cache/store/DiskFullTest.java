package dev.xlac.cache.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.store.CacheFaultTest.Child;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A cache on a real, small tmpfs (20 MB), filled by a writer in a child JVM until a write fails, and
 * then used with no space freed by hand (issue #10, item 5: "a full disk jams the cache"). Skipped,
 * with the reason, where an unprivileged user namespace cannot mount a tmpfs.
 */
class DiskFullTest {
  private static final long TMPFS_BYTES = 20L << 20;
  private static final int ENTRY_BYTES = 300_000;

  @TempDir
  Path tmp;
  private SmallTmpfs fs;
  private Path cache;

  @BeforeEach
  void mount() throws Exception {
    StringBuilder whyNot = new StringBuilder();
    fs = SmallTmpfs.mount(tmp.resolve("fs"), TMPFS_BYTES, whyNot);
    Assumptions.assumeTrue(fs != null, "cannot make a small tmpfs here: " + whyNot);
    cache = fs.dir.resolve("cache");
  }

  @AfterEach
  void unmount() throws Exception {
    if (fs != null) {
      fs.close();
    }
  }

  private Child run(String... args) throws Exception {
    Child c = Child.through(fs.wrapper(), args);
    c.await();
    return c;
  }

  private int exit(Child c) throws InterruptedException {
    return c.process.waitFor();
  }

  /** Fills the disk: entries of 300 kB until a write fails; returns the writer, which committed some. */
  private Child fill() throws Exception {
    Child c = run("write", cache.toString(), "1000", Integer.toString(ENTRY_BYTES));
    assertThat(exit(c)).as("the writer that fills the disk; it said %s", c.lines).isEqualTo(3);
    assertThat(c.committed()).as("entries written before the disk was full").hasSizeGreaterThan(10);
    assertThat(c.lines).anySatisfy(l -> assertThat(l).startsWith("xlac: cache " + cache + ": disk full"));
    return c;
  }

  private static List<String> errors(Child c) {
    return c.lines.stream().filter(l -> l.startsWith("xlac: ") || l.startsWith("failed: ")).toList();
  }

  /** Every entry {@code filler} committed is there, with its bytes. */
  private void assertIntact(Child filler) throws Exception {
    List<Integer> committed = filler.committed();
    Child check = run("check", cache.toString(), Integer.toString(committed.size()), Integer.toString(ENTRY_BYTES));
    assertThat(exit(check)).as("check said %s", check.lines).isZero();
    assertThat(check.lines).as("entries missing or wrong")
        .noneMatch(l -> l.startsWith("missing ") || l.startsWith("wrong "));
  }

  @Test
  void pruneAfterDiskFull_worksWithoutFreeingSpace() throws Exception {
    fill();
    Child prune = run("prune", cache.toString(), Long.toString(1L << 20));
    assertThat(exit(prune)).as("prune on the full disk; it said %s", prune.lines).isZero();
    assertThat(prune.lines).anySatisfy(l -> assertThat(l).startsWith("pruned "));
    assertThat(fs.freeBytes()).as("free bytes after the prune").isGreaterThan(TMPFS_BYTES / 2);
    Child show = run("show", cache.toString());
    assertThat(show.lines).anySatisfy(l -> assertThat(l).startsWith("graphs ").doesNotStartWith("graphs 0 "));
    Child repair = run("verify-repair", cache.toString());
    assertThat(repair.lines).as("verify after the prune").contains("repaired 0", "problems 0");
  }

  @Test
  void clearAfterDiskFull_worksAndKeepsSettings() throws Exception {
    Child settings = run("settings", cache.toString());
    assertThat(exit(settings)).as("settings said %s", settings.lines).isZero();
    List<String> before = run("show", cache.toString()).lines;
    assertThat(before).contains("require-signed true", "trusted 1", "hits 1 misses 1", "max-size " + (100L << 30));
    fill();
    Child clear = run("clear", cache.toString());
    assertThat(exit(clear)).as("clear on the full disk; it said %s", clear.lines).isZero();
    assertThat(fs.freeBytes()).as("free bytes after the clear").isGreaterThan(TMPFS_BYTES / 2);
    List<String> after = run("show", cache.toString()).lines;
    assertThat(after).as("settings and counters after the clear")
        .contains("require-signed true", "trusted 1", "hits 1 misses 1", "max-size " + (100L << 30),
            "graphs 0 artifacts 0");
    Child write = run("write", cache.toString(), "3", "1000");
    assertThat(exit(write)).as("a write after the clear; it said %s", write.lines).isZero();
  }

  @Test
  void nextCommandAfterDiskFullFailure_opensAndWorks() throws Exception {
    Child filler = fill();
    // Small entries: they fit in what the failed write left (the reserve it released).
    Child next = run("write", cache.toString(), "3", "1000");
    assertThat(exit(next)).as("the next command; it said %s", next.lines).isZero();
    assertThat(next.lines).contains("done");
    Child repair = run("verify-repair", cache.toString());
    assertThat(repair.lines).as("verify after the next command").contains("problems 0");
    // entries 0..2 were rewritten with 1000 bytes: check the rest of what the filler committed
    List<Integer> rest = filler.committed().stream().filter(n -> n >= 3).toList();
    Child check = run("check", cache.toString(), Integer.toString(filler.committed().size()),
        Integer.toString(ENTRY_BYTES));
    assertThat(check.lines).as("entries the filler committed").noneMatch(l -> rest.stream()
        .anyMatch(n -> l.equals("missing " + n) || l.equals("wrong " + n)));
  }

  @Test
  void diskFullMessage_saysDiskFull_onFirstAndLaterFailures() throws Exception {
    // One process fills the disk and writes on after each failure, in several ways (synced,
    // unsynced, batches), as a compile run would: RocksDB's later errors have other words.
    Child writer = run("keep-writing", cache.toString(), Integer.toString(ENTRY_BYTES));
    List<String> failures = writer.lines.stream().filter(l -> l.startsWith("failed: ")).toList();
    assertThat(failures).as("failures of a writer that goes on; it said %s", writer.lines).hasSizeGreaterThan(3);
    assertThat(failures).allSatisfy(l -> assertThat(l).contains(": disk full (").doesNotContain("Java"));
    // and a later command meets the same full disk: it says so too
    Child again = run("write", cache.toString(), "1000", Integer.toString(ENTRY_BYTES));
    assertThat(exit(again)).as("a later writer; it said %s", again.lines).isEqualTo(3);
    assertThat(errors(again)).isNotEmpty().allSatisfy(l -> assertThat(l).contains(": disk full ("));
  }

  @Test
  void verifyRepairOnAFullDisk_works() throws Exception {
    Child filler = fill();
    Child repair = run("verify-repair", cache.toString());
    assertThat(exit(repair)).as("verify --repair on the full disk; it said %s", repair.lines).isZero();
    assertThat(repair.lines).contains("repaired 0", "problems 0");
    assertIntact(filler);
  }

  /** Runs a shell command inside the namespace where the tmpfs is; returns its output. */
  private String shell(String command) throws Exception {
    List<String> cmd = new java.util.ArrayList<>(fs.wrapper());
    cmd.addAll(List.of("bash", "-c", command));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    assertThat(p.waitFor()).as("%s said %s", command, out).isZero();
    return out;
  }

  @Test
  void repairRebuildOnAFullDisk_leavesTheDamagedDatabaseUnchanged_andSaysDiskFull() throws Exception {
    // A cache whose database cannot be opened (CURRENT emptied) on a full disk: the rebuild, which
    // writes a copy of every entry, meets the full disk. It used to go on without the entries it
    // could not write, or to move the database aside and start empty; it must stop and change nothing.
    Child filler = fill();
    shell("truncate -s 0 '" + cache.resolve("db/CURRENT") + "'");
    String before = shell("cd '" + cache + "/db' && ls | grep -v '^LOG' | sort");
    Child repair = run("verify-repair", cache.toString());
    assertThat(exit(repair)).as("verify --repair on the full disk; it said %s", repair.lines).isEqualTo(3);
    assertThat(errors(repair)).singleElement().satisfies(l -> assertThat(l)
        .contains("disk full while rebuilding its database", "the damaged database is unchanged")
        .doesNotContain("Exception"));
    assertThat(shell("ls -A '" + cache + "'")).as("the cache directory after the failed repair")
        .doesNotContain("db.broken-", ".rebuild-", ".salvage-");
    assertThat(shell("cd '" + cache + "/db' && ls | grep -v '^LOG' | sort")).as("the database's files").isEqualTo(before);
    // With room (a copy of the cache on a larger disk), the same repair keeps every committed entry.
    Path copy = tmp.resolve("copy");
    shell("cp -a '" + cache + "' '" + copy + "' && rm -f '" + copy + "/reserve'");
    Child roomy = Child.through(List.of(), "verify-repair", copy.toString());
    roomy.await();
    assertThat(roomy.process.waitFor()).as("verify --repair with room; it said %s", roomy.lines).isZero();
    assertThat(roomy.lines).contains("problems 0");
    List<Integer> committed = filler.committed();
    Child check = Child.through(List.of(), "check", copy.toString(), Integer.toString(committed.size()),
        Integer.toString(ENTRY_BYTES));
    check.await();
    assertThat(check.lines).as("entries the filler committed, after the repair with room")
        .noneMatch(l -> l.startsWith("missing ") || l.startsWith("wrong "));
  }
}
