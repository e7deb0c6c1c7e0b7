package dev.xlac.pipeline.explain;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The program a framework sends another plugin. The resources are what the proxy recorded of one jitted function
 * of samples/jax/mlp.py (JAX 0.10.2) on the two CPU plugins: the same function, serialized for StableHLO 1.17.0
 * (the 0.115 plugin, whose attribute says 1.20.0) and 1.13.3 (the 0.81 plugin).
 */
class StablehloTargetTest {
  private static byte[] resource(String name) throws IOException {
    try (InputStream in = StablehloTargetTest.class.getResourceAsStream("/stablehlo/" + name)) {
      return in.readAllBytes();
    }
  }

  private static String text(String name) throws IOException {
    return new String(resource(name), StandardCharsets.UTF_8);
  }

  private static String identity(String version) {
    return "xlac-pjrt-plugin/2\nplatform_name=cpu\nattribute=stablehlo_current_version=l:" + version.replace('.', ',')
        + "\nattribute=xla_version=i:2\n";
  }

  @Test
  void recordedWithTheNewerPlugin_isWhatJaxSendsTheOlderOne_byteForByte() throws IOException {
    byte[] recorded = resource("program-sent-to-0.115.mlirbc");
    byte[] sent = resource("program-sent-to-0.81.mlirbc");
    assertThat(recorded).isNotEqualTo(sent);
    assertThat(StablehloTarget.forPlugin("mlir", recorded, text("identity-0.115.txt"), text("identity-0.81.txt")))
        .isEqualTo(sent);
  }

  @Test
  void recordedWithTheOlderPlugin_isKept_becauseTheFrameworksOwnVersionIsUnknown() throws IOException {
    byte[] recorded = resource("program-sent-to-0.81.mlirbc");
    assertThat(StablehloTarget.forPlugin("mlir", recorded, text("identity-0.81.txt"), text("identity-0.115.txt")))
        .isSameAs(recorded);
  }

  @Test
  void aFrameworkOlderThanBothPlugins_sendsItsOwnVersionToEach() throws IOException {
    byte[] recorded = resource("program-sent-to-0.81.mlirbc"); // 1.13.3, below the recorded plugin's 1.17.0
    assertThat(StablehloTarget.forPlugin("mlir", recorded, identity("1.17.0"), identity("1.20.0"))).isSameAs(recorded);
    byte[] down = StablehloTarget.forPlugin("mlir", recorded, identity("1.17.0"), identity("1.9.2"));
    assertThat(new String(down, 0, 22, StandardCharsets.US_ASCII)).endsWith("StableHLO_v1.9.2\0");
    assertThat(down).hasSize(recorded.length - 1);
  }

  @Test
  void theSameVersion_andOtherFormats_andMissingAttributes_keepTheProgram() throws IOException {
    byte[] recorded = resource("program-sent-to-0.115.mlirbc");
    assertThat(StablehloTarget.forPlugin("mlir", recorded, identity("1.20.0"), identity("1.20.0"))).isSameAs(recorded);
    assertThat(StablehloTarget.forPlugin("hlo", recorded, identity("1.20.0"), identity("1.13.3"))).isSameAs(recorded);
    assertThat(StablehloTarget.forPlugin("mlir", recorded, "xlac-pjrt-plugin/2\n", identity("1.13.3")))
        .isSameAs(recorded);
    byte[] notAnArtifact = "ML\u00efRjunk".getBytes(StandardCharsets.ISO_8859_1);
    assertThat(StablehloTarget.forPlugin("mlir", notAnArtifact, identity("1.20.0"), identity("1.13.3")))
        .isSameAs(notAnArtifact);
  }
}
