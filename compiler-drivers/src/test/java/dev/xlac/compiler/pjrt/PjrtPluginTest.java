package dev.xlac.compiler.pjrt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Loading plugins, bad plugin files, and the owners' close/use-after-close rules. */
class PjrtPluginTest {

  @Test
  void open_realPlugin_readsVersionAndAttributes() {
    try (PjrtPlugin plugin = PjrtPlugin.open(TestPlugins.cpuPlugin())) {
      assertThat(plugin.apiVersion()).matches("0\\.\\d+");
      assertThat(plugin.apiSlots()).isGreaterThan(PjrtApi.Slot.EXECUTABLE_DESERIALIZE_AND_LOAD.index);
      assertThat(plugin.attributes()).isNotEmpty();
    }
  }

  @Test
  void open_textFile_isOneLineEnvironmentError(@TempDir Path dir) throws Exception {
    Path text = Files.writeString(dir.resolve("plugin.so"), "not an ELF file\n");
    assertEnvironmentError(text, "not a loadable shared library (no ELF header)");
  }

  @Test
  void open_libraryWithoutGetPjrtApi_isOneLineEnvironmentError() {
    Path libm = Path.of("/lib/x86_64-linux-gnu/libm.so.6");
    if (!Files.exists(libm)) {
      libm = Path.of("/usr/lib64/libm.so.6");
    }
    assertEnvironmentError(libm, "has no GetPjrtApi symbol");
  }

  @Test
  void open_missingFile_isOneLineEnvironmentError(@TempDir Path dir) {
    assertEnvironmentError(dir.resolve("nope.so"), "no such file");
  }

  @Test
  void open_directory_isOneLineEnvironmentError(@TempDir Path dir) {
    assertEnvironmentError(dir, "not a regular file");
  }

  private static void assertEnvironmentError(Path path, String reason) {
    assertThatThrownBy(() -> PjrtPlugin.open(path))
        .isInstanceOfSatisfying(XlacException.class, e -> {
          assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
          assertThat(e.getMessage()).startsWith("cannot use PJRT plugin " + path.toAbsolutePath() + ": ")
              .contains(reason)
              .doesNotContain("\n");
        });
  }

  @Test
  void close_twice_isSafe_andUseAfterCloseIsDetected() {
    PjrtPlugin plugin = PjrtPlugin.open(TestPlugins.cpuPlugin());
    PjrtClient client = plugin.createClient(Map.of());
    PjrtLoadedExecutable executable = client.compile(
        GoldenModules.named("jit_matmul").module().toByteArray(), PjrtCompileOptions.DEFAULT);

    executable.close();
    assertThatCode(executable::close).doesNotThrowAnyException();
    assertThatThrownBy(executable::serialize).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");

    client.close();
    assertThatCode(client::close).doesNotThrowAnyException();
    assertThatThrownBy(() -> client.compile(new byte[] {1}, PjrtCompileOptions.DEFAULT))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("PJRT client cpu")
        .hasMessageContaining("is closed");

    plugin.close();
    plugin.close();
    assertThatThrownBy(() -> plugin.createClient(Map.of())).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void pluginClose_destroysClientsAndTheirExecutables() {
    PjrtPlugin plugin = PjrtPlugin.open(TestPlugins.cpuPlugin());
    PjrtClient client = plugin.createClient(Map.of("cpu_device_count", "2"));
    PjrtLoadedExecutable executable = client.compile(
        GoldenModules.named("jit_stage").module().toByteArray(), PjrtCompileOptions.DEFAULT);

    plugin.close();

    assertThat(client.isClosed()).isTrue();
    assertThat(executable.isClosed()).isTrue();
  }

  @Test
  void reopen_samePlugin_reusesTheLoadedLibrary() {
    try (PjrtPlugin a = PjrtPlugin.open(TestPlugins.cpuPlugin());
        PjrtPlugin b = PjrtPlugin.open(TestPlugins.cpuPlugin());
        PjrtClient ca = a.createClient(Map.of());
        PjrtClient cb = b.createClient(Map.of())) {
      assertThat(ca.platformName()).isEqualTo(cb.platformName()).isEqualTo("cpu");
    }
  }
}
