package dev.xlac.faults;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Damage in each kind of database file (SST, blob, MANIFEST, CURRENT, write-ahead log, OPTIONS):
 * bytes flipped, the file truncated, or deleted, in a copy of a populated cache whose write-ahead
 * log still holds a killed compile's artifacts. Then: reads never hand out wrong bytes (an export
 * matches what was stored, or refuses); a compile counts no damaged artifact as a hit; {@code
 * verify --repair} ends with a cache that opens and verifies clean, keeps what it can read intact,
 * and says that something was lost when something was.
 */
final class DamageScenario implements FaultSuite.Scenario {
  enum Kind {
    SST("an SST (*.sst)", n -> n.endsWith(".sst")),
    BLOB("a blob file (*.blob)", n -> n.endsWith(".blob")),
    MANIFEST("the MANIFEST", n -> n.startsWith("MANIFEST-")),
    CURRENT("CURRENT", n -> n.equals("CURRENT")),
    WAL("the write-ahead log (*.log)", n -> n.endsWith(".log")),
    OPTIONS("OPTIONS", n -> n.startsWith("OPTIONS-"));

    final String label;
    final Predicate<String> matches;

    Kind(String label, Predicate<String> matches) {
      this.label = label;
      this.matches = matches;
    }
  }

  enum Mutation { FLIP, DELETE, TRUNCATE }

  private static final Pattern FP12 = Pattern.compile("\\b(?:hlo1:)?([0-9a-f]{12})");
  private static final Pattern REPORT_GRAPH = Pattern.compile("\\{[^{}]*\\}");
  private static final Pattern REPORT_FP = Pattern.compile("\"fingerprint\"\\s*:\\s*\"hlo1:([0-9a-f]{64})\"");
  private static final Pattern REPORT_STATUS = Pattern.compile("\"status\"\\s*:\\s*\"(\\w+)\"");

  private Path template;
  private Content stored;

  @Override
  public String name() {
    return "damage";
  }

  @Override
  public String description() {
    return "bytes flipped, files truncated or deleted in each kind of database file; reads, compile and repair";
  }

  /** One round covers every kind of file with every mutation. */
  @Override
  public int defaultTrials(int general) {
    return Kind.values().length * Mutation.values().length;
  }

  @Override
  public void run(Context ctx, Tally t, int trials) throws Exception {
    if (!setUp(ctx, t)) {
      return;
    }
    for (int trial = 1; trial <= trials; trial++) {
      int i = trial - 1;
      Kind kind = Kind.values()[i % Kind.values().length];
      Mutation mutation = Mutation.values()[(i % Kind.values().length + i / Kind.values().length)
          % Mutation.values().length];
      Path dir = ctx.trialDir(name(), trial);
      int failuresBefore = t.failures.size();
      try {
        t.trials++;
        trial(ctx, t, trial, dir, ctx.runner(dir), kind, mutation, ctx.rng(name(), trial));
      } catch (IOException e) {
        t.fail(trial, "harness error: " + e);
      } finally {
        ctx.sweepStrays();
        ctx.cleanTrial(dir, t.failures.size() > failuresBefore);
      }
    }
  }

  /** A compiled cache, part of it pruned, then a compile killed after 3 artifacts: they are only in the WAL. */
  private boolean setUp(Context ctx, Tally t) throws Exception {
    Context.Fixture f = ctx.compiled();
    template = ctx.work.resolve(name()).resolve("template");
    Context.copyTree(f.cache(), template);
    Xlac x = ctx.runner(ctx.work.resolve(name()));
    if (ctx.hasPlugin()) {
      Bundle.Manifest m = Bundle.read(f.bundle()).manifest();
      long graphs = m.lines("graph").stream().mapToLong(g -> Long.parseLong(g[2])).sum();
      long artifacts = m.lines("artifact").stream().mapToLong(a -> Long.parseLong(a[4])).sum();
      Xlac.Result prune = x.run(Context.COMMAND, "cache", "prune", "--cache", template.toString(), "--compiler",
          "pjrt:cpu", "--max-size", Long.toString(graphs + artifacts * 3 / 4));
      if (!prune.ok()) {
        t.fail(0, "set-up prune failed: " + prune.brief());
        return false;
      }
      Matcher removed = Pattern.compile("Removed (\\d+) artifacts").matcher(prune.out());
      int toCompile = removed.find() ? Integer.parseInt(removed.group(1)) : 4;
      // Killed just before the last one: the others are fsynced in the WAL only, and trials compile little.
      int killAt = Math.max(1, toCompile - 1);
      Xlac.Result killed = x.runKilledWhen(err -> Context.reportedCompiled(err).size() >= killAt, Context.COMPILE,
          ctx.compileArgs(template, false));
      ctx.sweepStrays();
      if (!killed.killed() && !killed.ok()) {
        t.fail(0, "set-up compile failed: " + killed.brief());
        return false;
      }
    } else {
      t.note("no PJRT plugin: the template has no killed compile, and no compile runs on the damaged caches");
    }
    stored = ctx.snapshot(x, template, ctx.work.resolve(name()), t, 0, "reading the template");
    if (stored == null || !ctx.verifyClean(x, template, t, 0, "the template before any damage")) {
      return false;
    }
    StringBuilder files = new StringBuilder();
    for (Kind k : Kind.values()) {
      List<Path> of = filesOf(template, k);
      files.append(files.isEmpty() ? "" : ", ").append(k.name().toLowerCase(Locale.ROOT)).append(' ').append(of.size());
    }
    t.note("template: " + stored.count("graph") + " graphs, " + stored.count("artifact") + " artifacts; files: "
        + files);
    return true;
  }

  private static List<Path> filesOf(Path cache, Kind kind) throws IOException {
    try (var s = Files.walk(cache)) {
      return s.filter(Files::isRegularFile).filter(p -> kind.matches.test(p.getFileName().toString())).sorted().toList();
    }
  }

  private void trial(Context ctx, Tally t, int trial, Path dir, Xlac x, Kind kind, Mutation mutation, Random rng)
      throws Exception {
    Path cache = dir.resolve("cache");
    Context.copyTree(template, cache);
    String damage = damage(cache, kind, mutation, rng);
    if (damage == null) {
      t.outcome(kind.name().toLowerCase(Locale.ROOT) + " " + mutation.name().toLowerCase(Locale.ROOT)
          + ": no such file to damage");
      return;
    }
    t.outcome(kind.name().toLowerCase(Locale.ROOT) + " " + mutation.name().toLowerCase(Locale.ROOT));
    String when = "after " + damage;
    StringBuilder said = new StringBuilder(); // everything xlac said about the damage, for the loss check

    // 1. A read: the export holds the stored bytes, or refuses in one line.
    Path exported = dir.resolve("first.tar.zst");
    Xlac.Result export = x.run(Context.COMMAND, "cache", "export", "--cache", cache.toString(), exported.toString());
    said.append(export.err());
    if (export.ok()) {
      Content c = Context.readChecked(exported, t, trial, when + ", the export");
      if (c != null) {
        t.compare(trial, when + ", the export", stored, c, true);
        noPhantoms(t, trial, when + ", the export", stored, c, Set.of());
      }
    } else {
      String why = Context.notOneLine(export);
      if (why != null || export.killed() || export.timedOut() || export.exit() == 4) {
        t.fail(trial, when + ": the export must succeed or refuse in one line: " + export.brief()
            + (why == null ? "" : " (" + why + ")"));
      }
    }

    // 2. A compile over every golden graph: a damaged artifact is a miss, compiled again, never a hit.
    Set<String> recompiled = new HashSet<>();
    if (ctx.hasPlugin()) {
      Path report = dir.resolve("report.json");
      List<String> args = new ArrayList<>(ctx.compileArgs(cache, true));
      args.addAll(1, List.of("--report", report.toString()));
      Xlac.Result compile = x.run(Context.COMPILE, args);
      said.append(compile.err());
      Set<String> cached = new HashSet<>();
      if (Files.exists(report)) { // whatever the exit code: what a compile stored is no phantom
        Matcher g = REPORT_GRAPH.matcher(Files.readString(report));
        while (g.find()) {
          Matcher fp = REPORT_FP.matcher(g.group());
          Matcher st = REPORT_STATUS.matcher(g.group());
          if (fp.find() && st.find()) {
            (st.group(1).equals("cached") ? cached : recompiled).add(fp.group(1));
          }
        }
      }
      if (compile.ok() && Files.exists(report)) {
        Xlac.Result verify = x.run(Context.COMMAND, "cache", "verify", "--cache", cache.toString());
        said.append(verify.out());
        List<String> hits = new ArrayList<>();
        for (String line : verify.out().lines().filter(l -> l.startsWith("damaged artifact")).toList()) {
          Matcher m = FP12.matcher(line);
          if (m.find() && cached.stream().anyMatch(fp -> fp.startsWith(m.group(1)))) {
            hits.add(line);
          }
        }
        if (!hits.isEmpty()) {
          t.wrongBytes += hits.size();
          t.fail(trial, when + ": WRONG ANSWER: a compile counted " + hits.size() + " damaged artifacts as cache hits,"
              + " e.g. " + hits.getFirst());
        }
      } else if ((compile.exit() == 1 || compile.exit() == 3) && compile.err().contains("repair")
          && Context.notOneLine(compile) == null && recompiled.isEmpty()) {
        long told = compile.err().lines().filter(l -> l.contains("is damaged")).count();
        if (told > 1) {
          t.fail(trial, when + ": the compile said the cache is damaged " + told + " times; once is enough: "
              + compile.brief());
        }
        t.outcome("compile refused the damaged cache, pointing to verify --repair");
      } else {
        t.fail(trial, when + ": the compile must succeed (compiling damaged entries again) or, if the cache cannot"
            + " be opened, say so in one line: " + compile.brief());
      }
    }

    // 3. Repair, then a clean verify.
    Xlac.Result repair = x.run(Context.COMMAND, "cache", "verify", "--repair", "--cache", cache.toString());
    said.append(repair.out()).append(repair.err());
    if (!repair.ok()) {
      t.fail(trial, when + ": verify --repair failed: " + repair.brief() + Context.firstLines(repair.out(), 2));
      return;
    }
    if (!ctx.verifyClean(x, cache, t, trial, when + " and verify --repair")) {
      return;
    }

    // 4. What is left is what was stored (or compiled again), and a loss was reported.
    Content after = ctx.snapshot(x, cache, dir, t, trial, when + " and verify --repair");
    if (after == null) {
      return;
    }
    Content comparable = without(after, recompiled);
    t.compare(trial, when + " and verify --repair", without(stored, recompiled), comparable, true);
    noPhantoms(t, trial, when + " and verify --repair", stored, after, recompiled);
    Set<String> lost = new TreeSet<>(without(stored, recompiled).missingFrom(after));
    t.entriesChecked += stored.entries().size();
    if (!lost.isEmpty()) {
      String text = said.toString();
      boolean anyReport = text.contains("damaged") || text.contains("dropped") || text.contains("lost")
          || text.contains("missing") || text.contains("corrupt") || text.contains("salvag")
          || text.contains("broken") || !repair.out().contains("all good");
      long named = lost.stream().filter(k -> text.contains(k.split(" ")[1].substring(0, 12))).count();
      t.note("entries lost to damage: " + lost.size() + " (" + named + " of them named by xlac)");
      if (!anyReport) {
        if (kind == Kind.WAL) {
          t.outcome("lost silently with the WAL (RocksDB's point-in-time recovery drops records after a damaged one)");
        } else {
          t.entriesLost += lost.size();
          t.fail(trial, when + ": LOST " + lost.size() + " entries and nothing said so: " + stored.describe(lost, 5));
        }
      }
    }

    // 5. And the cache takes writes again.
    Xlac.Result add = x.run(Context.COMMAND, "cache", "add", "--cache", cache.toString(),
        ctx.golden().resolve("mlp_run1").toString());
    if (!add.ok()) {
      t.fail(trial, when + ": after verify --repair, a write failed: " + add.brief());
    }
  }

  /** Keys of {@code after} that neither were stored nor came from a compile in this trial. */
  private static void noPhantoms(Tally t, int trial, String when, Content stored, Content after, Set<String> compiled) {
    Set<String> extra = new TreeSet<>(stored.addedIn(after));
    extra.removeIf(k -> k.startsWith("graph ") || compiled.stream().anyMatch(fp -> k.contains(fp)));
    if (!extra.isEmpty()) {
      t.fail(trial, when + ": the cache holds entries nobody stored: " + after.describe(extra, 5));
    }
  }

  private static Content without(Content c, Set<String> fps) {
    var e = new java.util.TreeMap<>(c.entries());
    e.keySet().removeIf(k -> !k.startsWith("graph ") && fps.stream().anyMatch(k::contains));
    return new Content(e, c.modules(), c.storedBytes());
  }

  /** Applies the mutation to one file of the kind; returns what it did, or null when there is no such file. */
  static String damage(Path cache, Kind kind, Mutation mutation, Random rng) throws IOException {
    List<Path> files = filesOf(cache, kind);
    if (mutation != Mutation.DELETE) {
      files = files.stream().filter(p -> p.toFile().length() > 0).toList();
    }
    if (files.isEmpty()) {
      return null;
    }
    Path f = files.get(rng.nextInt(files.size()));
    String name = cache.relativize(f).toString();
    long size = Files.size(f);
    switch (mutation) {
      case DELETE -> {
        Files.delete(f);
        return "deleting " + kind.label + " " + name;
      }
      case TRUNCATE -> {
        long to = rng.nextInt(3) == 0 ? 0 : (long) (rng.nextDouble() * size);
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
          raf.setLength(to);
        }
        return "truncating " + kind.label + " " + name + " from " + size + " to " + to + " bytes";
      }
      default -> {
        int n = 1 + rng.nextInt(4);
        List<Long> offsets = new ArrayList<>();
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
          for (int i = 0; i < n; i++) {
            long off = (long) (rng.nextDouble() * size);
            raf.seek(off);
            int b = raf.read();
            raf.seek(off);
            raf.write(b ^ (1 << rng.nextInt(8)));
            offsets.add(off);
          }
        }
        return "flipping a bit at offsets " + offsets + " of " + kind.label + " " + name + " (" + size + " bytes)";
      }
    }
  }
}
