package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.hlo.TestModules;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The real launcher's contract: version, exit codes, one-line errors. */
class LauncherE2ETest {
  @TempDir
  Path dir;

  @Test
  void version() throws Exception {
    Launcher.Result r = Launcher.xlac("--version");
    assertThat(r.exitCode()).isZero();
    assertThat(r.out()).startsWith("xlac ");
  }

  @Test
  void badInput_exits2_withOneLineAndNoStackTrace() throws Exception {
    Path junk = Files.write(dir.resolve("module_0001.jit_x.before_optimizations.hlo.pb"), "not a proto".getBytes());
    Launcher.Result r = Launcher.xlac("hash", junk.toString());
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.out()).isEmpty();
    assertThat(r.err().strip().lines()).singleElement().satisfies(l -> assertThat(l).startsWith("xlac: cannot read " + junk));
  }

  /**
   * {@code hash} fingerprints from the wire bytes with tables read from a text resource, so it
   * loads none of protobuf's descriptors or our generated message classes (about 120 ms of a cold
   * start). The one protobuf class left is the readers' exception type.
   */
  @Test
  void hash_loadsNoProtobufDescriptorsOrMessageClasses() throws Exception {
    Path log = dir.resolve("classes.txt");
    Path dump = TestModules.golden("mlp_run1").resolve("module_0000.jit_stage.before_optimizations.hlo.pb");
    Launcher.Result r = Launcher.run(List.of(Launcher.root().resolve("xlac").toString(), "hash", dump.toString()),
        // Without the AOT class cache: every class it holds (trained on inspect and diff too, which parse messages)
        // is loaded at start whether used or not, which would hide what hash itself needs.
        Map.of("XLAC_JAVA_OPTS", "-XX:AOTMode=off -Xlog:class+load=info:file=" + log), 300);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).startsWith("hlo1:").contains("jit_stage");
    List<String> loaded = Files.readAllLines(log).stream()
        .map(l -> l.replaceFirst("^(\\[[^]]*\\])+ ", "").replaceFirst(" .*", "")).toList();
    assertThat(loaded).contains("dev.xlac.cli.HashCommand", "dev.xlac.hlo.WireSchema");
    assertThat(loaded).filteredOn(c -> c.startsWith("dev.xlac.hlo.proto.") || c.startsWith("com.google.protobuf."))
        .containsExactly("com.google.protobuf.InvalidProtocolBufferException");
  }

  /**
   * zstd-jni's FFM binding (its Java 22+ classes) spins up about 300 ms of downcall handles in a
   * fresh JVM before the first graph is stored; the launcher selects its JNI binding instead.
   */
  @Test
  void cacheAdd_usesZstdsJniBinding_notItsFfmOne() throws Exception {
    Path log = dir.resolve("classes.txt");
    Path dump = TestModules.golden("mlp_run1").resolve("module_0000.jit_stage.before_optimizations.hlo.pb");
    Launcher.Result r = Launcher.run(List.of(Launcher.root().resolve("xlac").toString(), "cache", "add", "--cache",
        dir.resolve("cache").toString(), dump.toString()), Map.of("XLAC_JAVA_OPTS", "-Xlog:class+load=info:file=" + log),
        300);
    assertThat(r.exitCode()).as(r.err()).isZero();
    List<String> zstd = Files.readAllLines(log).stream().filter(l -> l.contains(" com.github.luben.zstd.")).toList();
    assertThat(zstd).as("zstd is used to store the graph").isNotEmpty();
    assertThat(zstd).noneMatch(l -> l.contains("ZstdBinding") || l.contains("META-INF/versions/"));
  }

  /**
   * The launcher turns multi-release jars off for all jars (for zstd-jni's sake: its versioned classes are the FFM
   * binding it is to leave out). That is safe for a jar only when each of its versioned classes has a base class to
   * fall back on (jackson-core's are faster variants of its number parsing): then nothing is missing, only a speed-up.
   */
  @Test
  void everyVersionedClass_butZstdJnis_hasABaseClass_soMultiReleaseOffLosesNone() throws Exception {
    List<String> withoutBase = new java.util.ArrayList<>();
    try (var jars = Files.list(Launcher.root().resolve("cli/target/lib"))) {
      for (Path jar : jars.filter(p -> p.toString().endsWith(".jar")).toList()) {
        if (jar.getFileName().toString().startsWith("zstd-jni-")) {
          continue;
        }
        try (java.util.zip.ZipFile z = new java.util.zip.ZipFile(jar.toFile())) {
          z.stream().map(java.util.zip.ZipEntry::getName)
              .filter(n -> n.startsWith("META-INF/versions/") && n.endsWith(".class") && !n.endsWith("module-info.class"))
              .filter(n -> z.getEntry(n.replaceFirst("^META-INF/versions/[0-9]+/", "")) == null)
              .forEach(n -> withoutBase.add(jar.getFileName() + "!" + n));
        }
      }
    }
    assertThat(withoutBase).isEmpty();
  }

  /**
   * hash, inspect and diff of files of at most 4 MiB in all start with the light JIT settings (C1 only), which took
   * less CPU there; more, or a directory, keeps C2 for the long loops (scripts/launch.sh, as the next test).
   */
  @Test
  void hashInspectDiff_ofSmallFiles_runWithC1Only_biggerOrADirectory_keepC2() throws Exception {
    Path small = TestModules.golden("mlp_run1").resolve("module_0000.jit_stage.before_optimizations.hlo.pb");
    Path big = dir.resolve("module_0001.jit_big.before_optimizations.hlo.pb");
    try (var f = new java.io.RandomAccessFile(big.toFile(), "rw")) {
      f.setLength(4 * 1024 * 1024 + 1);  // the launcher goes by size alone
    }
    assertThat(tieredStopAtLevel("hash", small.toString())).isEqualTo("1");
    assertThat(tieredStopAtLevel("diff", "--json", small.toString(), small.toString())).isEqualTo("1");
    assertThat(tieredStopAtLevel("inspect", big.toString())).isEqualTo("4");
    assertThat(tieredStopAtLevel("hash", small.getParent().toString())).isEqualTo("4");
  }

  /** parallel-compile over the cache alone only looks up and schedules (its compiles run in workers): C1 only. */
  @Test
  void parallelCompile_overTheCacheAlone_runsWithC1Only_withPathsOrACommand_keepsC2() throws Exception {
    String cache = dir.resolve("cache").toString();
    String plugin = dir.resolve("no-plugin.so").toString();  // the launcher decides before the plugin is checked
    String dumps = TestModules.golden("mlp_run1").toString();
    assertThat(tieredStopAtLevel("parallel-compile", "--cache", cache, "--plugin", plugin)).isEqualTo("1");
    assertThat(tieredStopAtLevel("parallel-compile", "--cache", cache, "--plugin", plugin, dumps)).isEqualTo("4");
    assertThat(tieredStopAtLevel("parallel-compile", "--cache", cache, "--plugin", plugin, "--", "true"))
        .isEqualTo("4");
  }

  /**
   * The cache commands that read every value take the light settings on a cache of at most 4 MiB of database files
   * (or none yet), wherever the cache is named from; add and import on small files; a bigger cache, or more than 256
   * database files, keeps C2 for SHA-256's intrinsic.
   */
  @Test
  void cacheCommands_onASmallCacheOrSmallFiles_runWithC1Only_aBigCacheOrBigFilesKeepC2() throws Exception {
    Path empty = dir.resolve("empty-cache");
    Path small = Files.createDirectories(dir.resolve("small-cache/db"));
    Files.write(small.resolve("000011.sst"), new byte[4096]);
    Path big = Files.createDirectories(dir.resolve("big-cache/db"));
    try (var f = new java.io.RandomAccessFile(big.resolve("000012.blob").toFile(), "rw")) {
      f.setLength(4 * 1024 * 1024 + 1);  // the launcher goes by size alone
    }
    Path many = Files.createDirectories(dir.resolve("many-cache/db"));
    for (int i = 0; i < 257; i++) {
      Files.write(many.resolve(String.format("%06d.sst", i)), new byte[1]);
    }
    Path module = TestModules.golden("mlp_run1").resolve("module_0000.jit_stage.before_optimizations.hlo.pb");
    Path bundle = dir.resolve("big.tar.zst");
    try (var f = new java.io.RandomAccessFile(bundle.toFile(), "rw")) {
      f.setLength(1024 * 1024 + 1);
    }

    assertThat(tierOnly("cache", "verify", "--cache", empty.toString())).isEqualTo("1");
    assertThat(tierOnly("cache", "verify", "--cache=" + small.getParent())).isEqualTo("1");
    assertThat(tierOnly("cache", "export", "--cache", small.getParent().toString(), "out.tar.zst"))
        .isEqualTo("1");
    assertThat(tierOnly("cache", "verify", "--cache", big.getParent().toString())).isEqualTo("4");
    assertThat(tierOnly("cache", "prune", "--cache", many.getParent().toString(), "--max-size", "1G"))
        .isEqualTo("4");
    assertThat(tierOnly(Map.of("XLAC_CACHE_DIR", big.getParent().toString()), "cache", "export", "x.tar.zst"))
        .isEqualTo("4");
    // $XLAC_CACHE_DIR is read before the home's default cache, which here is big; an absolute $XDG_CACHE_HOME too.
    // (An empty $XDG_CACHE_HOME or $XLAC_CACHE_DIR names nothing, for the launcher as for CacheLocation.)
    Path home = Files.createDirectories(dir.resolve("home/.cache"));
    Files.createSymbolicLink(home.resolve("xlac"), big.getParent());
    String homeDir = home.getParent().toString();
    assertThat(tierOnly(Map.of("HOME", homeDir, "XDG_CACHE_HOME", "", "XLAC_CACHE_DIR",
        small.getParent().toString()), "cache", "verify")).isEqualTo("1");
    assertThat(tierOnly(Map.of("HOME", homeDir, "XDG_CACHE_HOME", "", "XLAC_CACHE_DIR", ""),
        "cache", "verify")).isEqualTo("4");
    assertThat(tierOnly(Map.of("HOME", homeDir, "XDG_CACHE_HOME", dir.toString(), "XLAC_CACHE_DIR", ""),
        "cache", "verify")).isEqualTo("1"); // DIR/xlac: no database yet
    // The home's default cache with no database: unknown (Java's home is the passwd entry's, not always $HOME).
    assertThat(tierOnly(Map.of("HOME", dir.resolve("nowhere").toString(), "XDG_CACHE_HOME", "",
        "XLAC_CACHE_DIR", ""), "cache", "verify")).isEqualTo("4");
    assertThat(tierOnly("cache", "verify", "--cache=")).isEqualTo("4");
    assertThat(tierOnly("cache", "add", "--cache", empty.toString(), module.toString())).isEqualTo("1");
    assertThat(tierOnly("cache", "add", "--cache", empty.toString(), module.getParent().toString()))
        .isEqualTo("4");
    assertThat(tierOnly("cache", "import", "--cache", empty.toString(), bundle.toString())).isEqualTo("4");
    Path smallBundle = Files.write(dir.resolve("small.tar.zst"), new byte[1024 * 1024]);
    assertThat(tierOnly("cache", "import", "--cache", empty.toString(), smallBundle.toString()))
        .isEqualTo("1");
  }

  /**
   * The JIT's top tier that the launcher chose for {@code xlac ARGS}, with an unknown option after them: the JVM
   * starts with that tier, then refuses, so that no cache (the fake ones here, or the user's) is read or written.
   */
  private static String tierOnly(String... args) throws Exception {
    return tierOnly(Map.of(), args);
  }

  private static String tierOnly(Map<String, String> env, String... args) throws Exception {
    String[] refused = java.util.Arrays.copyOf(args, args.length + 1);
    refused[args.length] = "--no-such-option";
    return tieredStopAtLevel(env, refused);
  }

  /** The JIT's top tier that the launcher gave the JVM for {@code xlac ARGS}. */
  private static String tieredStopAtLevel(String... args) throws Exception {
    return tieredStopAtLevel(Map.of(), args);
  }

  /** The same, with {@code env} added to the environment. */
  private static String tieredStopAtLevel(Map<String, String> env, String... args) throws Exception {
    List<String> command = new java.util.ArrayList<>(List.of(Launcher.root().resolve("xlac").toString()));
    command.addAll(List.of(args));
    Map<String, String> all = new java.util.HashMap<>(env);
    all.put("XLAC_JAVA_OPTS", "-XX:+PrintFlagsFinal");
    Launcher.Result r = Launcher.run(command, all, 300);
    return r.out().lines().filter(l -> l.matches("\\s*intx TieredStopAtLevel .*")).findFirst()
        .map(l -> l.trim().split("\\s+")[3]).orElseThrow(() -> new AssertionError("no flag in: " + r.out()));
  }

  @Test
  void unknownCommand_exits2() throws Exception {
    Launcher.Result r = Launcher.xlac("frobnicate");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).contains("xlac: Unmatched argument");
  }
}
