package dev.xlac.faults;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * Disk full: a cache on a small tmpfs is filled by imports until one fails. That one must exit 3
 * and say "disk full"; what the earlier imports stored must be intact; and then, without anyone
 * freeing space by hand, {@code verify}, {@code verify --repair}, {@code prune}, {@code clear} and a
 * later import must all work.
 */
final class DiskFullScenario implements FaultSuite.Scenario {
  @Override
  public String name() {
    return "disk-full";
  }

  @Override
  public String description() {
    return "a cache on a small tmpfs filled until a write fails; then prune, clear, repair and writes must work";
  }

  @Override
  public int defaultTrials(int general) {
    return Math.min(general, 2);
  }

  @Override
  public void run(Context ctx, Tally t, int trials) throws Exception {
    Bundle source = Bundle.read(ctx.compiled().bundle());
    List<String> fps = source.manifest().lines("graph").stream().map(l -> l[1]).toList();
    for (int trial = 1; trial <= trials; trial++) {
      Path dir = ctx.trialDir(name(), trial);
      List<String> whyNot = new ArrayList<>();
      int failuresBefore = t.failures.size();
      try (SmallFilesystem fs = SmallFilesystem.make(dir.resolve("fs"), ctx.options.tmpfsBytes, whyNot)) {
        if (fs == null) {
          t.skipped = "cannot make a small filesystem here: " + String.join("; ", whyNot)
              + ". Run as root, or where unprivileged user namespaces are allowed.";
          ctx.cleanTrial(dir, false);
          return;
        }
        t.note("filesystem: " + fs.how);
        t.trials++;
        trial(ctx, t, trial, dir, ctx.runner(dir).withWrapper(fs.wrapper), fs.mountPoint.resolve("cache"), source,
            fps, ctx.rng(name(), trial));
      } finally {
        ctx.sweepStrays();
        ctx.cleanTrial(dir, t.failures.size() > failuresBefore);
      }
    }
  }

  private void trial(Context ctx, Tally t, int trial, Path dir, Xlac x, Path cache, Bundle source, List<String> fps,
      Random rng) throws Exception {
    Path bundles = Files.createDirectories(dir.resolve("bundles"));
    Content stored = Content.EMPTY;
    Xlac.Result full = null;
    int imports = 0;
    long limit = ctx.options.tmpfsBytes * 4;
    for (int i = 1; stored.storedBytes() < limit && full == null; i++) {
      List<String> some = new ArrayList<>(fps);
      java.util.Collections.shuffle(some, rng);
      Bundle b = Bundle.synthetic(source, some.subList(0, 8), "disk-full-" + trial + "-" + i,
          (256 << 10) + rng.nextInt(256 << 10), rng);
      Path file = bundles.resolve("fill-" + i + ".tar.zst");
      b.write(file);
      Xlac.Result r = x.run(Context.COMMAND, "cache", "import", "--cache", cache.toString(), file.toString());
      Files.delete(file);
      if (r.ok()) {
        stored = stored.plus(Content.of(b, new ArrayList<>()));
        imports++;
      } else {
        full = r;
      }
    }
    t.outcome("imports before the disk was full: " + imports);
    if (full == null) {
      t.fail(trial, "the filesystem never filled: " + stored.storedBytes() + " bytes imported into a filesystem of "
          + ctx.options.tmpfsBytes);
      return;
    }
    String why = Context.notOneLine(full);
    if (full.exit() != 3 || !full.err().toLowerCase(Locale.ROOT).contains("disk full") || why != null) {
      t.fail(trial, "the write that hit the full disk must exit 3 with a one-line 'disk full' message: " + full.brief()
          + (why == null ? "" : " (" + why + ")"));
    }
    // Nobody frees space from here on: xlac must manage with what it has.
    Path exports = Files.createDirectories(dir.resolve("exports"));
    step(t, trial, x, "cache verify after the disk filled", "all good", "cache", "verify", "--cache", cache.toString());
    Content after = ctx.snapshot(x, cache, exports, t, trial, "after the disk filled");
    if (after != null) {
      t.compare(trial, "after the disk filled", stored, after, false);
    }
    step(t, trial, x, "cache verify --repair on the full disk", null, "cache", "verify", "--repair", "--cache",
        cache.toString());
    long half = stored.storedBytes() / 2;
    step(t, trial, x, "cache prune on the full disk", null, "cache", "prune", "--cache", cache.toString(),
        "--max-size", Long.toString(half));
    Content pruned = ctx.snapshot(x, cache, exports, t, trial, "after the prune on the full disk");
    if (pruned != null) {
      t.compare(trial, "after the prune on the full disk", stored, pruned, true);
      if (pruned.storedBytes() > half) {
        t.fail(trial, "after the prune on the full disk the cache holds " + pruned.storedBytes()
            + " bytes, over the --max-size " + half);
      }
    }
    step(t, trial, x, "cache clear on the full disk", null, "cache", "clear", "--cache", cache.toString());
    Bundle later = Bundle.synthetic(source, fps.subList(0, 4), "disk-full-later-" + trial, 64 << 10, rng);
    Path file = bundles.resolve("later.tar.zst");
    later.write(file);
    if (step(t, trial, x, "an import after prune and clear", null, "cache", "import", "--cache", cache.toString(),
        file.toString())) {
      Content end = ctx.snapshot(x, cache, exports, t, trial, "after the later import");
      if (end != null && t.compare(trial, "after the later import", Content.of(later, new ArrayList<>()), end, false)) {
        t.outcome("recovered");
      }
    }
    ctx.verifyClean(x, cache, t, trial, "at the end");
  }

  /** Runs one step that must exit 0 (and print {@code expect} when given); records a failure otherwise. */
  private static boolean step(Tally t, int trial, Xlac x, String what, String expect, String... args)
      throws Exception {
    Xlac.Result r = x.run(Context.COMMAND, args);
    if (r.ok() && (expect == null || r.out().contains(expect))) {
      return true;
    }
    t.fail(trial, what + ": " + r.brief() + Context.firstLines(r.out(), 2));
    return false;
  }
}
