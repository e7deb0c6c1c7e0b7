package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The launcher's completion scripts, loaded as the README says, complete commands and options in real shells. */
class CompletionE2ETest {
  @TempDir
  Path dir;

  /**
   * What bash's completion of {@code words} (the last one being completed) offers: the script is sourced from
   * {@code ./xlac completion bash}, and its function is called as bash calls it on Tab.
   */
  private static List<String> bashCompletes(String... words) throws Exception {
    String script = """
        source <(./xlac completion bash) || exit 9
        COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        _complete_xlac
        printf '%s\\n' "${COMPREPLY[@]}"
        """;
    List<String> cmd = new ArrayList<>(List.of("bash", "-c", script, "bash"));
    cmd.addAll(List.of(words));
    Launcher.Result r = Launcher.run(cmd, Map.of(), 600);
    assertThat(r.exitCode()).as(r.err()).isZero();
    return r.out().lines().filter(l -> !l.isEmpty()).toList();
  }

  @Test
  void bash_completesACacheSubcommand() throws Exception {
    assertThat(bashCompletes("xlac", "cache", "mat")).containsExactly("materialize");
  }

  @Test
  void bash_completesAnOptionOfACommand() throws Exception {
    assertThat(bashCompletes("xlac", "parallel-compile", "--retr"))
        .containsExactlyInAnyOrder("--retry-failed", "--retries");
    assertThat(bashCompletes("xlac", "parallel-compile", "--retry-f")).containsExactly("--retry-failed");
  }

  @Test
  void bash_completesTheTopLevelCommands_andTheShellNames() throws Exception {
    assertThat(bashCompletes("xlac", "comp")).containsExactly("completion");
    assertThat(bashCompletes("xlac", "completion", "")).containsExactly("bash", "zsh");
  }

  /**
   * A real interactive zsh, started bare, sources {@code ./xlac completion zsh} and completes lines on Tab
   * (zsh-complete.zsh drives it through a pseudo-terminal); each completed line is what zsh's line editor holds.
   */
  @Test
  void zsh_completesCommandsAndOptions_onTab() throws Exception {
    Launcher.Result which = Launcher.run(List.of("bash", "-c", "command -v zsh"), Map.of(), 30);
    Assumptions.assumeTrue(which.exitCode() == 0,
        "zsh is not installed here ('command -v zsh' found nothing), so the zsh completion script is not run");
    Path driver = Path.of(CompletionE2ETest.class.getResource("zsh-complete.zsh").toURI());
    Launcher.Result r = Launcher.run(List.of("zsh", "-f", driver.toString(), dir.toString(),
        "xlac cache mat", "xlac parallel-compile --retry-f", "xlac comp", "xlac completion z"), Map.of(), 900);
    assertThat(r.exitCode()).as("%s%n%s", r.out(), r.err()).isZero();
    assertThat(r.out().lines().map(String::strip).toList()).containsExactly(
        "xlac cache materialize", "xlac parallel-compile --retry-failed", "xlac completion", "xlac completion zsh");
  }
}
