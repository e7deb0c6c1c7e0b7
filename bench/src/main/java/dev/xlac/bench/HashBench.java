package dev.xlac.bench;

import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.HloProtos.HloProto;
import dev.xlac.hlo.proto.XlaDataProtos.LayoutProto;
import dev.xlac.hlo.proto.XlaDataProtos.LiteralProto;
import dev.xlac.hlo.proto.XlaDataProtos.OpMetadata;
import dev.xlac.hlo.proto.XlaDataProtos.PrimitiveType;
import dev.xlac.hlo.proto.XlaDataProtos.ShapeProto;
import java.io.IOException;
import com.sun.management.GarbageCollectionNotificationInfo;
import com.sun.management.GcInfo;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.NotificationEmitter;
import javax.management.openmbean.CompositeData;

/**
 * Hashing benchmark harness (driven by bench/hash.sh).
 *
 * <ul>
 *   <li>{@code generate DIR}: writes two large synthetic modules: one whose size is mostly
 *       constants (weights baked in), one with many layers of small instructions.
 *   <li>{@code time FILE REPS}: in-process read + parse + fingerprint, best and median of REPS after warm-up.
 *   <li>{@code peak FILE}: one hash in a fresh JVM, then the peak heap (sum of heap pools' peaks) and
 *       the largest heap in use right after a full collection during the work or a forced one at its end.
 * </ul>
 */
public final class HashBench {
  private HashBench() {}

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "generate" -> generate(Path.of(args[1]));
      case "time" -> time(Path.of(args[1]), Integer.parseInt(args[2]));
      case "peak" -> peak(Path.of(args[1]));
      default -> throw new IllegalArgumentException("unknown mode " + args[0]);
    }
  }

  /** An f32 shape of {@code dims} with the default (row-major) layout. */
  static ShapeProto f32(long... dims) {
    ShapeProto.Builder s = ShapeProto.newBuilder().setElementType(PrimitiveType.F32);
    LayoutProto.Builder l = LayoutProto.newBuilder();
    for (int i = 0; i < dims.length; i++) {
      s.addDimensions(dims[i]).addIsDynamicDimension(false);
      l.addMinorToMajor(dims.length - 1 - i);
    }
    return s.setLayout(l).build();
  }

  static void generate(Path dir) throws IOException {
    Files.createDirectories(dir);
    Random rnd = new Random(42);
    // 1. Weights baked in as constants: 16 layers of 1024x1024 f32 (64 MiB of literal data).
    HloComputationProto.Builder c = HloComputationProto.newBuilder().setId(1).setName("main");
    ShapeProto vec = f32(1, 1024);
    ShapeProto mat = f32(1024, 1024);
    long id = 10;
    c.addInstructions(HloInstructionProto.newBuilder().setId(id).setName("x").setOpcode("parameter").setShape(vec));
    long prev = id++;
    for (int layer = 0; layer < 16; layer++) {
      java.nio.ByteBuffer data = java.nio.ByteBuffer.allocate(4 << 20).order(java.nio.ByteOrder.LITTLE_ENDIAN);
      for (int i = 0; i < 1024 * 1024; i++) {
        data.putFloat(rnd.nextFloat());
      }
      LiteralProto.Builder lit = LiteralProto.newBuilder().setShape(mat)
          .setF32S(com.google.protobuf.ByteString.copyFrom(data.array()));
      long w = id++;
      c.addInstructions(HloInstructionProto.newBuilder().setId(w).setName("w" + layer).setOpcode("constant").setShape(mat)
          .setLiteral(lit));
      long dot = id++;
      c.addInstructions(HloInstructionProto.newBuilder().setId(dot).setName("dot" + layer).setOpcode("dot").setShape(vec)
          .addOperandIds(prev).addOperandIds(w).setDotDimensionNumbers(
              dev.xlac.hlo.proto.XlaDataProtos.DotDimensionNumbers.newBuilder().addLhsContractingDimensions(1)
                  .addRhsContractingDimensions(0)));
      prev = dot;
    }
    c.setRootId(prev);
    write(dir.resolve("constants_64m.hlo.pb"), HloModuleProto.newBuilder().setName("constants").setEntryComputationId(1)
        .addComputations(c).build());

    // 2. Many layers: 400,000 small instructions with source metadata, as a deep network's step looks.
    write(dir.resolve("layers_400k.hlo.pb"), layers(null));
  }

  /**
   * The many-layers module: 400,000 small instructions with source metadata, as a deep network's step looks. With
   * {@code constant} not null it also holds a scalar constant of that value, which instruction 200,001 takes as its
   * second operand (the diff benchmark's one-constant variants).
   */
  static HloModuleProto layers(Float constant) {
    HloComputationProto.Builder d = HloComputationProto.newBuilder().setId(1).setName("main");
    ShapeProto act = f32(32, 256);
    d.addInstructions(HloInstructionProto.newBuilder().setId(0).setName("p").setOpcode("parameter").setShape(act));
    long constantId = 1_000_000;
    if (constant != null) {
      d.addInstructions(HloInstructionProto.newBuilder().setId(constantId).setName("scale").setOpcode("constant")
          .setShape(f32()).setLiteral(dev.xlac.hlo.proto.XlaDataProtos.LiteralProto.newBuilder().setShape(f32())
              .setF32S(com.google.protobuf.ByteString.copyFrom(java.nio.ByteBuffer.allocate(4)
                  .order(java.nio.ByteOrder.LITTLE_ENDIAN).putFloat(constant).array()))));
    }
    String[] ops = {"add", "multiply", "tanh", "exponential", "negate"};
    for (int i = 1; i < 400_000; i++) {
      HloInstructionProto.Builder in = HloInstructionProto.newBuilder().setId(i).setName(ops[i % 5] + "." + i)
          .setOpcode(ops[i % 5]).setShape(act).addOperandIds(i - 1)
          .setMetadata(OpMetadata.newBuilder().setOpName("jit(train_step)/layer_" + (i / 20) + "/" + ops[i % 5])
              .setSourceFile("/home/user/models/deep.py").setSourceLine(100 + i % 700));
      if (constant != null && i == 200_001) {
        in.addOperandIds(constantId);
      } else if (i % 5 < 2) {
        in.addOperandIds(Math.max(0, i - 7));
      }
      d.addInstructions(in);
    }
    d.setRootId(399_999);
    return HloModuleProto.newBuilder().setName("layers").setEntryComputationId(1).addComputations(d).build();
  }

  static void write(Path f, HloModuleProto m) throws IOException {
    Files.write(f, HloProto.newBuilder().setHloModule(m).build().toByteArray());
    System.out.printf(Locale.ROOT, "wrote %s (%.1f MB)%n", f, Files.size(f) / 1e6);
  }

  static void time(Path file, int reps) {
    HloModuleReader reader = new HloModuleReader();
    GraphFingerprint first = null;
    for (int i = 0; i < 3; i++) { // warm-up: JIT, page cache
      first = reader.read(file).fingerprint();
    }
    double[] secs = new double[reps];
    for (int i = 0; i < reps; i++) {
      long t0 = System.nanoTime();
      LoadedModule m = reader.read(file);
      GraphFingerprint fp = m.fingerprint();
      secs[i] = (System.nanoTime() - t0) / 1e9;
      if (!fp.equals(first)) {
        throw new IllegalStateException("fingerprint changed between runs");
      }
    }
    Arrays.sort(secs);
    System.out.printf(Locale.ROOT, "%s best=%.4f median=%.4f%n", file.getFileName(), secs[0], secs[reps / 2]);
  }

  static void peak(Path file) {
    // Heap used right after each full collection: the live data at that moment, garbage excluded.
    // (After a young collection the old generation's garbage would still count.)
    AtomicLong liveMax = new AtomicLong();
    java.util.Set<String> heapPools = new java.util.HashSet<>();
    for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
      if (p.getType() == MemoryType.HEAP) {
        heapPools.add(p.getName());
      }
    }
    for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      ((NotificationEmitter) gc).addNotificationListener((n, h) -> {
        if (n.getType().equals(GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION)) {
          GarbageCollectionNotificationInfo note = GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData());
          if (!note.getGcAction().contains("major")) {
            return;
          }
          GcInfo info = note.getGcInfo();
          long used = info.getMemoryUsageAfterGc().entrySet().stream().filter(e -> heapPools.contains(e.getKey()))
              .mapToLong(e -> e.getValue().getUsed()).sum();
          liveMax.accumulateAndGet(used, Math::max);
        }
      }, null, null);
    }
    System.gc();
    long baseline = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    liveMax.set(0);
    for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
      p.resetPeakUsage();
    }
    LoadedModule m = new HloModuleReader().read(file);
    GraphFingerprint fp = m.fingerprint();
    long peak = 0;
    for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
      if (p.getType() == MemoryType.HEAP) {
        peak += p.getPeakUsage().getUsed();
      }
    }
    // A full collection at the end, with the work's result still held.
    System.gc();
    long end = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    java.lang.ref.Reference.reachabilityFence(m);
    try {
      Thread.sleep(200); // GC notifications arrive on a JMX thread
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    long live = Math.max(liveMax.get(), end);
    System.out.printf(Locale.ROOT, "%s peak_heap_bytes=%d live_after_gc_bytes=%d jvm_baseline_bytes=%d fingerprint=%s%n",
        file.getFileName(), peak, live, baseline, fp);
  }

}
