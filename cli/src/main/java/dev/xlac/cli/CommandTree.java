package dev.xlac.cli;

import dev.xlac.cli.cache.CacheCommand;
import dev.xlac.cli.compile.ParallelCompileCommand;
import dev.xlac.cli.dump.DumpCommand;
import dev.xlac.cli.run.RunCommand;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParseResult;

/**
 * The xlac command tree, listed once. picocli reflects over every command class and option of the tree it
 * builds, which costs a cold JVM about 200 ms for the whole tree; a run whose arguments start with a
 * subcommand's name builds that branch only ({@code cache stat}: the root, cache and stat). Anything else (a
 * misspelt name, an option and then a name) builds all of that level, so suggestions and usage errors are exactly
 * those of the whole tree. Where the arguments left at a level are options only ({@code --help}, {@code cache -h},
 * none), picocli never goes below it, and needs of each subcommand only what the level's help lists: its names and
 * summary, read from its {@code @Command} alone; so does {@code help [COMMAND]} of all but COMMAND. {@code xlac
 * --version} alone builds none ({@link Main}).
 */
final class CommandTree {
  /** The top-level subcommands in the order help lists them; each key is the name in the class's {@code @Command}. */
  static final SequencedMap<String, Class<?>> SUBCOMMANDS;

  static {
    SequencedMap<String, Class<?>> m = new LinkedHashMap<>();
    m.put("hash", HashCommand.class);
    m.put("inspect", InspectCommand.class);
    m.put("diff", DiffCommand.class);
    m.put("dump", DumpCommand.class);
    m.put("run", RunCommand.class);
    m.put("cache", CacheCommand.class);
    m.put("parallel-compile", ParallelCompileCommand.class);
    m.put("completion", CompletionCommand.class);
    m.put("help", HelpCommand.class);
    SUBCOMMANDS = Collections.unmodifiableSequencedMap(m);
  }

  /** The one internal command: a task of {@code parallel-compile --executor slurm}, which writes its command line. */
  static final String INTERNAL_SHARD = "compile-shard";

  private CommandTree() {}

  /** The whole tree under {@code root}. */
  static CommandLine whole(XlacCommand root) {
    CommandLine cmd = new CommandLine(root);
    addSubcommands(cmd, SUBCOMMANDS, List.of(), true);
    return cmd;
  }

  /** The branch that {@code args} start with under {@code root}, with all of the level where they name none. */
  static CommandLine forArgs(XlacCommand root, String... args) {
    CommandLine cmd = new CommandLine(root);
    if (args.length > 0 && args[0].equals(INTERNAL_SHARD)) { // internal: in no listing, help or completion
      return cmd.addSubcommand(dev.xlac.cli.compile.CompileShardCommand.class);
    }
    addSubcommands(cmd, SUBCOMMANDS, List.of(args), false);
    return cmd;
  }

  /**
   * How many arguments at the end of {@code args} ({@code dump} or {@code run} without {@code --}) are the
   * command to run, as picocli parses them; 0 when it cannot parse them.
   */
  static int commandLength(String[] args) {
    try {
      CommandLine cmd = forArgs(new XlacCommand(), args);
      cmd.getSubcommands().get(args[0]).setStopAtPositional(true);
      ParseResult parsed = cmd.parseArgs(args);
      if (parsed.subcommand() == null) {
        return 0;
      }
      return parsed.subcommand().matchedPositionals().stream().mapToInt(p -> p.stringValues().size()).sum();
    } catch (CommandLine.ParameterException e) {
      return 0;
    }
  }

  private static void addSubcommands(CommandLine parent, SequencedMap<String, Class<?>> subcommands,
      List<String> args, boolean whole) {
    Class<?> named = args.isEmpty() ? null : subcommands.get(args.getFirst());
    if (named == HelpCommand.class && !whole) {
      // help [COMMAND] prints the root's usage or COMMAND's: that one whole, the others as its listing shows them.
      String shown = args.size() > 1 ? args.get(1) : "";
      subcommands.forEach((name, command) -> {
        if (command == HelpCommand.class || name.equals(shown)) {
          add(parent, name, command, List.of(), false);
        } else {
          parent.addSubcommand(listedOnly(command));
        }
      });
    } else if (named != null && named != HelpCommand.class) {
      add(parent, args.getFirst(), named, args.subList(1, args.size()), whole);
    } else if (!whole && onlyOptions(args)) {
      for (Class<?> command : subcommands.values()) {
        parent.addSubcommand(listedOnly(command));
      }
    } else {
      subcommands.forEach((name, command) -> add(parent, name, command, List.of(), whole));
    }
  }

  private static void add(CommandLine parent, String name, Class<?> command, List<String> rest, boolean whole) {
    parent.addSubcommand(command);
    if (command == CacheCommand.class) {
      addSubcommands(parent.getSubcommands().get(name), CacheCommand.SUBCOMMANDS, rest, whole);
    }
  }

  private static boolean onlyOptions(List<String> args) {
    for (String arg : args) {
      if (!arg.startsWith("-")) {
        return false;
      }
    }
    return true;
  }

  /**
   * A subcommand as its parent's help lists it (names, summary, hidden or not), from its {@code @Command} alone:
   * its options and subcommands are left out, and it is never run.
   */
  private static CommandLine listedOnly(Class<?> command) {
    Command annotation = command.getAnnotation(Command.class);
    CommandSpec spec = CommandSpec.wrapWithoutInspection(command).name(annotation.name()).aliases(annotation.aliases());
    spec.usageMessage().header(annotation.header()).description(annotation.description()).hidden(annotation.hidden());
    return new CommandLine(spec);
  }
}
