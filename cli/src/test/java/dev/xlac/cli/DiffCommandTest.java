package dev.xlac.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.CacheStore;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.TestModules;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code xlac diff}: files and cache fingerprints in, the verdict line first, one-line errors for bad input. */
class DiffCommandTest {
  private static final String NL = System.lineSeparator();

  @TempDir
  Path tmp;

  private static String step(String run) {
    String name = run.equals("mlp_renamed") ? "jit_update_fn" : "jit_train_step";
    return TestModules.golden(run).resolve("module_0048." + name + ".before_optimizations.hlo.pb").toString();
  }

  private static String firstLine(CliRunner r) {
    return r.out().lines().findFirst().orElse("");
  }

  @Test
  void files_sameProgram_exitsZero_withTheVerdictFirst() {
    CliRunner r = CliRunner.run("diff", step("mlp_run1"), step("mlp_renamed"));
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).isEmpty();
    assertThat(firstLine(r)).isEqualTo("same program");
    assertThat(r.out()).contains("A: " + step("mlp_run1") + " (module jit_train_step, hlo1:")
        .contains("B: " + step("mlp_renamed") + " (module jit_update_fn, hlo1:")
        .contains("   19  f32[32,32]{1,0}" + NL);
  }

  @Test
  void files_oneConstant_namesIt_andExitsZero_unlessExitCodeIsAsked() {
    CliRunner r = CliRunner.run("diff", step("mlp_run1"), step("mlp_const"));
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(firstLine(r))
        .isEqualTo("1 constant differs: scalar f32 1.5 -> 2.5 in the entry computation (used by 1 instruction)");
    assertThat(r.out()).contains("constants:" + NL + "  entry: f32[] 1.5 -> 2.5 (used by 1)" + NL);
    assertThat(CliRunner.run("diff", "--exit-code", step("mlp_run1"), step("mlp_const")).exitCode()).isEqualTo(1);
    assertThat(CliRunner.run("diff", "--exit-code", step("mlp_run1"), step("mlp_run2")).exitCode()).isZero();
  }

  @Test
  void files_batchSize_showsTheParameters() {
    CliRunner r = CliRunner.run("diff", step("mlp_run1"), step("mlp_batch64"));
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(firstLine(r)).startsWith("entry parameter 19: f32[32,32] -> f32[64,32] (dim 0: 32 -> 64), "
        + "entry parameter 20: s32[32] -> s32[64] (dim 0: 32 -> 64), and ");
    assertThat(r.out()).contains("   19  f32[32,32]{1,0} -> f32[64,32]{1,0}" + NL)
        .contains("   20  s32[32]{0} -> s32[64]{0}" + NL);
  }

  @Test
  void json_hasTheDocumentedKeys() {
    CliRunner r = CliRunner.run("diff", "--json", step("mlp_run1"), step("mlp_const"));
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).startsWith("{" + NL + "  \"same\": false," + NL
        + "  \"verdict\": \"1 constant differs: scalar f32 1.5 -> 2.5 in the entry computation (used by 1 instruction)\",");
    for (String key : List.of("kinds", "a", "b", "matching", "parameters", "shape_changes", "constants", "attributes",
        "replaced", "instructions_added", "instructions_removed", "computations_added", "computations_removed",
        "rewired", "opcodes", "module_fields")) {
      assertThat(r.out()).contains(NL + "  \"" + key + "\": ");
    }
  }

  @Test
  void cachePrefixes_areLookedUp_readOnly() throws Exception {
    Path cache = tmp.resolve("cache");
    CliRunner add = CliRunner.run("cache", "add", "--cache", cache.toString(), step("mlp_run1"), step("mlp_const"));
    assertThat(add.exitCode()).as(add.err()).isZero();
    String a = CliRunner.run("hash", step("mlp_run1")).out().split(" ")[0];
    String b = CliRunner.run("hash", step("mlp_const")).out().split(" ")[0];
    CliRunner r = CliRunner.run("diff", "--cache", cache.toString(), a.substring(5, 15), b);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(firstLine(r)).startsWith("1 constant differs: scalar f32 1.5 -> 2.5");
    assertThat(r.out()).contains("A: " + a + " (module jit_train_step, " + a + ")");
    // A file and a fingerprint together.
    CliRunner mixed = CliRunner.run("diff", "--cache", cache.toString(), step("mlp_renamed"), a.substring(5, 12));
    assertThat(firstLine(mixed)).as(mixed.err()).isEqualTo("same program");
  }

  @Test
  void unknownAndAmbiguousPrefixes_andUnreadableFiles_areOneLineErrors_exit2() throws Exception {
    Path cache = tmp.resolve("cache");
    try (CacheStore s = CacheStore.open(cache, CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      byte[] bytes = TestModules.mulAdd(1f).toByteArray();
      s.putGraph(GraphFingerprint.parse("hlo1:abcdef01" + "0".repeat(56)), "x", bytes, "test");
      s.putGraph(GraphFingerprint.parse("hlo1:abcdef02" + "0".repeat(56)), "y", bytes, "test");
    }
    CliRunner ambiguous = CliRunner.run("diff", "--cache", cache.toString(), "abcdef", step("mlp_run1"));
    assertThat(ambiguous.exitCode()).isEqualTo(2);
    assertThat(ambiguous.out()).isEmpty();
    assertThat(ambiguous.err()).isEqualTo("xlac: fingerprint prefix abcdef is ambiguous; give more digits" + NL);
    CliRunner unknown = CliRunner.run("diff", "--cache", cache.toString(), step("mlp_run1"), "123456");
    assertThat(unknown.exitCode()).isEqualTo(2);
    assertThat(unknown.err()).isEqualTo("xlac: no graph in cache " + cache + " has fingerprint 123456" + NL);
    Path bad = Files.write(tmp.resolve("bad.hlo.pb"), new byte[] {0x0a, 0x7f});
    CliRunner unreadable = CliRunner.run("diff", bad.toString(), step("mlp_run1"));
    assertThat(unreadable.exitCode()).isEqualTo(2);
    assertThat(unreadable.err()).startsWith("xlac: cannot read " + bad + ": truncated").doesNotContain("\tat ")
        .hasLineCount(1);
    CliRunner missing = CliRunner.run("diff", step("mlp_run1"), tmp.resolve("nope.pb").toString());
    assertThat(missing.exitCode()).isEqualTo(2);
    assertThat(missing.err()).isEqualTo("xlac: cannot read " + tmp.resolve("nope.pb") + ": no such file" + NL);
    assertThat(CliRunner.run("diff", step("mlp_run1")).exitCode()).isEqualTo(2);  // B missing: usage error
  }
}
