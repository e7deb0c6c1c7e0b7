package dev.xlac.faults;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;

/**
 * xlac's fault-injection suite: it drives the real {@code ./xlac} launcher, as child processes,
 * against caches in a directory the user chooses (so on the filesystem their cache lives on: local,
 * NFS, FSx...), injects faults, and checks that the cache never lies, never jams, and repairs what
 * it reports. See tests/README.md. Run it as {@code scripts/fault-suite}.
 *
 * <p>It uses nothing of xlac's own code: only the launcher, the documented bundle format, and the
 * golden dumps, so it keeps working while the cache's internals change.
 */
public final class FaultSuite {
  private FaultSuite() {}

  /** Every scenario, in the order they run. */
  static final List<Scenario> SCENARIOS = List.of(
      new KillScenarios.Compile(), new KillScenarios.Prune(), new KillScenarios.Import(),
      new KillScenarios.Export(), new DiskFullScenario(), new DamageScenario(), new HostileBundleScenario(),
      new ConcurrentWritersScenario());

  /** One kind of fault. */
  interface Scenario {
    String name();

    String description();

    /** Trials when neither --trials nor --trials NAME=N says otherwise. */
    default int defaultTrials(int general) {
      return general;
    }

    void run(Context ctx, Tally tally, int trials) throws Exception;
  }

  static final String USAGE = """
      usage: scripts/fault-suite [--dir DIR] [--trials N] [--trials SCENARIO=N]... [--seed S]
                                 [--only SCENARIO[,SCENARIO...]] [--plugin PATH] [--tmpfs-size SIZE]
                                 [--bomb-bytes N] [--keep] [--list]
        --dir DIR        where the suite makes its caches: a directory on the filesystem your cache lives
                         on (default: the system temp directory). Everything it makes there is removed.
        --trials N       trials of each randomized scenario (default 6); SCENARIO=N for one scenario
                         (damage defaults to 18: every kind of database file, flipped, truncated, deleted)
        --seed S         the random seed (default: a new one, printed; give it to re-run the same trials)
        --only S[,S]     run only these scenarios (see --list)
        --plugin PATH    the PJRT plugin for the compile scenarios (default $XLAC_PJRT_PLUGIN)
        --tmpfs-size S   size of the small filesystem of the disk-full scenario (default 32M)
        --bomb-bytes N   declared size of the bomb bundles' entry (default 2000000000)
        --keep           keep the working directory (and the caches of failed trials) for inspection
      exit code: 0 every scenario passed (skipped ones say why), 1 a scenario failed, 2 usage or set-up error
      """;

  public static void main(String[] args) {
    System.exit(run(List.of(args), System.out));
  }

  /** Parses the arguments, runs the suite, prints the report; returns the exit code. */
  static int run(List<String> args, PrintStream out) {
    Options options;
    try {
      options = Options.parse(args);
    } catch (IllegalArgumentException e) {
      if (e.getMessage().equals("help")) {
        out.print(USAGE);
        return 0;
      }
      out.println("fault-suite: " + e.getMessage());
      out.print(USAGE);
      return 2;
    }
    if (options.list) {
      SCENARIOS.forEach(s -> out.printf("%-19s %s%n", s.name(), s.description()));
      return 0;
    }
    try {
      return run(options, out).exitCode();
    } catch (IOException | RuntimeException e) {
      out.println("fault-suite: cannot set up: " + e);
      return 2;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      out.println("fault-suite: interrupted");
      return 2;
    }
  }

  /** The whole run's result. */
  record Report(List<Tally> tallies, long seed, int usageError) {
    boolean passed() {
      return usageError == 0 && tallies.stream().allMatch(Tally::passed);
    }

    int exitCode() {
      return usageError != 0 ? usageError : passed() ? 0 : 1;
    }

    Tally tally(String scenario) {
      return tallies.stream().filter(t -> t.scenario.equals(scenario)).findFirst().orElseThrow();
    }
  }

  static Report run(Options o, PrintStream out) throws IOException, InterruptedException {
    for (String name : o.only) {
      if (SCENARIOS.stream().noneMatch(s -> s.name().equals(name))) {
        out.println("fault-suite: unknown scenario " + name + " (see --list)");
        return new Report(List.of(), o.seed, 2);
      }
    }
    Path work = Files.createTempDirectory(o.dir, "xlac-fault-suite-");
    out.printf("xlac fault suite: seed %d, working in %s%n", o.seed, work);
    out.printf("re-run with: scripts/fault-suite --dir %s --seed %d%s%s%n", o.dir, o.seed,
        o.only.isEmpty() ? "" : " --only " + String.join(",", o.only), o.trialsArgs());
    List<Tally> tallies = new ArrayList<>();
    try (Context ctx = new Context(o, work, out)) {
      ctx.preflight();
      for (Scenario s : SCENARIOS) {
        if (!o.only.isEmpty() && !o.only.contains(s.name())) {
          continue;
        }
        int trials = o.trialsFor(s);
        Tally t = new Tally(s.name());
        tallies.add(t);
        out.printf("%n== %s: %s (%d trials)%n", s.name(), s.description(), trials);
        out.flush();
        long start = System.nanoTime();
        try {
          s.run(ctx, t, trials);
        } catch (Exception e) {
          t.fail(0, "the scenario stopped: " + e);
        } finally {
          ctx.sweepStrays();
        }
        t.millis = (System.nanoTime() - start) / 1_000_000;
        print(t, o, out);
      }
    } finally {
      if (o.keep) {
        out.println("kept " + work);
      } else {
        Files.deleteIfExists(work); // Context.close removed its content
      }
    }
    Report r = new Report(tallies, o.seed, 0);
    long trials = tallies.stream().mapToLong(t -> t.trials).sum();
    long checked = tallies.stream().mapToLong(t -> t.entriesChecked).sum();
    long lost = tallies.stream().mapToLong(t -> t.entriesLost).sum();
    long wrong = tallies.stream().mapToLong(t -> t.wrongBytes).sum();
    List<String> failed = tallies.stream().filter(t -> !t.passed()).map(t -> t.scenario).toList();
    List<String> skipped = tallies.stream().filter(t -> t.skipped != null).map(t -> t.scenario).toList();
    out.println();
    if (failed.isEmpty()) {
      out.printf("fault suite: PASS: %d scenarios, %d trials, %d entries checked, nothing lost, no wrong bytes%s;"
          + " seed %d%n", tallies.size() - skipped.size(), trials, checked,
          skipped.isEmpty() ? "" : " (skipped: " + String.join(", ", skipped) + ")", o.seed);
    } else {
      out.printf("fault suite: FAIL: %d of %d scenarios failed (%s); %d trials, %d entries checked, %d lost, %d wrong;"
          + " seed %d%n", failed.size(), tallies.size(), String.join(", ", failed), trials, checked, lost, wrong,
          o.seed);
    }
    out.flush();
    return r;
  }

  private static void print(Tally t, Options o, PrintStream out) {
    if (t.skipped != null) {
      out.printf("   SKIPPED: %s%n", t.skipped);
      return;
    }
    StringBuilder counts = new StringBuilder();
    t.outcomes.forEach((k, v) -> counts.append(counts.isEmpty() ? "" : ", ").append(k).append(' ').append(v));
    out.printf("   trials %d: %s%n", t.trials, counts.isEmpty() ? "-" : counts);
    out.printf("   entries checked %d, lost %d, wrong bytes %d%n", t.entriesChecked, t.entriesLost, t.wrongBytes);
    t.notes.forEach(n -> out.println("   note: " + n));
    t.failures.forEach(f -> out.println("   FAILED " + f));
    out.printf("   %s (%.1f s)%n", t.passed() ? "PASS" : "FAIL", t.millis / 1000.0);
    if (!t.passed()) {
      out.printf("   re-run: scripts/fault-suite --dir %s --seed %d --only %s --trials %d%n", o.dir, o.seed, t.scenario,
          o.trialsFor(SCENARIOS.stream().filter(s -> s.name().equals(t.scenario)).findFirst().orElseThrow()));
    }
    out.flush();
  }

  /** The command line. */
  static final class Options {
    Path dir = Path.of(System.getProperty("java.io.tmpdir"));
    int trials = 6;
    final Map<String, Integer> trialsByScenario = new LinkedHashMap<>();
    long seed = ThreadLocalRandom.current().nextLong(1, 1L << 48);
    final List<String> only = new ArrayList<>();
    Path plugin;
    Path root;
    long tmpfsBytes = 32L << 20;
    long bombBytes = 2_000_000_000L;
    boolean keep;
    boolean list;

    static Options parse(List<String> args) {
      Options o = new Options();
      String env = System.getenv("XLAC_PJRT_PLUGIN");
      o.plugin = env == null || env.isBlank() ? null : Path.of(env);
      String root = System.getenv("XLAC_ROOT");
      o.root = root == null || root.isBlank() ? null : Path.of(root);
      for (int i = 0; i < args.size(); i++) {
        String a = args.get(i);
        String v = null;
        int eq = a.indexOf('=');
        if (a.startsWith("--") && eq > 0) {
          v = a.substring(eq + 1);
          a = a.substring(0, eq);
        }
        switch (a) {
          case "--keep" -> o.keep = true;
          case "--list" -> o.list = true;
          case "-h", "--help" -> throw new IllegalArgumentException("help");
          default -> {
            if (v == null) {
              if (i + 1 >= args.size()) {
                throw new IllegalArgumentException(a + " needs a value");
              }
              v = args.get(++i);
            }
            o.set(a, v);
          }
        }
      }
      if (o.root == null) {
        throw new IllegalArgumentException("XLAC_ROOT is not set (run the suite through scripts/fault-suite)");
      }
      return o;
    }

    private void set(String option, String v) {
      try {
        switch (option) {
          case "--dir" -> dir = Path.of(v).toAbsolutePath();
          case "--seed" -> seed = Long.parseLong(v);
          case "--only" -> only.addAll(List.of(v.split(",")));
          case "--plugin" -> plugin = Path.of(v);
          case "--xlac-root" -> root = Path.of(v);
          case "--tmpfs-size" -> tmpfsBytes = parseSize(v);
          case "--bomb-bytes" -> bombBytes = Long.parseLong(v);
          case "--trials" -> {
            int eq = v.indexOf('=');
            if (eq > 0) {
              trialsByScenario.put(v.substring(0, eq), positive(v.substring(eq + 1)));
            } else {
              trials = positive(v);
            }
          }
          default -> throw new IllegalArgumentException("unknown option " + option);
        }
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(option + ": not a number: " + v);
      }
    }

    private static int positive(String v) {
      int n = Integer.parseInt(v);
      if (n < 1) {
        throw new IllegalArgumentException("--trials must be at least 1");
      }
      return n;
    }

    static long parseSize(String v) {
      String s = v.trim().toUpperCase();
      long unit = 1;
      if (s.endsWith("K")) {
        unit = 1L << 10;
      } else if (s.endsWith("M")) {
        unit = 1L << 20;
      } else if (s.endsWith("G")) {
        unit = 1L << 30;
      }
      return Long.parseLong(unit == 1 ? s : s.substring(0, s.length() - 1)) * unit;
    }

    int trialsFor(Scenario s) {
      return trialsByScenario.getOrDefault(s.name(), s.defaultTrials(trials));
    }

    String trialsArgs() {
      StringBuilder b = new StringBuilder(" --trials " + trials);
      trialsByScenario.forEach((k, v) -> b.append(" --trials ").append(k).append('=').append(v));
      return b.toString();
    }
  }

  /** A seeded random source for one trial of one scenario. */
  static Random rng(long seed, String scenario, int trial) {
    long h = seed;
    for (char c : scenario.toCharArray()) {
      h = h * 31 + c;
    }
    return new Random(mix(mix(h) + trial));
  }

  /** MurmurHash3's 64-bit finalizer: neighbouring trials get unrelated streams (Random's first values are not). */
  private static long mix(long z) {
    z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
    z = (z ^ (z >>> 33)) * 0xc4ceb9fe1a85ec53L;
    return z ^ (z >>> 33);
  }
}
