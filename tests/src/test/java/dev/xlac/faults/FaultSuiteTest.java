package dev.xlac.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the fault suite (scripts/fault-suite) with a few trials per scenario, as part of
 * ./scripts/test: every scenario, each with a new seed (printed with the report).
 */
class FaultSuiteTest {
  /**
   * The scenarios this test runs: all of them. Six failed on main before issue #10's fixes, and each
   * joined the list as its fix landed: kill-prune, kill-import and kill-export once readers opened
   * read-only (item 1 and the leftovers); damage once damaged artifacts were misses (item 3) and
   * verify --repair recovered or rebuilt (item 4); disk-full with the disk reserve (item 5);
   * hostile-bundles once imports streamed (item 6).
   */
  static final List<String> SCENARIOS = List.of("kill-compile", "kill-prune", "kill-import", "kill-export", "damage",
      "concurrent-writers", "disk-full", "hostile-bundles");

  @TempDir
  Path dir;

  @Test
  @Timeout(value = 12, unit = TimeUnit.MINUTES)
  void faultSuite_fewTrials_passes() {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    int exit;
    try (PrintStream out = new PrintStream(buffer, true, StandardCharsets.UTF_8)) {
      exit = FaultSuite.run(List.of("--dir", dir.toString(), "--only", String.join(",", SCENARIOS),
          "--trials", "2", "--trials", "damage=6", "--trials", "disk-full=1", "--trials", "hostile-bundles=1"), out);
    }
    String report = buffer.toString(StandardCharsets.UTF_8);
    System.out.print(report);
    assertThat(exit).as("the fault suite's report:%n%s", report).isZero();
    assertThat(report).contains("fault suite: PASS");
  }

  @Test
  void unknownScenario_isAUsageError() {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    int exit;
    try (PrintStream out = new PrintStream(buffer, true, StandardCharsets.UTF_8)) {
      exit = FaultSuite.run(List.of("--dir", dir.toString(), "--only", "no-such-scenario"), out);
    }
    assertThat(exit).isEqualTo(2);
    assertThat(buffer.toString(StandardCharsets.UTF_8)).contains("unknown scenario no-such-scenario");
  }
}
