package dev.xlac.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Hostile and oversized bundles: every one must be refused with exit code 2 and a one-line
 * reason, nothing imported, no file written outside the cache, within a bounded time and a small
 * heap ({@code -Xmx256m}) with no OutOfMemoryError or stack trace. Plus one bundle that is not
 * hostile, only huge (a consistent entry of --bomb-bytes zeros that compresses to a few hundred
 * KB): imported whole in that small heap, or refused in one line.
 *
 * <p>Trials repeat the whole list with new random choices (offsets, cut points, bytes).
 */
final class HostileBundleScenario implements FaultSuite.Scenario {
  static final String HEAP = "-Xmx256m";
  /** Peak resident memory allowed to an importer running with {@link #HEAP}: heap, RocksDB and the JVM itself. */
  static final long RSS_LIMIT_KB = 1024 * 1024;
  static final Duration LIMIT = Duration.ofSeconds(120);

  /** One hostile bundle: how to make it, and extra import arguments. */
  record Case(String name, Maker maker, List<String> importArgs) {}

  interface Maker {
    void make(Path file) throws Exception;
  }

  @Override
  public String name() {
    return "hostile-bundles";
  }

  @Override
  public String description() {
    return "hostile and oversized bundles: refused in one line, nothing imported, bounded time and memory";
  }

  @Override
  public int defaultTrials(int general) {
    return 1;
  }

  @Override
  public void run(Context ctx, Tally t, int trials) throws Exception {
    for (int trial = 1; trial <= trials; trial++) {
      Path dir = ctx.trialDir(name(), trial);
      int failuresBefore = t.failures.size();
      try {
        t.trials++;
        trial(ctx, t, trial, dir, ctx.rng(name(), trial));
      } finally {
        ctx.cleanTrial(dir, t.failures.size() > failuresBefore);
      }
    }
  }

  private void trial(Context ctx, Tally t, int trial, Path dir, Random rng) throws Exception {
    Xlac x = ctx.runner(dir);
    Xlac small = x.withJavaOpts(HEAP);
    Bundle source = Bundle.read(ctx.compiled().bundle());
    List<String> fps = new ArrayList<>(source.manifest().lines("graph").stream().map(l -> l[1]).toList());
    java.util.Collections.shuffle(fps, rng);
    // The victim: 6 graphs with artifacts new to every cache. The target holds one other graph's.
    Bundle base = Bundle.synthetic(source, fps.subList(0, 6), "hostile-" + trial, 24 << 10, rng);
    Bundle seed = Bundle.synthetic(source, fps.subList(6, 7), "hostile-seed-" + trial, 1024, rng);
    Path target = dir.resolve("target");
    Path seedFile = dir.resolve("seed.tar.zst");
    seed.write(seedFile);
    Xlac.Result seeded = x.run(Context.COMMAND, "cache", "import", "--cache", target.toString(), seedFile.toString());
    Path control = dir.resolve("control");
    Path baseFile = dir.resolve("base.tar.zst");
    base.write(baseFile);
    Xlac.Result good = small.run(Context.COMMAND, "cache", "import", "--cache", control.toString(), baseFile.toString());
    if (!seeded.ok() || !good.ok()) {
      t.fail(trial, "the good bundles the hostile ones are made from do not import: " + (seeded.ok() ? good : seeded)
          .brief());
      return;
    }
    Xlac.Result baseline = x.run(Context.COMMAND, "cache", "ls", "--json", "--cache", target.toString());
    Path pristine = dir.resolve("target-pristine");
    Context.copyTree(target, pristine);
    Path escape = dir.resolve("escaped");
    Keys keys = new Keys(dir, x, base);
    List<Case> cases = cases(ctx, base, rng, escape, keys);
    Path bundles = Files.createDirectories(dir.resolve("bundles"));
    List<Case> refusedBadly = new ArrayList<>();
    long worstRss = 0;
    Duration slowest = Duration.ZERO;
    for (Case c : cases) {
      Path file = bundles.resolve(c.name() + ".tar.zst");
      try {
        c.maker().make(file);
      } catch (SetUpFailed e) {
        t.fail(trial, c.name() + ": cannot be built on this xlac: " + e.getMessage());
        continue;
      }
      Xlac.Result r = importInto(small, target, file, c.importArgs());
      worstRss = Math.max(worstRss, r.peakRssKb());
      slowest = r.elapsed().compareTo(slowest) > 0 ? r.elapsed() : slowest;
      String problem = refusal(r);
      if (r.exit() == 0) {
        problem = "IMPORTED (exit 0): " + r.out().strip();
        Context.deleteTree(target); // start the next case from the seeded cache again
        Context.copyTree(pristine, target);
      }
      if (problem == null && Files.exists(escape)) {
        problem = "wrote " + escape + " outside the cache";
      }
      if (problem == null) {
        t.outcome("refused");
      } else {
        t.outcome("not refused properly");
        refusedBadly.add(c);
        t.fail(trial, c.name() + ": " + problem);
      }
      Files.deleteIfExists(file);
      Files.deleteIfExists(escape);
    }
    controls(t, trial, dir, small, baseFile, keys);
    t.note(cases.size() + " hostile bundles per trial; slowest refusal " + Xlac.seconds(slowest) + ", peak RSS "
        + worstRss / 1024 + " MiB with " + HEAP);
    // Nothing imported: the target lists exactly what it did before.
    Xlac.Result after = x.run(Context.COMMAND, "cache", "ls", "--json", "--cache", target.toString());
    t.entriesChecked += 1;
    if (!after.ok() || !after.out().equals(baseline.out())) {
      t.fail(trial, "hostile bundles changed what the cache lists (" + after.brief() + "): "
          + attribute(ctx, dir, x, small, seedFile, cases));
    } else if (!ctx.verifyClean(x, target, t, trial, "after the hostile bundles")) {
      return;
    }
    oversized(ctx, t, trial, dir, small, base);
  }

  /**
   * What the refusals must not be: the options the cases use accept good bundles. A limit above the
   * bundle's size imports it, and a bundle signed by a trusted key imports.
   */
  private void controls(Tally t, int trial, Path dir, Xlac small, Path baseFile, Keys keys) throws Exception {
    Path cache = dir.resolve("control-limit");
    Xlac.Result limited = importInto(small, cache, baseFile, List.of("--max-unpacked", "1G"));
    if (!limited.ok()) {
      t.fail(trial, "a good bundle imported with --max-unpacked 1G: " + limited.brief());
    }
    try {
      Path signed = dir.resolve("control-signed.tar.zst");
      keys.signed().write(signed, false);
      Xlac.Result r = importInto(small, dir.resolve("control-signed"), signed, keys.trustArgs());
      if (!r.ok()) {
        t.fail(trial, "a bundle signed by a trusted key, imported with --trust: " + r.brief());
      }
    } catch (SetUpFailed e) {
      t.fail(trial, "a bundle signed by a trusted key cannot be made: " + e.getMessage());
    }
  }

  /** Finds which cases imported something, each into a fresh copy of the seeded target. */
  private String attribute(Context ctx, Path dir, Xlac x, Xlac small, Path seedFile, List<Case> cases)
      throws Exception {
    List<String> guilty = new ArrayList<>();
    for (Case c : cases) {
      Path t = dir.resolve("attribute");
      Context.deleteTree(t);
      x.run(Context.COMMAND, "cache", "import", "--cache", t.toString(), seedFile.toString());
      Xlac.Result before = x.run(Context.COMMAND, "cache", "ls", "--json", "--cache", t.toString());
      Path file = dir.resolve("attribute.tar.zst");
      try {
        c.maker().make(file);
      } catch (SetUpFailed e) {
        continue;
      }
      importInto(small, t, file, c.importArgs());
      Xlac.Result after = x.run(Context.COMMAND, "cache", "ls", "--json", "--cache", t.toString());
      if (!after.out().equals(before.out())) {
        guilty.add(c.name());
      }
    }
    return guilty.isEmpty() ? "no single bundle did it alone" : "imported by " + guilty;
  }

  private static Xlac.Result importInto(Xlac x, Path cache, Path file, List<String> extra) throws Exception {
    List<String> args = new ArrayList<>(List.of("cache", "import", "--cache", cache.toString()));
    args.addAll(extra);
    args.add(file.toString());
    return x.start(args, true).await(LIMIT);
  }

  /** Null when {@code r} is a proper refusal: exit 2, one line in words, in time and memory. */
  static String refusal(Xlac.Result r) {
    if (r.timedOut()) {
      return "not refused within " + Xlac.seconds(LIMIT);
    }
    String why = Context.notOneLine(r);
    if (why != null) {
      return why;
    }
    if (r.exit() != 2) {
      return "exit " + r.exit() + ", not 2: " + r.lastErr();
    }
    long lines = r.err().lines().filter(l -> !l.isBlank()).count();
    if (lines != 1) {
      return "the reason takes " + lines + " lines: " + Context.firstLines(r.err(), 3);
    }
    if (r.peakRssKb() > RSS_LIMIT_KB) {
      return "peak resident memory " + r.peakRssKb() / 1024 + " MiB (limit " + RSS_LIMIT_KB / 1024 + " MiB)";
    }
    return null;
  }

  /** A case that needs a feature this xlac lacks (keygen, --sign) to be built. */
  static final class SetUpFailed extends Exception {
    SetUpFailed(String message) {
      super(message);
    }
  }

  private List<Case> cases(Context ctx, Bundle base, Random rng, Path escape, Keys keys) {
    HostileBundles h = new HostileBundles(base, rng);
    long bomb = ctx.options.bombBytes;
    String limit = Long.toString(Math.max(1, bomb / 2));
    List<Case> c = new ArrayList<>();
    byte[] hi = "escaped\n".getBytes(StandardCharsets.UTF_8);
    c.add(new Case("traversal-extra-entry", f -> h.extraEntry(f, "../../escaped", hi), List.of()));
    c.add(new Case("traversal-in-artifact-name", f -> h.renamedArtifact(f, "artifacts/../../../escaped"), List.of()));
    c.add(new Case("absolute-path", f -> h.extraEntry(f, escape.toString(), hi), List.of()));
    c.add(new Case("pax-path-traversal", f -> h.paxTraversal(f, "../../escaped"), List.of()));
    c.add(new Case("pax-absolute-path", f -> h.paxTraversal(f, escape.toString()), List.of()));
    c.add(new Case("symlink", f -> h.specialEntry(f, Tar.SYMLINK, escape.toString()), List.of()));
    c.add(new Case("hardlink", f -> h.specialEntry(f, Tar.HARD_LINK, Bundle.MANIFEST), List.of()));
    c.add(new Case("char-device", f -> h.specialEntry(f, Tar.CHAR_DEVICE, ""), List.of()));
    c.add(new Case("block-device", f -> h.specialEntry(f, Tar.BLOCK_DEVICE, ""), List.of()));
    c.add(new Case("fifo", f -> h.specialEntry(f, Tar.FIFO, ""), List.of()));
    c.add(new Case("directory", f -> h.specialEntry(f, Tar.DIRECTORY, ""), List.of()));
    c.add(new Case("gnu-sparse", f -> h.specialEntry(f, Tar.GNU_SPARSE, ""), List.of()));
    c.add(new Case("duplicate-entry", f -> h.duplicate(f, false), List.of()));
    c.add(new Case("duplicate-entry-other-bytes", f -> h.duplicate(f, true), List.of()));
    c.add(new Case("unlisted-entry", f -> h.extraEntry(f, Bundle.artifactEntry("ab".repeat(32), "cd".repeat(32)), hi),
        List.of()));
    c.add(new Case("listed-entry-missing", h::missingEntry, List.of()));
    c.add(new Case("manifest-size-mismatch", f -> h.manifestField(f, "artifact", 4,
        Long.toString(Long.parseLong(h.firstArtifact(h.manifest())[4]) + 1)), List.of()));
    c.add(new Case("checksum-mismatch", h::flippedArtifact, List.of()));
    c.add(new Case("manifest-not-first", h::manifestNotFirst, List.of()));
    c.add(new Case("unknown-format-version", f -> h.manifestField(f, "xlac-bundle", 1, "99"), List.of()));
    c.add(new Case("identity-not-its-hash", h::identityTextChanged, List.of()));
    c.add(new Case("artifact-without-graph", h::orphanArtifact, List.of()));
    c.add(new Case("neuron-name-traversal", h::neuronTraversal, List.of()));
    for (double cut : new double[] {rng.nextDouble() * 0.5, 0.5 + rng.nextDouble() * 0.45, 0.999}) {
      c.add(new Case(String.format("truncated-file-at-%.0f%%", cut * 100), f -> h.truncatedCompressed(f, cut),
          List.of()));
    }
    c.add(new Case("truncated-tar-in-whole-frame", f -> h.truncatedTar(f), List.of()));
    c.add(new Case("trailing-garbage", f -> h.trailing(f, h.randomBytes(1 + rng.nextInt(4096)), new byte[0]),
        List.of()));
    c.add(new Case("trailing-zstd-frame", f -> h.trailing(f, Bundle.zstd(Tar.toBytes(List.of(Tar.Entry.file(
        "xlac-bundle.manifest", "xlac-bundle\t1\n".getBytes(StandardCharsets.UTF_8))))), new byte[0]), List.of()));
    c.add(new Case("trailing-bytes-after-tar-end", f -> h.trailing(f, new byte[0], h.randomBytes(600)), List.of()));
    c.add(new Case("entry-after-tar-end", f -> h.trailing(f, new byte[0],
        Tar.toBytes(List.of(Tar.Entry.file("../../escaped", hi)))), List.of()));
    c.add(new Case("wrong-graph-fingerprint", h::wrongFingerprint, List.of()));
    c.add(new Case("graph-raw-size-lie", f -> h.manifestField(f, "graph", 4, "7"), List.of()));
    c.add(new Case("graph-not-zstd", f -> h.graphStored(f, h.randomBytes(3000), 3000), List.of()));
    c.add(new Case("graph-zstd-bomb-consistent", f -> h.graphStored(f, HostileBundles.zstdZeros(bomb), bomb),
        List.of()));
    c.add(new Case("graph-zstd-bomb-declared-small", f -> h.graphStored(f, HostileBundles.zstdZeros(bomb), 400),
        List.of()));
    c.add(new Case("artifact-bomb-over-max-unpacked", f -> h.artifactBomb(f, bomb, bomb, bomb),
        List.of("--max-unpacked", limit)));
    c.add(new Case("artifact-bomb-manifest-says-small", f -> h.artifactBomb(f, bomb, bomb, 1000), List.of()));
    c.add(new Case("artifact-bomb-manifest-says-huge", f -> h.artifactBomb(f, 1000, 1000, bomb), List.of()));
    c.add(new Case("artifact-bomb-truncated", f -> h.artifactBomb(f, bomb, 3 << 20, bomb), List.of()));
    c.add(new Case("manifest-bomb", f -> HostileBundles.manifestBomb(f, 300L << 20), List.of()));
    c.add(new Case("tar-bomb-200k-entries", f -> h.tarBomb(f, 200_000), List.of()));
    // Signatures: made with xlac's own keygen and --sign, then tampered with.
    c.add(new Case("swapped-artifacts-unsigned-with-trust", f -> HostileBundles.swapped(base).write(f),
        keys.trustArgs()));
    c.add(new Case("swapped-artifacts-signed", f -> keys.signed().write(f, true), List.of()));
    c.add(new Case("swapped-artifacts-resigned-untrusted", f -> keys.resignedByOther(f), keys.trustArgs()));
    return c;
  }

  /** Key pairs and signed bundles, made by the xlac under test; a case that needs them fails if it cannot. */
  private static final class Keys {
    private final Path dir;
    private final Xlac x;
    private final Bundle base;
    private boolean made;
    private String problem;

    Keys(Path dir, Xlac x, Bundle base) {
      this.dir = dir.resolve("keys");
      this.x = x;
      this.base = base;
    }

    private void make() throws Exception {
      if (made) {
        if (problem != null) {
          throw new SetUpFailed(problem);
        }
        return;
      }
      made = true;
      Files.createDirectories(dir);
      for (String who : List.of("ours", "theirs")) {
        Xlac.Result r = x.run(Context.COMMAND, "cache", "keygen", dir.resolve(who).toString());
        if (!r.ok()) {
          problem = "`xlac cache keygen` failed: " + r.brief();
          throw new SetUpFailed(problem);
        }
      }
    }

    List<String> trustArgs() {
      return List.of("--trust", dir.resolve("ours.pub").toString());
    }

    /** The base bundle exported with --sign by our key, from a cache holding just it. */
    Signed signed() throws Exception {
      make();
      return new Signed(export(base, "ours", "signed"));
    }

    /** The swapped bundle, imported into a scratch cache and exported again, signed by their key. */
    void resignedByOther(Path file) throws Exception {
      make();
      Bundle signed = export(HostileBundles.swapped(base), "theirs", "resigned");
      signed.write(file);
    }

    private Bundle export(Bundle b, String key, String name) throws Exception {
      Path cache = dir.resolve(name + "-cache");
      Context.deleteTree(cache);
      Path in = dir.resolve(name + "-in.tar.zst");
      b.write(in);
      Xlac.Result imp = x.run(Context.COMMAND, "cache", "import", "--cache", cache.toString(), in.toString());
      Path out = dir.resolve(name + ".tar.zst");
      Xlac.Result exp = x.run(Context.COMMAND, "cache", "export", "--cache", cache.toString(), "--sign",
          dir.resolve(key + ".key").toString(), out.toString());
      if (!imp.ok() || !exp.ok()) {
        throw new SetUpFailed("`xlac cache export --sign` failed: " + (imp.ok() ? exp : imp).brief());
      }
      return Bundle.read(out);
    }

    /** A signed bundle, tampered with on write. */
    record Signed(Bundle bundle) {
      void write(Path f, boolean swap) throws IOException {
        (swap ? HostileBundles.swapped(bundle) : bundle).write(f);
      }
    }
  }

  /**
   * Not hostile, only large: a consistent entry of --bomb-bytes zeros, imported with the small heap
   * and no limit into a cache of its own. Imported whole (streamed) or refused in one line; never
   * an OutOfMemoryError.
   */
  private void oversized(Context ctx, Tally t, int trial, Path dir, Xlac small, Bundle base) throws Exception {
    Path file = dir.resolve("oversized.tar.zst");
    long bomb = ctx.options.bombBytes;
    new HostileBundles(base, ctx.rng(name(), trial)).artifactBomb(file, bomb, bomb, bomb);
    long compressed = Files.size(file);
    Path cache = dir.resolve("oversized-cache");
    Xlac.Result r = importInto(small, cache, file, List.of());
    String what = "a consistent bundle of " + compressed / 1024 + " KiB holding a " + bomb + "-byte artifact";
    t.note(what + ": " + r.brief() + ", peak RSS " + r.peakRssKb() / 1024 + " MiB");
    if (r.ok()) {
      t.outcome("oversized bundle imported");
      Xlac.Result ls = small.run(Context.COMMAND, "cache", "ls", "--json", "--cache", cache.toString());
      if (!ls.out().contains("\"artifact_bytes\": " + bomb)) {
        t.fail(trial, what + ": imported, but the cache does not list an artifact of " + bomb + " bytes");
      }
    } else if (r.exit() == 2 || r.exit() == 3) {
      String why = Context.notOneLine(r);
      if (why != null || r.timedOut()) {
        t.fail(trial, what + ": " + (why != null ? why : "timed out"));
      } else {
        t.outcome("oversized bundle refused");
      }
    } else {
      String why = Context.notOneLine(r);
      t.fail(trial, what + ": " + r.brief() + (why == null ? "" : " (" + why + ")"));
    }
    if (r.peakRssKb() > RSS_LIMIT_KB) {
      t.fail(trial, what + ": peak resident memory " + r.peakRssKb() / 1024 + " MiB (limit " + RSS_LIMIT_KB / 1024
          + " MiB)");
    }
    Files.deleteIfExists(file);
    Context.deleteTree(cache);
  }
}
