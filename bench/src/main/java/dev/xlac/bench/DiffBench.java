package dev.xlac.bench;

import dev.xlac.cache.CacheStore;
import dev.xlac.hlo.GraphDiff;
import dev.xlac.hlo.HloBatchReader;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.pipeline.explain.Diffs;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Diff benchmark harness (driven by bench/diff.sh).
 *
 * <ul>
 *   <li>{@code generate DIR}: writes {@code layers_400k_c1.hlo.pb} and {@code layers_400k_c2.hlo.pb}: the
 *       hashing benchmark's 400,000-instruction module (bench/README.md, "Hashing") with one scalar
 *       constant, 0.5 in the first and 0.75 in the second.
 *   <li>{@code time A B REPS}: in one JVM, warm, best of REPS: on one thread, hashing A, hashing B (read +
 *       fingerprint) and the diff's work (read both + {@link GraphDiff#of}); and as the commands do it, hashing
 *       both as {@code xlac hash A B} reads them ({@link HloBatchReader}, in parallel) against
 *       {@code xlac diff A B} ({@link Diffs#diff}, which reads B on a second thread while it reads A). Prints
 *       both ratios and the verdict.
 * </ul>
 */
public final class DiffBench {
  private DiffBench() {}

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "generate" -> {
        generate(Path.of(args[1]), "layers_400k_c1.hlo.pb", 0.5f);
        generate(Path.of(args[1]), "layers_400k_c2.hlo.pb", 0.75f);
      }
      case "time" -> time(Path.of(args[1]), Path.of(args[2]), Integer.parseInt(args[3]));
      default -> throw new IllegalArgumentException("unknown mode " + args[0]);
    }
  }

  /** HashBench's layers_400k, plus one scalar constant that instruction 200,001 multiplies by. */
  static void generate(Path dir, String name, float constant) throws IOException {
    Files.createDirectories(dir);
    HashBench.write(dir.resolve(name), HashBench.layers(constant));
  }

  static void time(Path a, Path b, int reps) throws InterruptedException {
    HloModuleReader reader = new HloModuleReader();
    HloModuleReader forDiff = HloModuleReader.forDiff();
    HloBatchReader hashBoth = HloBatchReader.withDefaults(); // what `xlac hash A B` reads with
    CacheStore.Opener noCache = () -> {
      throw new IllegalStateException("both inputs are files: the diff must not open a cache");
    };
    String verdict = null;
    for (int i = 0; i < 2; i++) { // warm-up: JIT, page cache
      reader.read(a).fingerprint();
      reader.read(b).fingerprint();
      hashBoth.read(List.of(a, b), LoadedModule::fingerprint);
      verdict = GraphDiff.of(forDiff.read(a), forDiff.read(b)).verdict();
      Diffs.diff(a.toString(), b.toString(), noCache);
    }
    double[] hashA = new double[reps];
    double[] hashB = new double[reps];
    double[] diff = new double[reps];
    double[] engine = new double[reps];
    double[] hashBothAtOnce = new double[reps];
    double[] diffCommand = new double[reps];
    // CPU time of this thread, for the one-thread figures: steadier than wall time on a shared machine.
    java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
    double[] hashCpu = new double[reps];
    double[] diffCpu = new double[reps];
    for (int i = 0; i < reps; i++) {
      long c0 = cpu.getCurrentThreadCpuTime();
      long t0 = System.nanoTime();
      reader.read(a).fingerprint();
      long t1 = System.nanoTime();
      reader.read(b).fingerprint();
      long t2 = System.nanoTime();
      long c2 = cpu.getCurrentThreadCpuTime();
      LoadedModule ma = forDiff.read(a);
      LoadedModule mb = forDiff.read(b);
      long t3 = System.nanoTime();
      GraphDiff d = GraphDiff.of(ma, mb);
      long t4 = System.nanoTime();
      long c4 = cpu.getCurrentThreadCpuTime();
      hashCpu[i] = (c2 - c0) / 1e9;
      diffCpu[i] = (c4 - c2) / 1e9;
      ma = null;
      mb = null;
      hashBoth.read(List.of(a, b), LoadedModule::fingerprint);
      long t5 = System.nanoTime();
      GraphDiff viaCommand = Diffs.diff(a.toString(), b.toString(), noCache);
      long t6 = System.nanoTime();
      if (!d.verdict().equals(verdict) || !viaCommand.verdict().equals(verdict)) {
        throw new IllegalStateException("verdict changed between runs");
      }
      hashA[i] = (t1 - t0) / 1e9;
      hashB[i] = (t2 - t1) / 1e9;
      diff[i] = (t4 - t2) / 1e9;
      engine[i] = (t4 - t3) / 1e9;
      hashBothAtOnce[i] = (t5 - t4) / 1e9;
      diffCommand[i] = (t6 - t5) / 1e9;
    }
    for (double[] x : List.of(hashA, hashB, diff, engine, hashBothAtOnce, diffCommand, hashCpu, diffCpu)) {
      Arrays.sort(x);
    }
    double hashes = hashA[0] + hashB[0];
    System.out.printf(Locale.ROOT, "one thread: hash_a=%.4f hash_b=%.4f diff=%.4f (read both %.4f + GraphDiff.of %.4f)"
        + " ratio=%.2fx%n", hashA[0], hashB[0], diff[0], diff[0] - engine[0], engine[0], diff[0] / hashes);
    System.out.printf(Locale.ROOT, "one thread, CPU time: hash A + hash B=%.4f diff=%.4f ratio=%.2fx%n", hashCpu[0],
        diffCpu[0], diffCpu[0] / hashCpu[0]);
    System.out.printf(Locale.ROOT, "as the commands do (%d cores): hash A B=%.4f diff A B=%.4f ratio=%.2fx%n",
        Runtime.getRuntime().availableProcessors(), hashBothAtOnce[0], diffCommand[0],
        diffCommand[0] / hashBothAtOnce[0]);
    System.out.println("verdict: " + verdict);
  }
}
