package dev.xlac.pipeline.ray;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.net.URI;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RaySettingsTest {
  private static void badInput(Runnable r, String message) {
    assertThatThrownBy(r::run).isInstanceOfSatisfying(XlacException.class, e -> {
      assertThat(e.exitCode()).isEqualTo(ExitCode.BAD_INPUT);
      assertThat(e.getMessage()).isEqualTo(message);
    });
  }

  @Test
  void address_isTheOptionsElseRaysVariablesInRaysOrder() {
    Map<String, String> env = Map.of("RAY_API_SERVER_ADDRESS", "http://api:8265", "RAY_ADDRESS", "http://addr:8265");
    assertThat(RaySettings.address("https://given:443", env)).isEqualTo(URI.create("https://given:443/"));
    assertThat(RaySettings.address(null, env)).isEqualTo(URI.create("http://api:8265/"));
    assertThat(RaySettings.address(null, Map.of("RAY_ADDRESS", "head:8265")))
        .isEqualTo(URI.create("http://head:8265/"));
  }

  @Test
  void address_thatTheJobsApiCannotTake_isOneLineOfBadInput() {
    badInput(() -> RaySettings.address(null, Map.of()), "--executor ray needs the address of the cluster's dashboard:"
        + " --ray-address http://HEAD:8265 or $RAY_ADDRESS");
    badInput(() -> RaySettings.address(null, Map.of("RAY_ADDRESS", "ray://head:10001")),
        "$RAY_ADDRESS ray://head:10001: xlac submits through Ray's Jobs API, which needs the dashboard's address (http://HEAD:8265), not a Ray"
        + " client or cluster address");
    badInput(() -> RaySettings.address("head:6379", Map.of()), "--ray-address http://head:6379: port 6379 is Ray's"
        + " cluster (GCS) port; the Jobs API is on the dashboard's (default 8265)");
    badInput(() -> RaySettings.address("ftp://head", Map.of()), "--ray-address ftp://head: not the dashboard's"
        + " http(s)://HOST:PORT");
  }

  @Test
  void resources_areAJsonObjectOfAmounts_elseBadInput() {
    assertThat(RaySettings.resources(null)).isEqualTo(Map.of("CPU", 1.0));
    assertThat(RaySettings.resources("{\"CPU\": 8, \"neuron_cores\": 0.5}"))
        .isEqualTo(Map.of("CPU", 8.0, "neuron_cores", 0.5));
    badInput(() -> RaySettings.resources("{\"CPU\": 8,}"), "--ray-resources {\"CPU\": 8,}: not a JSON object of Ray"
        + " resources to amounts, e.g. {\"CPU\": 4}: Unexpected character ('}' (code 125)): was expecting double-quote to"
        + " start field name at offset 10");
    badInput(() -> RaySettings.resources("{\"CPU\": -1}"), "--ray-resources {\"CPU\": -1}: not a JSON object of Ray"
        + " resources to amounts, e.g. {\"CPU\": 4}: the amount of CPU is not a number of at least 0");
    badInput(() -> RaySettings.resources("[]"), "--ray-resources []: not a JSON object of Ray resources to amounts,"
        + " e.g. {\"CPU\": 4}: not a JSON object");
  }

  @Test
  void headers_areRaysJobHeadersObject() {
    assertThat(RaySettings.headers("{\"Authorization\": \"Bearer t\"}")).isEqualTo(Map.of("Authorization", "Bearer t"));
    assertThat(RaySettings.headers(null)).isEmpty();
    badInput(() -> RaySettings.headers("{\"Authorization\": 1}"), "$RAY_JOB_HEADERS must be a JSON object of header"
        + " names to strings, e.g. {\"Authorization\": \"Bearer TOKEN\"}: the value of Authorization is not a string");
    badInput(() -> RaySettings.headers("[\"Bearer t\"]"), "$RAY_JOB_HEADERS must be a JSON object of header names to"
        + " strings, e.g. {\"Authorization\": \"Bearer TOKEN\"}: it is not a JSON object");
  }

  /** jackson's reason quoted the token it met ("Unrecognized token 'Bearer'"): now no part of the value is said. */
  @Test
  void rayJobHeadersThatAreNotJson_areRefused_withoutQuotingTheirCredentials() {
    String valid = "{\"Authorization\": \"Bearer s3cr3t-t0ken\"}";
    for (String bad : List.of("{\"Authorization\": Bearer s3cr3t-t0ken}", valid.substring(0, valid.length() - 1),
        "Bearer s3cr3t-t0ken", valid + " " + valid)) {
      assertThatThrownBy(() -> RaySettings.headers(bad)).isInstanceOfSatisfying(XlacException.class, e -> {
        assertThat(e.exitCode()).isEqualTo(ExitCode.BAD_INPUT);
        assertThat(e.getMessage()).startsWith("$RAY_JOB_HEADERS must be a JSON object of header names to strings,"
            + " e.g. {\"Authorization\": \"Bearer TOKEN\"}: it is not valid JSON (at character ")
            .doesNotContain("s3cr3t").doesNotContain("t0ken").doesNotContain("'Bearer");
      });
    }
    badInput(() -> RaySettings.headers("{\"Authorization\": Bearer s3cr3t}"), "$RAY_JOB_HEADERS must be a JSON object"
        + " of header names to strings, e.g. {\"Authorization\": \"Bearer TOKEN\"}: it is not valid JSON (at character"
        + " 19)"); // its B
  }
}
