package dev.xlac.compiler.pjrt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The plugin's PJRT_NamedValue arrays as C arrays of the plugin's struct, whatever its size (issue 22). */
class PjrtNamedValuesTest {

  /**
   * A plugin built against a newer header whose PJRT_NamedValue has grown: its attributes lie its struct_size apart.
   * Walked by xlac's own size, the second attribute was read from the middle of the first.
   */
  @Test
  void namedValuesOfANewerPlugin_areWalkedByTheirSize(@TempDir Path dir) throws Exception {
    Path lib = dir.resolve("libwider.so");
    Process gcc = new ProcessBuilder("gcc", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-O1",
        "-DXLAC_TEST_WIDER_NAMED_VALUES", "-o", lib.toString(), Path.of("src/test/c/xlac_test_plugin.c").toString())
        .redirectErrorStream(true).start();
    String out = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(gcc.waitFor(120, TimeUnit.SECONDS) && gcc.exitValue() == 0).as(out).isTrue();
    try (PjrtPlugin plugin = PjrtPlugin.open(lib)) {
      assertThat(plugin.attributes()).containsExactly(entry("xlac_test_plugin", "1"), entry("second", "2"));
    }
  }
}
