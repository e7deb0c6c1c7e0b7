package dev.xlac.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cli.cache.CacheCommand;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code xlac --help} and every {@code SUB --help}, byte for byte as before issue #26's start-up work built less of
 * the command tree for them. The golden file is what {@code ./xlac} printed then; a deliberate change of a help
 * text changes it too (each page is headed {@code ==> xlac ARGS <==}).
 */
class HelpGoldenTest {
  private static List<List<String>> everyHelpPage() {
    List<List<String>> pages = new ArrayList<>();
    pages.add(List.of("--help"));
    CommandTree.SUBCOMMANDS.keySet().stream().filter(n -> !n.equals("help")).forEach(n -> pages.add(List.of(n, "--help")));
    CacheCommand.SUBCOMMANDS.keySet().forEach(n -> pages.add(List.of("cache", n, "--help")));
    return pages;
  }

  @Test
  void everyHelpPage_isByteIdenticalToTheGoldenFile() throws IOException {
    StringBuilder printed = new StringBuilder();
    for (List<String> args : everyHelpPage()) {
      CliRunner r = CliRunner.run(args.toArray(String[]::new));
      assertThat(r.exitCode()).as(String.join(" ", args)).isZero();
      assertThat(r.err()).as(String.join(" ", args)).isEmpty();
      printed.append("==> xlac ").append(String.join(" ", args)).append(" <==\n")
          .append(r.out().replace(System.lineSeparator(), "\n"));
    }
    String golden;
    try (InputStream in = HelpGoldenTest.class.getResourceAsStream("help-golden.txt")) {
      golden = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertThat(printed.toString()).isEqualTo(golden);
  }
}
