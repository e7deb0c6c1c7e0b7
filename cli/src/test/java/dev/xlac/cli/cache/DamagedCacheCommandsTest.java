package dev.xlac.cli.cache;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.GraphInfo;
import dev.xlac.cli.CliRunner;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.hlo.TestModules;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #10, item 4: after an emptied CURRENT (or a deleted .sst, a cut MANIFEST), every command,
 * {@code verify --repair} and {@code clear} included, failed with advice to run {@code verify
 * --repair}, which failed the same way. Now the other commands say exactly that one thing, and
 * it works; so does {@code clear}.
 */
class DamagedCacheCommandsTest {
  static final CompilerIdentity CPU = new CompilerIdentity("pjrt", "cpu 0.7.1", "cpu", List.of(), Map.of());
  static final int GRAPHS = 4;

  @TempDir
  Path tmp;
  Path cache;
  Path dumps;

  static CliRunner xlac(String... args) {
    return CliRunner.run(args);
  }

  @BeforeEach
  void aCacheWithArtifacts() throws Exception {
    cache = tmp.resolve("cache");
    dumps = tmp.resolve("dumps");
    for (int i = 1; i <= GRAPHS; i++) {
      TestModules.writeDump(dumps, "module_000" + i + ".jit_step.before_optimizations.hlo.pb",
          TestModules.mulAdd(i, 1, "", i));
    }
    assertThat(xlac("cache", "add", "--cache", cache.toString(), dumps.toString()).exitCode()).isZero();
    try (CacheStore s = CacheStore.open(cache, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      int n = 0;
      for (GraphInfo g : s.graphs()) {
        byte[] bytes = new byte[n++ % 2 == 0 ? 40_000 : 4_000]; // in a blob file, and in a table
        new Random(n).nextBytes(bytes);
        s.putArtifact(new ArtifactKey(g.fingerprint(), CPU), bytes, CompileInfo.of(1, ""));
      }
      s.setMaxSize(java.util.OptionalLong.of(123_000_000));
    }
  }

  @Test
  void commandsOnACacheThatCannotBeOpened_sayOnlyToRunVerifyRepair_whichWorks() throws Exception {
    Files.write(cache.resolve("db/CURRENT"), new byte[0]);
    String c = cache.toString();
    for (String[] command : new String[][] {{"cache", "ls", "--cache", c}, {"cache", "stat", "--cache", c},
        {"cache", "verify", "--cache", c}, {"cache", "prune", "--max-size", "1", "--cache", c},
        {"cache", "add", "--cache", c, dumps.toString()}, {"cache", "export", "--cache", c, tmp.resolve("b").toString()},
        {"cache", "config", "max-size", "--cache", c}}) {
      CliRunner r = xlac(command);
      assertThat(r.exitCode()).as(String.join(" ", command) + ": " + r.err()).isEqualTo(1);
      assertThat(r.err().lines().toList()).as(String.join(" ", command)).singleElement().satisfies(l -> {
        assertThat(l).startsWith("xlac: cache " + c + " is damaged (cannot open the database: ")
            .endsWith("; run 'xlac cache verify --repair'");
        assertThat(l.split("run '", -1)).as("one piece of advice").hasSize(2);
        assertThat(l).doesNotContain("java.", "Exception", "may be corrupted");
      });
    }

    CliRunner repair = xlac("cache", "verify", "--repair", "--cache", c);

    assertThat(repair.exitCode()).as(repair.out() + repair.err()).isZero();
    assertThat(repair.out()).contains("Rebuilt the database from what could still be read (cannot open the database: ",
        "Salvaged " + GRAPHS + " graphs and " + GRAPHS + " artifacts", "settings kept", "The damaged database is in "
            + c + "/db.broken-");
    assertThat(repair.out().lines().toList().getLast()).isEqualTo("Checked " + GRAPHS + " graphs and " + GRAPHS
        + " artifacts (" + repair.out().split("artifacts \\(")[1].split("\\)")[0] + "): rebuilt; the cache verifies clean");
    CliRunner verify = xlac("cache", "verify", "--cache", c);
    assertThat(verify.out()).as(verify.err()).endsWith("all good\n");
    assertThat(xlac("cache", "ls", "--cache", c).out().lines().skip(1)).hasSize(GRAPHS);
    assertThat(xlac("cache", "config", "max-size", "--cache", c).out()).startsWith("123000000 ");
    try (Stream<Path> files = Files.list(cache)) {
      assertThat(files.map(p -> p.getFileName().toString())).anyMatch(n -> n.startsWith("db.broken-"))
          .noneMatch(n -> n.startsWith("."));
    }
  }

  @Test
  void clear_ofACacheThatCannotBeOpened_startsItEmpty_keepingItsSettings() throws Exception {
    try (Stream<Path> s = Files.list(cache.resolve("db"))) {
      for (Path p : s.filter(p -> p.getFileName().toString().startsWith("MANIFEST-")).toList()) {
        Files.delete(p);
      }
    }
    String c = cache.toString();

    CliRunner clear = xlac("cache", "clear", "--cache", c);

    assertThat(clear.exitCode()).as(clear.err()).isZero();
    assertThat(clear.out()).startsWith("Cleared the cache, freed ");
    assertThat(clear.err().lines().toList()).singleElement().satisfies(l -> assertThat(l)
        .startsWith("xlac: cache " + c + " is damaged (cannot open the database: ")
        .endsWith("): replaced it with an empty database, keeping its settings").doesNotContain("run '"));
    assertThat(xlac("cache", "ls", "--cache", c).out().lines().skip(1)).isEmpty();
    assertThat(xlac("cache", "verify", "--cache", c).out()).endsWith("all good\n");
    assertThat(xlac("cache", "config", "max-size", "--cache", c).out()).startsWith("123000000 ");
    try (Stream<Path> files = Files.list(cache)) {
      assertThat(files.map(p -> p.getFileName().toString())).noneMatch(n -> n.startsWith("db.broken-"))
          .noneMatch(n -> n.startsWith("."));
    }
  }

  @Test
  void verifyRepair_ofADeletedBlobFile_listsWhatItDropped_andExits0() throws Exception {
    try (Stream<Path> s = Files.list(cache.resolve("db"))) {
      for (Path p : s.filter(p -> p.getFileName().toString().endsWith(".blob")).toList()) {
        Files.delete(p);
      }
    }
    String c = cache.toString();
    CliRunner before = xlac("cache", "verify", "--cache", c);
    assertThat(before.exitCode()).isEqualTo(1);
    assertThat(before.out()).contains("damaged artifact ", " (jit_step) for pjrt:cpu: its bytes are missing");

    CliRunner repair = xlac("cache", "verify", "--repair", "--cache", c);

    assertThat(repair.exitCode()).as(repair.out() + repair.err()).isZero();
    assertThat(repair.out().lines().filter(l -> l.startsWith("dropped artifact ")).toList()).hasSize(GRAPHS / 2)
        .allSatisfy(l -> assertThat(l).contains(" (jit_step) for pjrt:cpu: its bytes are missing"));
    assertThat(repair.out().lines().toList().getLast()).endsWith(", repaired; 2 entries lost; the cache verifies clean");
    assertThat(xlac("cache", "verify", "--cache", c).out()).endsWith("all good\n");
    assertThat(xlac("cache", "prune", "--max-size", "1", "--cache", c).exitCode()).isZero();
  }
}
