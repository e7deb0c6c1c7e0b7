package dev.xlac.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * {@code kill -9} at a random moment of compile, prune, import and export. Each trial starts
 * from a copy of a fixture cache, records what it holds (through a finished command), kills the
 * command after a random delay within its measured duration, and then checks: the cache opens and
 * {@code verify} finds it clean; nothing a finished command stored is lost or changed; the command,
 * run again, finishes, and the cache then holds exactly what it should.
 */
final class KillScenarios {
  private KillScenarios() {}

  /** The shared trial loop: set-up once, then trials that each get a directory, a runner and a seeded random source. */
  abstract static class Base implements FaultSuite.Scenario {
    @Override
    public void run(Context ctx, Tally t, int trials) throws Exception {
      if (!setUp(ctx, t)) {
        return;
      }
      for (int trial = 1; trial <= trials; trial++) {
        Path dir = ctx.trialDir(name(), trial);
        int failuresBefore = t.failures.size();
        try {
          t.trials++;
          trial(ctx, t, trial, dir, ctx.runner(dir), ctx.rng(name(), trial));
        } catch (IOException e) {
          t.fail(trial, "harness error: " + e);
        } finally {
          ctx.sweepStrays();
          ctx.cleanTrial(dir, t.failures.size() > failuresBefore);
        }
      }
    }

    /** Measures the command's duration (and checks an uninterrupted run); false when the scenario cannot run. */
    abstract boolean setUp(Context ctx, Tally t) throws Exception;

    abstract void trial(Context ctx, Tally t, int trial, Path dir, Xlac x, Random rng) throws Exception;

    /** A delay uniform in [0, 1.1 x the command's measured duration]: before, during and just after its work. */
    static Duration delay(Random rng, Duration full) {
      return Duration.ofNanos((long) (rng.nextDouble() * 1.1 * full.toNanos()));
    }

    static void count(Tally t, Xlac.Result r) {
      t.outcome(r.killed() ? "killed" : r.ok() ? "finished before the kill" : "failed by itself");
    }

    /** A command that ended by itself before the kill must have succeeded. */
    static boolean endedWell(Tally t, int trial, Xlac.Result r) {
      if (!r.killed() && !r.ok()) {
        t.fail(trial, "the command failed without being killed: " + r.brief());
        return false;
      }
      return true;
    }
  }

  /** kill -9 during {@code parallel-compile} with the real CPU plugin. */
  static final class Compile extends Base {
    @Override
    public String name() {
      return "kill-compile";
    }

    @Override
    public String description() {
      return "kill -9 at a random moment of parallel-compile (real CPU PJRT plugin, golden dumps)";
    }

    @Override
    boolean setUp(Context ctx, Tally t) throws Exception {
      if (!ctx.hasPlugin()) {
        t.skipped = "no PJRT plugin: set XLAC_PJRT_PLUGIN or pass --plugin (scripts/fault-suite finds the pinned one)";
        return false;
      }
      ctx.compiled();
      return true;
    }

    @Override
    void trial(Context ctx, Tally t, int trial, Path dir, Xlac x, Random rng) throws Exception {
      Context.Fixture f = ctx.compiled();
      Path cache = dir.resolve("cache");
      Context.copyTree(f.cache(), cache);
      // A finished prune leaves a random part of the artifacts to compile; what it leaves is "stored".
      Bundle.Manifest m = Bundle.read(f.bundle()).manifest();
      long artifactBytes = m.lines("artifact").stream().mapToLong(a -> Long.parseLong(a[4])).sum();
      long graphBytes = f.content().storedBytes() - artifactBytes;
      long keep = graphBytes + (long) ((0.3 + 0.65 * rng.nextDouble()) * artifactBytes);
      Xlac.Result prune = x.run(Context.COMMAND, "cache", "prune", "--cache", cache.toString(), "--compiler",
          "pjrt:cpu", "--max-size", Long.toString(keep));
      if (!prune.ok()) {
        t.fail(trial, "set-up prune failed: " + prune.brief());
        return;
      }
      Content before = ctx.snapshot(x, cache, dir, t, trial, "before the kill");
      if (before == null) {
        return;
      }
      // The kill lands within the expected run: JVM start-up plus the recorded compile time of what is left, on 2 jobs.
      long workMs = m.lines("artifact").stream().filter(a -> !before.entries().containsKey("artifact " + a[1] + " " + a[2]))
          .mapToLong(a -> Long.parseLong(a[6])).sum();
      Duration delay = delay(rng, Duration.ofMillis(1500 + workMs / 2));
      Xlac.Result killed = x.runKilledAfter(delay, Context.COMPILE, ctx.compileArgs(cache, false));
      count(t, killed);
      ctx.sweepStrays();
      if (!endedWell(t, trial, killed)) {
        return;
      }
      String when = "after " + killed.brief();
      if (!ctx.verifyClean(x, cache, t, trial, when)) {
        return;
      }
      Content after = ctx.snapshot(x, cache, dir, t, trial, when);
      if (after == null) {
        return;
      }
      t.compare(trial, when, before, after, false);
      List<String> reported = Context.reportedCompiled(killed.err());
      List<String> lost = reported.stream().filter(fp -> !after.hasArtifactOf(fp)).toList();
      t.entriesChecked += reported.size();
      if (!lost.isEmpty()) {
        t.entriesLost += lost.size();
        t.fail(trial, when + ": LOST " + lost.size() + " artifacts that the killed run reported compiled: " + lost);
      }
      Xlac.Result resume = x.run(Context.COMPILE, ctx.compileArgs(cache, false));
      if (!resume.ok()) {
        t.fail(trial, "the compile run after the kill failed: " + resume.brief());
        return;
      }
      Content end = ctx.snapshot(x, cache, dir, t, trial, "after the compile was run again");
      if (end != null && t.compare(trial, "after the compile was run again", after, end, false)
          && end.count("artifact") < f.content().count("artifact")) {
        t.fail(trial, "after the compile was run again, " + end.count("artifact") + " of "
            + f.content().count("artifact") + " graphs have an artifact");
      }
    }
  }

  /** kill -9 during {@code cache prune} (and its compaction) of a cache of about 13 MiB. */
  static final class Prune extends Base {
    private Duration full;

    @Override
    public String name() {
      return "kill-prune";
    }

    @Override
    public String description() {
      return "kill -9 at a random moment of cache prune";
    }

    @Override
    boolean setUp(Context ctx, Tally t) throws Exception {
      Context.Fixture f = ctx.bulk();
      Path dir = ctx.trialDir(name(), 0);
      Xlac x = ctx.runner(dir);
      Path cache = dir.resolve("cache");
      Context.copyTree(f.cache(), cache);
      long target = 0; // everything goes: the harshest prune, and a compaction of the whole database
      long t0 = System.nanoTime();
      Xlac.Result r = x.run(Context.COMMAND, "cache", "prune", "--cache", cache.toString(), "--max-size",
          Long.toString(target));
      full = Duration.ofNanos(System.nanoTime() - t0);
      boolean ok = r.ok();
      if (!ok) {
        t.fail(0, "an uninterrupted prune failed: " + r.brief());
      } else {
        ok = checkPruned(ctx, t, 0, dir, x, cache, f.content(), target, "after an uninterrupted prune");
      }
      ctx.cleanTrial(dir, !ok);
      return true; // a failure here is recorded; the trials still show what kills do
    }

    @Override
    void trial(Context ctx, Tally t, int trial, Path dir, Xlac x, Random rng) throws Exception {
      Context.Fixture f = ctx.bulk();
      Path cache = dir.resolve("cache");
      Context.copyTree(f.cache(), cache);
      long target = trial % 3 == 1 ? 0 : (long) (rng.nextDouble() * f.content().storedBytes());
      List<String> args = List.of("cache", "prune", "--cache", cache.toString(), "--max-size", Long.toString(target));
      Xlac.Result killed = x.runKilledAfter(delay(rng, full), Context.COMMAND, args);
      count(t, killed);
      if (!endedWell(t, trial, killed)) {
        return;
      }
      String when = "after " + killed.brief();
      if (!ctx.verifyClean(x, cache, t, trial, when)) {
        return;
      }
      Content after = ctx.snapshot(x, cache, dir, t, trial, when);
      if (after == null || !t.compare(trial, when, f.content(), after, true)) {
        return;
      }
      Xlac.Result again = x.run(Context.COMMAND, args);
      if (!again.ok()) {
        t.fail(trial, "the prune run again after the kill failed: " + again.brief());
        return;
      }
      checkPruned(ctx, t, trial, dir, x, cache, f.content(), target, "after the prune was run again");
    }

    /** Clean, nothing but removals, and within the bound. */
    private static boolean checkPruned(Context ctx, Tally t, int trial, Path dir, Xlac x, Path cache, Content before,
        long target, String when) throws IOException, InterruptedException {
      if (!ctx.verifyClean(x, cache, t, trial, when)) {
        return false;
      }
      Content end = ctx.snapshot(x, cache, dir, t, trial, when);
      if (end == null || !t.compare(trial, when, before, end, true)) {
        return false;
      }
      if (end.storedBytes() > target) {
        t.fail(trial, when + ": the cache holds " + end.storedBytes() + " bytes, over the --max-size " + target);
        return false;
      }
      return true;
    }
  }

  /** kill -9 during {@code cache import} of a 30 MiB bundle, into an empty directory or a populated cache. */
  static final class Import extends Base {
    private Duration full;
    private Path bundle;
    private Content bundleContent;

    @Override
    public String name() {
      return "kill-import";
    }

    @Override
    public String description() {
      return "kill -9 at a random moment of cache import (into a new and into a populated cache)";
    }

    @Override
    boolean setUp(Context ctx, Tally t) throws Exception {
      Context.Fixture f = ctx.compiled();
      Bundle source = Bundle.read(f.bundle());
      List<String> fps = source.manifest().lines("graph").stream().map(l -> l[1]).toList();
      bundle = ctx.work.resolve(name()).resolve("import.tar.zst");
      Files.createDirectories(bundle.getParent());
      Bundle b = Bundle.synthetic(source, fps, "import", 1 << 20, ctx.rng(name(), 0));
      b.write(bundle);
      bundleContent = Content.of(b, new ArrayList<>());
      Path dir = ctx.trialDir(name(), 0);
      Xlac x = ctx.runner(dir);
      Path cache = dir.resolve("cache");
      long t0 = System.nanoTime();
      Xlac.Result r = x.run(Context.COMMAND, "cache", "import", "--cache", cache.toString(), bundle.toString());
      full = Duration.ofNanos(System.nanoTime() - t0);
      boolean ok = r.ok();
      if (!ok) {
        t.fail(0, "an uninterrupted import failed: " + r.brief());
      } else {
        Content c = ctx.snapshot(x, cache, dir, t, 0, "after an uninterrupted import");
        ok = c != null && t.compare(0, "after an uninterrupted import", bundleContent, c, false);
      }
      ctx.cleanTrial(dir, !ok);
      return true; // a failure here is recorded; the trials still show what kills do
    }

    @Override
    void trial(Context ctx, Tally t, int trial, Path dir, Xlac x, Random rng) throws Exception {
      Path cache = dir.resolve("cache");
      Content before = Content.EMPTY;
      if (rng.nextBoolean()) {
        Context.copyTree(ctx.compiled().cache(), cache);
        before = ctx.compiled().content();
        t.outcome("into a populated cache");
      } else {
        t.outcome("into a new directory");
      }
      List<String> args = List.of("cache", "import", "--cache", cache.toString(), bundle.toString());
      Content start = before;
      Xlac.Result killed = rng.nextBoolean() ? x.runKilledAfter(delay(rng, full), Context.COMMAND, args)
          : x.runKilledWhen(err -> hasDatabase(cache, start), Duration.ofMillis(rng.nextInt(400)), Context.COMMAND, args);
      count(t, killed);
      if (!endedWell(t, trial, killed)) {
        return;
      }
      String when = "after " + killed.brief();
      Content expected = before.plus(bundleContent);
      if (Files.exists(cache)) {
        if (!ctx.verifyClean(x, cache, t, trial, when)) {
          return;
        }
        Content after = ctx.snapshot(x, cache, dir, t, trial, when);
        if (after == null || !t.compare(trial, when, before, after, false)) {
          return;
        }
        // What the killed import brought in must be the bundle's bytes, and nothing else.
        if (!t.compare(trial, when + " (entries from the bundle)", expected, after, true)) {
          return;
        }
        var extra = expected.addedIn(after);
        if (!extra.isEmpty()) {
          t.fail(trial, when + ": the cache holds entries nobody stored: " + after.describe(extra, 5));
          return;
        }
      } else {
        t.outcome("killed before the cache directory existed");
      }
      Xlac.Result again = x.run(Context.COMMAND, args);
      if (!again.ok()) {
        t.fail(trial, "the import run again after the kill failed: " + again.brief());
        return;
      }
      Content end = ctx.snapshot(x, cache, dir, t, trial, "after the import was run again");
      if (end != null && t.compare(trial, "after the import was run again", expected, end, false)) {
        var extra = expected.addedIn(end);
        if (!extra.isEmpty()) {
          t.fail(trial, "after the import was run again the cache holds entries nobody stored: "
              + end.describe(extra, 5));
        }
      }
    }
  }

  /** Whether the import has begun writing: a new cache's directory has files, or a populated one's WAL grew. */
  private static boolean hasDatabase(Path cache, Content before) {
    try (var s = Files.walk(cache)) {
      return before.entries().isEmpty() ? s.anyMatch(p -> p.getFileName().toString().equals("CURRENT"))
          : s.anyMatch(p -> p.getFileName().toString().endsWith(".log") && p.toFile().length() > 0);
    } catch (IOException | java.io.UncheckedIOException e) {
      return false;
    }
  }

  /** kill -9 during {@code cache export}: no partial bundle under the target name, no leftovers after the next export. */
  static final class Export extends Base {
    private Duration full;

    @Override
    public String name() {
      return "kill-export";
    }

    @Override
    public String description() {
      return "kill -9 at a random moment of cache export";
    }

    @Override
    boolean setUp(Context ctx, Tally t) throws Exception {
      Context.Fixture f = ctx.bulk();
      Path dir = ctx.trialDir(name(), 0);
      Xlac x = ctx.runner(dir);
      long t0 = System.nanoTime();
      Xlac.Result r = x.run(Context.COMMAND, "cache", "export", "--cache", f.cache().toString(),
          dir.resolve("b.tar.zst").toString());
      full = Duration.ofNanos(System.nanoTime() - t0);
      if (!r.ok()) {
        t.fail(0, "an uninterrupted export failed: " + r.brief());
      }
      ctx.cleanTrial(dir, !r.ok());
      return true;
    }

    @Override
    void trial(Context ctx, Tally t, int trial, Path dir, Xlac x, Random rng) throws Exception {
      Context.Fixture f = ctx.bulk();
      Path cache = dir.resolve("cache");
      Context.copyTree(f.cache(), cache);
      Path outDir = Files.createDirectories(dir.resolve("out"));
      Path target = outDir.resolve("bundle.tar.zst");
      List<String> args = List.of("cache", "export", "--cache", cache.toString(), target.toString());
      // Half the kills land at a random moment, half while the bundle is being written.
      Xlac.Result killed = rng.nextBoolean() ? x.runKilledAfter(delay(rng, full), Context.COMMAND, args)
          : x.runKilledWhen(err -> nonEmpty(outDir), Duration.ofMillis(rng.nextInt(300)), Context.COMMAND, args);
      count(t, killed);
      if (!endedWell(t, trial, killed)) {
        return;
      }
      String when = "after " + killed.brief();
      if (Files.exists(target)) {
        Content c = Context.readChecked(target, t, trial, when + " (the bundle under the target name)");
        if (c == null) {
          t.fail(trial, when + ": a partial bundle was left under the target name " + target);
          return;
        }
        t.compare(trial, when + " (the bundle under the target name)", f.content(), c, false);
      }
      Xlac.Result again = x.run(Context.COMMAND, args);
      if (!again.ok()) {
        t.fail(trial, "the export run again after the kill failed: " + again.brief());
        return;
      }
      Content c = Context.readChecked(target, t, trial, "after the export was run again");
      if (c == null || !t.compare(trial, "after the export was run again", f.content(), c, false)) {
        return;
      }
      try (var s = Files.list(outDir)) {
        List<String> left = s.map(p -> p.getFileName().toString()).filter(n -> !n.equals("bundle.tar.zst")).toList();
        if (!left.isEmpty()) {
          t.fail(trial, "the export after the kill did not remove what the killed one left in the target directory: "
              + left);
        }
      }
      try (var s = Files.list(x.tmp())) {
        // xlac-native-USER is the launcher's lasting copy of RocksDB's library, not a leftover.
        List<String> left = s.map(p -> p.getFileName().toString())
            .filter(n -> n.startsWith("xlac-") && !n.startsWith("xlac-native-")).toList();
        if (!left.isEmpty()) {
          t.fail(trial, "xlac left temporary directories in java.io.tmpdir (" + x.tmp() + "): " + left);
        }
      }
    }
  }

  private static boolean nonEmpty(Path dir) {
    try (var s = Files.list(dir)) {
      return s.findAny().isPresent();
    } catch (IOException e) {
      return false;
    }
  }
}
