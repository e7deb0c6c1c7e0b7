package dev.xlac.cli.cache;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cli.CliRunner;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.TestModules;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Why a graph is new, on the golden JAX dumps (golden/README.md): {@code xlac cache why}, and the line
 * {@code xlac dump} adds after its summary when a rerun with one changed hyperparameter dumps new graphs.
 */
class CacheWhyCommandTest {
  private static final String NL = System.lineSeparator();

  @TempDir
  Path tmp;

  private String cache() {
    return tmp.resolve("cache").toString();
  }

  private static Path trainStep(String run) {
    return TestModules.golden(run).resolve("module_0048.jit_train_step.before_optimizations.hlo.pb");
  }

  private static String fp(Path file) throws Exception {
    return new HloModuleReader().read(file).fingerprint().value();
  }

  private void add(Path p) {
    CliRunner r = CliRunner.run("cache", "add", "--cache", cache(), p.toString());
    assertThat(r.exitCode()).as(r.err()).isZero();
  }

  /** {@code xlac dump} of a command that copies a golden run's dumps where XLA would write them. */
  private CliRunner dumpRun(String run) {
    String copy = "d=${XLA_FLAGS#*--xla_dump_to=}; d=${d%% *}; mkdir -p $d && cp " + TestModules.golden(run)
        + "/*.before_optimizations.hlo.pb $d/";
    return CliRunner.run("dump", "--cache", cache(), "--", "sh", "-c", copy);
  }

  @Test
  void why_namesTheBatchSize_theRelative_andTheVerdict() throws Exception {
    add(TestModules.golden("mlp_run1"));
    add(trainStep("mlp_batch64"));
    String graph = fp(trainStep("mlp_batch64"));
    CliRunner r = CliRunner.run("cache", "why", "--cache", cache(), graph.substring(5, 15));
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).isEmpty();
    String verdict = CliRunner.run("diff", trainStep("mlp_run1").toString(), trainStep("mlp_batch64").toString())
        .out().lines().findFirst().orElseThrow();
    assertThat(r.out()).isEqualTo("graph:     " + graph + " (jit_train_step)" + NL
        + "why new:   differs from its nearest relative only in batch size (32 -> 64)" + NL
        + "relative:  " + fp(trainStep("mlp_run1")) + " (jit_train_step; 1 compared)" + NL
        + "verdict:   " + verdict + NL);

    CliRunner json = CliRunner.run("cache", "why", "--cache", cache(), "--json", graph);
    assertThat(json.exitCode()).as(json.err()).isZero();
    assertThat(json.out()).contains("\"graph\": \"" + graph + "\"").contains("\"module\": \"jit_train_step\"")
        .contains("\"reason\": \"batch size (32 -> 64)\"").contains("\"relative\": \"" + fp(trainStep("mlp_run1")))
        .contains("\"verdict\": \"entry parameter 19: f32[32,32] -> f32[64,32] (dim 0: 32 -> 64)");
  }

  @Test
  void why_oneConstant_andNoRelative() throws Exception {
    add(trainStep("mlp_run1"));
    add(trainStep("mlp_const"));
    CliRunner r = CliRunner.run("cache", "why", "--cache", cache(), fp(trainStep("mlp_const")));
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out().lines().toList().get(1))
        .isEqualTo("why new:   differs from its nearest relative only in a constant (1.5 -> 2.5)");
    Path argmax = TestModules.golden("mlp_run1").resolve("module_0046.jit__argmax.before_optimizations.hlo.pb");
    add(argmax);
    CliRunner none = CliRunner.run("cache", "why", "--cache", cache(), fp(argmax));
    assertThat(none.exitCode()).as(none.err()).isZero();
    assertThat(none.out()).isEqualTo("graph:     " + fp(argmax) + " (jit__argmax)" + NL
        + "why new:   no relative (no other readable graph in the cache is named jit__argmax, and none under another"
        + " name has a like structure)" + NL);
  }

  @Test
  void badInput_isOneLine_exit2() {
    add(trainStep("mlp_run1"));
    CliRunner r = CliRunner.run("cache", "why", "--cache", cache(), "train_step");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).isEqualTo("xlac: not a fingerprint: 'train_step' (give hlo1:<64 hex digits> or at least 6 of"
        + " them)" + NL);
    CliRunner missing = CliRunner.run("cache", "why", "--cache", cache(), "000000");
    assertThat(missing.exitCode()).isEqualTo(2);
    assertThat(missing.err()).isEqualTo("xlac: no graph in cache " + cache() + " has fingerprint 000000" + NL);
    assertThat(missing.out()).isEmpty();
  }

  @Test
  void dump_rerunWithOneChangedHyperparameter_namesTheChange() {
    CliRunner first = dumpRun("mlp_run1");
    assertThat(first.exitCode()).as(first.err()).isZero();
    assertThat(first.out()).as("a first run into an empty cache explains nothing").doesNotContain("new graph");

    CliRunner renamed = dumpRun("mlp_renamed");
    assertThat(renamed.exitCode()).as(renamed.err()).isZero();
    assertThat(renamed.out()).as("a renamed script is the same program").contains(", 0 new, ")
        .doesNotContain("new graph");

    CliRunner constant = dumpRun("mlp_const");
    assertThat(constant.exitCode()).as(constant.err()).isZero();
    assertThat(constant.out().lines().toList().getLast()).isEqualTo(
        "1 new graph: 1 differs from a cached graph only in a constant (1.5 -> 2.5: jit_train_step)");

    CliRunner batch = dumpRun("mlp_batch64");
    assertThat(batch.exitCode()).as(batch.err()).isZero();
    assertThat(batch.out().lines().toList().getLast()).isEqualTo("4 new graphs: 3 differ from cached graphs only in"
        + " batch size (32 -> 64: jit_train_step, jit__argmax, jit_matmul), 1 differs from a cached graph only in result"
        + " shape (f32[32,32] -> f32[64,32]: jit__normal)");
  }

  private static dev.xlac.runtime.RecordedRequest hloRequest(String run) throws Exception {
    byte[] program = dev.xlac.hlo.proto.HloProtos.HloProto.parseFrom(java.nio.file.Files.readAllBytes(trainStep(run)))
        .getHloModule().toByteArray(); // a bare HloModuleProto, as torch_xla sends it
    byte[] format = "hlo".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    String identity = "xlac-pjrt-plugin/2\nplatform_name=cpu\nplugin_sha256=" + "ab".repeat(32) + "\n";
    dev.xlac.runtime.RequestKey key = dev.xlac.runtime.RequestKey.of(format, program, new byte[0],
        identity.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    return new dev.xlac.runtime.RecordedRequest(key, format, program, new byte[0], identity, new byte[] {7}, 5);
  }

  @Test
  void why_aRequestKey_namesTheChangeAgainstTheNearestRecordedRequestOfItsModule() throws Exception {
    var batch32 = hloRequest("mlp_run1");
    var batch64 = hloRequest("mlp_batch64");
    Path spool = tmp.resolve("spool");
    dev.xlac.runtime.RecordSpool.write(spool, batch32);
    dev.xlac.runtime.RecordSpool.write(spool, batch64);
    CliRunner added = CliRunner.run("cache", "add", "--cache", cache(), spool.toString());
    assertThat(added.exitCode()).as(added.err()).isZero();

    String verdict = CliRunner.run("diff", trainStep("mlp_run1").toString(), trainStep("mlp_batch64").toString())
        .out().lines().findFirst().orElseThrow();
    CliRunner r = CliRunner.run("cache", "why", "--cache", cache(), batch64.key().text());
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).isEqualTo("request:   " + batch64.key().text() + " (jit_train_step)" + NL
        + "why:       program changed (batch size (32 -> 64))" + NL
        + "nearest:   " + batch32.key().text() + NL
        + "verdict:   " + verdict + NL);
    CliRunner json = CliRunner.run("cache", "why", "--cache", cache(), "--json", batch64.key().text());
    assertThat(json.out()).contains("\"reason\": \"program\"", "\"program_change\": \"batch size (32 -> 64)\"");

    CliRunner bad = CliRunner.run("cache", "why", "--cache", cache(), "pjrt1:xyz");
    assertThat(bad.exitCode()).isEqualTo(2);
    assertThat(bad.err()).isEqualTo("xlac: 'pjrt1:xyz' is not a request key (pjrt1: and 64 hex digits)" + NL);
    String unknown = "pjrt1:" + "0".repeat(64);
    CliRunner none = CliRunner.run("cache", "why", "--cache", cache(), unknown);
    assertThat(none.exitCode()).isEqualTo(2);
    assertThat(none.err()).isEqualTo("xlac: no recorded request in cache " + cache() + " has key " + unknown + NL);
  }
}
