package dev.xlac.compiler.pjrt;

import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;

/** Finds the real CPU PJRT plugin the tests run against. */
public final class TestPlugins {
  static final String ENV = "XLAC_PJRT_PLUGIN";

  private TestPlugins() {}

  /** The plugin named by XLAC_PJRT_PLUGIN; fails the test (never skips it) when it is missing. */
  public static Path cpuPlugin() {
    String value = System.getenv(ENV);
    if (value == null || value.isBlank()) {
      fail(ENV + " is not set. The PJRT tests need XLA's CPU plugin: run them through scripts/test, or "
          + "`pip install lammps-jax-pjrt-cpu==0.11.2` and export " + ENV + "=$(python3 -c "
          + "'import lammps_jax_pjrt_cpu as p; print(p.PLUGIN_PATH)')");
    }
    Path path = Path.of(value);
    if (!Files.isRegularFile(path)) {
      fail(ENV + "=" + value + " is not a file");
    }
    return path;
  }
}
