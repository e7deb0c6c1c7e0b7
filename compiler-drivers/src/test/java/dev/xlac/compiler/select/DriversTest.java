package dev.xlac.compiler.select;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DriversTest {
  @TempDir
  Path tmp;

  private DriverOptions options(String driver, Path plugin, String flags, Map<String, String> compileOptions) {
    return new DriverOptions(driver, plugin, null, flags, Map.of(), compileOptions, Duration.ZERO, tmp.resolve("probes"));
  }

  private static void assertUsage(Runnable r, String message) {
    assertThatThrownBy(r::run).isInstanceOfSatisfying(XlacException.class,
        e -> assertThat(e.exitCode()).isEqualTo(ExitCode.BAD_INPUT)).hasMessage(message);
  }

  @Test
  void driverKind_parse_namesTheKnownDrivers() {
    assertThat(DriverKind.parse("pjrt")).isEqualTo(DriverKind.PJRT);
    assertThat(DriverKind.parse("neuronx-cc")).isEqualTo(DriverKind.NEURONX_CC);
    assertUsage(() -> DriverKind.parse("xla"), "unknown --driver 'xla' (expected pjrt or neuronx-cc)");
  }

  @Test
  void driverKind_memoryPerJob_isTheDriversBudget_pjrtsForAnUnknownName() {
    assertThat(DriverKind.memoryPerJob("pjrt")).isEqualTo(2L << 30);
    assertThat(DriverKind.memoryPerJob("neuronx-cc")).isEqualTo(64L << 30);
    assertThat(DriverKind.memoryPerJob("xla")).isEqualTo(2L << 30);
  }

  @Test
  void resolve_unknownDriver_isUsage() {
    assertUsage(() -> Drivers.resolve(options("xla", null, null, Map.of()), Map.of()),
        "unknown --driver 'xla' (expected pjrt or neuronx-cc)");
  }

  @Test
  void resolve_pjrt_takesThePluginFromTheEnvironmentWhenNotGiven() {
    DriverSpec spec = Drivers.resolve(options("pjrt", null, null, Map.of()), Map.of("XLAC_PJRT_PLUGIN", "/env/p.so"));
    assertThat(spec).isInstanceOfSatisfying(DriverSpec.Pjrt.class, p -> {
      assertThat(p.plugin()).isEqualTo(Path.of("/env/p.so"));
      assertThat(p.probeDirs()).startsWith(tmp.resolve("probes"));
    });
    DriverSpec given = Drivers.resolve(options("pjrt", Path.of("/given.so"), null, Map.of()),
        Map.of("XLAC_PJRT_PLUGIN", "/env/p.so"));
    assertThat(((DriverSpec.Pjrt) given).plugin()).isEqualTo(Path.of("/given.so"));
    assertThat(given.kind()).isEqualTo(DriverKind.PJRT);
  }

  @Test
  void resolve_pjrt_wrongOrMissingOptions_areUsage() {
    assertUsage(() -> Drivers.resolve(options("pjrt", null, null, Map.of()), Map.of()),
        "--driver pjrt needs --plugin PATH (or $XLAC_PJRT_PLUGIN): the PJRT plugin to compile with");
    assertUsage(() -> Drivers.resolve(options("pjrt", Path.of("/p.so"), "-O2", Map.of()), Map.of()),
        "--compiler-flags is for neuronx-cc; a PJRT compile takes --compile-option KEY=VALUE");
    assertThatThrownBy(() -> Drivers.resolve(options("pjrt", Path.of("/p.so"), null, Map.of("no_such", "1")), Map.of()))
        .isInstanceOfSatisfying(XlacException.class, e -> assertThat(e.exitCode()).isEqualTo(ExitCode.BAD_INPUT));
  }

  @Test
  void resolve_neuronxCc_pjrtOptions_areUsage() {
    assertUsage(() -> Drivers.resolve(options("neuronx-cc", Path.of("/p.so"), null, Map.of()), Map.of()),
        "--plugin is for --driver pjrt; neuronx-cc is found on PATH");
    assertUsage(() -> Drivers.resolve(options("neuronx-cc", null, null, Map.of("num_replicas", "1")), Map.of()),
        "--client-option and --compile-option are PJRT options; neuronx-cc takes --compiler-flags");
    DriverSpec spec = Drivers.resolve(options("neuronx-cc", null, "--target trn1", Map.of()), Map.of());
    assertThat(spec).isInstanceOfSatisfying(DriverSpec.NeuronxCc.class,
        n -> assertThat(n.flags()).containsExactly("--target", "trn1"));
  }

  @Test
  void check_missingOrOddPlugin_isEnvironment() throws Exception {
    DriverSpec missing = Drivers.resolve(options("pjrt", tmp.resolve("none.so"), null, Map.of()), Map.of());
    assertThatThrownBy(() -> Drivers.check(missing)).isInstanceOfSatisfying(XlacException.class,
        e -> assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT)).hasMessageEndingWith("none.so: no such file");
    Path dir = Files.createDirectories(tmp.resolve("dir.so"));
    DriverSpec notAFile = Drivers.resolve(options("pjrt", dir, null, Map.of()), Map.of());
    assertThatThrownBy(() -> Drivers.open(notAFile, null)).isInstanceOf(XlacException.class)
        .hasMessageEndingWith("dir.so: not a regular file");
  }

  @Test
  void remember_recordsTheIdentityInTheCachesProbeDirectoryOnly_andARunReadsItWithoutLoadingThePlugin()
      throws Exception {
    Path standIn = Files.writeString(tmp.resolve("stand-in.so"), "not a shared library: loading it would fail\n");
    Path user = tmp.resolve("xdg");
    Map<String, String> env = Map.of("XDG_CACHE_HOME", user.toString());
    DriverSpec spec = Drivers.resolve(options("pjrt", standIn, null, Map.of()), env);
    CompilerIdentity id = new CompilerIdentity("pjrt", "cpu 0.0 (stand-in)", "cpu", java.util.List.of(), Map.of());

    Drivers.remember(spec, id);

    try (var listing = Files.list(tmp.resolve("probes"))) {
      assertThat(listing.toList()).singleElement()
          .satisfies(f -> assertThat(Files.readString(f)).isEqualTo(id.encode()));
    }
    assertThat(user).doesNotExist(); // the user's records never learn a stand-in
    // What a run opens reads the record: the identity, and no worker started to ask the file.
    try (DriverFactory f = Drivers.open(spec, null)) {
      assertThat(((dev.xlac.compiler.pjrt.IsolatedPjrtDrivers) f).identityFromRecord()).isTrue();
      assertThat(f.identity()).isEqualTo(id);
    }
    assertUsage(() -> Drivers.remember(Drivers.resolve(options("neuronx-cc", null, null, Map.of()), Map.of()), id),
        "only a PJRT plugin's identity is recorded");
  }
}
