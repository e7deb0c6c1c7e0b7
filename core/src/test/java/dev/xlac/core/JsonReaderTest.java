package dev.xlac.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonReaderTest {
  @Test
  void parse_readsWhatJsonWrites() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("name", "a \"b\"\n\u00e9\u0001");
    m.put("n", 42L);
    m.put("x", -1.5);
    m.put("list", Arrays.asList(true, false, null, List.of()));
    m.put("empty", Map.of());
    assertThat(JsonReader.parse(Json.write(m))).isEqualTo(m);
  }

  @Test
  void parse_readsEscapesNumbersAndSpace() {
    assertThat(JsonReader.parse(" {\"a\" : [1, 2.0e1, -0, 12345678901234567890, \"\\u0041\\/\\t\"] } "))
        .isEqualTo(Map.of("a", List.of(1L, 20.0, 0L, 1.2345678901234567e19, "A/\t")));
  }

  @Test
  void object_refusesAnotherValue() {
    assertThatThrownBy(() -> JsonReader.object("[1]")).hasMessage("not a JSON object");
  }

  @Test
  void parse_namesWhereBadTextGoesWrong() {
    assertThatThrownBy(() -> JsonReader.parse("{\"CPU\": 1,}")).hasMessage("expected a member name in quotes at"
        + " offset 10");
    assertThatThrownBy(() -> JsonReader.parse("{\"a\": 1")).hasMessage("the text ends where '}' should be");
    assertThatThrownBy(() -> JsonReader.parse("01")).hasMessage("expected a number at offset 0");
    assertThatThrownBy(() -> JsonReader.parse("[1] x")).hasMessage("expected the end of the text at offset 4");
    assertThatThrownBy(() -> JsonReader.parse("\"a\\x\"")).hasMessage("expected an escape at offset 3");
    assertThatThrownBy(() -> JsonReader.parse("nul")).hasMessage("expected a value at offset 0");
    assertThatThrownBy(() -> JsonReader.parse("")).hasMessage("the text ends where a value should be");
    assertThatThrownBy(() -> JsonReader.parse("[".repeat(100))).hasMessageContaining("nested deeper than 64");
  }
}
