package dev.xlac.bench;

import com.google.protobuf.ByteString;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.compiler.pjrt.PjrtCompileOptions;
import dev.xlac.compiler.pjrt.PjrtDriver;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.compiler.select.DriverOptions;
import dev.xlac.compiler.select.DriverSpec;
import dev.xlac.compiler.select.Drivers;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.hlo.DumpDirectoryReader;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.HloProtos.HloProto;
import dev.xlac.pipeline.CompileResult;
import dev.xlac.pipeline.CompileRuns;
import dev.xlac.pipeline.CompileSetup;
import dev.xlac.pipeline.DriverSource;
import dev.xlac.pipeline.RunListener;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Helpers for bench/compile.sh (issue #4 §5; figures in bench/README.md):
 *
 * <ul>
 *   <li>{@code bare PLUGIN PATH...}: the baseline of the overhead benchmark. One JVM, the plugin
 *       loaded in-process once, every module compiled in a plain loop; no cache, no scheduler.
 *   <li>{@code variants TRAIN_STEP_DUMP OUTDIR N}: N copies of a real JAX train step that differ
 *       only in one scalar f32 constant, so they are distinct graphs of the same compile cost.
 *   <li>{@code populate CACHEDIR PLUGIN N [ARTIFACT_BYTES]}: N distinct graphs, each with an
 *       artifact of ARTIFACT_BYTES random bytes (default 4096) for the plugin's compiler identity,
 *       written through the cache API.
 *   <li>{@code lookups CACHEDIR [PASSES]}: the in-process cost of an all-cached re-run through the
 *       pipeline's own entry point ({@link CompileRuns#cache}: open, pin, settle every graph, plan,
 *       report), with a compiler that must never be started; timed per pass; min and median.
 *   <li>{@code lookups-raw CACHEDIR [PASSES]}: the lookups alone, {@link CacheStore#lookup} of every
 *       artifact of a populated cache in a hand-written loop, timed per pass on a freshly opened
 *       store (an empty block cache; the files in the page cache); min and median. Its difference to
 *       {@code lookups} is what the run around the lookups costs.
 * </ul>
 */
public final class ParallelCompileBench {
  private ParallelCompileBench() {}

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "bare" -> bare(Path.of(args[1]), args);
      case "variants" -> variants(Path.of(args[1]), Path.of(args[2]), Integer.parseInt(args[3]));
      case "populate" -> populate(Path.of(args[1]), Path.of(args[2]), Integer.parseInt(args[3]),
          args.length > 4 ? Integer.parseInt(args[4]) : 4096);
      case "lookups" -> lookups(Path.of(args[1]), args.length > 2 ? Integer.parseInt(args[2]) : 5);
      case "lookups-raw" -> lookupsRaw(Path.of(args[1]), args.length > 2 ? Integer.parseInt(args[2]) : 5);
      default -> throw new IllegalArgumentException("unknown mode " + args[0]);
    }
  }

  private static void bare(Path plugin, String[] args) throws Exception {
    List<Path> paths = new ArrayList<>();
    for (int i = 2; i < args.length; i++) {
      paths.add(Path.of(args[i]));
    }
    HloModuleReader reader = new HloModuleReader();
    Set<GraphFingerprint> seen = new HashSet<>();
    int compiled = 0;
    try (PjrtDriver driver = PjrtDriver.open(plugin, Map.of(), PjrtCompileOptions.DEFAULT)) {
      for (Path f : DumpDirectoryReader.scan(paths).inputs()) {
        LoadedModule m = reader.read(f);
        if (seen.add(m.fingerprint())) {
          if (!(driver.compile(CompileRequest.of(m)) instanceof CompileOutcome.Success)) {
            throw new IllegalStateException("bare loop: " + m.moduleName() + " did not compile");
          }
          compiled++;
        }
      }
    }
    System.out.println("bare loop compiled " + compiled + " graphs");
  }

  private static void variants(Path trainStep, Path out, int n) throws Exception {
    HloModuleProto module = HloProto.parseFrom(Files.readAllBytes(trainStep)).getHloModule();
    Files.createDirectories(out);
    for (int v = 0; v < n; v++) {
      HloModuleProto.Builder b = module.toBuilder();
      if (!changeFirstScalarF32Constant(b, 1.5f + v)) {
        throw new IllegalStateException(trainStep + " has no scalar f32 constant to vary");
      }
      b.setName(module.getName());
      Path f = out.resolve(String.format(Locale.ROOT, "module_%04d.%s.before_optimizations.hlo.pb", v, module.getName()));
      Files.write(f, HloProto.newBuilder().setHloModule(b).build().toByteArray());
    }
    System.out.println("wrote " + n + " variants of " + module.getName() + " to " + out);
  }

  private static boolean changeFirstScalarF32Constant(HloModuleProto.Builder b, float value) {
    for (HloComputationProto.Builder c : b.getComputationsBuilderList()) {
      for (HloInstructionProto.Builder i : c.getInstructionsBuilderList()) {
        if (i.getOpcode().equals("constant") && i.hasLiteral() && i.getLiteral().getF32S().size() == 4
            && i.getShape().getDimensionsCount() == 0) {
          byte[] bytes = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(value).array();
          i.setLiteral(i.getLiteral().toBuilder().setF32S(ByteString.copyFrom(bytes)));
          return true;
        }
      }
    }
    return false;
  }

  private static void populate(Path cacheDir, Path plugin, int n, int artifactBytes) throws Exception {
    byte[] module = HloModuleProto.newBuilder().setName("jit_synthetic").build().toByteArray();
    CompilerIdentity identity;
    try (CacheStore store = CacheStore.open(cacheDir, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      // As parallel-compile learns it: the probe record goes where xlac keeps it, in the cache.
      DriverSpec spec = Drivers.resolve(new DriverOptions("pjrt", plugin, null, null, Map.of(), Map.of(),
          Duration.ZERO, cacheDir.resolve("probes")), Map.of());
      try (DriverFactory drivers = Drivers.open(spec, null)) {
        identity = drivers.identity();
      }
      List<CacheStore.NewArtifact> batch = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        GraphFingerprint fp = CacheBench.fp(i);
        store.putGraph(fp, "jit_synthetic_" + i, module, "bench");
        byte[] artifact = new byte[artifactBytes];
        new java.util.Random(i).nextBytes(artifact);
        batch.add(new CacheStore.NewArtifact(new ArtifactKey(fp, identity), artifact, CompileInfo.of(1.0, "")));
        if (batch.size() == 256 || i == n - 1) {
          store.putArtifacts(batch);
          batch = new ArrayList<>();
        }
      }
    }
    System.out.println("populated " + cacheDir + " with " + n + " compiled graphs (artifacts of " + artifactBytes
        + " bytes) for " + identity.describe());
  }

  private static void lookups(Path cacheDir, int passes) throws Exception {
    CompilerIdentity identity;
    try (CacheStore store = CacheStore.open(cacheDir, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      identity = store.entries(store.graphs().getFirst().fingerprint()).getFirst().key().compiler();
    }
    List<Double> millis = new ArrayList<>();
    for (int p = 0; p < passes; p++) {
      DriverFactory never = DriverFactory.of(identity, () -> {
        throw new IllegalStateException("an all-cached run started a compiler");
      });
      CompileSetup setup = new CompileSetup(() -> CacheStore.open(cacheDir, CacheStore.Mode.READ_WRITE, Duration.ZERO),
          new DriverSource.Given(never), new SchedulerSettings(1, SchedulerSettings.MIN_MEMORY_PER_JOB, 0), false,
          RunListener.NONE, () -> Long.MAX_VALUE);
      long t0 = System.nanoTime();
      CompileResult r = CompileRuns.cache(setup);
      millis.add((System.nanoTime() - t0) / 1e6);
      if (r.report().cached() != r.report().total()) {
        throw new IllegalStateException(r.report().summaryLines().getFirst());
      }
    }
    printMillis("all-cached runs (CompileRuns.cache) of", countGraphs(cacheDir), millis);
  }

  private static int countGraphs(Path cacheDir) throws InterruptedException {
    try (CacheStore store = CacheStore.open(cacheDir, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      return store.graphs().size();
    }
  }

  private static void printMillis(String what, int n, List<Double> millis) {
    List<Double> sorted = millis.stream().sorted().toList();
    System.out.printf(Locale.ROOT, "%s %d graphs: min %.1f ms, median %.1f ms (passes: %s)%n", what, n,
        sorted.getFirst(), sorted.get(sorted.size() / 2),
        millis.stream().map(m -> String.format(Locale.ROOT, "%.1f", m)).toList());
  }

  private static void lookupsRaw(Path cacheDir, int passes) throws Exception {
    List<ArtifactKey> keys = new ArrayList<>();
    try (CacheStore store = CacheStore.open(cacheDir, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      for (var g : store.graphs()) {
        store.entries(g.fingerprint()).forEach(e -> keys.add(e.key()));
      }
    }
    List<Double> millis = new ArrayList<>();
    for (int p = 0; p < passes; p++) {
      try (CacheStore store = CacheStore.open(cacheDir, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
        long t0 = System.nanoTime();
        int hits = 0;
        for (ArtifactKey k : keys) {
          hits += store.lookup(k).isPresent() ? 1 : 0;
        }
        millis.add((System.nanoTime() - t0) / 1e6);
        if (hits != keys.size()) {
          throw new IllegalStateException(hits + " hits of " + keys.size());
        }
      }
    }
    List<Double> sorted = millis.stream().sorted().toList();
    System.out.printf(Locale.ROOT, "%d lookups: min %.1f ms, median %.1f ms (passes: %s)%n", keys.size(), sorted.getFirst(),
        sorted.get(sorted.size() / 2), millis.stream().map(m -> String.format(Locale.ROOT, "%.1f", m)).toList());
  }
}
