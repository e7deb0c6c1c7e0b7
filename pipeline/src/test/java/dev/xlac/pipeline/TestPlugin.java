package dev.xlac.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * compiler-drivers' C test plugin (src/test/c/xlac_test_plugin.c), built with gcc: it aborts on
 * modules named {@code *crash*} and rejects {@code *reject*}. The source is found through the
 * surefire property {@code xlac.testPluginSource} (set in pipeline's and cli's poms), so this works
 * from any module's test run; published in pipeline's test-jar.
 */
public final class TestPlugin {
  private TestPlugin() {}

  /** Builds the plugin into {@code dir}; returns the library. */
  public static Path build(Path dir) throws IOException, InterruptedException {
    String property = System.getProperty("xlac.testPluginSource");
    assertThat(property).as("system property xlac.testPluginSource (set by the module's surefire config)").isNotNull();
    Path source = Path.of(property).toAbsolutePath().normalize();
    Path plugin = dir.resolve("xlac-test-plugin.so");
    Process gcc = new ProcessBuilder("gcc", "-shared", "-fPIC", "-O1", "-o", plugin.toString(), source.toString())
        .redirectErrorStream(true).start();
    String output = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(gcc.waitFor(120, TimeUnit.SECONDS) && gcc.exitValue() == 0).as("gcc: %s", output).isTrue();
    return plugin;
  }
}
