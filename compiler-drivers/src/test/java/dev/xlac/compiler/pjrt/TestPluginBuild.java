package dev.xlac.compiler.pjrt;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Builds src/test/c/xlac_test_plugin.c into target/ with gcc, once per test JVM. */
public final class TestPluginBuild {
  private static final Path SOURCE = Path.of("src/test/c/xlac_test_plugin.c");
  private static final Path LIBRARY = Path.of("target/xlac-test-plugin.so");
  private static boolean built;

  private TestPluginBuild() {}

  public static synchronized Path library() {
    if (!built) {
      build();
      built = true;
    }
    return LIBRARY.toAbsolutePath();
  }

  private static void build() {
    try {
      Process gcc = new ProcessBuilder("gcc", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-O1",
          "-o", LIBRARY.toString(), SOURCE.toString()).redirectErrorStream(true).start();
      String output = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!gcc.waitFor(120, TimeUnit.SECONDS) || gcc.exitValue() != 0) {
        fail("gcc could not build the test PJRT plugin from " + SOURCE + ":\n" + output);
      }
    } catch (IOException e) {
      fail("the isolation tests build a test PJRT plugin with gcc, which could not run: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      fail("interrupted building the test plugin");
    }
    if (!Files.isRegularFile(LIBRARY)) {
      fail("gcc did not write " + LIBRARY);
    }
  }
}
