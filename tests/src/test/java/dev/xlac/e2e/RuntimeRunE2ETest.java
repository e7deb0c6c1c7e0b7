package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runtime proof on real JAX, through the real launcher: {@code samples/jax/decoder.py} runs under
 * {@code xlac run --record}, then under {@code xlac run}, where every compile is served from the cache
 * and the losses are the same, bit for bit ({@code --loss-bits}), as those of the same command with
 * the real plugin loaded by JAX directly, without xlac. {@code XLA_FLAGS} naming a file is keyed by the flags in
 * it: a file of dump-only flags is served, the file edited misses. A bundle carries the executables to an empty
 * cache; damaged, truncated and foreign layout entries fall back to compiling with the same losses;
 * a missing or foreign plugin stops {@code xlac run} with exit 3 before the command starts.
 */
class RuntimeRunE2ETest {

  @TempDir
  Path work;

  /** The losses of the plain run, the reference every run under xlac must print. */
  private static List<String> reference;
  /** The whole stdout of the plain run: under xlac the command's stdout is the same, byte for byte. */
  private static String referenceOut;

  private String cache() {
    return work.resolve("cache").toString();
  }

  private static String decoder() {
    return Launcher.root().resolve("samples/jax/decoder.py").toString();
  }

  private static List<String> decoderCommand() {
    return List.of(Launcher.python(), decoder(), "--steps", "2", "--loss-bits");
  }

  /** Nothing of the user's shell that would change where JAX runs. */
  private static Map<String, String> env() {
    Map<String, String> env = new HashMap<>();
    env.put("JAX_PLATFORMS", "");
    env.put("XLAC_PJRT_PLUGIN", "");
    return env;
  }

  private static List<String> losses(String out) {
    return out.lines().filter(l -> l.startsWith("step ") || l.startsWith("done: ")).toList();
  }

  @BeforeEach
  void referenceRun() throws Exception {
    synchronized (RuntimeRunE2ETest.class) {
      if (reference == null) {
        Map<String, String> env = env();
        env.put("PJRT_NAMES_AND_LIBRARY_PATHS", "realcpu:" + Launcher.cpuPlugin());
        env.put("JAX_PLATFORMS", "realcpu");
        Launcher.Result r = Launcher.run(decoderCommand(), env, 300);
        assertThat(r.exitCode()).as(r.err()).isZero();
        reference = losses(r.out());
        referenceOut = r.out();
        assertThat(reference).hasSize(3).first().asString().contains(" bits 0x");
      }
    }
  }

  private Launcher.Result xlacRun(String cache, List<String> options, Path report) throws Exception {
    return xlacRun(cache, options, report, Map.of());
  }

  private Launcher.Result xlacRun(String cache, List<String> options, Path report, Map<String, String> extraEnv)
      throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Launcher.root().resolve("xlac").toString(), "run", "--cache", cache,
        "--plugin", Launcher.cpuPlugin(), "--report", report.toString()));
    cmd.addAll(options);
    cmd.add("--");
    cmd.addAll(decoderCommand());
    Map<String, String> env = env();
    env.putAll(extraEnv);
    Launcher.Result r = Launcher.run(cmd, env, 300);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(losses(r.out())).as("the losses, bit for bit, of the run without xlac").isEqualTo(reference);
    assertThat(r.out()).as("the command's stdout, byte for byte, as without xlac").isEqualTo(referenceOut);
    assertThat(r.runSummary()).startsWith("xlac run: ");
    return r;
  }

  private static Map<String, Double> report(Path file) throws Exception {
    return Launcher.reportNumbers(file);
  }

  private static void assertAllHits(Map<String, Double> r) {
    assertThat(r.get("compiles")).isPositive();
    assertThat(r.get("hits")).as("%s", r).isEqualTo(r.get("compiles"));
    assertThat(r.get("misses")).isZero();
    assertThat(r.get("fallbacks")).isZero();
    assertThat(r.get("saved_seconds")).isPositive();
  }

  @Test
  void decoder_recordedRun_thenEveryCompileIsServed_withTheSameLosses() throws Exception {
    Path first = work.resolve("first.json");
    Launcher.Result recording = xlacRun(cache(), List.of("--record"), first);
    Map<String, Double> r1 = report(first);
    assertThat(r1.get("compiles")).isPositive();
    assertThat(r1.get("misses")).isEqualTo(r1.get("compiles"));
    assertThat(r1.get("recorded")).isEqualTo(r1.get("compiles"));
    assertThat(r1.get("added")).isEqualTo(r1.get("compiles"));
    assertThat(recording.runSummary()).contains(" served from the cache, ");

    Path second = work.resolve("second.json");
    Launcher.Result served = xlacRun(cache(), List.of(), second);
    Map<String, Double> r2 = report(second);
    assertAllHits(r2);
    assertThat(r2.get("compiles")).isEqualTo(r1.get("compiles"));
    // The recording run left the list of what this command asks for: the served run loaded it ahead (issue #24).
    assertThat(r2.get("preload_hits")).as("hits loaded ahead: %s", r2).isPositive();
    assertThat(r2.get("preloaded")).isGreaterThanOrEqualTo(r2.get("preload_hits"));
    assertThat(r2.get("preload_wasted")).isEqualTo(r2.get("preloaded") - r2.get("preload_hits"));
    assertThat(served.runSummary()).matches(
        "xlac run: (\\d+) compiles: \\1 served from the cache, 0 compiled; \\d+\\.\\d\\d s of compiling saved");
    // The same run again starts its command without a JVM (the fast start; its trace is not watched by the plan)
    // and finishes in one: the command's stdout is as byte for byte as on the JVM path (xlacRun).
    Launcher.Result fast = xlacRun(cache(), List.of(), second, Map.of("XLAC_FAST_START_DEBUG", "1"));
    assertThat(fast.err()).contains("xlac-fast-start: served without a JVM; finished without one");
    assertThat(fast.runSummary()).isEqualTo(served.runSummary());
    assertAllHits(report(second));
    assertThat(report(second).get("preload_hits")).as("the launch plan carries the list's variable").isPositive();

    // Why a compile was not served: other XLA_FLAGS (every request: the identity's xla_flags line) and a larger
    // batch (the programs that take it: changed against the recorded request of their module).
    Path changed = work.resolve("changed.json");
    List<String> changedCommand = new ArrayList<>(List.of(Launcher.root().resolve("xlac").toString(), "run",
        "--cache", cache(), "--plugin", Launcher.cpuPlugin(), "--report", changed.toString(), "--"));
    changedCommand.addAll(decoderCommand());
    changedCommand.addAll(List.of("--batch-size", "16"));
    Map<String, String> otherFlags = env();
    otherFlags.put("XLA_FLAGS", "--xla_cpu_enable_fast_min_max=true");
    Launcher.Result missed = Launcher.run(changedCommand, otherFlags, 300);
    assertThat(missed.exitCode()).as(missed.err()).isZero();
    Map<String, Double> r3 = report(changed);
    assertThat(r3.get("misses")).isEqualTo(r3.get("compiles"));
    List<String> why = missed.err().lines().filter(l -> l.startsWith("xlac run:   ")).toList();
    assertThat(why).as(missed.err()).anySatisfy(l -> assertThat(l).matches(
        "xlac run:   \\d+ not served: recorded for another plugin or machine \\(line xla_flags differs\\): .*"));
    assertThat(why).anySatisfy(l -> assertThat(l).matches("xlac run:   \\d+ not served: program changed: .*jit_train_step.*"));
    assertThat(why.stream().mapToInt(l -> Integer.parseInt(l.split(" +")[2])).sum()).isEqualTo(r3.get("misses").intValue());
    assertThat(Files.readString(changed)).contains("\"miss_reasons\": [", "\"reason\": \"identity\"",
        "\"reason\": \"program\"", "\"xla_flags\"");

    Launcher.Result stat = Launcher.xlac("cache", "stat", "--cache", cache());
    // The served run's hits are counted; the fast run's wait in the cache until a command writes to it (the run that
    // missed everything did not open the cache for writing, and a stat counts nothing).
    assertThat(stat.out()).contains("Runtime entries:     " + r1.get("compiles").intValue() + " recorded executables, "
        + r2.get("hits").intValue() + " compiles served (xlac run)")
        .contains("Not yet counted:   the hits of 1 run");
    Launcher.Result ls = Launcher.xlac("cache", "ls", "--runtime", "--cache", cache());
    assertThat(ls.out().lines().skip(1).filter(l -> l.startsWith("pjrt1:"))).hasSize(r1.get("compiles").intValue());

    // XLA_FLAGS naming a file: the key covers the flags XLA reads from it, not the file's name. A file with a
    // dump-only flag keys as no flags (served); edited to a flag that leaves the losses as they are (the
    // optimization level XLA defaults to), every compile misses.
    Path flags = Files.writeString(work.resolve("xla-flags"), "--xla_dump_max_hlo_modules=1\n");
    Map<String, String> flagsFile = Map.of("XLA_FLAGS", flags.toString());
    Path sameFlags = work.resolve("flags-file.json");
    xlacRun(cache(), List.of(), sameFlags, flagsFile);
    assertAllHits(report(sameFlags));
    Files.writeString(flags, "--xla_backend_optimization_level=3\n");
    Path editedFile = work.resolve("edited-flags-file.json");
    xlacRun(cache(), List.of(), editedFile, flagsFile);
    Map<String, Double> edited = report(editedFile);
    assertThat(edited.get("misses")).as("an edited flags file misses").isEqualTo(edited.get("compiles"));
    assertThat(edited.get("hits")).isZero();

    // The bundle carries the executables: an empty cache that imports it serves the same run.
    Path bundle = work.resolve("warm.tar.zst");
    Launcher.Result export = Launcher.xlac("cache", "export", "--cache", cache(), bundle.toString());
    assertThat(export.exitCode()).as(export.err()).isZero();
    String fleet = work.resolve("fleet-cache").toString();
    Launcher.Result imported = Launcher.xlac("cache", "import", "--cache", fleet, bundle.toString());
    assertThat(imported.exitCode()).as(imported.err()).isZero();
    Path third = work.resolve("third.json");
    xlacRun(fleet, List.of(), third);
    assertAllHits(report(third));
  }

  /**
   * Regression (issue #22, 6): a {@code cache import}, {@code prune} or {@code clear} that landed while {@code xlac run}
   * ran was never reflected by later runs: imported entries were never served, removed ones served forever. Here the
   * command itself runs the cache command at a fixed point (before or after its training), so no timing decides; the
   * run that clears is started by the fast start (its launch plan held when it started).
   */
  /**
   * JAX's backend names under xlac are the ones it has without: xlac registered its proxy as a platform "xlac"
   * (JAX_PLATFORMS=xlac), so jax.devices("cpu") raised "Unknown backend cpu", JAX warned that platform 'xlac' is
   * experimental, and a user's JAX_PLATFORMS naming their plugin ran unserved. Each way JAX loads a plugin, run
   * without xlac, recording, then served (--require-hits): a jax_plugins package that registers the real plugin as
   * "samplecpu", libtpu's TPU_LIBRARY_PATH, a PJRT_NAMES_AND_LIBRARY_PATHS pair naming a .json with create options
   * (each selected with JAX_PLATFORMS: the proxy is loaded under that name), and no plugin of the user's (the proxy
   * stands in for JAX's own CPU client, with its one device). stdout, JAX's warnings and the exit code are the same.
   */
  @Test
  void jaxBackendNamesAndWarnings_areAsWithoutXlac_andServed_forAPluginPackageAndForJaxsCpu() throws Exception {
    String script = Launcher.root().resolve("samples/jax/backends.py").toString();
    Map<String, String> asPackage = env();
    asPackage.put("PYTHONPATH", Launcher.root().resolve("samples/jax/plugin_package").toString());
    asPackage.put("XLAC_SAMPLE_CPU_PLUGIN", Launcher.cpuPlugin());
    asPackage.put("JAX_PLATFORMS", "samplecpu");
    Map<String, String> asLibtpu = env(); // how JAX loads libtpu: any plugin at TPU_LIBRARY_PATH is the "tpu" backend
    asLibtpu.put("TPU_LIBRARY_PATH", Launcher.cpuPlugin());
    asLibtpu.put("JAX_PLATFORMS", "tpu");
    Path config = Files.writeString(work.resolve("jcpu.json"), "{\"library_path\": \"" + Launcher.cpuPlugin()
        + "\", \"create_options\": {\"cpu_device_count\": 3}}");
    Map<String, String> asJson = env(); // a name:config.json pair, whose create options the plugin gets
    asJson.put("PJRT_NAMES_AND_LIBRARY_PATHS", "jcpu:" + config);
    asJson.put("JAX_PLATFORMS", "jcpu");
    record Case(Map<String, String> env, List<String> command, String expect) {}
    for (Case c : List.of(
        new Case(asPackage, List.of(Launcher.python(), script, "--backend", "samplecpu"), "devices of samplecpu: "),
        new Case(asLibtpu, List.of(Launcher.python(), script, "--backend", "tpu"), "devices of tpu: "),
        new Case(asJson, List.of(Launcher.python(), script, "--backend", "jcpu"),
            "devices of jcpu: [CpuDevice(id=0), CpuDevice(id=1), CpuDevice(id=2)]"),
        new Case(env(), List.of(Launcher.python(), script, "--backend", "cpu"), "devices of cpu: [CpuDevice(id=0)]"))) {
      Launcher.Result plain = Launcher.run(c.command(), c.env(), 120);
      assertThat(plain.exitCode()).as(plain.err()).isZero();
      assertThat(plain.out()).contains(c.expect());
      for (String mode : List.of("--record", "--require-hits")) {
        List<String> cmd = new ArrayList<>(List.of(Launcher.root().resolve("xlac").toString(), "run", "--cache",
            cache(), "--plugin", Launcher.cpuPlugin(), mode, "--"));
        cmd.addAll(c.command());
        Launcher.Result r = Launcher.run(cmd, c.env(), 120);
        assertThat(r.exitCode()).as(r.err()).isZero();
        assertThat(r.out()).as("%s %s: stdout as without xlac", c.command(), mode).isEqualTo(plain.out());
        assertThat(r.err().lines().filter(l -> !l.startsWith("xlac")).toList())
            .as("%s %s: the framework's warnings as without xlac", c.command(), mode)
            .isEqualTo(plain.err().lines().toList());
        if (mode.equals("--require-hits")) {
          assertThat(r.runSummary()).matches("xlac run: (\\d+) compiles: \\1 served from the cache, 0 compiled; .*");
        }
      }
    }
  }

  @Test
  void clearPruneOrImportDuringARun_isReflectedByTheNextRun() throws Exception {
    Path script = Files.writeString(work.resolve("tiny.py"), "import jax, jax.numpy as jnp\n"
        + "print('result', jax.jit(lambda x: x * 2 + 1)(jnp.ones(4)).tolist())\n");
    String train = Launcher.python() + " " + script;
    String xlac = Launcher.root().resolve("xlac").toString();
    String recorded = work.resolve("recorded").toString();
    Path bundle = work.resolve("tiny.tar.zst");
    Map<String, Double> r = tinyRun(recorded, List.of("--record"), train);
    int compiles = r.get("compiles").intValue();
    assertThat(compiles).isPositive();
    assertThat(Launcher.xlac("cache", "export", "--cache", recorded, bundle.toString()).exitCode()).isZero();

    String cache = cache();
    String importIt = xlac + " cache import --cache " + cache + " " + bundle;
    r = tinyRun(cache, List.of(), importIt + " && " + train);
    assertThat(r.get("hits")).as("imported after the layout was brought up to date").isZero();
    r = tinyRun(cache, List.of(), train + " && " + xlac + " cache prune --max-size 1 --cache " + cache);
    assertAllHits(r); // what the import during the last run added
    Path entries = work.resolve("cache/runtime/pjrt/entries");
    try (Stream<Path> files = Files.walk(entries)) {
      assertThat(files.filter(Files::isRegularFile)).as("the prune removed them from the layout").isEmpty();
    }
    r = tinyRun(cache, List.of(), train + " && " + importIt);
    assertThat(r.get("hits")).as("pruned: none served").isZero();
    assertAllHits(tinyRun(cache, List.of(), train)); // and it leaves a launch plan
    fastStartTrace = true;
    r = tinyRun(cache, List.of(), train + " && " + xlac + " cache clear --cache " + cache);
    fastStartTrace = false;
    assertAllHits(r);
    assertThat(tinyRun(cache, List.of(), train).get("hits")).as("cleared: none served").isZero();
  }

  /** Whether {@link #tinyRun} expects the fast start to have started its command. */
  private boolean fastStartTrace;

  /** {@code xlac run} of {@code sh -c script} on {@code cache}: exit 0, and the report's numbers. */
  private Map<String, Double> tinyRun(String cache, List<String> options, String script) throws Exception {
    Path report = work.resolve("tiny.json");
    List<String> cmd = new ArrayList<>(List.of(Launcher.root().resolve("xlac").toString(), "run", "--cache", cache,
        "--plugin", Launcher.cpuPlugin(), "--report", report.toString()));
    cmd.addAll(options);
    cmd.addAll(List.of("--", "sh", "-c", script));
    Map<String, String> env = env();
    if (fastStartTrace) {
      env.put("XLAC_FAST_START_DEBUG", "1");
    }
    Launcher.Result run = Launcher.run(cmd, env, 300);
    assertThat(run.exitCode()).as(run.err()).isZero();
    assertThat(run.out()).contains("result [3.0, 3.0, 3.0, 3.0]");
    if (fastStartTrace) {
      assertThat(run.err()).as("started by the fast start").contains("xlac-fast-start: served without a JVM");
    }
    return report(report);
  }

  @Test
  void damagedTruncatedAndForeignLayoutEntries_fallBack_withTheSameLosses() throws Exception {
    xlacRun(cache(), List.of("--record"), work.resolve("record.json"));
    Path layout = work.resolve("layout");
    Launcher.Result m = Launcher.xlac("cache", "materialize", "--cache", cache(), "--layout", "pjrt",
        layout.toString());
    assertThat(m.exitCode()).as(m.err()).isZero();
    List<Path> entries;
    try (Stream<Path> s = Files.walk(layout)) {
      entries = s.filter(p -> p.toString().endsWith(".xpx")).sorted().toList();
    }
    assertThat(entries.size()).isGreaterThanOrEqualTo(4);
    // Damaged: one byte of the executable flipped.
    try (RandomAccessFile f = new RandomAccessFile(entries.get(0).toFile(), "rw")) {
      f.seek(f.length() - 1);
      int b = f.read();
      f.seek(f.length() - 1);
      f.write(b ^ 0xff);
    }
    // Truncated.
    try (RandomAccessFile f = new RandomAccessFile(entries.get(1).toFile(), "rw")) {
      f.setLength(f.length() / 2);
    }
    // Foreign: another entry's whole file under this key's name.
    Files.copy(entries.get(3), entries.get(2), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    byte[] damaged = Files.readAllBytes(entries.get(0));

    Path report = work.resolve("damaged.json");
    Launcher.Result r = xlacRun(cache(), List.of("--layout", layout.toString()), report);
    Map<String, Double> counts = report(report);
    assertThat(counts.get("fallbacks")).as("%s", counts).isGreaterThanOrEqualTo(3);
    assertThat(counts.get("hits") + counts.get("misses") + counts.get("fallbacks")).isEqualTo(counts.get("compiles"));
    assertThat(r.runSummary()).contains("fallbacks");
    assertThat(r.err()).contains("xlac runtime: ");
    assertThat(Files.readAllBytes(entries.get(0))).as("--layout DIR is served as it is, never repaired")
        .isEqualTo(damaged);

    // An entry others could have written is not served, and a FIFO in an entry's place costs one fallback, not a
    // hang (issue 22): the layout whole again, then one entry made group-writable and another a FIFO.
    Files.delete(entries.get(0)); // its header still matches: a materialize would keep it
    m = Launcher.xlac("cache", "materialize", "--cache", cache(), "--layout", "pjrt", layout.toString());
    assertThat(m.exitCode()).as(m.err()).isZero();
    Files.setPosixFilePermissions(entries.get(0), java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-r--"));
    Files.delete(entries.get(1));
    assertThat(new ProcessBuilder("mkfifo", entries.get(1).toString()).start().waitFor()).isZero();
    Path untrusted = work.resolve("untrusted.json");
    r = xlacRun(cache(), List.of("--layout", layout.toString()), untrusted);
    counts = report(untrusted);
    assertThat(counts.get("fallbacks")).as("%s", counts).isEqualTo(2);
    assertThat(counts.get("hits")).as("%s", counts).isEqualTo(counts.get("compiles") - 2);
    assertThat(r.err().lines().filter(l -> l.startsWith("xlac runtime: ")).toList()).singleElement().asString()
        .containsAnyOf("its group or others may write it (mode 664)", "is not a regular file");
  }

  /**
   * An xlac run inside another: the inner one finds the outer run's proxy where the real plugin should be (the
   * outer run points torch_xla's PJRT_LIBRARY_PATH at it), and the proxy in front of itself waited for its own start
   * for ever. The inner run says so in one line and exits 3 before its command; the outer passes that on (issue 22).
   */
  @Test
  void nestedRun_exitsWithOneLine_insteadOfHanging() throws Exception {
    Path marker = work.resolve("ran");
    String xlac = Launcher.root().resolve("xlac").toString();
    Launcher.Result r = Launcher.run(List.of(xlac, "run", "--cache", cache(), "--plugin", Launcher.cpuPlugin(), "--",
        xlac, "run", "--cache", cache(), "--", Launcher.python(), "-c",
        "import jax, pathlib; jax.numpy.ones(2).sum().block_until_ready(); pathlib.Path('" + marker + "').touch()"),
        env(), 120);
    assertThat(r.exitCode()).as(r.err()).isEqualTo(3);
    // the outer run's own summary is on stderr too (its command compiled nothing); the inner run's is one line
    assertThat(r.err().lines().filter(l -> l.startsWith("xlac run: ")).toList())
        .containsExactly("xlac run: 0 compiles: 0 served from the cache, 0 compiled; 0.00 s of compiling saved");
    assertThat(r.err().lines().filter(l -> l.startsWith("xlac") && !l.startsWith("xlac: buil")
        && !l.startsWith("xlac run: ")).toList())
        .singleElement().asString().startsWith("xlac: cannot use PJRT plugin ")
        .contains(": it is xlac's runtime proxy, not a real plugin (an xlac run inside another xlac run?)");
    assertThat(marker).as("the inner command must not have run").doesNotExist();
  }

  @Test
  void missingOrForeignPlugin_isExit3_beforeTheCommandStarts() throws Exception {
    Path marker = work.resolve("ran");
    Path notAPlugin = Files.writeString(work.resolve("plugin.so"), "not a plugin\n");
    for (String plugin : List.of(work.resolve("absent.so").toString(), notAPlugin.toString())) {
      Launcher.Result r = Launcher.run(List.of(Launcher.root().resolve("xlac").toString(), "run", "--cache", cache(),
          "--plugin", plugin, "--", "touch", marker.toString()), env(), 120);
      assertThat(r.exitCode()).as(r.err()).isEqualTo(3);
      // (the launcher may first say that it builds the CLI)
      assertThat(r.err().lines().filter(l -> !l.startsWith("xlac: buil")).toList()).singleElement().asString()
          .startsWith("xlac: cannot use PJRT plugin " + plugin + ": ");
      assertThat(marker).as("the command must not have run").doesNotExist();
    }
  }

  @Test
  void oneShotWithPlugin_recordsTheCommandsCompiles_besideCompilingItsGraphs() throws Exception {
    Launcher.Result r = Launcher.run(Stream.concat(Stream.of(Launcher.root().resolve("xlac").toString(),
        "parallel-compile", "--cache", cache(), "--plugin", Launcher.cpuPlugin(), "--"), decoderCommand().stream())
        .toList(), env(), 300);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(losses(r.out())).as("the command ran on the real plugin, through the proxy").isEqualTo(reference);
    Matcher m = Pattern.compile("recorded (\\d+) compiles through the runtime proxy: \\1 new in the cache, 0 already"
        + " there").matcher(r.out());
    assertThat(m.find()).as(r.out()).isTrue();
    assertThat(r.out()).containsPattern("\\d+ graphs: \\d+ compiled, 0 cached, 0 failed");
    assertThat(Launcher.xlac("cache", "stat", "--cache", cache()).out())
        .contains("Runtime entries:     " + m.group(1) + " recorded executables");
  }

  /**
   * The CI step records through {@code xlac dump --plugin}, whose XLA_FLAGS ({@code --xla_dump_to=STAGING/pid-N
   * --xla_dump_hlo_as_proto}) reach every compile's DebugOptions; the request key leaves those dump-only options
   * out (runtime/README.md, canonical options rule 5), so the fleet's run without them is all hits.
   */
  @Test
  void dumpWithPlugin_records_thenXlacRunServesEveryCompile() throws Exception {
    Launcher.Result dump = Launcher.run(Stream.concat(Stream.of(Launcher.root().resolve("xlac").toString(), "dump",
        "--cache", cache(), "--plugin", Launcher.cpuPlugin(), "--"), decoderCommand().stream()).toList(), env(), 300);
    assertThat(dump.exitCode()).as(dump.err()).isZero();
    assertThat(losses(dump.out())).isEqualTo(reference);
    assertThat(dump.out()).containsPattern("recorded (\\d+) compiles through the runtime proxy: \\1 new in the cache");
    Path report = work.resolve("after-dump.json");
    xlacRun(cache(), List.of(), report);
    assertAllHits(report(report));
  }

  /**
   * kill -9 of a recording {@code xlac run} and of its training command, once the proxy has recorded the compiles:
   * the cache still verifies, nothing recorded is lost (the next recording run takes the killed run's records in,
   * with its own), and the run after that is all hits with the same losses.
   */
  @Test
  void killedRecordingRun_losesNothing_andTheNextRecordingRunTakesItsRecordsIn() throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Launcher.root().resolve("xlac").toString(), "run", "--cache", cache(),
        "--plugin", Launcher.cpuPlugin(), "--record", "--", Launcher.python(), decoder(), "--steps", "1000000"));
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(Launcher.root().toFile())
        .redirectErrorStream(true).redirectOutput(work.resolve("killed.log").toFile());
    pb.environment().putAll(env());
    Process xlac = pb.start();
    Path spools = work.resolve("cache/runtime/spool");
    long recorded = 0;
    long stableSince = System.nanoTime();
    long deadline = System.nanoTime() + 240_000_000_000L;
    // Training steps after the first compile nothing new: wait until the records stop coming for 3 s.
    while (recorded == 0 || System.nanoTime() - stableSince < 3_000_000_000L) {
      assertThat(System.nanoTime()).as(Files.readString(work.resolve("killed.log"))).isLessThan(deadline);
      assertThat(xlac.isAlive()).as(Files.readString(work.resolve("killed.log"))).isTrue();
      Thread.sleep(200);
      long now = records(spools);
      if (now != recorded) {
        recorded = now;
        stableSince = System.nanoTime();
      }
    }
    List<ProcessHandle> training = xlac.descendants().toList();
    xlac.destroyForcibly(); // SIGKILL: no clean-up of any kind
    training.forEach(ProcessHandle::destroyForcibly);
    xlac.waitFor();
    for (ProcessHandle h : training) {
      h.onExit().get();
    }
    assertThat(records(spools)).as("the killed run's records are where its proxy wrote them").isEqualTo(recorded);

    Launcher.Result verify = Launcher.xlac("cache", "verify", "--cache", cache());
    assertThat(verify.exitCode()).as(verify.out() + verify.err()).isZero();

    Path next = work.resolve("after-kill.json");
    Launcher.Result adopting = xlacRun(cache(), List.of("--record"), next);
    assertThat(adopting.err()).contains("took in " + recorded + " compile" + (recorded == 1 ? "" : "s")
        + " recorded by an earlier run that did not finish");
    assertThat(records(spools)).as("no spool is left behind").isZero();
    Path last = work.resolve("served.json");
    xlacRun(cache(), List.of(), last);
    assertAllHits(report(last));
  }

  private static long records(Path spools) throws Exception {
    if (!Files.isDirectory(spools)) {
      return 0;
    }
    try (Stream<Path> files = Files.walk(spools)) {
      return files.filter(f -> f.getFileName().toString().endsWith(".xpr")).count();
    }
  }
}
