package dev.xlac.hlo;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Pins what {@code xlac inspect} shows ({@link ModuleSummary}, every value of which it prints) for
 * every HLO proto among the golden dumps, optimised ones included: the expected text in
 * {@value #EXPECTED} was made by the code before the summary moved off the object-model graph, so
 * a change to how the summary is computed cannot change the command's output unnoticed.
 */
class ModuleSummaryTest {
  private static final String EXPECTED = "/module-summaries.txt";

  @Test
  void everyGoldenDump_summarisesAsPinned() throws IOException {
    String actual = render(goldenProtos());
    // On a mismatch the whole text is here, to diff against (or, after a deliberate change, to copy over) the pin.
    Path written = Path.of("target", "module-summaries.actual.txt");
    Files.createDirectories(written.getParent());
    Files.writeString(written, actual);
    assertThat(actual).isEqualTo(expected());
  }

  @Test
  void summaryOfABareModule_countsItsComputationsAndInstructions() {
    byte[] bytes = TestModules.mulAdd(2f).toByteArray();
    ModuleSummary s = ModuleSummary.of(new HloModuleReader().parse(Path.of("m.hlo_module.pb"), HloFileKind.HLO_MODULE,
        bytes, bytes.length));
    assertThat(s.module()).isEqualTo("jit_step");
    assertThat(s.computations()).isEqualTo(TestModules.mulAdd(2f).getComputationsCount());
    assertThat(s.instructions()).isEqualTo(TestModules.mulAdd(2f).getComputationsList().stream()
        .mapToInt(c -> c.getInstructionsCount()).sum());
    assertThat(s.opcodeCounts().values().stream().mapToInt(Integer::intValue).sum()).isEqualTo(s.instructions());
    assertThat(s.fingerprint()).isEqualTo(GraphFingerprint.of(TestModules.mulAdd(2f)));
  }

  /** Every HloProto, gzipped HloProto and snapshot under the golden folder, in path order. */
  private static List<Path> goldenProtos() throws IOException {
    Path root = TestModules.golden("mlp_run1").getParent();
    try (Stream<Path> files = Files.walk(root)) {
      return files.filter(Files::isRegularFile)
          .filter(f -> f.getFileName().toString().matches(".*(\\.hlo\\.pb|\\.hlo\\.pb\\.gz|\\.snapshot\\.-?\\d+\\.pb)"))
          .sorted().toList();
    }
  }

  /** One line a file: its path under the golden folder, then the summary as inspect's JSON keys and values. */
  private static String render(List<Path> files) {
    Path root = TestModules.golden("mlp_run1").getParent();
    StringBuilder out = new StringBuilder();
    for (Path f : files) {
      Map<String, Object> json = ModuleSummary.of(new HloModuleReader().read(f)).toJson();
      String rel = root.relativize(f).toString().replace('\\', '/');
      assertThat(json.remove("file")).isEqualTo(f.toString());
      out.append(rel).append(' ').append(json).append('\n');
    }
    return out.toString();
  }

  private static String expected() throws IOException {
    try (InputStream in = ModuleSummaryTest.class.getResourceAsStream(EXPECTED)) {
      assertThat(in).as("test resource %s", EXPECTED).isNotNull();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
