package dev.xlac.hlo;

import static dev.xlac.hlo.TestModules.mulAdd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.ExitCode;
import dev.xlac.hlo.proto.HloProtos.HloProto;
import dev.xlac.hlo.proto.HloProtos.HloSnapshot;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HloModuleReaderTest {
  @TempDir
  Path dir;

  private final HloModuleReader reader = new HloModuleReader();

  private Path write(String name, byte[] bytes) throws IOException {
    Path f = dir.resolve(name);
    Files.write(f, bytes);
    return f;
  }

  private static byte[] dumpBytes() {
    return HloProto.newBuilder().setHloModule(mulAdd(2f)).build().toByteArray();
  }

  private static byte[] gzip(byte[] b) throws IOException {
    ByteArrayOutputStream bos = new ByteArrayOutputStream();
    try (OutputStream gz = new GZIPOutputStream(bos)) {
      gz.write(b);
    }
    return bos.toByteArray();
  }

  private void assertBadInput(Path f, String reasonPart) {
    assertThatThrownBy(() -> reader.read(f))
        .isInstanceOf(HloReadException.class)
        .satisfies(e -> {
          HloReadException h = (HloReadException) e;
          assertThat(h.exitCode()).isEqualTo(ExitCode.BAD_INPUT);
          assertThat(h.getMessage()).startsWith("cannot read " + f + ": ").doesNotContain("\n");
          assertThat(h.reason()).contains(reasonPart);
        });
  }

  @Test
  void readsAllThreeKindsAndGzip() throws IOException {
    byte[] dump = dumpBytes();
    GraphFingerprint expected = GraphFingerprint.of(mulAdd(2f));
    LoadedModule a = reader.read(write("module_0001.jit_step.before_optimizations.hlo.pb", dump));
    LoadedModule b = reader.read(write("module_0001.jit_step.before_optimizations.hlo.pb.gz", gzip(dump)));
    LoadedModule c = reader.read(write("model.hlo_module.pb", mulAdd(2f).toByteArray()));
    LoadedModule d = reader.read(write("module_0001.jit_step.execution_0000.hlo_snapshot.pb",
        HloSnapshot.newBuilder().setHlo(HloProto.newBuilder().setHloModule(mulAdd(2f))).setExecutionPlatform("Host")
            .build().toByteArray()));
    assertThat(a.kind()).isEqualTo(HloFileKind.HLO_PROTO);
    assertThat(b.kind()).isEqualTo(HloFileKind.HLO_PROTO);
    assertThat(c.kind()).isEqualTo(HloFileKind.HLO_MODULE);
    assertThat(d.kind()).isEqualTo(HloFileKind.HLO_SNAPSHOT);
    for (LoadedModule m : new LoadedModule[] {a, b, c, d}) {
      assertThat(m.fingerprint()).isEqualTo(expected);
      assertThat(m.moduleName()).isEqualTo("jit_step");
    }
  }

  @Test
  void sniffsTheKindOfAFileWithAnUnfamiliarName() throws IOException {
    assertThat(reader.read(write("graph.bin", dumpBytes())).kind()).isEqualTo(HloFileKind.HLO_PROTO);
    assertThat(reader.read(write("graph2.bin", mulAdd(2f).toByteArray())).kind()).isEqualTo(HloFileKind.HLO_MODULE);
  }

  @Test
  void packedFloatArraysParseAsTheirWireBytesAndReserialiseUnchanged() throws Exception {
    // A LiteralProto with f32s = [1.5, -2.0] written as upstream's packed `repeated float` (field 8).
    java.io.ByteArrayOutputStream lit = new java.io.ByteArrayOutputStream();
    com.google.protobuf.CodedOutputStream out = com.google.protobuf.CodedOutputStream.newInstance(lit);
    out.writeTag(8, com.google.protobuf.WireFormat.WIRETYPE_LENGTH_DELIMITED);
    out.writeUInt32NoTag(8);
    out.writeFloatNoTag(1.5f);
    out.writeFloatNoTag(-2.0f);
    out.flush();
    var parsed = dev.xlac.hlo.proto.XlaDataProtos.LiteralProto.parseFrom(lit.toByteArray());
    java.nio.ByteBuffer f = parsed.getF32S().asReadOnlyByteBuffer().order(java.nio.ByteOrder.LITTLE_ENDIAN);
    assertThat(f.getFloat()).isEqualTo(1.5f);
    assertThat(f.getFloat()).isEqualTo(-2.0f);
    assertThat(parsed.toByteArray()).isEqualTo(lit.toByteArray());
  }

  @Test
  void emptyFile() throws IOException {
    assertBadInput(write("a.hlo.pb", new byte[0]), "empty file");
  }

  @Test
  void truncatedFile() throws IOException {
    byte[] d = dumpBytes();
    assertBadInput(write("a.hlo.pb", Arrays.copyOf(d, d.length - 7)), "truncated");
  }

  @Test
  void randomBytesAreNotAModule() throws IOException {
    byte[] junk = new byte[4096];
    new Random(7).nextBytes(junk);
    Path f = write("junk.hlo.pb", junk);
    assertThatThrownBy(() -> reader.read(f)).isInstanceOf(HloReadException.class)
        .hasMessageStartingWith("cannot read " + f + ": ");
  }

  @Test
  void nonProtobufText() throws IOException {
    assertBadInput(write("notes.hlo.pb", "hello, this is not a protobuf at all\n".getBytes()), "");
  }

  @Test
  void textDumpGetsAHint() throws IOException {
    assertBadInput(write("m.hlo.pb", "HloModule jit_step, entry_computation_layout={}\n".getBytes()),
        "--xla_dump_hlo_as_proto");
  }

  @Test
  void hugeDeclaredLength() throws IOException {
    // Field 1, wire type 2, declared length 2^31-1, then nothing.
    assertBadInput(write("huge.hlo.pb", new byte[] {0x0a, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x07}),
        "beyond the end of the data");
  }

  @Test
  void enormousPackedRepeatedField() throws IOException {
    // Module > computation > instruction > operand_ids(36) packed, declared 1 GiB long.
    byte[] b = {0x0a, 0x0c, 0x1a, 0x0a, 0x12, 0x08, (byte) 0xa2, 0x02, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80,
        0x04, 0x01};
    assertBadInput(write("packed.hlo.pb", b), "truncated");
  }

  @Test
  void deepNesting() throws IOException {
    // 500 levels of ShapeProto.tuple_shapes inside an instruction's shape.
    byte[] inner = new byte[0];
    for (int i = 0; i < 500; i++) {
      inner = lengthDelimited(4, inner);
    }
    byte[] instr = lengthDelimited(3, inner);
    byte[] comp = lengthDelimited(2, instr);
    byte[] module = lengthDelimited(3, comp);
    assertBadInput(write("deep.hlo.pb", lengthDelimited(1, module)), "nested more than");
  }

  @Test
  void corruptGzip() throws IOException {
    byte[] gz = gzip(dumpBytes());
    gz[gz.length / 2] ^= 0x55;
    gz = Arrays.copyOf(gz, gz.length - 4);
    assertBadInput(write("m.before_optimizations.hlo.pb.gz", gz), "gzip");
  }

  @Test
  void gzipBombStopsAtTheCap() throws IOException {
    byte[] zeros = new byte[8 << 20];
    Path f = write("bomb.hlo.pb.gz", gzip(zeros));
    HloModuleReader small = new HloModuleReader(1 << 20);
    assertThatThrownBy(() -> small.read(f)).isInstanceOf(HloReadException.class)
        .hasMessageContaining("decompresses to more than");
  }

  @Test
  void dumpWithoutModuleAndMalformedGraph() throws IOException {
    assertBadInput(write("empty-proto.hlo.pb", HloProto.newBuilder().setUnknownFields(
        com.google.protobuf.UnknownFieldSet.newBuilder().addField(9, com.google.protobuf.UnknownFieldSet.Field.newBuilder()
            .addVarint(1).build()).build()).build().toByteArray()), "no HLO module");
    var bad = mulAdd(2f).toBuilder();
    bad.getComputationsBuilder(0).getInstructionsBuilder(4).setOperandIds(0, 999);
    assertBadInput(write("bad.hlo.pb", HloProto.newBuilder().setHloModule(bad).build().toByteArray()),
        "malformed HLO module: instruction add (add) in computation main uses operand id 999");
  }

  @Test
  void missingFileAndDirectory() {
    assertBadInput(dir.resolve("nope.hlo.pb"), "no such file");
    assertBadInput(dir, "is a directory");
  }

  private static byte[] lengthDelimited(int field, byte[] payload) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    writeVarint(out, ((long) field << 3) | 2);
    writeVarint(out, payload.length);
    out.writeBytes(payload);
    return out.toByteArray();
  }

  private static void writeVarint(ByteArrayOutputStream out, long v) {
    while ((v & ~0x7FL) != 0) {
      out.write((int) ((v & 0x7F) | 0x80));
      v >>>= 7;
    }
    out.write((int) v);
  }
}
