package dev.xlac.compiler.pjrt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.WireFormat;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.io.IOException;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class PjrtCompileOptionsTest {

  @Test
  void toProto_defaults_encodeExecutableBuildOptions() throws IOException {
    Map<Integer, Long> build = decode(PjrtCompileOptions.DEFAULT.toProto());
    assertThat(build).containsExactly(Map.entry(1, -1L), Map.entry(4, 1L), Map.entry(5, 1L));
  }

  @Test
  void with_overrides_replaceFields() throws IOException {
    PjrtCompileOptions o = PjrtCompileOptions.DEFAULT.with(Map.of("device_ordinal", "0", "num_replicas", "2"));
    assertThat(o).isEqualTo(new PjrtCompileOptions(0, 2, 1));
    assertThat(decode(o.toProto())).containsEntry(1, 0L).containsEntry(4, 2L).containsEntry(5, 1L);
  }

  @Test
  void with_unknownKey_isBadInput() {
    assertThatThrownBy(() -> PjrtCompileOptions.DEFAULT.with(Map.of("num_repliacs", "2")))
        .isInstanceOfSatisfying(XlacException.class, e -> assertThat(e.exitCode()).isEqualTo(ExitCode.BAD_INPUT))
        .hasMessageContaining("num_repliacs");
  }

  /** Decodes CompileOptionsProto and returns the varint fields of executable_build_options (field 3). */
  private static Map<Integer, Long> decode(byte[] proto) throws IOException {
    CodedInputStream in = CodedInputStream.newInstance(proto);
    Map<Integer, Long> fields = new TreeMap<>();
    int tag = in.readTag();
    assertThat(WireFormat.getTagFieldNumber(tag)).isEqualTo(3);
    assertThat(WireFormat.getTagWireType(tag)).isEqualTo(WireFormat.WIRETYPE_LENGTH_DELIMITED);
    CodedInputStream build = CodedInputStream.newInstance(in.readByteArray());
    assertThat(in.isAtEnd()).isTrue();
    while (!build.isAtEnd()) {
      int t = build.readTag();
      assertThat(WireFormat.getTagWireType(t)).isEqualTo(WireFormat.WIRETYPE_VARINT);
      fields.put(WireFormat.getTagFieldNumber(t), build.readInt64());
    }
    return fields;
  }
}
