package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The real launcher's contract: version, exit codes, one-line errors. */
class LauncherE2ETest {
  @TempDir
  Path dir;

  @Test
  void version() throws Exception {
    Launcher.Result r = Launcher.xlac("--version");
    assertThat(r.exitCode()).isZero();
    assertThat(r.out()).startsWith("xlac ");
  }

  @Test
  void badInput_exits2_withOneLineAndNoStackTrace() throws Exception {
    Path junk = Files.write(dir.resolve("module_0001.jit_x.before_optimizations.hlo.pb"), "not a proto".getBytes());
    Launcher.Result r = Launcher.xlac("hash", junk.toString());
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.out()).isEmpty();
    assertThat(r.err().strip().lines()).singleElement().satisfies(l -> assertThat(l).startsWith("xlac: cannot read " + junk));
  }

  @Test
  void unknownCommand_exits2() throws Exception {
    Launcher.Result r = Launcher.xlac("frobnicate");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).contains("xlac: Unmatched argument");
  }
}
