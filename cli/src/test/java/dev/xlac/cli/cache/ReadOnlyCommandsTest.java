package dev.xlac.cli.cache;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cli.CliRunner;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue #10: {@code cache ls --cache <empty dir>} created a cache there. Read commands create nothing. */
class ReadOnlyCommandsTest {
  @TempDir
  Path tmp;

  static CliRunner xlac(String... args) {
    return CliRunner.run(args);
  }

  @Test
  void lsAndStat_onAnEmptyOrMissingDirectory_createNothing_andShowAnEmptyCache() throws Exception {
    Path empty = Files.createDirectories(tmp.resolve("empty"));
    Path missing = tmp.resolve("missing");
    for (Path dir : new Path[] {empty, missing}) {
      CliRunner ls = xlac("cache", "ls", "--cache", dir.toString());
      assertThat(ls.exitCode()).as(ls.err()).isZero();
      assertThat(ls.out().lines().skip(1)).as("no rows").isEmpty();
      CliRunner stat = xlac("cache", "stat", "--cache", dir.toString());
      assertThat(stat.exitCode()).as(stat.err()).isZero();
      assertThat(stat.out()).contains("Schema version:      none (no cache yet)", "Graphs:              0 (0 pending)");
      CliRunner json = xlac("cache", "stat", "--json", "--cache", dir.toString());
      assertThat(json.out()).contains("\"schema_version\": null", "\"graphs\": 0");
      assertThat(xlac("cache", "verify", "--cache", dir.toString()).exitCode()).isZero();
    }
    assertThat(missing).doesNotExist();
    try (Stream<Path> files = Files.list(empty)) {
      assertThat(files).isEmpty();
    }
  }
}
