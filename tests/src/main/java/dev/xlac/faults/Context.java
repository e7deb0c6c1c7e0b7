package dev.xlac.faults;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the scenarios share: the options, the working directory, a runner for {@code ./xlac}, the
 * caches and bundles they start from (built once, lazily), and the checks they all make.
 */
final class Context implements AutoCloseable {
  static final Duration COMMAND = Duration.ofSeconds(120);
  static final Duration COMPILE = Duration.ofSeconds(300);
  /** The golden dump directories that hold compiler inputs (hlo/src/test/resources/golden). */
  static final List<String> GOLDEN = List.of("mlp_run1", "mlp_run2", "mlp_batch64", "mlp_const", "mlp_renamed", "gz",
      "snapshot");
  private static final Pattern COMPILED_LINE = Pattern.compile("\\] compiled \\S+ \\(([0-9a-f]{12})\\)");

  final FaultSuite.Options options;
  final Path work;
  final PrintStream out;
  final Xlac xlac;
  final Path pluginLink;
  private Fixture pending;
  private Fixture compiled;
  private Fixture bulk;

  /** A cache the scenarios copy, with what it holds and how long building it took. */
  record Fixture(Path cache, Content content, Path bundle) {}

  Context(FaultSuite.Options options, Path work, PrintStream out) throws IOException {
    this.options = options;
    this.work = work;
    this.out = out;
    this.xlac = new Xlac(options.root.resolve("xlac"), work.resolve("runner"), List.of(), Map.of());
    Path link = null;
    if (options.plugin != null && Files.isRegularFile(options.plugin)) {
      // Workers started through this link name it on their command line, so strays of the suite's own
      // killed compiles can be found and stopped (a worker leads its own process group).
      link = Files.createSymbolicLink(work.resolve("pjrt-plugin.so"), options.plugin.toAbsolutePath());
    }
    this.pluginLink = link;
    Xlac.ABBREVIATIONS.put(String.join(" ", goldenDirs()), "$GOLDEN/{" + String.join(",", GOLDEN) + "}");
    Xlac.ABBREVIATIONS.put(work.toString(), "$WORK");
    out.println("($WORK is " + work + ", $GOLDEN is " + golden() + ")");
  }

  /** Builds the launcher if needed (so no trial's timing includes a build) and says what runs. */
  void preflight() throws IOException, InterruptedException {
    Xlac.Result v = xlac.run(Duration.ofMinutes(20), "--version");
    if (!v.ok()) {
      throw new IOException("./xlac --version failed: " + v.brief() + "\n" + v.err());
    }
    out.printf("%s; PJRT plugin: %s%n", v.out().strip(),
        pluginLink == null ? "none (set XLAC_PJRT_PLUGIN or --plugin; compile scenarios are skipped)" : options.plugin);
  }

  Random rng(String scenario, int trial) {
    return FaultSuite.rng(options.seed, scenario, trial);
  }

  /** A fresh directory for one trial (removed by {@link #cleanTrial} unless the trial failed and --keep). */
  Path trialDir(String scenario, int trial) throws IOException {
    Path d = work.resolve(scenario).resolve("trial-" + trial);
    deleteTree(d);
    return Files.createDirectories(d);
  }

  void cleanTrial(Path dir, boolean failed) throws IOException {
    if (!(failed && options.keep)) {
      deleteTree(dir);
    }
  }

  /** A runner whose children's temp directory and output files live under {@code dir}. */
  Xlac runner(Path dir) throws IOException {
    return new Xlac(options.root.resolve("xlac"), dir.resolve("runner"), List.of(), Map.of());
  }

  Path golden() {
    return options.root.resolve("hlo/src/test/resources/golden");
  }

  List<String> goldenDirs() {
    return GOLDEN.stream().map(g -> golden().resolve(g).toString()).toList();
  }

  boolean hasPlugin() {
    return pluginLink != null;
  }

  // ---- fixtures ----

  /** Every golden graph, added and pending. */
  Fixture pending() throws IOException, InterruptedException {
    if (pending == null) {
      Path cache = work.resolve("fixtures/pending");
      List<String> args = new ArrayList<>(List.of("cache", "add", "--cache", cache.toString()));
      args.addAll(goldenDirs());
      Xlac.Result r = xlac.run(COMMAND, args);
      require(r);
      pending = new Fixture(cache, null, null);
    }
    return pending;
  }

  /**
   * Every golden graph compiled by the real CPU plugin (without a plugin: with one synthetic
   * artifact per graph instead), and its export.
   */
  Fixture compiled() throws IOException, InterruptedException {
    if (compiled == null) {
      Path cache = work.resolve("fixtures/compiled");
      copyTree(pending().cache(), cache);
      if (hasPlugin()) {
        require(xlac.run(COMPILE, compileArgs(cache, false)));
      } else {
        Bundle graphs = exportBundle(pending().cache(), work.resolve("fixtures/pending.tar.zst"));
        Path b = work.resolve("fixtures/synthetic-0.tar.zst");
        Bundle.synthetic(graphs, graphs.manifest().lines("graph").stream().map(l -> l[1]).toList(), "0", 40_000,
            new Random(options.seed)).write(b);
        require(xlac.run(COMMAND, "cache", "import", "--cache", cache.toString(), b.toString()));
      }
      Path bundle = work.resolve("fixtures/compiled.tar.zst");
      Content content = contentOf(exportBundle(cache, bundle));
      compiled = new Fixture(cache, content, bundle);
    }
    return compiled;
  }

  /** {@link #compiled} plus 2 synthetic compilers' artifacts of 192 KiB per graph (about 11 MiB more). */
  Fixture bulk() throws IOException, InterruptedException {
    if (bulk == null) {
      Path cache = work.resolve("fixtures/bulk");
      copyTree(compiled().cache(), cache);
      Bundle source = Bundle.read(compiled().bundle());
      List<String> fps = source.manifest().lines("graph").stream().map(l -> l[1]).toList();
      for (int i = 1; i <= 2; i++) {
        Path b = work.resolve("fixtures/bulk-" + i + ".tar.zst");
        Bundle.synthetic(source, fps, "bulk-" + i, 192 << 10, new Random(options.seed + i)).write(b);
        require(xlac.run(COMMAND, "cache", "import", "--cache", cache.toString(), b.toString()));
      }
      Path bundle = work.resolve("fixtures/bulk.tar.zst");
      bulk = new Fixture(cache, contentOf(exportBundle(cache, bundle)), bundle);
    }
    return bulk;
  }

  List<String> compileArgs(Path cache, boolean withPaths) {
    List<String> args = new ArrayList<>(List.of("parallel-compile", "--cache", cache.toString(), "--plugin",
        pluginLink.toString(), "--jobs", "2"));
    if (withPaths) {
      args.addAll(goldenDirs());
    }
    return args;
  }

  /** The 12-hex fingerprints that a compile's progress lines reported compiled (stored before the line). */
  static List<String> reportedCompiled(String stderr) {
    List<String> fps = new ArrayList<>();
    Matcher m = COMPILED_LINE.matcher(stderr);
    while (m.find()) {
      fps.add(m.group(1));
    }
    return fps;
  }

  private Bundle exportBundle(Path cache, Path bundle) throws IOException, InterruptedException {
    require(xlac.run(COMMAND, "cache", "export", "--cache", cache.toString(), bundle.toString()));
    return Bundle.read(bundle);
  }

  private static Content contentOf(Bundle b) throws IOException {
    List<String> wrong = new ArrayList<>();
    Content c = Content.of(b, wrong);
    if (!wrong.isEmpty()) {
      throw new IOException("a fixture's export is inconsistent: " + wrong);
    }
    return c;
  }

  private static void require(Xlac.Result r) throws IOException {
    if (!r.ok()) {
      throw new IOException("building a fixture failed: " + r.brief() + "\n" + r.err().strip());
    }
  }

  // ---- checks every scenario makes ----

  /**
   * {@code cache verify} must open the cache and find it clean.
   *
   * @return whether it did (a failure is recorded otherwise)
   */
  boolean verifyClean(Xlac x, Path cache, Tally t, int trial, String when) throws IOException, InterruptedException {
    Xlac.Result v = x.run(COMMAND, "cache", "verify", "--cache", cache.toString());
    if (v.ok() && v.out().contains("all good")) {
      return true;
    }
    t.fail(trial, when + ": the cache is not clean: " + v.brief() + firstLines(v.out(), 3));
    return false;
  }

  /**
   * What the cache holds, read through {@code cache export} into {@code scratch}; null (and a failure
   * recorded) when the export fails or hands out bytes that contradict its own manifest.
   */
  Content snapshot(Xlac x, Path cache, Path scratch, Tally t, int trial, String when)
      throws IOException, InterruptedException {
    Path file = scratch.resolve("snapshot-" + System.nanoTime() + ".tar.zst");
    Xlac.Result r = x.run(COMMAND, "cache", "export", "--cache", cache.toString(), file.toString());
    if (!r.ok()) {
      t.fail(trial, when + ": cannot read the cache back: " + r.brief());
      return null;
    }
    try {
      return readChecked(file, t, trial, when);
    } finally {
      Files.deleteIfExists(file);
    }
  }

  /** Reads a bundle that xlac wrote; wrong bytes in it are a failure. */
  static Content readChecked(Path bundle, Tally t, int trial, String when) throws IOException {
    List<String> wrong = new ArrayList<>();
    Content c;
    try {
      c = Content.of(Bundle.read(bundle), wrong);
    } catch (IOException | RuntimeException e) {
      t.fail(trial, when + ": the bundle xlac wrote cannot be read: " + e.getMessage());
      return null;
    }
    if (!wrong.isEmpty()) {
      t.wrongBytes += wrong.size();
      t.fail(trial, when + ": WRONG BYTES in a bundle xlac wrote: " + wrong.subList(0, Math.min(3, wrong.size())));
      return null;
    }
    return c;
  }

  /** A one-line error in words: one stderr line, no Java class names or stack trace. */
  static String notOneLine(Xlac.Result r) {
    List<String> lines = r.err().lines().filter(l -> !l.isBlank()).toList();
    String all = r.err();
    if (all.contains("OutOfMemoryError")) {
      return "ran out of memory: " + r.lastErr();
    }
    if (all.contains("\tat ") || all.matches("(?s).*\\bjava\\.[a-z]+\\.[A-Za-z.]*(Exception|Error)\\b.*")
        || all.contains("Exception in thread")) {
      return "printed a Java exception or stack trace: " + firstLines(all, 2).strip();
    }
    if (lines.isEmpty()) {
      return "gave no reason on stderr";
    }
    if (all.contains("Usage:") || all.contains("Unknown option") || all.contains("Unmatched argument")) {
      return "refused the command line, not the input: " + lines.getFirst();
    }
    return null;
  }

  static String firstLines(String s, int n) {
    List<String> l = s.lines().filter(x -> !x.isBlank()).limit(n).toList();
    return l.isEmpty() ? "" : " [" + String.join(" | ", l) + "]";
  }

  /** Stops any compile worker of the suite's that outlived a killed xlac (found by the plugin link). */
  void sweepStrays() {
    if (pluginLink == null) {
      return;
    }
    String link = pluginLink.toString();
    ProcessHandle.allProcesses().filter(ProcessHandle::isAlive)
        .filter(p -> p.info().commandLine().orElse("").contains(link)).forEach(ProcessHandle::destroyForcibly);
  }

  // ---- files ----

  static void copyTree(Path from, Path to) throws IOException {
    Files.walkFileTree(from, new SimpleFileVisitor<>() {
      @Override
      public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
        Files.createDirectories(to.resolve(from.relativize(dir).toString()));
        return FileVisitResult.CONTINUE;
      }

      @Override
      public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
        if (from.relativize(file).toString().equals("reserve")) {
          return FileVisitResult.CONTINUE; // the disk reserve (64 MiB of nothing): the copy's writer makes its own
        }
        Files.copy(file, to.resolve(from.relativize(file).toString()), StandardCopyOption.COPY_ATTRIBUTES,
            LinkOption.NOFOLLOW_LINKS);
        return FileVisitResult.CONTINUE;
      }
    });
  }

  static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    Files.walkFileTree(dir, new SimpleFileVisitor<>() {
      @Override
      public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
        Files.deleteIfExists(file);
        return FileVisitResult.CONTINUE;
      }

      @Override
      public FileVisitResult visitFileFailed(Path file, IOException exc) throws IOException {
        Files.deleteIfExists(file);
        return FileVisitResult.CONTINUE;
      }

      @Override
      public FileVisitResult postVisitDirectory(Path d, IOException exc) throws IOException {
        Files.deleteIfExists(d);
        return FileVisitResult.CONTINUE;
      }
    });
  }

  @Override
  public void close() throws IOException {
    sweepStrays();
    if (!options.keep) {
      try (var s = Files.list(work)) {
        for (Path p : s.toList()) {
          deleteTree(p);
        }
      }
    }
  }
}
