package dev.xlac.cli;

import static org.assertj.core.api.Assertions.assertThat;

import static java.nio.charset.StandardCharsets.UTF_8;

import dev.xlac.cli.cache.CacheCommand;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@code xlac completion bash|zsh} prints a script for the whole command tree, though a run builds one branch. */
class CompletionCommandTest {

  /** The words a command's completion offers after it, as the script lists them. */
  private static List<String> commandsListed(String script, String function) {
    List<String> lines = script.lines().dropWhile(l -> !l.equals("function " + function + "() {"))
        .takeWhile(l -> !l.equals("}")).filter(l -> l.strip().startsWith("local commands=")).toList();
    assertThat(lines).as(function).hasSize(1);
    String list = lines.getFirst().strip().substring("local commands=\"".length());
    return List.of(list.substring(0, list.length() - 1).split(" "));
  }

  @ParameterizedTest
  @ValueSource(strings = {"bash", "zsh"})
  void script_completesEveryCommandAndTheirOptions(String shell) {
    CliRunner r = CliRunner.run("completion", shell);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).isEmpty();
    String script = r.out();
    assertThat(script).startsWith("#!/usr/bin/env bash\n# xlac completion for " + shell + ",")
        .contains("source <(xlac completion " + shell + ")")
        .contains("complete -F _complete_xlac ");
    assertThat(commandsListed(script, "_picocli_xlac")).containsExactlyElementsOf(CommandTree.SUBCOMMANDS.keySet())
        .contains("completion");
    assertThat(commandsListed(script, "_picocli_xlac_cache"))
        .containsExactlyElementsOf(CacheCommand.SUBCOMMANDS.keySet());
    for (String name : CacheCommand.SUBCOMMANDS.keySet()) {
      assertThat(script).contains("function _picocli_xlac_cache_" + name + "() {");
    }
    assertThat(script).contains("'--retry-failed'", "'--ignore-script-errors'", "'--layout'", "'--max-unpacked'",
        "'--cache'", "'--verbose'");
    assertThat(script).contains("(\"bash\" \"zsh\")");  // what completes `xlac completion <TAB>`
  }

  /** The script the build prepared (a resource) is byte for byte what picocli makes of the tree compiled now. */
  @Test
  void preparedScript_isWhatPicocliMakesOfTheCurrentTree() throws IOException {
    try (InputStream in = CompletionScript.class.getResourceAsStream(CompletionScript.RESOURCE)) {
      assertThat(in).as("the build's " + CompletionScript.RESOURCE).isNotNull();
      assertThat(new String(in.readAllBytes(), UTF_8)).isEqualTo(CompletionScript.generated());
    }
  }

  /** picocli's script turns on zsh's bash completion layer itself; nothing else has to be loaded first. */
  @Test
  void zshScript_loadsZshsBashCompletionSupport() {
    String script = CliRunner.run("completion", "zsh").out();
    assertThat(script).contains("[ -n \"$ZSH_VERSION\" ]", "autoload -U +X compinit && compinit",
        "autoload -U +X bashcompinit && bashcompinit");
  }

  @ParameterizedTest
  @ValueSource(strings = {"fish", "Bash", "powershell"})
  void unknownShell_isAUsageError_inOneLine(String shell) {
    CliRunner r = CliRunner.run("completion", shell);
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.out()).isEmpty();
    assertThat(r.err()).isEqualTo("xlac: unknown shell '" + shell + "' for completion; the shells are bash and zsh"
        + System.lineSeparator());
  }

  @Test
  void noShell_isAUsageError() {
    CliRunner r = CliRunner.run("completion");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.out()).isEmpty();
    assertThat(r.err()).startsWith("xlac: Missing required parameter: 'SHELL'");
  }
}
