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
 * ./scripts/test. Only the scenarios in {@link #SCENARIOS} run: those that pass on main today.
 * The fixes of issue #10 make the others pass; add each to the list as its fix lands.
 */
class FaultSuiteTest {
  /**
   * The scenarios this test runs: those that pass on main. Add each of the others as its fix lands
   * (what fails on main before the fix, and the fix that makes it pass):
   * <ul>
   *   <li>disk-full: after the disk fills, prune, clear and imports fail with "disk full" (item 5)
   *   <li>hostile-bundles: no {@code import --max-unpacked}, and a consistent 2e9-byte artifact runs
   *       the importer out of memory (item 6)
   * </ul>
   * kill-prune, kill-import and kill-export pass since readers open read-only (items 1 and the
   * leftovers); damage since damaged artifacts are misses (item 3) and verify --repair recovers or
   * rebuilds (item 4).
   */
  static final List<String> SCENARIOS = List.of("kill-compile", "kill-prune", "kill-import", "kill-export", "damage",
      "concurrent-writers");

  @TempDir
  Path dir;

  @Test
  @Timeout(value = 12, unit = TimeUnit.MINUTES)
  void faultSuite_fewTrials_passes() {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    int exit;
    try (PrintStream out = new PrintStream(buffer, true, StandardCharsets.UTF_8)) {
      exit = FaultSuite.run(List.of("--dir", dir.toString(), "--only", String.join(",", SCENARIOS),
          "--trials", "2", "--trials", "damage=6", "--trials", "disk-full=1"), out);
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
