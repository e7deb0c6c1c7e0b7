package dev.xlac.cli;

import static dev.xlac.hlo.TestModules.golden;
import static dev.xlac.hlo.TestModules.mulAdd;
import static dev.xlac.hlo.TestModules.writeDump;
import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.hlo.GraphFingerprint;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HashCommandTest {
  @TempDir
  Path dir;

  @Test
  void hash_printsOneLinePerModule() throws Exception {
    Path f = writeDump(dir, "module_0007.jit_step.before_optimizations.hlo.pb", mulAdd(2f));
    CliRunner r = CliRunner.run("hash", f.toString());
    assertThat(r.exitCode()).isZero();
    assertThat(r.out()).isEqualTo(GraphFingerprint.of(mulAdd(2f)) + "  jit_step  " + f + System.lineSeparator());
    assertThat(r.err()).isEmpty();
  }

  @Test
  void hash_mixedDirectory_printsTheGoodOnesAndFailsWithOneLinePerBadFile() throws Exception {
    writeDump(dir, "module_0001.jit_a.before_optimizations.hlo.pb", mulAdd(2f));
    writeDump(dir, "module_0002.jit_b.before_optimizations.hlo.pb", mulAdd(3f));
    Files.write(dir.resolve("module_0003.jit_c.before_optimizations.hlo.pb"), new byte[] {0x0a, 0x7f, 0x01});
    Files.write(dir.resolve("module_0004.jit_d.before_optimizations.hlo.pb"), new byte[0]);
    Files.writeString(dir.resolve("module_0001.jit_a.cpu_after_optimizations.txt"), "HloModule x");
    CliRunner r = CliRunner.run("hash", dir.toString());
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.out().lines()).hasSize(2).allSatisfy(l -> assertThat(l).matches("hlo1:[0-9a-f]{64}  jit_step  .*module_000[12]\\.jit_[ab]\\..*"));
    assertThat(r.err().lines()).filteredOn(l -> l.startsWith("xlac: cannot read")).hasSize(2);
    assertThat(r.err()).contains("module_0003.jit_c.before_optimizations.hlo.pb: truncated")
        .contains("module_0004.jit_d.before_optimizations.hlo.pb: empty file")
        .contains("skipped 1 other dump file")
        .doesNotContain("Exception").doesNotContain("\tat ");
  }

  @Test
  void hash_verbose_addsTheStackTrace() throws Exception {
    Path bad = Files.write(dir.resolve("x.hlo.pb"), new byte[] {0x0a, 0x7f});
    assertThat(CliRunner.run("inspect", "--verbose", bad.toString()).err()).contains("\tat ");
    assertThat(CliRunner.run("inspect", bad.toString()).err()).doesNotContain("\tat ")
        .startsWith("xlac: cannot read " + bad + ": truncated");
  }

  @Test
  void hash_json_hasTheDocumentedKeys() throws Exception {
    Path f = writeDump(dir, "module_0001.jit_a.before_optimizations.hlo.pb", mulAdd(2f));
    CliRunner r = CliRunner.run("hash", "--json", f.toString());
    assertThat(r.exitCode()).isZero();
    assertThat(r.out()).contains("\"file\": \"" + f + "\"", "\"module\": \"jit_step\"",
        "\"fingerprint\": \"" + GraphFingerprint.of(mulAdd(2f)) + "\"", "\"kind\": \"hlo_proto\"");
    assertThat(r.out().strip()).startsWith("[").endsWith("]");
  }

  @Test
  void hash_goldenRunsInTwoProcessesAgree() {
    CliRunner a = CliRunner.run("hash", golden("mlp_run1").toString());
    CliRunner b = CliRunner.run("hash", golden("mlp_run2").toString());
    assertThat(a.exitCode()).isZero();
    assertThat(a.out().lines().map(l -> l.split("  ")[0]).sorted().toList())
        .isEqualTo(b.out().lines().map(l -> l.split("  ")[0]).sorted().toList());
  }

  @Test
  void usageErrors_exit2_andNothingFound_exit2() {
    CliRunner none = CliRunner.run("hash");
    assertThat(none.exitCode()).isEqualTo(2);
    assertThat(none.err()).contains("xlac: Missing required parameter");
    CliRunner empty = CliRunner.run("hash", dir.toString());
    assertThat(empty.exitCode()).isEqualTo(2);
    assertThat(empty.err()).contains("no HLO modules found in " + dir);
    CliRunner missing = CliRunner.run("hash", dir.resolve("nope").toString());
    assertThat(missing.exitCode()).isEqualTo(2);
    assertThat(missing.err()).contains("nope: no such file or directory");
  }

  @Test
  void helpListsTheExitCodes() {
    CliRunner r = CliRunner.run("--help");
    assertThat(r.exitCode()).isZero();
    assertThat(r.out()).contains("Exit codes:").contains("3   environment problem");
  }

  @Test
  void inspect_summarisesARealModule() throws Exception {
    Path step;
    try (var files = Files.list(golden("mlp_run1"))) {
      step = files.filter(p -> p.toString().contains("jit_train_step.before")).findFirst().orElseThrow();
    }
    CliRunner r = CliRunner.run("inspect", step.toString());
    assertThat(r.exitCode()).isZero();
    assertThat(r.out()).contains("module:        jit_train_step").contains("fingerprint:   hlo1:")
        .contains("dot").contains("parameters:");
    CliRunner j = CliRunner.run("inspect", "--json", step.toString());
    assertThat(j.out()).contains("\"opcodes\": {", "\"constant_bytes\":", "\"parameters\": [");
  }
}
