package dev.xlac.hlo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The shipped {@value WireSchema#RESOURCE} must be exactly what {@link WireSchemaSource} renders
 * from the generated descriptors, and the tables {@link WireSchema} loads from it must equal the
 * descriptor-built ones, so a change to {@code hlo/src/main/proto} cannot leave stale tables.
 */
class WireSchemaTest {
  private static final String SHIPPED = "hlo/src/main/resources/dev/xlac/hlo/" + WireSchema.RESOURCE;

  private static String shippedText() throws IOException {
    try (InputStream in = WireSchema.class.getResourceAsStream(WireSchema.RESOURCE)) {
      assertThat(in).as("resource " + WireSchema.RESOURCE).isNotNull();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void shippedResource_isWhatTheDescriptorsRender() throws IOException {
    String expected = WireSchemaSource.render(WireSchemaSource.build());
    if (!expected.equals(shippedText())) {
      Path out = Path.of(System.getProperty("basedir", ".")).resolve("target").resolve(WireSchema.RESOURCE)
          .toAbsolutePath().normalize();
      Files.createDirectories(out.getParent());
      Files.writeString(out, expected);
      fail(SHIPPED + " is stale: it does not match the schema in hlo/src/main/proto. The current tables were"
          + " written to " + out + "; review them and, from the repository root: cp " + out + " " + SHIPPED);
    }
  }

  @Test
  void loadedTables_equalTheDescriptorBuiltOnes() {
    WireSchema.Tables built = WireSchemaSource.build();
    // The tables WireSchema's static initialiser loaded, reached from its roots.
    Map<WireSchema, WireSchema> builtToLoaded = new IdentityHashMap<>();
    assertSameSchema(built.type("xla.HloSnapshot"), WireSchema.Shipped.HLO_SNAPSHOT, builtToLoaded);
    assertThat(builtToLoaded.keySet()).as("every type is reachable from HloSnapshot")
        .containsExactlyInAnyOrderElementsOf(built.types().values());
    assertThat(builtToLoaded.get(built.type("xla.HloProto"))).isSameAs(WireSchema.Shipped.HLO_PROTO);
    assertThat(builtToLoaded.get(built.type("xla.HloModuleProto"))).isSameAs(WireSchema.Shipped.HLO_MODULE);
    assertThat(builtToLoaded.get(built.type("xla.HloComputationProto"))).isSameAs(WireSchema.Shipped.HLO_COMPUTATION);
    assertThat(builtToLoaded.get(built.type("xla.HloInstructionProto"))).isSameAs(WireSchema.Shipped.HLO_INSTRUCTION);
    assertThat(builtToLoaded.get(built.type("xla.ShapeProto"))).isSameAs(WireSchema.Shipped.SHAPE_SCHEMA);
    for (int t = -1; t < 300; t++) {
      boolean expected = t >= 0 && t < built.arrayTypes().length && built.arrayTypes()[t];
      assertThat(WireSchema.isArrayType(t)).as("PrimitiveType " + t + " is an array type").isEqualTo(expected);
    }
    assertThat(WireSchema.isArrayType(1)).as("PRED").isTrue();
    assertThat(WireSchema.isArrayType(13)).as("TUPLE").isFalse();
  }

  @Test
  void parse_ofTheRenderedText_givesTheSameTables() throws IOException {
    WireSchema.Tables built = WireSchemaSource.build();
    WireSchema.Tables parsed = WireSchema.parse(WireSchemaSource.render(built).getBytes(StandardCharsets.UTF_8));
    assertThat(parsed.types().keySet()).containsExactlyElementsOf(built.types().keySet());
    Map<WireSchema, WireSchema> builtToParsed = new IdentityHashMap<>();
    for (WireSchema s : built.types().values()) {
      assertSameSchema(s, parsed.type(s.name), builtToParsed);
    }
  }

  /** The comparison itself must see a one-flag difference (otherwise the tests above could not fail). */
  @Test
  void comparison_detectsAChangedFlag() throws IOException {
    WireSchema.Tables built = WireSchemaSource.build();
    String text = WireSchemaSource.render(built);
    String changed = text.replace("  2 string skip - - entry_computation_name", "  2 string - - - entry_computation_name");
    assertThat(changed).isNotEqualTo(text);
    WireSchema.Tables parsed = WireSchema.parse(changed.getBytes(StandardCharsets.UTF_8));
    assertThatThrownBy(() -> assertSameSchema(built.type("xla.HloSnapshot"), parsed.type("xla.HloSnapshot"),
        new IdentityHashMap<>())).isInstanceOf(AssertionError.class).hasMessageContaining("xla.HloModuleProto");
  }

  @Test
  void parse_rejectsMalformedTables() {
    assertThatThrownBy(() -> parse("message a.B other 2\n  1 int32 - - - x\n"))
        .hasMessageContaining("a.B declares 2 fields but lists 1");
    assertThatThrownBy(() -> parse("message a.B other 1\n  1 message - - a.C x\n"))
        .hasMessageContaining("no message type a.C");
    assertThatThrownBy(() -> parse("message a.B other 2\n  2 int32 - - - x\n  1 int32 - - - y\n"))
        .hasMessageContaining("line 3").hasMessageContaining("must ascend");
    assertThatThrownBy(() -> parse("message a.B other 1\n  1 int33 - - - x\n")).hasMessageContaining("int33");
    assertThatThrownBy(() -> parse("message a.B other 1\n  1 int32 packed - - x\n")).hasMessageContaining("packed");
    assertThatThrownBy(() -> parse("message a.B other 1\n  1 int32 -  - - x\n")).hasMessageContaining("empty word");
    assertThatThrownBy(() -> parse("message a.B other 1\n  x1 int32 - - - x\n")).hasMessageContaining("not a number: x1");
    assertThatThrownBy(() -> parse("message a.B other 1\n  1 int32 - - - x\nmessage a.B other 0\n"))
        .hasMessageContaining("duplicate message type a.B");
    assertThatThrownBy(() -> parse("  1 int32 - - - x\n")).hasMessageContaining("line 1: unexpected field line");
    assertThat(parse("# c\narray-type 3 S16\nmessage a.B other 1\n  1 message repeated,skip 0 a.B x\n")
        .type("a.B").children[0].name).isEqualTo("a.B");
  }

  private static WireSchema.Tables parse(String text) {
    return WireSchema.parse(text.getBytes(StandardCharsets.UTF_8));
  }

  /** Every table of {@code a} and {@code b} agrees, and their children correspond one to one, recursively. */
  private static void assertSameSchema(WireSchema a, WireSchema b, Map<WireSchema, WireSchema> seen) {
    List<WireSchema[]> pending = new ArrayList<>();
    pending.add(new WireSchema[] {a, b});
    while (!pending.isEmpty()) {
      WireSchema[] pair = pending.removeLast();
      WireSchema x = pair[0];
      WireSchema y = pair[1];
      WireSchema previous = seen.putIfAbsent(x, y);
      if (previous != null) {
        assertThat(previous).as("the one table for " + x.name).isSameAs(y);
        continue;
      }
      String what = x.name;
      assertThat(y.name).as(what).isEqualTo(x.name);
      assertThat(y.role).as(what + " role").isEqualTo(x.role);
      assertThat(y.numbers).as(what + " numbers").containsExactly(x.numbers);
      assertThat(y.kinds).as(what + " kinds").containsExactly(x.kinds);
      assertThat(y.repeated).as(what + " repeated").containsExactly(x.repeated);
      assertThat(y.map).as(what + " map").containsExactly(x.map);
      assertThat(y.oneof).as(what + " oneof").containsExactly(x.oneof);
      assertThat(y.skip).as(what + " skip").containsExactly(x.skip);
      for (int n = 0; n <= 200; n++) {
        assertThat(y.indexOf(n)).as(what + " indexOf(" + n + ")").isEqualTo(x.indexOf(n));
      }
      for (int i = 0; i < x.size(); i++) {
        assertThat(y.children[i] == null).as(what + " field " + x.numbers[i] + " has a child")
            .isEqualTo(x.children[i] == null);
        if (x.children[i] != null) {
          pending.add(new WireSchema[] {x.children[i], y.children[i]});
        }
      }
    }
  }
}
