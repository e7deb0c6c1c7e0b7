package dev.xlac.faults;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Two commands started at the same moment on one cache, writers and a reader. A writer either
 * runs (alone, or after waiting with --wait) or fails at once with exit 3 and the lock message
 * naming the holder; a reader never waits and reads stored bytes only; and afterwards the cache is
 * clean and holds exactly what the commands that succeeded stored.
 */
final class ConcurrentWritersScenario implements FaultSuite.Scenario {
  private record Op(String name, List<String> args, boolean writer, Content adds, boolean removes) {}

  @Override
  public String name() {
    return "concurrent-writers";
  }

  @Override
  public String description() {
    return "two writers (or a writer and a reader) started at once on one cache";
  }

  @Override
  public void run(Context ctx, Tally t, int trials) throws Exception {
    Context.Fixture f = ctx.compiled();
    Bundle source = Bundle.read(f.bundle());
    List<String> fps = source.manifest().lines("graph").stream().map(l -> l[1]).toList();
    for (int trial = 1; trial <= trials; trial++) {
      Path dir = ctx.trialDir(name(), trial);
      int failuresBefore = t.failures.size();
      try {
        t.trials++;
        trial(ctx, t, trial, dir, ctx.runner(dir), f, source, fps, ctx.rng(name(), trial));
      } finally {
        ctx.sweepStrays();
        ctx.cleanTrial(dir, t.failures.size() > failuresBefore);
      }
    }
  }

  private void trial(Context ctx, Tally t, int trial, Path dir, Xlac x, Context.Fixture f, Bundle source,
      List<String> fps, Random rng) throws Exception {
    Path cache = dir.resolve("cache");
    Context.copyTree(f.cache(), cache);
    String c = cache.toString();
    List<Op> pool = new ArrayList<>();
    for (String which : List.of("A", "B")) {
      Bundle b = Bundle.synthetic(source, fps, "concurrent-" + trial + "-" + which, 128 << 10, rng);
      Path file = dir.resolve(which + ".tar.zst");
      b.write(file);
      pool.add(new Op("import " + which, List.of("cache", "import", "--cache", c, file.toString()), true,
          Content.of(b, new ArrayList<>()), false));
    }
    pool.add(new Op("add", List.of("cache", "add", "--cache", c, ctx.golden().resolve("mlp_run1").toString()), true,
        Content.EMPTY, false));
    pool.add(new Op("prune", List.of("cache", "prune", "--cache", c, "--max-size",
        Long.toString(f.content().storedBytes() / 2)), true, Content.EMPTY, true));
    pool.add(new Op("verify --repair", List.of("cache", "verify", "--repair", "--cache", c), true, Content.EMPTY,
        false));
    pool.add(new Op("export", List.of("cache", "export", "--cache", c, dir.resolve("read.tar.zst").toString()), false,
        Content.EMPTY, false));
    Op first = pool.get(rng.nextInt(pool.size() - 1)); // the first is always a writer
    List<Op> rest = new ArrayList<>(pool);
    rest.remove(first);
    Op second = rest.get(rng.nextInt(rest.size()));
    boolean wait = second.writer() && rng.nextBoolean();
    List<String> secondArgs = new ArrayList<>(second.args());
    if (wait) {
      secondArgs.add(2, "--wait=120s");
    }
    Xlac.Running r1 = x.start(first.args(), false);
    Xlac.Running r2 = x.start(secondArgs, false);
    Xlac.Result a = r1.await(Context.COMMAND);
    Xlac.Result b = r2.await(Context.COMMAND);
    String pair = first.name() + " + " + second.name() + (wait ? " --wait" : "");
    t.outcome(pair);
    Content expected = f.content();
    boolean removed = false;
    for (var run : List.of(java.util.Map.entry(first, a), java.util.Map.entry(second, b))) {
      Op op = run.getKey();
      Xlac.Result res = run.getValue();
      if (res.ok()) {
        expected = expected.plus(op.adds());
        removed |= op.removes();
        continue;
      }
      boolean lockMessage = res.exit() == 3 && res.err().contains("locked by another xlac process")
          && res.err().contains("pid ") && Context.notOneLine(res) == null;
      if (op.writer() && !(wait && op == second) && lockMessage) {
        t.outcome("a writer refused with the lock message");
      } else {
        t.fail(trial, pair + ": " + op.name() + " must " + (op.writer() ? wait && op == second ? "wait and succeed"
            : "succeed or fail with the lock message" : "succeed without waiting") + ": " + res.brief());
      }
    }
    if (second.name().equals("export") && b.ok()) {
      // A read during a write sees stored bytes only: everything in it is what someone stored.
      Content read = Context.readChecked(dir.resolve("read.tar.zst"), t, trial, pair + ", the export");
      if (read != null) {
        Content all = f.content();
        for (Op op : pool) {
          all = all.plus(op.adds());
        }
        t.compare(trial, pair + ", the export", all, read, true);
        var extra = all.addedIn(read);
        if (!extra.isEmpty()) {
          t.fail(trial, pair + ": the export holds entries nobody stored: " + read.describe(extra, 5));
        }
      }
    }
    if (!ctx.verifyClean(x, cache, t, trial, "after " + pair)) {
      return;
    }
    Content after = ctx.snapshot(x, cache, dir, t, trial, "after " + pair);
    if (after != null && t.compare(trial, "after " + pair, expected, after, removed)) {
      var extra = expected.addedIn(after);
      if (!extra.isEmpty()) {
        t.fail(trial, "after " + pair + ": the cache holds entries nobody stored: " + after.describe(extra, 5));
      }
    }
  }
}
