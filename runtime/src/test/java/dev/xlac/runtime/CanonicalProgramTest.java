package dev.xlac.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The canonical program in the request key (runtime/README.md, "Canonical program"), and the C side's. */
class CanonicalProgramTest {
  private static final byte[] HLO = "hlo".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] MLIR = "mlir".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] IDENTITY = RequestKeyTest.IDENTITY.getBytes(StandardCharsets.UTF_8);
  private static final HexFormat HEX = HexFormat.of();

  static RequestKey hloKey(byte[] program) {
    return RequestKey.of(HLO, program, new byte[0], IDENTITY);
  }

  /** FrontendAttributes with these entries in this order ({k0, v0, k1, v1, ...}). */
  static Proto attributes(String... kv) {
    Proto a = new Proto();
    for (int i = 0; i < kv.length; i += 2) {
      a.m(1, new Proto().s(1, kv[i]).s(2, kv[i + 1]));
    }
    return a;
  }

  /** A module of one computation of two dots with these attributes, module attributes and a schedule of two. */
  static byte[] module(Proto first, Proto second, Proto moduleAttributes, boolean scheduleReversed) {
    Proto computation = new Proto().s(1, "main.4")
        .m(2, new Proto().s(1, "dot.1").s(2, "dot").v(35, 1).m(68, first))
        .m(2, new Proto().s(1, "dot.2").s(2, "dot").v(35, 2).m(68, second)).v(5, 4);
    Proto schedule = new Proto();
    for (int id : scheduleReversed ? new int[] {9, 4} : new int[] {4, 9}) {
      schedule.m(1, new Proto().v(1, id).m(2, new Proto().v(1, id)));
    }
    return new Proto().s(1, "SyncTensorsGraph.5").m(3, computation).m(7, schedule).m(19, moduleAttributes).toBytes();
  }

  static byte[] module(String firstOrder, boolean moduleReversed, boolean scheduleReversed) {
    Proto first = firstOrder.equals("xy") ? attributes("grad_x", "false", "grad_y", "false")
        : attributes("grad_y", "false", "grad_x", "false");
    Proto moduleAttributes = moduleReversed ? attributes("b", "2", "a", "1") : attributes("a", "1", "b", "2");
    return module(first, attributes("grad_y", "true", "grad_x", "false"), moduleAttributes, scheduleReversed);
  }

  @Test
  void frontendAttributesOrder_doesNotChangeTheKey() {
    byte[] xy = module("xy", false, false);
    byte[] yx = module("yx", false, false);
    assertThat(xy).hasSameSizeAs(yx).isNotEqualTo(yx);
    assertThat(hloKey(yx)).isEqualTo(hloKey(xy));
    assertThat(hloKey(module("xy", true, false))).as("module attributes").isEqualTo(hloKey(xy));
    assertThat(hloKey(module("xy", false, true))).as("schedule entries").isEqualTo(hloKey(xy));
    assertThat(CanonicalProgram.canonicalHlo(yx)).isEqualTo(CanonicalProgram.canonicalHlo(xy));
  }

  @Test
  void changedAttributeValue_changesTheKey() {
    byte[] base = module("xy", false, false);
    byte[] otherValue = module(attributes("grad_x", "true", "grad_y", "false"),
        attributes("grad_y", "true", "grad_x", "false"), attributes("a", "1", "b", "2"), false);
    byte[] oneLess = module(attributes("grad_x", "false"), attributes("grad_y", "true", "grad_x", "false"),
        attributes("a", "1", "b", "2"), false);
    byte[] swappedBetweenDots = module(attributes("grad_y", "true", "grad_x", "false"),
        attributes("grad_x", "false", "grad_y", "false"), attributes("a", "1", "b", "2"), false);
    assertThat(hloKey(otherValue)).isNotEqualTo(hloKey(base));
    assertThat(hloKey(oneLess)).isNotEqualTo(hloKey(base));
    assertThat(hloKey(swappedBetweenDots)).as("the attributes of one dot moved to the other").isNotEqualTo(hloKey(base));
  }

  @Test
  void duplicateAttributeKeys_theLastWins() {
    Proto second = attributes("k", "v");
    Proto modAttrs = attributes();
    byte[] trueThenFalse = module(attributes("grad_x", "true", "grad_x", "false"), second, modAttrs, false);
    byte[] falseThenTrue = module(attributes("grad_x", "false", "grad_x", "true"), second, modAttrs, false);
    byte[] justFalse = module(attributes("grad_x", "false"), second, modAttrs, false);
    assertThat(hloKey(trueThenFalse)).isEqualTo(hloKey(justFalse));
    assertThat(hloKey(falseThenTrue)).isNotEqualTo(hloKey(justFalse));
  }

  @Test
  void unparseableHlo_keysItsExactBytes_inADomainOfItsOwn() {
    byte[] good = module("xy", false, false);
    int raw = 0;
    for (int cut = 1; cut < good.length; cut += 5) {
      byte[] truncated = Arrays.copyOf(good, cut);
      if (CanonicalProgram.canonicalHlo(truncated) != null) {
        continue; // a cut between top-level fields is a smaller module
      }
      raw++;
      byte[] keyed = CanonicalProgram.keyed(HLO, truncated);
      assertThat(keyed[0]).isEqualTo((byte) 0xff);
      assertThat(Arrays.copyOfRange(keyed, 1, keyed.length)).isEqualTo(truncated);
    }
    assertThat(raw).isPositive();
    // a canonical form never starts with 0xff (a tag of wire type 7), so no parsed program shares a raw one's key
    assertThat(CanonicalProgram.canonicalHlo(new byte[] {(byte) 0xff, 0x01})).isNull();
    assertThat(CanonicalProgram.canonicalHlo(new Proto().v(19, 1).toBytes())).as("attributes as a varint").isNull();
    assertThat(CanonicalProgram.canonicalHlo(new Proto().m(19, new Proto().m(1, new Proto().v(1, 7))).toBytes()))
        .as("a string key as a varint").isNull();
    // other formats are keyed by their bytes as they are
    byte[] mlir = "module @m {}".getBytes(StandardCharsets.US_ASCII);
    assertThat(CanonicalProgram.keyed(MLIR, mlir)).isSameAs(mlir);
  }

  @Test
  void deepNestingOffThePath_isCopiedNotRecursed() {
    byte[] literal = new byte[0];
    for (int i = 0; i < 2000; i++) { // tuple_literals nested 2000 deep, inside an instruction's literal
      literal = new Proto().bytes(10, literal).toBytes();
    }
    byte[] module = new Proto().m(3, new Proto().m(2, new Proto().bytes(8, literal))).toBytes();
    assertThat(CanonicalProgram.canonicalHlo(module)).isEqualTo(module);
  }

  static byte[] resource(String name) throws IOException {
    try (InputStream in = CanonicalProgramTest.class.getResourceAsStream("/torch-xla-program/" + name)) {
      assertThat(in).as(name).isNotNull();
      return in.readAllBytes();
    }
  }

  @Test
  void twoRealTorchXlaRuns_shareOneKey() throws Exception {
    byte[] run1 = resource("run1.hlo.pb");
    byte[] run2 = resource("run2.hlo.pb");
    assertThat(run1).hasSameSizeAs(run2).isNotEqualTo(run2);
    assertThat(new String(run1, StandardCharsets.ISO_8859_1)).contains("grad_x").contains("grad_y");
    assertThat(CanonicalProgram.canonicalHlo(run1)).isNotNull().isEqualTo(CanonicalProgram.canonicalHlo(run2));
    assertThat(hloKey(run1)).isEqualTo(hloKey(run2));
  }

  /** A real module with the entries of every map shuffled, and its pieces in random orders. */
  static byte[] shuffled(byte[] module, Random random) {
    return new Reshuffler(random).message(module, 0);
  }

  /** Rewrites a module with the entries of each FrontendAttributes map (module's, instructions') in a random order. */
  private record Reshuffler(Random random) {
    byte[] message(byte[] b, int depth) {
      java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
      List<byte[]> entries = new ArrayList<>();
      int at = 0;
      while (at < b.length) {
        long[] tag = varint(b, at);
        int start = at;
        at += (int) tag[1];
        int number = (int) (tag[0] >>> 3);
        int wire = (int) (tag[0] & 7);
        if (wire != 2) {
          at += wire == 0 ? (int) varint(b, at)[1] : wire == 1 ? 8 : 4;
          out.write(b, start, at - start);
          continue;
        }
        long[] len = varint(b, at);
        at += (int) len[1];
        byte[] payload = Arrays.copyOfRange(b, at, at + (int) len[0]);
        at += (int) len[0];
        int sub = depth == 0 && number == 3 ? 1 : depth == 1 && number == 2 ? 2
            : (depth == 0 && number == 19) || (depth == 2 && number == 68) ? 3 : -1;
        if (depth == 3 && number == 1) {
          entries.add(payload);
        } else {
          byte[] written = sub < 0 ? payload : message(payload, sub);
          out.writeBytes(new Proto().bytes(number, written).toBytes());
        }
      }
      Collections.shuffle(entries, random);
      entries.forEach(e -> out.writeBytes(new Proto().bytes(1, e).toBytes()));
      return out.toByteArray();
    }

    static long[] varint(byte[] b, int at) {
      long v = 0;
      for (int i = 0; ; i++) {
        v |= (long) (b[at + i] & 0x7f) << (7 * i);
        if ((b[at + i] & 0x80) == 0) {
          return new long[] {v, i + 1};
        }
      }
    }
  }

  @Test
  void javaCanonicalProgramEqualsTheProxys(@TempDir Path dir) throws Exception {
    byte[] real = resource("run1.hlo.pb");
    Random random = new Random(22);
    List<byte[]> programs = new ArrayList<>(List.of(real, resource("run2.hlo.pb"), module("xy", true, true),
        module("yx", false, false), new byte[0], Arrays.copyOf(real, real.length / 2), new byte[] {(byte) 0xff}));
    for (int i = 0; i < 3; i++) {
      programs.add(shuffled(real, random));
    }
    // fields out of order, at every level, and a tag and a length as non-minimal varints
    Proto instruction = new Proto().m(68, attributes("b", "1", "a", "2")).s(2, "dot").s(1, "dot.1");
    programs.add(new Proto().m(19, attributes("z", "0")).m(3, new Proto().v(5, 1).m(2, instruction)).s(1, "m")
        .toBytes());
    programs.add(new byte[] {(byte) 0x8a, 0x00, (byte) 0x82, 0x00, 'a', 'b'}); // name "ab"
    List<String> files = new ArrayList<>();
    for (byte[] p : programs) {
      files.add(Files.write(Files.createTempFile(dir, "program", ".pb"), p).toString());
    }
    List<String> args = new ArrayList<>(List.of("program"));
    args.addAll(files);
    List<String> c = KeyTool.run(args.toArray(String[]::new)).lines().toList();
    assertThat(c).hasSize(programs.size());
    for (int i = 0; i < programs.size(); i++) {
      byte[] java = CanonicalProgram.canonicalHlo(programs.get(i));
      assertThat(c.get(i)).as("program %d", i).isEqualTo(java == null ? "raw" : HEX.formatHex(java));
      assertThat(java == null).as("program %d is unparseable", i).isEqualTo(i == 5 || i == 6); // cut short; 0xff
      String format = i % 2 == 0 ? "hlo" : "mlir";
      assertThat(KeyTool.key(dir, format, programs.get(i), new byte[0], RequestKeyTest.IDENTITY)).as("key %d", i)
          .isEqualTo(RequestKey.of(format.getBytes(StandardCharsets.US_ASCII), programs.get(i), new byte[0], IDENTITY)
              .text());
    }
    // the shuffled copies are other bytes, one key
    for (byte[] s : programs.subList(programs.size() - 5, programs.size() - 2)) {
      assertThat(s).isNotEqualTo(real);
      assertThat(hloKey(s)).isEqualTo(hloKey(real));
    }
  }
}
