package dev.xlac.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cli.cache.CacheCommand;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/** A run that names a subcommand builds only that branch, and prints exactly what the whole tree would. */
class CommandTreeTest {
  @TempDir
  Path tmp;

  private static List<String> subcommandNames(CommandLine cmd) {
    return List.copyOf(cmd.getSubcommands().keySet());
  }

  private static CommandLine cacheOf(CommandLine root) {
    return root.getSubcommands().get("cache");
  }

  @Test
  void wholeTree_namesEverySubcommandAsItsAnnotationDoes_inTheListedOrder() {
    CommandLine whole = CommandTree.whole(new XlacCommand());
    assertThat(subcommandNames(whole))
        .containsExactly("hash", "inspect", "diff", "dump", "run", "cache", "parallel-compile", "completion", "help")
        .containsExactlyElementsOf(CommandTree.SUBCOMMANDS.sequencedKeySet());
    assertThat(subcommandNames(cacheOf(whole))).hasSize(16)
        .containsExactlyElementsOf(CacheCommand.SUBCOMMANDS.sequencedKeySet());
    whole.getSubcommands().forEach((name, c) -> assertThat(c.getCommandName()).isEqualTo(name));
    cacheOf(whole).getSubcommands().forEach((name, c) -> assertThat(c.getCommandName()).isEqualTo(name));
  }

  @Test
  void forArgs_buildsOnlyTheBranchTheArgumentsName() {
    assertThat(subcommandNames(CommandTree.forArgs(new XlacCommand(), "hash", "--json", "x"))).containsExactly("hash");
    assertThat(subcommandNames(CommandTree.forArgs(new XlacCommand(), "parallel-compile", "--", "x")))
        .containsExactly("parallel-compile");
    CommandLine stat = CommandTree.forArgs(new XlacCommand(), "cache", "stat", "--json");
    assertThat(subcommandNames(stat)).containsExactly("cache");
    assertThat(subcommandNames(cacheOf(stat))).containsExactly("stat");
    // `cache` alone, or an option before the cache subcommand: all of cache, as its help and errors need.
    for (String[] args : List.of(new String[] {"cache"}, new String[] {"cache", "--verbose", "stat"},
        new String[] {"cache", "sta"})) {
      CommandLine c = CommandTree.forArgs(new XlacCommand(), args);
      assertThat(subcommandNames(c)).as(String.join(" ", args)).containsExactly("cache");
      assertThat(subcommandNames(cacheOf(c))).as(String.join(" ", args))
          .containsExactlyElementsOf(CacheCommand.SUBCOMMANDS.sequencedKeySet());
    }
  }

  static Stream<List<String>> argumentsThatNameNoBranch() {
    return Stream.of(List.of("--version", "x"), List.of("nosuchcmd"), List.of("hsh", "x"), List.of("--verbose", "hash"),
        List.of("Hash"));
  }

  @ParameterizedTest
  @MethodSource("argumentsThatNameNoBranch")
  void forArgs_buildsTheWholeTree_whenTheArgumentsNameNoBranch(List<String> args) {
    CommandLine c = CommandTree.forArgs(new XlacCommand(), args.toArray(String[]::new));
    assertThat(subcommandNames(c)).containsExactlyElementsOf(CommandTree.SUBCOMMANDS.sequencedKeySet());
    assertThat(subcommandNames(cacheOf(c))).containsExactlyElementsOf(CacheCommand.SUBCOMMANDS.sequencedKeySet());
  }

  /**
   * Issue #26: {@code xlac --help} read every option of every command (0.3 s of CPU, over the goal of 0.25 s); a
   * level that the arguments never go below (options only) lists its subcommands from their {@code @Command}s.
   */
  @ParameterizedTest
  @ValueSource(strings = {"", "--help", "-h", "--verbose --help", "cache", "cache --help", "cache -h"})
  void helpOfALevel_readsNoOptionsOfTheSubcommandsItLists(String line) {
    String[] args = line.isEmpty() ? new String[0] : line.split(" ");
    CommandLine level = CommandTree.forArgs(new XlacCommand(), args);
    if (line.startsWith("cache")) {
      level = cacheOf(level);
    }
    assertThat(level.getSubcommands()).as(line).isNotEmpty();
    level.getSubcommands().forEach((name, sub) -> {
      assertThat(sub.getCommandSpec().options()).as(line + ": " + name)
          .allMatch(o -> o.inherited() && o.longestName().equals("--verbose"));
      assertThat(sub.getSubcommands()).as(line + ": " + name).isEmpty();
    });
  }

  @Test
  void helpCommand_buildsWholeOnlyTheCommandItShows() {
    CommandLine help = CommandTree.forArgs(new XlacCommand(), "help", "cache");
    assertThat(subcommandNames(help)).containsExactlyElementsOf(CommandTree.SUBCOMMANDS.sequencedKeySet());
    assertThat(cacheOf(help).getCommandSpec().findOption("--help")).isNotNull();  // cache is whole: it is shown
    assertThat(subcommandNames(cacheOf(help))).containsExactlyElementsOf(CacheCommand.SUBCOMMANDS.sequencedKeySet());
    assertThat(cacheOf(help).getSubcommands().get("stat").getCommandSpec().findOption("--json")).isNull();
    assertThat(help.getSubcommands().get("hash").getCommandSpec().findOption("--json")).isNull();
    assertThat(CommandTree.forArgs(new XlacCommand(), "help", "hash").getSubcommands().get("hash").getCommandSpec()
        .findOption("--json")).isNotNull();
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "--help", "-h", "--verbose", "--verbose --help", "-hV", "--bogus", "--help --bogus",
      "--", "cache", "cache --help", "cache -h", "cache --verbose", "cache --bogus", "cache --help --verbose",
      "help", "help cache", "help hash", "help parallel-compile", "help --help", "help nosuch", "help cache stat",
      "help help"})
  void optionsOnlyAndHelp_printTheSameAsTheWholeTree(String line) {
    sameAsWholeTree(line.isEmpty() ? new String[0] : line.split(" "));
  }

  /**
   * Issue #26: xlac --version built the whole tree, most of its start-up; it now builds no picocli model at all, and
   * says what picocli's whole tree says, byte for byte.
   */
  @Test
  void version_withoutPicocli_saysWhatTheWholeTreeSays() {
    for (String option : new String[] {"--version", "-V"}) {
      assertThat(CliRunner.run(option)).as(option).isEqualTo(CliRunner.runWithWholeTree(option));
    }
  }

  static Stream<List<String>> everyCommandPath() {
    List<List<String>> paths = new ArrayList<>();
    CommandTree.SUBCOMMANDS.keySet().stream().filter(n -> !n.equals("help")).forEach(n -> paths.add(List.of(n)));
    CacheCommand.SUBCOMMANDS.keySet().forEach(n -> paths.add(List.of("cache", n)));
    return paths.stream();
  }

  /** Same exit code, same stdout and stderr, byte for byte, from the branch alone and from the whole tree. */
  private static CliRunner sameAsWholeTree(String... args) {
    CliRunner branch = CliRunner.run(args);
    assertThat(branch).as(String.join(" ", args)).isEqualTo(CliRunner.runWithWholeTree(args));
    return branch;
  }

  @ParameterizedTest
  @MethodSource("everyCommandPath")
  void help_isTheSameFromTheBranchAsFromTheWholeTree(List<String> path) {
    for (String help : List.of("--help", "-h")) {
      List<String> args = new ArrayList<>(path);
      args.add(help);
      CliRunner r = sameAsWholeTree(args.toArray(String[]::new));
      assertThat(r.exitCode()).isZero();
      assertThat(r.out()).startsWith("Usage: xlac " + String.join(" ", path) + " ").contains("--verbose");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"hash --nosuch", "hash", "inspect", "inspect --jsn x", "dump --nosuchopt",
      "cache lss", "cache stat --nosuch", "cache ls --limit x", "parallel-compile --nosuch", "completion",
      "completion bash zsh"})
  void usageErrors_areTheSameFromTheBranchAsFromTheWholeTree(String line) {
    CliRunner r = sameAsWholeTree(line.split(" "));
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith("xlac: ").contains("--help' for more information.");
  }

  @Test
  void rootHelp_listsTheSubcommandsInOrder_withTheirDescriptions() {
    CliRunner r = CliRunner.run("--help");
    assertThat(r.exitCode()).isZero();
    List<String> names = r.out().lines().dropWhile(l -> !l.equals("Commands:")).skip(1)
        .takeWhile(l -> l.startsWith("  ")).filter(l -> !l.startsWith("   ")).map(l -> l.strip().split(" ")[0])
        .toList();
    assertThat(names).containsExactly("hash", "inspect", "diff", "dump", "run", "cache", "parallel-compile", "completion", "help");
    assertThat(r.out()).contains("  hash              Print the canonical fingerprint of each HLO module")
        .contains("  help              Display help information about the specified command.");
    assertThat(CliRunner.run()).isEqualTo(r);  // no arguments: the root's usage
  }

  @Test
  void helpCache_describesCacheAndListsItsSubcommands() {
    CliRunner r = CliRunner.run("help", "cache");
    assertThat(r.exitCode()).isZero();
    assertThat(r.out()).startsWith("Usage: xlac cache [-hV] [--verbose] [COMMAND]");
    List<String> names = r.out().lines().dropWhile(l -> !l.equals("Commands:")).skip(1)
        .takeWhile(l -> l.startsWith("  ")).filter(l -> !l.startsWith("   ")).map(l -> l.strip().split(" ")[0])
        .toList();
    assertThat(names).containsExactlyElementsOf(CacheCommand.SUBCOMMANDS.sequencedKeySet());
    assertThat(CliRunner.run("cache", "--help")).isEqualTo(r);
  }

  @Test
  void unknownSubcommand_isAUsageError() {
    CliRunner r = CliRunner.run("nosuchcmd");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.out()).isEmpty();
    assertThat(r.err()).isEqualTo("xlac: Unmatched argument at index 0: 'nosuchcmd'" + System.lineSeparator()
        + "Try 'xlac --help' for more information." + System.lineSeparator());
  }

  @Test
  void verbose_beforeOrAfterTheSubcommand_addsTheStackTrace() throws Exception {
    Path bad = Files.write(tmp.resolve("x.hlo.pb"), new byte[] {0x0a, 0x7f});
    for (String[] args : List.of(new String[] {"--verbose", "inspect", bad.toString()},
        new String[] {"inspect", "--verbose", bad.toString()})) {
      CliRunner r = CliRunner.run(args);
      assertThat(r.exitCode()).isEqualTo(2);
      assertThat(r.err()).startsWith("xlac: cannot read " + bad + ": truncated").contains("\tat ");
    }
    assertThat(CliRunner.run("inspect", bad.toString()).err()).doesNotContain("\tat ");
  }

  @Test
  void dump_stopsAtTheCommand_soItsOptionsAreTheCommands() {
    String cache = tmp.resolve("cache").toString();
    // Without stop-at-positional, --flag would be an unknown option of dump (exit 2), not the command's.
    for (String[] args : List.of(
        new String[] {"dump", "--cache", cache, "no-such-command-xlac", "--flag"},
        new String[] {"dump", "--cache", cache, "--", "no-such-command-xlac", "--flag"})) {
      CliRunner r = sameAsWholeTree(args);
      assertThat(r.exitCode()).as(r.err()).isEqualTo(127);
      assertThat(r.err()).isEqualTo("xlac: command not found: no-such-command-xlac (not on PATH)"
          + System.lineSeparator());
    }
  }
}
