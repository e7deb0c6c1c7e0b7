package dev.xlac.cli;

import java.util.List;
import picocli.CommandLine.Model.CommandSpec;

/**
 * A command line split at its first {@code --}: the positionals before it, and the command after it
 * (picocli hands both over as one positional list).
 *
 * @param before the positionals before {@code --}
 * @param command what follows {@code --}; empty when there is none, or nothing after it
 * @param delimiter whether {@code --} was given at all
 */
public record CommandArgs(List<String> before, List<String> command, boolean delimiter) {

  /** Splits {@code positional}, the command's positional parameters as parsed by {@code spec}. */
  public static CommandArgs split(CommandSpec spec, List<String> positional) {
    List<String> args = spec.commandLine().getParseResult().originalArgs();
    int at = args.indexOf("--");
    List<String> command = at < 0 ? List.of() : List.copyOf(args.subList(at + 1, args.size()));
    return new CommandArgs(List.copyOf(positional.subList(0, positional.size() - command.size())), command, at >= 0);
  }
}
