package dev.xlac.cli.cache;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cli.Main;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.hlo.GraphFingerprint;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The cache commands, run in-process through {@link Main} against a real cache in a temp directory. */
class CacheCommandsTest {
  static final CompilerIdentity CPU = new CompilerIdentity("pjrt", "cpu 0.7.1", "cpu", List.of(), Map.of());

  @TempDir
  Path tmp;
  Path cache;
  Path dumps;

  record Run(int code, String out, String err) {}

  Run xlac(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    List<String> all = new ArrayList<>(List.of(args));
    if (all.size() >= 2 && all.get(0).equals("cache") && !all.contains("--cache")) {
      all.add(2, "--cache");
      all.add(3, cache.toString());
    }
    int code = new Main(new PrintWriter(out), new PrintWriter(err)).run(all.toArray(String[]::new));
    return new Run(code, out.toString(), err.toString());
  }

  @BeforeEach
  void setUp() throws Exception {
    cache = tmp.resolve("cache");
    dumps = Path.of(CacheCommandsTest.class.getResource("/dumps").toURI());
  }

  @Test
  void add_countsAddedPresentAndSkipped() {
    Run first = xlac("cache", "add", dumps.toString());
    assertThat(first.code()).isZero();
    assertThat(first.out()).isEqualTo("added 3, already present 0, skipped 1\n");
    Run again = xlac("cache", "add", dumps.toString());
    assertThat(again.out()).isEqualTo("added 0, already present 3, skipped 1\n");
    Run missing = xlac("cache", "add", tmp.resolve("nope").toString());
    assertThat(missing.code()).isEqualTo(2);
    assertThat(missing.err()).contains("xlac: cannot read " + tmp.resolve("nope") + ": no such file or directory");
  }

  @Test
  void add_withANoteAndAnUnsearchablePath_printsTheNoteFirst_asItAlwaysDid() {
    // Regression: when cache add moved onto the pipeline, unsearchable paths came before the notes.
    Run r = xlac("cache", "add", dumps.toString(), tmp.resolve("nope").toString());
    assertThat(r.code()).isEqualTo(2);
    List<String> lines = r.err().lines().toList();
    assertThat(lines).hasSize(2);
    assertThat(lines.get(0)).startsWith("xlac: skipped 1 other dump file");
    assertThat(lines.get(1)).isEqualTo("xlac: cannot read " + tmp.resolve("nope") + ": no such file or directory");
  }

  @Test
  void add_ofNothingReadable_saysSoOnStderr_afterTheCounts_withExitCode2() throws Exception {
    Path empty = java.nio.file.Files.createDirectories(tmp.resolve("empty"));
    Run r = xlac("cache", "add", empty.toString());
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.out()).isEqualTo("added 0, already present 0, skipped 0\n");
    assertThat(r.err()).isEqualTo("xlac: no HLO modules found in " + empty + "\n");
  }

  @Test
  void ls_json_hasTheDocumentedKeys_andOneRowPerCompiler() throws Exception {
    xlac("cache", "add", dumps.toString());
    GraphFingerprint fp = firstFingerprint();
    try (CacheStore s = CacheStore.open(cache, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      s.putArtifact(new ArtifactKey(fp, CPU), new byte[1234], CompileInfo.of(2.5, "ok"));
    }
    Run ls = xlac("cache", "ls", "--json", "--status", "compiled");
    assertThat(ls.code()).isZero();
    assertThat(ls.out()).contains("\"fingerprint\": \"" + fp.value() + "\"", "\"status\": \"compiled\"",
        "\"compiler\": \"pjrt:cpu\"", "\"artifact_bytes\": 1234", "\"hlo_bytes\": ", "\"compile_seconds\": 2.5",
        "\"last_access\": \"20");
    assertThat(xlac("cache", "ls", "--json").out().split("\"fingerprint\"")).hasSize(4); // 3 rows
    assertThat(xlac("cache", "ls", "--compiler", "pjrt:cpu").out().lines()).hasSize(2);
    Run table = xlac("cache", "ls", "--sort", "size");
    assertThat(table.out().lines().skip(1).findFirst().orElseThrow()).startsWith(fp.shortForm()).contains("compiled");
  }

  @Test
  void ls_json_isExactlyWhatTheHouseJsonWriterMakesOfTheRows() throws Exception {
    xlac("cache", "add", dumps.toString());
    GraphFingerprint fp = firstFingerprint();
    try (CacheStore s = CacheStore.open(cache, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      s.putArtifact(new ArtifactKey(fp, CPU), new byte[10], CompileInfo.of(0.25, ""));
      s.recordFailure(new ArtifactKey(fp, new CompilerIdentity("neuronx-cc", "2", "trn1", List.of(), Map.of())),
          "timeout", "\"quoted\"\n", "");
    }
    List<Map<String, Object>> expected = new ArrayList<>();
    try (CacheStore s = CacheStore.open(cache, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      for (dev.xlac.cache.ListRow r : s.list(dev.xlac.cache.ListQuery.all())) {
        boolean pending = r.status() == dev.xlac.cache.EntryStatus.PENDING;
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("fingerprint", r.fingerprint().value());
        m.put("module", r.module());
        m.put("status", r.status().jsonName());
        m.put("compiler", r.compilerName());
        m.put("artifact_bytes", pending ? null : r.artifactBytes());
        m.put("hlo_bytes", r.hloBytes());
        m.put("compile_seconds", pending ? null : r.compileTime().toMillis() / 1000.0);
        m.put("last_access", r.lastAccess().truncatedTo(java.time.temporal.ChronoUnit.SECONDS).toString());
        expected.add(m);
      }
    }
    assertThat(expected).hasSize(4);
    assertThat(xlac("cache", "ls", "--json").out()).isEqualTo(dev.xlac.core.Json.write(expected) + "\n");
  }

  @Test
  void stat_reportsContentsAndLocation() {
    xlac("cache", "add", dumps.toString());
    Run stat = xlac("cache", "stat");
    assertThat(stat.out()).contains("Cache directory:     " + cache, "Schema version:      4",
        "Graphs:              3 (3 pending)", "Max size:            not set",
        "Runtime entries:     0 recorded executables, 0 compiles served (xlac run), 0.0s saved");
    assertThat(xlac("cache", "config", "max-size", "50G").code()).isZero();
    assertThat(xlac("cache", "stat", "--json").out()).contains("\"max_size_bytes\": 50000000000", "\"graphs\": 3",
        "\"runtime_entries\": 0", "\"runtime_hits\": 0");
    assertThat(xlac("cache", "stat", "--zero").out()).isEqualTo("Statistics zeroed\n");
  }

  @Test
  void stat_showsTheDiskReserve() throws Exception {
    Run none = xlac("cache", "stat");
    assertThat(none.out()).contains("Disk reserve:        none (no cache yet)");
    xlac("cache", "add", dumps.toString());
    long size = java.nio.file.Files.size(cache.resolve("reserve"));
    assertThat(xlac("cache", "stat").out()).contains("Disk reserve:        " + dev.xlac.core.Sizes.human(size) + "\n");
    assertThat(xlac("cache", "stat", "--json").out()).contains("\"disk_reserve_bytes\": " + size,
        "\"disk_reserve_note\": null");
  }

  /** Runtime hits a fast-started run left for the next writer (cache/README.md, "Runtime-hit records"). */
  @Test
  void stat_saysWhoseRuntimeHitsWait_readOnly_andTheNextWriterCountsThem() throws Exception {
    xlac("cache", "add", dumps.toString());
    Path dir = Files.createDirectories(cache.resolve("runtime/pending-hits"),
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    Files.writeString(dir.resolve("host-1-2-abcdef.hits"), "xlac-pending-hits 1\nat 1700000000000\n"
        + "saved_ns 2500000000\nhit pjrt1:" + "ab".repeat(32) + " 3\nend\n");
    Files.setPosixFilePermissions(dir.resolve("host-1-2-abcdef.hits"), PosixFilePermissions.fromString("rw-------"));
    assertThat(xlac("cache", "stat").out()).contains("Runtime entries:     0 recorded executables, 0 compiles"
        + " served (xlac run), 0.0s saved\n  Not yet counted:   the hits of 1 run (the next command that writes to"
        + " the cache counts them)\n");
    assertThat(xlac("cache", "stat", "--json").out()).contains("\"pending_runtime_hit_records\": 1",
        "\"runtime_hits\": 0");
    assertThat(dir.resolve("host-1-2-abcdef.hits")).as("stat reads only").exists();
    assertThat(xlac("cache", "config", "max-size", "50G").code()).isZero();
    assertThat(dir.resolve("host-1-2-abcdef.hits")).doesNotExist();
    Run stat = xlac("cache", "stat");
    assertThat(stat.out()).contains("3 compiles served (xlac run), 2.5s saved\n").doesNotContain("Not yet counted");
    assertThat(xlac("cache", "stat", "--json").out()).contains("\"pending_runtime_hit_records\": 0",
        "\"runtime_hits\": 3");
  }

  @Test
  void exportThenImport_intoAnotherCache_andAgainChangesNothing() {
    xlac("cache", "add", dumps.toString());
    Path bundle = tmp.resolve("warm.tar.zst");
    Run export = xlac("cache", "export", bundle.toString());
    assertThat(export.code()).isZero();
    assertThat(export.out()).startsWith("Exported 3 graphs, 0 artifacts and 0 failures");
    Path other = tmp.resolve("other");
    Run imp = xlac("cache", "import", "--cache", other.toString(), bundle.toString());
    assertThat(imp.out()).contains("graphs added 3 (already present 0)");
    Run again = xlac("cache", "import", "--cache", other.toString(), bundle.toString());
    assertThat(again.out()).contains("graphs added 0 (already present 3)");
    assertThat(xlac("cache", "verify", "--cache", other.toString()).out()).contains("all good");
  }

  /**
   * The runtime proxy serves nothing that others could have written (issue 22): verify names each directory and
   * runtime file of the cache that its group or others can write, one line each, and --repair takes that away.
   */
  @Test
  void verify_groupWritableLayout_isReported_andRepairTakesTheWritePermissionAway() throws Exception {
    xlac("cache", "add", dumps.toString());
    Path shard = Files.createDirectories(cache.resolve("runtime/pjrt/entries/ab"));
    Path entry = Files.writeString(shard.resolve("ab".repeat(32) + ".xpx"), "entry");
    Files.setPosixFilePermissions(cache.resolve("runtime/pjrt"), PosixFilePermissions.fromString("rwxrwxr-x"));
    Files.setPosixFilePermissions(entry, PosixFilePermissions.fromString("rw-rw-rw-"));
    Path dbFile = cache.resolve("db/CURRENT"); // RocksDB's, inside the private cache: not the runtime's business
    Files.setPosixFilePermissions(dbFile, PosixFilePermissions.fromString("rw-rw-r--"));

    Run verify = xlac("cache", "verify");
    assertThat(verify.code()).isEqualTo(1);
    assertThat(verify.out().lines().filter(l -> l.contains("permissions of")).toList()).containsExactly(
        "inconsistent permissions of runtime/pjrt: its group or others can write it (rwxrwxr-x), so the runtime proxy"
            + " serves nothing from under it",
        "inconsistent permissions of runtime/pjrt/entries/ab/" + entry.getFileName() + ": its group or others can"
            + " write it (rw-rw-rw-), so the runtime proxy serves nothing from under it");
    assertThat(verify.out()).endsWith("2 problems; run 'xlac cache verify --repair'\n");

    Run repair = xlac("cache", "verify", "--repair");
    assertThat(repair.code()).isZero();
    assertThat(repair.out()).contains("repaired permissions of runtime/pjrt: its group or others could write it"
        + " (rwxrwxr-x, now rwxr-xr-x)\n");
    assertThat(repair.out()).contains("repaired permissions of runtime/pjrt/entries/ab/" + entry.getFileName()
        + ": its group or others could write it (rw-rw-rw-, now rw-r--r--)\n");
    assertThat(entry).as("an entry of no request the cache holds leaves the layout too").doesNotExist();
    assertThat(xlac("cache", "verify").out()).contains("all good");
  }

  @Test
  void import_ofGarbage_isRefusedWithExitCode2AndOneLine() throws Exception {
    Path junk = Files.writeString(tmp.resolve("junk.tar.zst"), "not a bundle");
    Run r = xlac("cache", "import", junk.toString());
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).startsWith("xlac: cannot import " + junk + ": malformed bundle").endsWith("nothing was imported\n");
    assertThat(r.err().lines()).hasSize(1);
  }

  @Test
  void aSecondWriter_getsExitCode3_namingTheHolder() throws Exception {
    try (CacheStore holder = CacheStore.open(cache, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      Run r = xlac("cache", "add", dumps.toString());
      assertThat(r.code()).isEqualTo(3);
      assertThat(r.err()).contains("is locked by another xlac process (pid " + ProcessHandle.current().pid());
      assertThat(xlac("cache", "ls").code()).isZero(); // readers are not blocked
    }
  }

  @Test
  void prune_log_rm_clear() throws Exception {
    xlac("cache", "add", dumps.toString());
    GraphFingerprint fp = firstFingerprint();
    try (CacheStore s = CacheStore.open(cache, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      s.recordFailure(new ArtifactKey(fp, CPU), "compile-error", "unsupported op", "line one\nline two");
    }
    Run log = xlac("cache", "log", fp.shortForm());
    assertThat(log.out()).contains("status:      failed (compile-error: unsupported op)", "  line two");
    Run none = xlac("cache", "prune");
    assertThat(none.code()).isEqualTo(2);
    assertThat(none.err()).contains("nothing to prune to");
    Run dry = xlac("cache", "prune", "--failed", "--dry-run", "--json");
    assertThat(dry.out()).contains("\"dry_run\": true", "\"status\": \"failed\"");
    assertThat(xlac("cache", "prune", "--failed").out()).contains("Removed 1 artifact and 0 graphs");
    assertThat(xlac("cache", "rm", fp.value()).out()).contains("Removed 1 graph");
    assertThat(xlac("cache", "rm", fp.value()).code()).isEqualTo(2);
    assertThat(xlac("cache", "clear").out()).startsWith("Cleared the cache");
    assertThat(xlac("cache", "ls", "--json").out().strip()).isEqualTo("[]");
  }

  private GraphFingerprint firstFingerprint() {
    String json = xlac("cache", "ls", "--json").out();
    int i = json.indexOf("hlo1:");
    return GraphFingerprint.parse(json.substring(i, i + 69));
  }
}
