package dev.xlac.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cli.cache.CacheCommand;
import dev.xlac.core.ExitCode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.HelpCommand;

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

  /** Every command of the whole tree, the root first; picocli's own help command is not ours to word. */
  private static List<CommandLine> everyCommand() {
    List<CommandLine> all = new ArrayList<>();
    collect(CommandTree.whole(new XlacCommand()), all);
    return all;
  }

  private static void collect(CommandLine cmd, List<CommandLine> all) {
    if (cmd.getCommand() instanceof HelpCommand) {
      return;
    }
    all.add(cmd);
    cmd.getSubcommands().values().forEach(c -> collect(c, all));
  }

  /** What an element prints: {@code %n} is a line break, and a blank line is no text. */
  private static String text(String element) {
    return element.replace("%n", "\n").strip();
  }

  @Test
  void everyCommand_isWalked() {
    List<String> names = everyCommand().stream().map(c -> c.getCommandSpec().qualifiedName()).toList();
    assertThat(names).contains("xlac", "xlac cache", "xlac cache materialize", "xlac parallel-compile")
        .hasSize(1 + (CommandTree.SUBCOMMANDS.size() - 1) + CacheCommand.SUBCOMMANDS.size());  // help is skipped
  }

  /** The parent's command list shows element 0 as the summary, so it must be one whole sentence. */
  @Test
  void everySummary_isOneSentence() {
    List<String> bad = new ArrayList<>();
    for (CommandLine c : everyCommand()) {
      String[] description = c.getCommandSpec().usageMessage().description();
      String summary = description.length == 0 ? "" : description[0];
      if (!summary.endsWith(".") || summary.contains(". ") || summary.contains("%n") || summary.isBlank()) {
        bad.add(c.getCommandSpec().qualifiedName() + ": \"" + summary + "\"");
      }
    }
    assertThat(bad).as("summaries that are not one sentence").isEmpty();
  }

  /** picocli prints each element on lines of its own, so an element that stops mid-sentence breaks the text. */
  @Test
  void noHelpElement_endsMidSentence() {
    List<String> bad = new ArrayList<>();
    for (CommandLine c : everyCommand()) {
      CommandLine.Model.UsageMessageSpec usage = c.getCommandSpec().usageMessage();
      Stream.concat(Arrays.stream(usage.description()), Arrays.stream(usage.footer()))
          .filter(e -> !e.startsWith("  ") && !text(e).isEmpty())
          .filter(e -> !(e.endsWith(".") || e.endsWith(":") || e.endsWith(")")))
          .forEach(e -> bad.add(c.getCommandSpec().qualifiedName() + ": \"" + e + "\""));
    }
    assertThat(bad).as("help elements that end mid-sentence").isEmpty();
  }

  /** The command list and each command's own page print whole sentences, not ones cut at a line's end. */
  @Test
  void rootAndCacheHelp_showWholeSummaries() {
    String nl = System.lineSeparator();
    String root = CliRunner.run("--help").out();
    assertThat(root).contains("as soon as it is done." + nl).contains("artifacts compiled from them." + nl)
        .doesNotContain("storing" + nl);
    String cache = CliRunner.run("cache", "--help").out();
    assertThat(cache).contains("deduplicated by fingerprint." + nl).doesNotContain("pending graphs," + nl)
        .doesNotContain("compiled by" + nl);
  }
}
