package dev.xlac.compiler.pjrt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What {@code xlac run} checks before it starts a command: {@link PjrtPluginCheck}. */
class PjrtPluginCheckTest {
  @TempDir
  Path dir;

  @Test
  void check_realPlugin_givesItsVersion() {
    assertThat(PjrtPluginCheck.check(TestPlugins.cpuPlugin())).matches("0\\.\\d+");
  }

  @Test
  void check_testPlugin_passes() {
    assertThat(PjrtPluginCheck.check(TestPluginBuild.library())).isEqualTo("0.94");
  }

  @Test
  void check_missingFile_textFile_directory_areEnvironmentErrors() throws Exception {
    assertRefused(dir.resolve("absent.so"), "no such file");
    assertRefused(Files.writeString(dir.resolve("text.so"), "hello\n"), "no ELF header");
    assertRefused(dir, "not a regular file");
  }

  @Test
  void check_otherMajorVersion_isRefused() throws Exception {
    assertRefused(plugin("major1", 1, 94, -1), "implements PJRT C API 1.94");
  }

  @Test
  void check_withoutSerialize_isRefused() throws Exception {
    assertRefused(plugin("noserialize", 0, 94, 49), "does not implement PJRT_Executable_Serialize");
  }

  @Test
  void check_withoutDeserializeAndLoad_isRefused() throws Exception {
    assertRefused(plugin("nodeserialize", 0, 94, 56), "does not implement PJRT_Executable_DeserializeAndLoad");
  }

  private static void assertRefused(Path plugin, String reason) {
    assertThatThrownBy(() -> PjrtPluginCheck.check(plugin)).isInstanceOfSatisfying(XlacException.class, e -> {
      assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
      assertThat(e.getMessage()).startsWith("cannot use PJRT plugin " + plugin.toAbsolutePath() + ": ")
          .contains(reason).doesNotContain("\n");
    });
  }

  /** A plugin whose table has every slot set to a dummy function but {@code nullSlot} (-1: none). */
  private Path plugin(String name, int major, int minor, int nullSlot) throws Exception {
    String c = """
        #include <stddef.h>
        static void *dummy(void *a) { (void) a; return NULL; }
        static struct { size_t struct_size; void *ext;
          struct { size_t struct_size; void *ext; int major; int minor; } version; void *slots[120]; } api;
        const void *GetPjrtApi(void) {
          api.struct_size = sizeof api; api.version.struct_size = sizeof api.version;
          api.version.major = %d; api.version.minor = %d;
          for (int i = 0; i < 120; i++) api.slots[i] = i == %d ? NULL : (void *) dummy;
          return &api;
        }
        """.formatted(major, minor, nullSlot);
    Path source = Files.writeString(dir.resolve(name + ".c"), c);
    Path lib = dir.resolve("lib" + name + ".so");
    Process gcc = new ProcessBuilder("gcc", "-shared", "-fPIC", "-o", lib.toString(), source.toString())
        .redirectErrorStream(true).start();
    String out = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(gcc.waitFor(60, TimeUnit.SECONDS) && gcc.exitValue() == 0).as(out).isTrue();
    return lib;
  }
}
