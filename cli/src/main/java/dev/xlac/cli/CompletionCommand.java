package dev.xlac.cli;

import dev.xlac.core.XlacException;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code xlac completion bash|zsh}: prints a completion script for every command and option, picocli's for the whole
 * command tree, which the build prepares ({@link CompletionScript}).
 *
 * <p>picocli's script serves both shells: under zsh it loads zsh's completion system (compinit, when the shell has
 * not) and its bash compatibility layer (bashcompinit) itself, so the zsh script is the same with its own header.
 */
@Command(name = "completion", mixinStandardHelpOptions = true,
    description = {"Print a shell completion script for xlac's commands and options.",
        "SHELL is bash or zsh. Load the script in each new shell, for example with 'source <(xlac completion"
            + " bash)' in ~/.bashrc or 'source <(xlac completion zsh)' in ~/.zshrc."},
    footer = "%nThe zsh script uses zsh's bash completion support (bashcompinit); it turns on zsh's completion"
        + " system (compinit) first when the shell has not done so.")
final class CompletionCommand implements Callable<Integer> {
  static final List<String> SHELLS = List.of("bash", "zsh");

  @Parameters(paramLabel = "SHELL", completionCandidates = Shells.class, description = "bash or zsh.")
  String shell;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    if (!SHELLS.contains(shell)) {
      throw XlacException.badInput("unknown shell '" + shell + "' for completion; the shells are "
          + String.join(" and ", SHELLS));
    }
    String rc = shell.equals("zsh") ? "~/.zshrc" : "~/.bashrc";
    String header = "# xlac completion for " + shell + ", made by 'xlac completion " + shell + "'.\n"
        + "# Load it in every new shell with this line in " + rc + ": source <(xlac completion " + shell + ")\n";
    String script = CompletionScript.prepared();
    int afterShebang = script.startsWith("#!") ? script.indexOf('\n') + 1 : 0;
    var out = spec.commandLine().getOut();
    out.print(script.substring(0, afterShebang) + header + script.substring(afterShebang));
    out.flush();
    return 0;
  }

  /** The values that complete SHELL itself. */
  static final class Shells implements Iterable<String> {
    @Override
    public Iterator<String> iterator() {
      return SHELLS.iterator();
    }
  }
}
