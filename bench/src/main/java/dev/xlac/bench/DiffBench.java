package dev.xlac.bench;

import dev.xlac.hlo.GraphDiff;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.HloProtos.HloProto;
import dev.xlac.hlo.proto.XlaDataProtos.LiteralProto;
import dev.xlac.hlo.proto.XlaDataProtos.OpMetadata;
import dev.xlac.hlo.proto.XlaDataProtos.ShapeProto;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;

/**
 * Diff benchmark harness (driven by bench/diff.sh).
 *
 * <ul>
 *   <li>{@code generate DIR}: writes {@code layers_400k_c1.hlo.pb} and {@code layers_400k_c2.hlo.pb}: the
 *       hashing benchmark's 400,000-instruction module (bench/README.md, "Hashing") with one scalar
 *       constant, 0.5 in the first and 0.75 in the second.
 *   <li>{@code time A B REPS}: in one JVM, warm, best of REPS: hashing A, hashing B (read + fingerprint, as
 *       {@code xlac hash}), and {@code xlac diff}'s work (read both + {@link GraphDiff#of}); prints the ratio of
 *       the diff to the two hashes and the verdict.
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
    HloComputationProto.Builder d = HloComputationProto.newBuilder().setId(1).setName("main");
    ShapeProto act = HashBench.f32(32, 256);
    d.addInstructions(HloInstructionProto.newBuilder().setId(0).setName("p").setOpcode("parameter").setShape(act));
    long constantId = 1_000_000;
    d.addInstructions(HloInstructionProto.newBuilder().setId(constantId).setName("scale").setOpcode("constant")
        .setShape(HashBench.f32()).setLiteral(LiteralProto.newBuilder().setShape(HashBench.f32()).setF32S(com.google.protobuf.ByteString
            .copyFrom(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(constant).array()))));
    String[] ops = {"add", "multiply", "tanh", "exponential", "negate"};
    for (int i = 1; i < 400_000; i++) {
      HloInstructionProto.Builder in = HloInstructionProto.newBuilder().setId(i).setName(ops[i % 5] + "." + i)
          .setOpcode(ops[i % 5]).setShape(act).addOperandIds(i - 1)
          .setMetadata(OpMetadata.newBuilder().setOpName("jit(train_step)/layer_" + (i / 20) + "/" + ops[i % 5])
              .setSourceFile("/home/user/models/deep.py").setSourceLine(100 + i % 700));
      if (i == 200_001) {
        in.addOperandIds(constantId);
      } else if (i % 5 < 2) {
        in.addOperandIds(Math.max(0, i - 7));
      }
      d.addInstructions(in);
    }
    d.setRootId(399_999);
    Path f = dir.resolve(name);
    Files.write(f, HloProto.newBuilder().setHloModule(HloModuleProto.newBuilder().setName("layers")
        .setEntryComputationId(1).addComputations(d)).build().toByteArray());
    System.out.printf(Locale.ROOT, "wrote %s (%.1f MB)%n", f, Files.size(f) / 1e6);
  }

  static void time(Path a, Path b, int reps) {
    HloModuleReader reader = new HloModuleReader();
    HloModuleReader forDiff = HloModuleReader.forDiff();
    String verdict = null;
    for (int i = 0; i < 2; i++) { // warm-up: JIT, page cache
      reader.read(a).fingerprint();
      reader.read(b).fingerprint();
      verdict = GraphDiff.of(forDiff.read(a), forDiff.read(b)).verdict();
    }
    double[] hashA = new double[reps];
    double[] hashB = new double[reps];
    double[] diff = new double[reps];
    double[] engine = new double[reps];
    for (int i = 0; i < reps; i++) {
      long t0 = System.nanoTime();
      reader.read(a).fingerprint();
      long t1 = System.nanoTime();
      reader.read(b).fingerprint();
      long t2 = System.nanoTime();
      LoadedModule ma = forDiff.read(a);
      LoadedModule mb = forDiff.read(b);
      long t3 = System.nanoTime();
      GraphDiff d = GraphDiff.of(ma, mb);
      long t4 = System.nanoTime();
      if (!d.verdict().equals(verdict)) {
        throw new IllegalStateException("verdict changed between runs");
      }
      hashA[i] = (t1 - t0) / 1e9;
      hashB[i] = (t2 - t1) / 1e9;
      diff[i] = (t4 - t2) / 1e9;
      engine[i] = (t4 - t3) / 1e9;
    }
    Arrays.sort(hashA);
    Arrays.sort(hashB);
    Arrays.sort(diff);
    Arrays.sort(engine);
    double hashes = hashA[0] + hashB[0];
    System.out.printf(Locale.ROOT, "hash_a=%.4f hash_b=%.4f diff=%.4f (read both %.4f + GraphDiff.of %.4f) ratio=%.2fx%n",
        hashA[0], hashB[0], diff[0], diff[0] - engine[0], engine[0], diff[0] / hashes);
    System.out.println("verdict: " + verdict);
  }
}
