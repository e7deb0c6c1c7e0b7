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
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.ParseResult;

/**
 * The xlac command tree, listed once. picocli reflects over every command class and option of the tree it
 * builds, which costs a cold JVM about 200 ms for the whole tree; a run whose arguments start with a
 * subcommand's name builds that branch only ({@code cache stat}: the root, cache and stat). Anything else (no
 * arguments, an option first, {@code help}, a misspelt name) builds all of that level, so help, suggestions and
 * usage errors are exactly those of the whole tree. {@code xlac --version} alone builds none ({@link Main}).
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
    return forArgs(root);
  }

  /** The branch that {@code args} start with under {@code root}, with all of the level where they name none. */
  static CommandLine forArgs(XlacCommand root, String... args) {
    CommandLine cmd = new CommandLine(root);
    if (args.length > 0 && args[0].equals(INTERNAL_SHARD)) { // internal: in no listing, help or completion
      return cmd.addSubcommand(dev.xlac.cli.compile.CompileShardCommand.class);
    }
    addSubcommands(cmd, SUBCOMMANDS, List.of(args));
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
      List<String> args) {
    Class<?> named = args.isEmpty() ? null : subcommands.get(args.getFirst());
    if (named != null && named != HelpCommand.class) {  // help describes the whole tree
      add(parent, args.getFirst(), named, args.subList(1, args.size()));
    } else {
      subcommands.forEach((name, command) -> add(parent, name, command, List.of()));
    }
  }

  private static void add(CommandLine parent, String name, Class<?> command, List<String> rest) {
    parent.addSubcommand(command);
    if (command == CacheCommand.class) {
      addSubcommands(parent.getSubcommands().get(name), CacheCommand.SUBCOMMANDS, rest);
    }
  }
}
