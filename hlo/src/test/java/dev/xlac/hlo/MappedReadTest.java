package dev.xlac.hlo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import dev.xlac.core.ExitCode;
import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.HloProtos.HloProto;
import dev.xlac.hlo.proto.XlaDataProtos.LiteralProto;
import dev.xlac.hlo.proto.XlaDataProtos.OpMetadata;
import dev.xlac.hlo.proto.XlaDataProtos.ShapeProto;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Large files are fingerprinted from a read-only mapping instead of the heap. The result must be
 * the same as from the heap, and a file that changes while it is mapped (an XLA dump still being
 * written, then rewritten) must be one ordinary read error, never a JVM crash or an internal error.
 */
class MappedReadTest {
  @TempDir
  Path dir;

  /** About 5 MB: 16 constants of 256 KiB, which pass 2 reads from the mapping, and 20,000 small instructions. */
  static HloModuleProto large(int seed) {
    Random rnd = new Random(seed);
    ShapeProto vec = TestModules.f32(65536);
    HloComputationProto.Builder c = HloComputationProto.newBuilder().setId(1).setName("main");
    c.addInstructions(HloInstructionProto.newBuilder().setId(0).setName("p").setOpcode("parameter").setShape(vec));
    long id = 1;
    for (int k = 0; k < 16; k++) {
      byte[] data = new byte[65536 * 4];
      rnd.nextBytes(data);
      c.addInstructions(HloInstructionProto.newBuilder().setId(id).setName("w" + k).setOpcode("constant").setShape(vec)
          .setLiteral(LiteralProto.newBuilder().setShape(vec).setF32S(ByteString.copyFrom(data))));
      c.addInstructions(HloInstructionProto.newBuilder().setId(id + 1).setName("add" + k).setOpcode("add").setShape(vec)
          .addOperandIds(id - 1).addOperandIds(id));
      id += 2;
    }
    for (int i = 0; i < 20_000; i++, id++) {
      c.addInstructions(HloInstructionProto.newBuilder().setId(id).setName("neg." + i).setOpcode("negate").setShape(vec)
          .addOperandIds(id - 1).setMetadata(OpMetadata.newBuilder().setOpName("jit(step)/neg").setSourceLine(i)));
    }
    return HloModuleProto.newBuilder().setName("large").setEntryComputationId(1)
        .addComputations(c.setRootId(id - 1)).build();
  }

  private Path writeDump(String name, HloModuleProto m) throws IOException {
    Path f = dir.resolve(name);
    Files.write(f, HloProto.newBuilder().setHloModule(m).build().toByteArray());
    // An older time, so that a rewrite in the same clock tick still changes it.
    Files.setLastModifiedTime(f, FileTime.fromMillis(Files.getLastModifiedTime(f).toMillis() - 10_000));
    return f;
  }

  private static HloModuleReader mapping(Consumer<Path> betweenPasses) {
    return new HloModuleReader(HloModuleReader.MAX_MODULE_BYTES, 0, betweenPasses);
  }

  @Test
  void largeFile_isMappedAndGivesWhatTheHeapGives() throws IOException {
    Path f = writeDump("module_0001.jit_large.before_optimizations.hlo.pb", large(1));
    assertThat(Files.size(f)).isGreaterThan(HloModuleReader.MAP_THRESHOLD);
    AtomicInteger mapped = new AtomicInteger();
    LoadedModule m = new HloModuleReader(HloModuleReader.MAX_MODULE_BYTES, HloModuleReader.MAP_THRESHOLD,
        p -> mapped.incrementAndGet()).read(f);
    byte[] bytes = Files.readAllBytes(f);
    LoadedModule heap = new HloModuleReader().parse(f, HloFileKind.HLO_PROTO, bytes, bytes.length);

    assertThat(mapped).hasValue(1);
    assertThat(m.fingerprint()).isEqualTo(heap.fingerprint()).isEqualTo(GraphFingerprint.of(large(1)));
    assertThat(m.moduleName()).isEqualTo("large");
    assertThat(m.fileBytes()).isEqualTo(bytes.length);
    assertThat(m.moduleBytes()).isEqualTo(heap.moduleBytes()).isEqualTo(large(1).toByteArray());
    assertThat(m.module()).isEqualTo(large(1));
  }

  /** A diff keeps a large file mapped; a file changed before the diff is done is the same read error. */
  @Test
  void diffOfLargeFiles_readsMappings_andAFileTruncatedBeforeTheDiffEnds_isFileChanged() throws IOException {
    Path a = writeDump("module_0010.jit_large.before_optimizations.hlo.pb", large(10));
    Path b = writeDump("module_0011.jit_large.before_optimizations.hlo.pb", large(11));
    LoadedModule ma = HloModuleReader.forDiff().read(a);
    LoadedModule mb = HloModuleReader.forDiff().read(b);
    assertThat(ma.fingerprint()).isEqualTo(GraphFingerprint.of(large(10)));
    GraphDiff d = GraphDiff.of(ma, mb);
    assertThat(d.same()).isFalse();
    assertThat(ma.moduleBytes()).isEqualTo(large(10).toByteArray());

    LoadedModule again = HloModuleReader.forDiff().read(b);
    truncate(b, 4096);
    assertThatThrownBy(() -> GraphDiff.of(ma, again)).isInstanceOfSatisfying(HloReadException.class, e -> {
      assertThat(e.getMessage()).isEqualTo("cannot read " + b + ": " + HloModuleReader.CHANGED);
    });
    // The JVM carries on, and so does the other module.
    assertThat(GraphDiff.of(ma, HloModuleReader.forDiff().read(a)).same()).isTrue();
  }

  static Stream<Path> goldenFiles() throws IOException {
    return StreamingFingerprintTest.goldenFiles();
  }

  @ParameterizedTest
  @MethodSource("goldenFiles")
  void goldenDump_mappedGivesWhatTheHeapGives(Path file) throws IOException {
    AtomicInteger mapped = new AtomicInteger();
    LoadedModule m = mapping(p -> mapped.incrementAndGet()).read(file);
    LoadedModule heap = new HloModuleReader(HloModuleReader.MAX_MODULE_BYTES, Long.MAX_VALUE, p -> { }).read(file);
    assertThat(mapped).hasValue(1);
    assertThat(m.kind()).isEqualTo(heap.kind());
    assertThat(m.fingerprint()).isEqualTo(heap.fingerprint());
    assertThat(m.moduleName()).isEqualTo(heap.moduleName());
    assertThat(m.moduleBytes()).isEqualTo(heap.moduleBytes());
  }

  /** Truncation between pass 1 and pass 2: pass 2 then reads pages that the file no longer backs (SIGBUS). */
  @ParameterizedTest
  @ValueSource(longs = {0, 4096, 1 << 20})
  void truncatedBetweenPasses_isFileChangedWhileReading(long newSize) throws IOException {
    Path f = writeDump("module_0002.jit_large.before_optimizations.hlo.pb", large(2));
    HloModuleReader reader = mapping(p -> truncate(p, newSize));
    assertThatThrownBy(() -> reader.read(f)).isInstanceOfSatisfying(HloReadException.class, e -> {
      assertThat(e.exitCode()).isEqualTo(ExitCode.BAD_INPUT);
      assertThat(e.reason()).isEqualTo(HloModuleReader.CHANGED);
      assertThat(e.getMessage()).isEqualTo("cannot read " + f + ": " + HloModuleReader.CHANGED);
      // The JVM reports the fault as an InternalError (or, in compiled code, the garbage it read
      // may fail first; then the file's new size tells).
      assertThat(e.getCause()).isInstanceOfAny(InternalError.class, IllegalStateException.class,
          IndexOutOfBoundsException.class);
    });
    // The JVM carries on: the next read of a good file works.
    Path good = writeDump("module_0003.jit_large.before_optimizations.hlo.pb", large(3));
    assertThat(mapping(p -> { }).read(good).fingerprint()).isEqualTo(GraphFingerprint.of(large(3)));
  }

  @Test
  void rewrittenInPlaceBetweenPasses_isFileChangedWhileReading() throws IOException {
    Path f = writeDump("module_0004.jit_large.before_optimizations.hlo.pb", large(4));
    byte[] other = HloProto.newBuilder().setHloModule(large(5)).build().toByteArray();
    HloModuleReader reader = mapping(p -> {
      try (RandomAccessFile raf = new RandomAccessFile(p.toFile(), "rw")) {
        raf.write(other, 0, (int) Math.min(other.length, raf.length())); // same size, other content
      } catch (IOException e) {
        throw new AssertionError(e);
      }
    });
    assertThatThrownBy(() -> reader.read(f)).isInstanceOfSatisfying(HloReadException.class,
        e -> assertThat(e.reason()).isEqualTo(HloModuleReader.CHANGED));
  }

  @Test
  void rewrittenAfterTheRead_moduleBytesAndModuleRefuseTheNewContent() throws IOException {
    Path f = writeDump("module_0006.jit_large.before_optimizations.hlo.pb", large(6));
    LoadedModule m = mapping(p -> { }).read(f);
    writeDump(f.getFileName().toString(), large(7));
    assertThatThrownBy(m::moduleBytes).isInstanceOfSatisfying(HloReadException.class,
        e -> assertThat(e.reason()).startsWith("file changed since it was read"));
    assertThatThrownBy(m::module).isInstanceOf(HloReadException.class);
    // Back to the content that was fingerprinted: the bytes are served again.
    writeDump(f.getFileName().toString(), large(6));
    assertThat(m.module()).isEqualTo(large(6));
  }

  private static void truncate(Path p, long size) {
    try (RandomAccessFile raf = new RandomAccessFile(p.toFile(), "rw")) {
      raf.setLength(size);
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }
}
