package dev.xlac.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import org.junit.jupiter.api.Test;

class VersionTest {

  @Test
  void version_namesTheJavaRuntimeAndThePjrtHeader() {
    CliRunner r = CliRunner.run("--version");
    assertThat(r.exitCode()).isZero();
    String[] lines = r.out().split("\n");
    assertThat(lines).hasSize(3);
    assertThat(lines[0]).matches("xlac \\S+ \\(commit \\S+\\)");
    assertThat(lines[1]).startsWith("java: " + System.getProperty("java.runtime.version"))
        .endsWith(" at " + System.getProperty("java.home"));
    assertThat(lines[2]).matches("pjrt proxy: PJRT C API header \\d+\\.\\d+");
  }

  /** The header version --version names is the one pjrt_abi.h says its layouts were checked against. */
  @Test
  void pjrtHeaderVersion_isTheOnePjrtAbiNames() throws Exception {
    Properties p = new Properties();
    try (var in = XlacCommand.class.getResourceAsStream("version.properties")) {
      p.load(in);
    }
    Path abi = Path.of(System.getProperty("user.dir")).resolve("../runtime/src/main/c/pjrt_abi.h").normalize();
    assertThat(Files.readString(abi)).contains("PJRT C API " + p.getProperty("pjrt.header") + " ");
  }
}
