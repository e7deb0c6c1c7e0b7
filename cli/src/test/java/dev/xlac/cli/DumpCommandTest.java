package dev.xlac.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Bad input to {@code xlac dump}: one line naming the input and the reason, and the documented code. */
class DumpCommandTest {
  @TempDir
  Path tmp;

  private CliRunner dump(String... args) {
    String[] all = new String[args.length + 3];
    all[0] = "dump";
    all[1] = "--cache";
    all[2] = tmp.resolve("cache").toString();
    System.arraycopy(args, 0, all, 3, args.length);
    return CliRunner.run(all);
  }

  private static void oneLine(CliRunner r, int code, String message) {
    assertThat(r.exitCode()).as(r.err()).isEqualTo(code);
    assertThat(r.err()).isEqualTo("xlac: " + message + System.lineSeparator());
    assertThat(r.out()).isEmpty();
  }

  @Test
  void missingCommand() {
    oneLine(dump(), 2, "no command given: write it after '--', e.g. xlac dump -- python train.py");
    oneLine(dump("--"), 2, "no command given: write it after '--', e.g. xlac dump -- python train.py");
  }

  @Test
  void unknownFrontend() {
    oneLine(dump("--frontend", "tensorflow", "--", "true"), 2,
        "--frontend tensorflow: unknown frontend (use auto, jax, torch-xla or neuron)");
  }

  @Test
  void badRegex() {
    oneLine(dump("--module-filter", "train(", "--", "true"), 2,
        "--module-filter train(: bad regular expression (Unclosed group at index 6)");
  }

  @Test
  void commandNotFound_is127() {
    oneLine(dump("--", "no-such-command-xlac", "--flag"), 127, "command not found: no-such-command-xlac (not on PATH)");
  }

  @Test
  void keepDumpsNotEmptyOrNotWritable() throws Exception {
    Path full = Files.createDirectories(tmp.resolve("full"));
    Files.writeString(full.resolve("old.hlo.pb"), "x");
    oneLine(dump("--keep-dumps", full.toString(), "--", "true"), 2, "--keep-dumps " + full
        + ": directory is not empty (xlac would take old dumps for new ones); name a new or empty directory");
    Path file = Files.writeString(tmp.resolve("a-file"), "x");
    CliRunner r = dump("--keep-dumps", file.resolve("sub").toString(), "--", "true");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith("xlac: --keep-dumps " + file.resolve("sub") + ": cannot create it").hasLineCount(1);
  }

  @Test
  void commandThatDumpsNothing_is1() {
    CliRunner r = dump("--", "true");
    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.out()).startsWith("dumped 0 modules from 0 processes: 0 unique graphs, 0 new, 0 already in the cache");
    assertThat(r.err()).isEqualTo("xlac: true ran but no XLA graph was dumped (frontend auto); does it compile anything"
        + " with JAX, PyTorch/XLA or Neuron?" + System.lineSeparator());
  }

  @Test
  void failingCommandThatDumpsNothing_passesItsStatusThrough() {
    CliRunner r = dump("--ignore-script-errors", "--", "sh", "-c", "exit 9");
    assertThat(r.exitCode()).isEqualTo(9);
    assertThat(r.err()).isEqualTo("xlac: sh exited with status 9" + System.lineSeparator());
  }

  @Test
  void summary_countsNewGraphs_graphsAlreadyCached_andCompiledOnes() throws Exception {
    Path dumps = Path.of(getClass().getResource("/dumps").toURI());
    Path matmul = dumps.resolve("module_0044.jit_matmul.before_optimizations.hlo.pb");
    LoadedModule m = new HloModuleReader().read(matmul);
    try (CacheStore store = CacheStore.open(tmp.resolve("cache"), CacheStore.Mode.READ_WRITE, Duration.ZERO)) {
      store.putGraph(m);
      CompilerIdentity cpu = new CompilerIdentity("pjrt", "cpu 0.1", "cpu", List.of(), Map.of());
      store.putArtifact(new ArtifactKey(m.fingerprint(), cpu), new byte[] {1, 2, 3}, CompileInfo.of(0.5, ""));
    }
    // A "training command" that dumps three modules, one of them twice (two processes would).
    String copy = "d=${XLA_FLAGS#*--xla_dump_to=}; d=${d%% *}; mkdir -p $d $d.2 && cp " + dumps + "/*.before_optimizations.hlo.pb $d/"
        + " && cp " + matmul + " $d.2/";
    CliRunner r = dump("--", "sh", "-c", copy);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).isEqualTo("dumped 4 modules from 2 processes: 3 unique graphs, 2 new, 1 already in the cache"
        + System.lineSeparator() + "1 already compiled for pjrt:cpu" + System.lineSeparator()
        + "2 new graphs: 2 have no relative (jit_sqrt, jit_multiply)" + System.lineSeparator());
    CliRunner again = dump("--module-filter", "matmul|sqrt", "--", "sh", "-c", copy.replace("$d.2", "$d.3"));
    assertThat(again.out()).startsWith("dumped 3 modules from 2 processes: 2 unique graphs, 0 new, 2 already in the cache")
        .as("nothing new: no why-new line").doesNotContain("new graph");
  }
}
