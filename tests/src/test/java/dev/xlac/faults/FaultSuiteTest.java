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
   * The scenarios this test runs: those that pass on main before issue #10's fixes. Add each of
   * the others as its fix lands (what fails on that main, and the fix that makes it pass):
   * <ul>
   *   <li>kill-prune: after {@code prune --max-size 0}, read commands call the cache "not an xlac
   *       cache" (read-only opens; issue #10 item 1)
   *   <li>kill-import: the same after some kills of an import into a new directory (item 1;
   *       not every run hits it)
   *   <li>kill-export: a killed export leaves a {@code xlac-cache-reader-*} directory in
   *       java.io.tmpdir (read-only opens without secondary instances)
   *   <li>damage: damaged artifacts counted as hits, and verify --repair failing or leaving damage
   *       (items 3 and 4)
   * </ul>
   * Added as their fixes landed: hostile-bundles (item 6: {@code import --max-unpacked}, and a
   * consistent 2e9-byte artifact imported a piece at a time; one trial, which runs every case) and
   * disk-full (item 5: the disk reserve; prune, clear and imports work on a full disk).
   */
  static final List<String> SCENARIOS =
      List.of("kill-compile", "concurrent-writers", "hostile-bundles", "disk-full");

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
