package dev.xlac.bench;

import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStatistics;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.ExportRequest;
import dev.xlac.cache.ListQuery;
import dev.xlac.cache.PruneRequest;
import dev.xlac.cache.PruneResult;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.Sizes;
import com.google.protobuf.ByteString;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloFileKind;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.XlaDataProtos.LiteralProto;
import dev.xlac.hlo.proto.XlaDataProtos.PrimitiveType;
import dev.xlac.hlo.proto.XlaDataProtos.ShapeProto;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.SplittableRandom;

/**
 * The cache benchmarks of issue #3 (run by bench/cache.sh; see bench/README.md):
 *
 * <ol>
 *   <li>{@code lookups}: N synthetic entries; hit lookups through {@link CacheStore#getArtifact}
 *       (every one a first read, so none is served from the in-process memory cache), against the
 *       same artifacts in a directory-per-entry cache (Neuron's layout: {@code MODULE_x/model.neff}
 *       plus a {@code model.done} holding the checksum, verified on read as the cache does),
 *       measured in the same run; then list, statistics, and a prune to half the size.
 *   <li>{@code bundles}: export and import of incompressible artifacts, against
 *       {@code tar | zstd} and {@code zstd -d | tar -x} of the same files in the same run.
 * </ol>
 *
 * Usage: {@code CacheBench lookups WORKDIR [ENTRIES]} or {@code CacheBench bundles WORKDIR [MIB]}.
 */
public final class CacheBench {
  static final CompilerIdentity TARGET = new CompilerIdentity("neuronx-cc", "2.21.0", "trn1", List.of("-O2"), Map.of());

  private CacheBench() {}

  public static void main(String[] args) throws Exception {
    Path work = Path.of(args[1]);
    switch (args[0]) {
      case "lookups" -> lookups(work, args.length > 2 ? Integer.parseInt(args[2]) : 100_000);
      case "bundles" -> bundles(work, args.length > 2 ? Integer.parseInt(args[2]) : 1024);
      default -> throw new IllegalArgumentException("unknown benchmark " + args[0]);
    }
  }

  static GraphFingerprint fp(int n) throws Exception {
    byte[] d = sha256(("bench graph " + n).getBytes(StandardCharsets.UTF_8));
    return new GraphFingerprint(GraphFingerprint.VERSION + ":" + HexFormat.of().formatHex(d));
  }

  /** {@code f(p) = p + [value]}: a small valid module whose fingerprint differs with {@code value}. */
  static byte[] module(String name, int value) {
    ShapeProto s = ShapeProto.newBuilder().setElementType(PrimitiveType.F32).addDimensions(1).addIsDynamicDimension(false)
        .build();
    byte[] v = java.nio.ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN).putFloat(value).array();
    HloComputationProto main = HloComputationProto.newBuilder().setId(1).setName("main").setRootId(2)
        .addInstructions(HloInstructionProto.newBuilder().setId(0).setName("p").setOpcode("parameter").setShape(s)
            .setParameterNumber(0))
        .addInstructions(HloInstructionProto.newBuilder().setId(1).setName("c").setOpcode("constant").setShape(s)
            .setLiteral(LiteralProto.newBuilder().setShape(s).setF32S(ByteString.copyFrom(v))))
        .addInstructions(HloInstructionProto.newBuilder().setId(2).setName("add").setOpcode("add").setShape(s)
            .addOperandIds(0).addOperandIds(1))
        .build();
    return HloModuleProto.newBuilder().setName(name).setEntryComputationId(1).addComputations(main).build().toByteArray();
  }

  static byte[] randomBytes(long seed, int size) {
    byte[] b = new byte[size];
    new Random(seed).nextBytes(b);
    return b;
  }

  // ------------------------------------------------------------------------------------ lookups

  static void lookups(Path work, int entries) throws Exception {
    Path cacheDir = work.resolve("cache");
    Path dirCache = work.resolve("dir-per-entry");
    SplittableRandom sizes = new SplittableRandom(1);
    int[] size = new int[entries];
    long t0 = System.nanoTime();
    try (CacheStore s = CacheStore.open(cacheDir, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      List<CacheStore.NewArtifact> batch = new ArrayList<>();
      for (int n = 0; n < entries; n++) {
        size[n] = 1024 + sizes.nextInt(3072); // 1-4 KiB artifacts, 200-byte graphs
        GraphFingerprint f = fp(n);
        s.putGraph(f, "jit_bench_" + n, randomBytes(-n, 200), "bench");
        batch.add(new CacheStore.NewArtifact(new ArtifactKey(f, TARGET), randomBytes(n, size[n]),
            CompileInfo.of(1 + n % 100, "")));
        if (batch.size() == 1000) {
          s.putArtifacts(batch);
          batch.clear();
        }
      }
      if (!batch.isEmpty()) {
        s.putArtifacts(batch);
      }
    }
    report("populate the cache (%,d entries)", entries, System.nanoTime() - t0);
    t0 = System.nanoTime();
    for (int n = 0; n < entries; n++) {
      GraphFingerprint f = fp(n);
      Path d = Files.createDirectories(dirEntry(dirCache, f));
      byte[] a = randomBytes(n, size[n]);
      Files.write(d.resolve("model.neff"), a);
      Files.writeString(d.resolve("model.done"), HexFormat.of().formatHex(sha256(a)));
    }
    report("populate the directory-per-entry cache (%,d entries)", entries, System.nanoTime() - t0);

    List<Integer> order = new ArrayList<>();
    for (int n = 0; n < entries; n++) {
      order.add(n);
    }
    Collections.shuffle(order, new Random(7));
    int measured = Math.min(entries, 50_000);
    List<Integer> warm = order.subList(measured, entries);
    List<Integer> timed = order.subList(0, measured);
    try (CacheStore s = CacheStore.open(cacheDir, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      ArtifactKey[] keys = new ArtifactKey[entries];
      for (int n = 0; n < entries; n++) {
        keys[n] = new ArtifactKey(fp(n), TARGET);
      }
      for (int n : warm) { // JIT warm-up on keys that are not measured
        s.getArtifact(keys[n]).orElseThrow();
      }
      long[] cache = new long[measured];
      long[] dirs = new long[measured];
      for (int i = 0; i < measured; i++) {
        int n = timed.get(i);
        long a = System.nanoTime();
        byte[] got = s.getArtifact(keys[n]).orElseThrow().bytes();
        long b = System.nanoTime();
        byte[] viaDir = dirLookup(dirCache, fp(n));
        long c = System.nanoTime();
        cache[i] = b - a;
        dirs[i] = c - b;
        if (got.length != viaDir.length) {
          throw new IllegalStateException("lookups disagree for entry " + n);
        }
      }
      percentiles("hit lookup, xlac cache (RocksDB, checksum verified)", cache);
      percentiles("hit lookup, directory per entry (checksum verified)", dirs);
      System.out.printf(Locale.ROOT, "  ratio p50 %.2fx, p99 %.2fx (directory / xlac)%n",
          pct(dirs, 50) / (double) pct(cache, 50), pct(dirs, 99) / (double) pct(cache, 99));

      long t = System.nanoTime();
      int rows = s.list(ListQuery.all()).size();
      report("list all rows (%,d), in process", rows, System.nanoTime() - t);
      t = System.nanoTime();
      CacheStatistics st = s.statistics();
      report("statistics (%,d graphs), in process", (int) st.graphs(), System.nanoTime() - t);
      System.out.println("  stored " + Sizes.human(st.storedBytes()) + ", on disk " + Sizes.human(st.diskBytes()));
    }
    long dirBytes = du(dirCache);
    System.out.println("  directory-per-entry cache on disk: " + Sizes.human(dirBytes));
    if (Boolean.getBoolean("bench.skipPrune")) {
      return;
    }
    Path pruneCopy = work.resolve("cache-for-prune");
    copyTree(cacheDir, pruneCopy); // ls and stat in cache.sh still see the full cache
    try (CacheStore s = CacheStore.open(pruneCopy, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      long half = s.statistics().storedBytes() / 2;
      long t = System.nanoTime();
      PruneResult r = s.prune(new PruneRequest(OptionalLong.of(half), null, false, null, null, false, false));
      report("prune to half the size (%,d entries removed, with compaction)", r.removed().size(), System.nanoTime() - t);
      System.out.println("  on disk " + Sizes.human(r.diskBefore()) + " -> " + Sizes.human(r.diskAfter()));
    }
  }

  /** The directory of {@code f}'s entry in the directory-per-entry cache. */
  static Path dirEntry(Path root, GraphFingerprint f) {
    return root.resolve("MODULE_" + f.value().substring(5) + "+" + TARGET.digest().substring(0, 8));
  }

  static byte[] dirLookup(Path root, GraphFingerprint f) throws IOException {
    Path d = dirEntry(root, f);
    String sha = Files.readString(d.resolve("model.done"));
    byte[] a = Files.readAllBytes(d.resolve("model.neff"));
    if (!HexFormat.of().formatHex(sha256(a)).equals(sha)) {
      throw new IllegalStateException("damaged " + d);
    }
    return a;
  }

  // ------------------------------------------------------------------------------------ bundles

  static void bundles(Path work, int mib) throws Exception {
    Path cacheDir = work.resolve("bundle-cache");
    Path files = work.resolve("bundle-files");
    int each = 8 << 20;
    int count = Math.max(1, (mib << 20) / each);
    long payload = (long) count * each;
    try (CacheStore s = CacheStore.open(cacheDir, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      for (int n = 0; n < count; n++) {
        byte[] module = module("jit_big_" + n, n); // a real module: import checks each graph's fingerprint
        GraphFingerprint f = new HloModuleReader().parse(Path.of("jit_big_" + n), HloFileKind.HLO_MODULE, module,
            module.length).fingerprint();
        s.putGraph(f, "jit_big_" + n, module, "bench");
        byte[] a = randomBytes(n, each);
        s.putArtifact(new ArtifactKey(f, TARGET), a, CompileInfo.of(100, ""));
        Path d = files.resolve("MODULE_" + n);
        Files.createDirectories(d);
        Files.write(d.resolve("model.neff"), a);
      }
    }
    System.out.printf(Locale.ROOT, "bundle payload: %d artifacts of 8 MiB of random bytes (%s)%n", count,
        Sizes.human(payload));
    Path bundle = work.resolve("bundle.tar.zst");
    double export;
    try (CacheStore s = CacheStore.open(cacheDir, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      dropCaches();
      long t = System.nanoTime();
      s.exportBundle(bundle, ExportRequest.all());
      export = mbps(payload, System.nanoTime() - t);
    }
    double imp;
    Path target = work.resolve("import-target");
    try (CacheStore s = CacheStore.open(target, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      long t = System.nanoTime();
      s.importBundle(bundle);
      imp = mbps(payload, System.nanoTime() - t);
    }
    Path anchor = work.resolve("anchor.tar.zst");
    long t = System.nanoTime();
    sh("tar -C '" + files + "' -cf - . | zstd -q -3 -T1 -o '" + anchor + "'");
    double tarZstd = mbps(payload, System.nanoTime() - t);
    Path untar = Files.createDirectories(work.resolve("anchor-untar"));
    t = System.nanoTime();
    sh("zstd -q -d -c '" + anchor + "' | tar -C '" + untar + "' -xf - && sync -f '" + untar + "'");
    double zstdTar = mbps(payload, System.nanoTime() - t);
    System.out.printf(Locale.ROOT, "export  %7.0f MB/s   anchor tar | zstd -3        %7.0f MB/s   ratio %.2f%n", export,
        tarZstd, export / tarZstd);
    System.out.printf(Locale.ROOT, "import  %7.0f MB/s   anchor zstd -d | tar -x     %7.0f MB/s   ratio %.2f%n", imp,
        zstdTar, imp / zstdTar);
    System.out.println("  bundle " + Sizes.human(Files.size(bundle)) + ", anchor " + Sizes.human(Files.size(anchor)));
  }

  // ------------------------------------------------------------------------------------ helpers

  static byte[] sha256(byte[] b) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(b);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  static void sh(String command) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("bash", "-o", "pipefail", "-c", command).inheritIO().start();
    if (p.waitFor() != 0) {
      throw new IllegalStateException("failed: " + command);
    }
  }

  /** Best effort: lets a run as root start export from a cold page cache; elsewhere a no-op. */
  static void dropCaches() {
    try {
      sh("sync; (echo 1 > /proc/sys/vm/drop_caches) 2>/dev/null || true");
    } catch (Exception e) {
      // not essential
    }
  }

  static double mbps(long bytes, long nanos) {
    return bytes / 1e6 / (nanos / 1e9);
  }

  static long pct(long[] sorted, double p) {
    return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
  }

  static void percentiles(String what, long[] nanos) {
    Arrays.sort(nanos);
    System.out.printf(Locale.ROOT, "%-55s p50 %7.1f us  p99 %7.1f us  p99.9 %7.1f us  max %8.1f us  (n=%,d)%n", what,
        pct(nanos, 50) / 1e3, pct(nanos, 99) / 1e3, pct(nanos, 99.9) / 1e3, nanos[nanos.length - 1] / 1e3,
        nanos.length);
  }

  static void report(String format, int n, long nanos) {
    System.out.printf(Locale.ROOT, "%-55s %8.3f s%n", String.format(Locale.ROOT, format, n), nanos / 1e9);
  }

  static long du(Path dir) throws IOException {
    try (var s = Files.walk(dir)) {
      return s.filter(Files::isRegularFile).mapToLong(p -> {
        try {
          return Math.max(4096, (Files.size(p) + 4095) / 4096 * 4096); // whole blocks, as du counts
        } catch (IOException e) {
          return 0;
        }
      }).sum();
    }
  }

  static void copyTree(Path from, Path to) throws IOException, InterruptedException {
    sh("rm -rf '" + to + "' && cp -r '" + from + "' '" + to + "' && rm -f '" + to + "/lock'");
  }
}
