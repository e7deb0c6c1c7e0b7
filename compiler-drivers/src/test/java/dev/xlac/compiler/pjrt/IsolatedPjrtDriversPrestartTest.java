package dev.xlac.compiler.pjrt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.compiler.CompilerDriver;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link IsolatedPjrtDrivers#prestart()} with the real CPU plugin and real worker JVMs. */
class IsolatedPjrtDriversPrestartTest {
  @TempDir
  Path temp;

  private IsolatedPjrtDrivers drivers(Path plugin) {
    return new IsolatedPjrtDrivers(plugin, Map.of(), PjrtCompileOptions.DEFAULT, Duration.ofMinutes(2),
        List.of(temp.resolve("probes")));
  }

  /** The worker JVMs this JVM has running now. */
  private static long workers() {
    return ProcessHandle.current().descendants().filter(ProcessHandle::isAlive)
        .filter(p -> p.info().commandLine().orElse("").contains(PjrtWorkerProcess.class.getName())).count();
  }

  @Test
  void withoutRecord_theProbeWaitsForThePrestartedWorker_andTheFirstOpenGetsIt() {
    assertThat(workers()).isZero();
    try (IsolatedPjrtDrivers drivers = drivers(TestPlugins.cpuPlugin())) {
      drivers.prestart();
      assertThat(drivers.identityFromRecord()).isFalse();
      assertThat(workers()).isEqualTo(1); // the probe did not start a second worker
      drivers.prestart(); // a spare is held: nothing more starts
      try (CompilerDriver d = drivers.open()) {
        assertThat(workers()).isEqualTo(1);
        assertThat(d.compile(CompileRequest.of(GoldenModules.all().getFirst())))
            .isInstanceOf(CompileOutcome.Success.class);
      }
    }
    assertThat(workers()).isZero();
  }

  @Test
  void withRecord_thePrestartedWorkerIsChecked_andIsTheFirstOpensDriver() {
    try (IsolatedPjrtDrivers first = drivers(TestPlugins.cpuPlugin())) {
      first.identity(); // writes the record
    }
    assertThat(workers()).isZero();
    try (IsolatedPjrtDrivers drivers = drivers(TestPlugins.cpuPlugin())) {
      assertThat(drivers.identityFromRecord()).isTrue();
      assertThat(workers()).isZero(); // a record starts nothing by itself
      drivers.prestart();
      try (CompilerDriver d = drivers.open()) {
        assertThat(d.identity()).isEqualTo(drivers.identity());
        assertThat(workers()).isEqualTo(1);
        try (CompilerDriver second = drivers.open()) { // later opens start fresh workers
          assertThat(workers()).isEqualTo(2);
        }
      }
    }
    assertThat(workers()).isZero();
  }

  @Test
  void close_killsAnUntakenWorker_whetherStillStartingOrStarted() {
    try (IsolatedPjrtDrivers first = drivers(TestPlugins.cpuPlugin())) {
      first.identity(); // writes the record, so that nothing below waits for a worker
    }
    IsolatedPjrtDrivers starting = drivers(TestPlugins.cpuPlugin());
    starting.identity();
    starting.prestart();
    starting.close(); // at once: the worker has not said hello yet
    assertThat(workers()).isZero();

    Path probes = temp.resolve("other-probes"); // no record: identity() waits for the spare's hello
    IsolatedPjrtDrivers started = new IsolatedPjrtDrivers(TestPlugins.cpuPlugin(), Map.of(),
        PjrtCompileOptions.DEFAULT, Duration.ofMinutes(2), List.of(probes));
    started.prestart();
    started.identity();
    assertThat(workers()).isEqualTo(1);
    started.close();
    assertThat(workers()).isZero();
  }

  @Test
  void aPrestartThatFails_failsAsAStartOnDemandDoes() throws Exception {
    Path notAPlugin = Files.writeString(temp.resolve("libnot.so"), "not an ELF file");
    String onDemand;
    try (IsolatedPjrtDrivers drivers = drivers(notAPlugin)) {
      XlacException e = (XlacException) org.junit.jupiter.api.Assertions.assertThrows(XlacException.class,
          drivers::open);
      onDemand = e.getMessage();
      assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
    }
    try (IsolatedPjrtDrivers drivers = drivers(notAPlugin)) {
      drivers.prestart();
      assertThatThrownBy(drivers::open).isInstanceOfSatisfying(XlacException.class, e -> {
        assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
        assertThat(e.getMessage()).isEqualTo(onDemand).contains("libnot.so");
      });
    }
    assertThat(workers()).isZero();
  }
}
