package dev.xlac.cli;

import dev.xlac.cli.cache.CacheCommand;
import dev.xlac.cli.compile.ParallelCompileCommand;
import dev.xlac.cli.dump.DumpCommand;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.SequencedMap;
import picocli.CommandLine;
import picocli.CommandLine.HelpCommand;

/**
 * The xlac command tree, listed once. picocli reflects over every command class and option of the tree it
 * builds, which costs a cold JVM about 200 ms for the whole tree; a run whose first argument names a subcommand
 * builds that branch only. Anything else (no arguments, an option first, {@code help}, a misspelt name) builds
 * the whole tree, so help, "did you mean" suggestions and usage errors are exactly those of the whole tree.
 */
final class CommandTree {
  /** The top-level subcommands in the order help lists them; each key is the name in the class's {@code @Command}. */
  static final SequencedMap<String, Class<?>> SUBCOMMANDS = ordered(
      "hash", HashCommand.class,
      "inspect", InspectCommand.class,
      "dump", DumpCommand.class,
      "cache", CacheCommand.class,
      "parallel-compile", ParallelCompileCommand.class,
      "help", HelpCommand.class);

  private CommandTree() {}

  /** The whole tree under {@code root}. */
  static CommandLine whole(XlacCommand root) {
    CommandLine cmd = new CommandLine(root);
    for (Class<?> sub : SUBCOMMANDS.values()) {
      cmd.addSubcommand(sub);
    }
    return cmd;
  }

  /** The branch that {@code args[0]} names under {@code root}, or the whole tree where it names none but help. */
  static CommandLine forArgs(XlacCommand root, String... args) {
    Class<?> only = args.length == 0 ? null : SUBCOMMANDS.get(args[0]);
    if (only == null || only == HelpCommand.class) {  // help describes the whole tree
      return whole(root);
    }
    CommandLine cmd = new CommandLine(root);
    cmd.addSubcommand(only);
    return cmd;
  }

  private static SequencedMap<String, Class<?>> ordered(Object... nameThenClass) {
    SequencedMap<String, Class<?>> m = new LinkedHashMap<>();
    for (int i = 0; i < nameThenClass.length; i += 2) {
      m.put((String) nameThenClass[i], (Class<?>) nameThenClass[i + 1]);
    }
    return Collections.unmodifiableSequencedMap(m);
  }
}
