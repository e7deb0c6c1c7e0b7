package dev.xlac.cli.cache;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cli.Main;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.TestModules;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code cache import --neuron-cache} and {@code cache materialize --layout neuron}, in-process. */
class NeuronCacheCommandsTest {
  static final String VERSION_DIR = "neuronxcc-2.15.128.0+56dc5a86";

  @TempDir Path tmp;
  Path cache;
  Path neuron;
  List<byte[]> modules = new ArrayList<>();

  record Run(int code, String out, String err) {}

  Run xlac(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    List<String> all = new ArrayList<>(List.of(args));
    all.add(2, "--cache");
    all.add(3, cache.toString());
    int code = new Main(new PrintWriter(out), new PrintWriter(err)).run(all.toArray(String[]::new));
    return new Run(code, out.toString(), err.toString());
  }

  @BeforeEach
  void neuronCache() throws Exception {
    cache = tmp.resolve("cache");
    neuron = tmp.resolve("neuron-compile-cache");
    try (Stream<Path> s = Files.list(TestModules.golden("mlp_run1"))) {
      for (Path p : (Iterable<Path>) s.filter(f -> f.toString().endsWith(".before_optimizations.hlo.pb")).sorted()
          .limit(3)::iterator) {
        modules.add(new HloModuleReader().read(p).module().toByteArray());
      }
    }
    Path compiled = Files.createDirectories(neuron.resolve(VERSION_DIR).resolve("MODULE_101+0badf00d"));
    Files.write(compiled.resolve("model.hlo_module.pb"), modules.get(0));
    Files.writeString(compiled.resolve("compile_flags.json"), "[\"--target=trn1\", \"-O1\"]");
    Files.write(compiled.resolve("model.neff"), "NEFF bytes".getBytes(StandardCharsets.UTF_8));
    Files.write(compiled.resolve("model.done"), new byte[0]);
    Path failed = Files.createDirectories(neuron.resolve(VERSION_DIR).resolve("MODULE_102+0badf00d"));
    Files.write(failed.resolve("model.hlo_module.pb"), modules.get(1));
    Files.writeString(failed.resolve("compile_flags.json"), "[\"--target=trn1\", \"-O1\"]");
    Files.writeString(failed.resolve("model.log"), "[ERROR] [NCC_X] boom\n");
  }

  @Test
  void importNeuronCache_printsCountsPerState() {
    Run r = xlac("cache", "import", "--neuron-cache", neuron.toString());
    assertThat(r.err()).isEmpty();
    assertThat(r.code()).isZero();
    assertThat(r.out()).isEqualTo("Imported Neuron cache " + neuron + ": 2 entries (1 compiled, 1 failed, 0 pending),"
        + " graphs added 2; 0 bad entries skipped, 0 stale locks ignored\n");
    assertThat(xlac("cache", "ls").out()).contains("neuronx-cc:trn1", "compiled", "failed");
  }

  @Test
  void importNeuronCache_withABadEntry_reportsItInOneLine_importsTheRest_andExits2() throws Exception {
    Path bad = Files.createDirectories(neuron.resolve(VERSION_DIR).resolve("MODULE_103+0badf00d"));
    Files.write(bad.resolve("model.hlo_module.pb"), modules.get(2));
    Files.write(bad.resolve("model.neff"), new byte[0]);
    Files.write(bad.resolve("model.done"), new byte[0]);
    Run r = xlac("cache", "import", "--neuron-cache", neuron.toString());
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).isEqualTo("xlac: Neuron cache entry " + bad + ": model.neff is empty (0 bytes)\n");
    assertThat(r.out()).contains("2 entries (1 compiled, 1 failed, 0 pending)", "1 bad entries skipped");
  }

  @Test
  void import_needsExactlyOneOfBundleAndNeuronCache() {
    assertThat(xlac("cache", "import").code()).isEqualTo(2);
    Run both = xlac("cache", "import", "x.tar.zst", "--neuron-cache", neuron.toString());
    assertThat(both.code()).isEqualTo(2);
    assertThat(both.err()).contains("exactly one");
    Run missing = xlac("cache", "import", "--neuron-cache", tmp.resolve("nope").toString());
    assertThat(missing.code()).isEqualTo(2);
    assertThat(missing.err()).contains("cannot read Neuron cache").doesNotContain("Exception");
  }

  @Test
  void materialize_writesTheNeuronLayoutBack_andSkipsGraphsWithoutANeuronName() throws Exception {
    xlac("cache", "import", "--neuron-cache", neuron.toString());
    Path dump = TestModules.writeDump(tmp.resolve("dumps"), "module_0001.jit_x.before_optimizations.hlo.pb",
        TestModules.mulAdd(3f));
    assertThat(xlac("cache", "add", dump.toString()).code()).isZero();
    Path out = tmp.resolve("out");
    Run r = xlac("cache", "materialize", "--layout", "neuron", out.toString());
    assertThat(r.code()).isZero();
    assertThat(r.out()).isEqualTo("Materialized 2 Neuron entries in " + out + " (1 compiled, 1 failed, 0 pending):"
        + " 7 files written, 0 unchanged; 1 graphs without a Neuron name skipped\n");
    assertThat(r.err()).contains("1 graphs skipped: they have no Neuron MODULE name");
    Path e = out.resolve(VERSION_DIR).resolve("MODULE_101+0badf00d");
    assertThat(Files.readString(e.resolve("model.neff"))).isEqualTo("NEFF bytes");
    assertThat(e.resolve("model.done")).exists();
    assertThat(Files.readString(out.resolve(VERSION_DIR).resolve("MODULE_102+0badf00d/model.log")))
        .isEqualTo("[ERROR] [NCC_X] boom\n");
    assertThat(xlac("cache", "materialize", "--layout", "neuron", out.toString()).out())
        .contains("0 files written, 7 unchanged");
  }

  @Test
  void materialize_unknownLayout_isAUsageError() {
    Run r = xlac("cache", "materialize", "--layout", "jax", tmp.toString());
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("--layout");
  }
}
