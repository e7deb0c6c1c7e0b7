package dev.xlac.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.core.ExitCode;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class HelpTest {

  /** The annotation's table is text kept by hand; it must say exactly what {@link ExitCode} says. */
  @Test
  void help_listsEveryExitCodeWithItsMeaning_andNothingElse() {
    CliRunner r = CliRunner.run("--help");
    assertThat(r.exitCode()).isZero();
    List<String> table = r.out().lines().dropWhile(l -> !l.equals("Exit codes:")).skip(1)
        .takeWhile(l -> !l.isBlank()).map(String::strip).toList();
    assertThat(table).containsExactlyElementsOf(Arrays.stream(ExitCode.values())
        .map(c -> c.code() + "   " + c.meaning()).toList());
  }
}
