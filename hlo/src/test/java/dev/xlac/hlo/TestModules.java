package dev.xlac.hlo;

import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.HloProtos.HloProto;
import dev.xlac.hlo.proto.XlaDataProtos.LayoutProto;
import dev.xlac.hlo.proto.XlaDataProtos.LiteralProto;
import dev.xlac.hlo.proto.XlaDataProtos.OpMetadata;
import dev.xlac.hlo.proto.XlaDataProtos.PrimitiveType;
import dev.xlac.hlo.proto.XlaDataProtos.ProgramShapeProto;
import dev.xlac.hlo.proto.XlaDataProtos.ShapeProto;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Small hand-built modules for the fingerprint's property tests. Shared with other modules' tests. */
public final class TestModules {
  private TestModules() {}

  public static ShapeProto f32(long... dims) {
    ShapeProto.Builder s = ShapeProto.newBuilder().setElementType(PrimitiveType.F32);
    LayoutProto.Builder l = LayoutProto.newBuilder();
    for (long d : dims) {
      s.addDimensions(d);
      s.addIsDynamicDimension(false);
    }
    for (int i = dims.length - 1; i >= 0; i--) {
      l.addMinorToMajor(i);
    }
    return s.setLayout(l).build();
  }

  /**
   * {@code f(p0, p1) = add(multiply(p0, c), p1)} with the given constant, ids starting at
   * {@code idBase}, names with a suffix, and source metadata at {@code line}.
   */
  public static HloModuleProto mulAdd(float constant, long idBase, String suffix, int line) {
    ShapeProto s = f32(4);
    OpMetadata md = OpMetadata.newBuilder().setOpName("jit(step)/mul" + suffix).setSourceFile("/tmp/train" + suffix + ".py")
        .setSourceLine(line).build();
    HloInstructionProto p0 = HloInstructionProto.newBuilder().setId(idBase).setName("p0" + suffix).setOpcode("parameter")
        .setShape(s).setParameterNumber(0).setMetadata(md).build();
    HloInstructionProto p1 = HloInstructionProto.newBuilder().setId(idBase + 1).setName("p1" + suffix).setOpcode("parameter")
        .setShape(s).setParameterNumber(1).build();
    java.nio.ByteBuffer data = java.nio.ByteBuffer.allocate(16).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < 4; i++) {
      data.putFloat(constant);
    }
    LiteralProto lit = LiteralProto.newBuilder().setShape(s).setF32S(com.google.protobuf.ByteString.copyFrom(data.array()))
        .build();
    HloInstructionProto c = HloInstructionProto.newBuilder().setId(idBase + 2).setName("c" + suffix).setOpcode("constant")
        .setShape(s).setLiteral(lit).build();
    HloInstructionProto mul = HloInstructionProto.newBuilder().setId(idBase + 3).setName("mul" + suffix).setOpcode("multiply")
        .setShape(s).addOperandIds(idBase).addOperandIds(idBase + 2).setMetadata(md).build();
    HloInstructionProto add = HloInstructionProto.newBuilder().setId(idBase + 4).setName("add" + suffix).setOpcode("add")
        .setShape(s).addOperandIds(idBase + 3).addOperandIds(idBase + 1).build();
    HloComputationProto comp = HloComputationProto.newBuilder().setId(idBase + 10).setName("main" + suffix)
        .addInstructions(p0).addInstructions(p1).addInstructions(c).addInstructions(mul).addInstructions(add)
        .setRootId(idBase + 4)
        .setProgramShape(ProgramShapeProto.newBuilder().addParameters(s).addParameters(s).setResult(s)
            .addParameterNames("p0" + suffix).addParameterNames("p1" + suffix))
        .build();
    return HloModuleProto.newBuilder().setName("jit_step" + suffix).setId(idBase + 20).setEntryComputationName(comp.getName())
        .setEntryComputationId(comp.getId()).addComputations(comp).setHostProgramShape(comp.getProgramShape()).build();
  }

  public static HloModuleProto mulAdd(float constant) {
    return mulAdd(constant, 1, "", 10);
  }

  public static Path writeDump(Path dir, String name, HloModuleProto module) throws IOException {
    Files.createDirectories(dir);
    Path f = dir.resolve(name);
    Files.write(f, HloProto.newBuilder().setHloModule(module).build().toByteArray());
    return f;
  }

  private static Path extractedGolden;

  /**
   * A golden dumps directory (real JAX dumps, see golden/README.md). Other modules see the
   * fixtures inside the hlo test-jar; those are copied out once, to a temp directory.
   */
  public static synchronized Path golden(String sub) {
    try {
      java.net.URI uri = TestModules.class.getResource("/golden/" + sub).toURI();
      if (uri.getScheme().equals("file")) {
        return Path.of(uri);
      }
      if (extractedGolden == null) {
        Path target = Files.createTempDirectory("xlac-golden");
        try (java.nio.file.FileSystem jar = java.nio.file.FileSystems.newFileSystem(uri, java.util.Map.of());
            var files = Files.walk(jar.getPath("/golden"))) {
          for (Path p : (Iterable<Path>) files::iterator) {
            Path out = target.resolve(p.toString().substring(1));
            if (Files.isDirectory(p)) {
              Files.createDirectories(out);
            } else {
              Files.copy(p, out);
            }
          }
        }
        extractedGolden = target;
      }
      return extractedGolden.resolve("golden").resolve(sub);
    } catch (Exception e) {
      throw new IllegalStateException("golden fixture missing: " + sub, e);
    }
  }
}
