package dev.xlac.pipeline.ray;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RayJsonTest {
  @Test
  void anAnswerOfRays_readsAsMapsListsAndNumbers_inOrder() {
    Object v = RayJson.parse(" [{\"submission_id\": \"x_s0_a1\", \"driver_exit_code\": 137, \"metadata\": {\"b\": \"1\","
        + " \"a\": \"2\"}, \"message\": null, \"big\": 12345678901234567890}] ");
    Map<?, ?> job = (Map<?, ?>) ((List<?>) v).getFirst();
    assertThat(job.get("submission_id")).isEqualTo("x_s0_a1");
    assertThat(((Number) job.get("driver_exit_code")).longValue()).isEqualTo(137L);
    assertThat(List.copyOf(((Map<?, ?>) job.get("metadata")).keySet())).isEqualTo(List.of("b", "a"));
    assertThat(job.get("message")).isNull();
    assertThat(job.get("big").toString()).isEqualTo("12345678901234567890");
  }

  @Test
  void aTextThatIsNotOneJsonValue_isRefusedSayingWhereAndWhy() {
    assertThatThrownBy(() -> RayJson.parse("[1] [2]")).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("more after the JSON value at offset 4");
    assertThatThrownBy(() -> RayJson.parse("{\"a\": 1"))
        .hasMessage("Unexpected end-of-input: expected close marker for Object at offset 7");
    assertThatThrownBy(() -> RayJson.parse("{\"a\": 1, \"a\": 2}")).hasMessageStartingWith("Duplicate key (key 'a')");
    assertThatThrownBy(() -> RayJson.parse("")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> RayJson.object("[1]")).hasMessage("not a JSON object");
  }
}
