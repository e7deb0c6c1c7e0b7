package dev.xlac.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The one escaping of both identity texts: each keeps its lines and its own separator intact. */
class IdentityTextEscapesTest {
  @Test
  void escaped_hasNoNewlineNorTheKeptCharacter_andRoundTrips() {
    String raw = "a=b\nc\\d\0e\\n";
    String compiler = IdentityTextEscapes.escape(raw, '=', 'e');
    assertThat(compiler).doesNotContain("\n", "=").isEqualTo("a\\eb\\nc\\\\d\0e\\\\n");
    assertThat(IdentityTextEscapes.unescape(compiler, '=', 'e')).isEqualTo(raw);
    String plugin = IdentityTextEscapes.escape(raw, '\0', '0');
    assertThat(plugin).doesNotContain("\n", "\0").isEqualTo("a=b\\nc\\\\d\\0e\\\\n");
    assertThat(IdentityTextEscapes.unescape(plugin, '\0', '0')).isEqualTo(raw);
  }

  @Test
  void compilerIdentity_keepsFlagsAndOptionsWithSeparatorsInThem() {
    CompilerIdentity id = new CompilerIdentity("pjrt", "0.57", "cpu", List.of("--x=1\n2", "a\\b"),
        Map.of("k=ey", "v=al\\e"));
    assertThat(CompilerIdentity.decode(id.encode())).isEqualTo(id);
  }
}
