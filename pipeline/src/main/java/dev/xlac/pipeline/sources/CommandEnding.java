package dev.xlac.pipeline.sources;

import dev.xlac.capture.CommandTracer;
import dev.xlac.core.ExitCode;
import java.util.List;

/**
 * What the way a traced command ended means for xlac's exit status, and the line that says so.
 * Shared by {@code xlac dump} and the one-shot {@code xlac parallel-compile -- COMMAND}; the CLI
 * prints {@link #line()} on stderr.
 *
 * @param failed the command exited with a status other than 0
 * @param commandStatus the command's exit status when it decides xlac's (it failed, and
 *     {@code --ignore-script-errors} does not apply); null otherwise
 * @param dumpedNothing the command succeeded without dumping any graph (none at all, not just filtered out)
 * @param line what to tell the user (without the {@code xlac: } prefix); null when there is nothing to say
 */
public record CommandEnding(boolean failed, Integer commandStatus, boolean dumpedNothing, String line) {

  public static CommandEnding of(List<String> command, CommandTracer.Outcome outcome, CacheIntake intake,
      boolean ignoreScriptErrors) {
    String name = command.getFirst();
    if (outcome.exitStatus() != 0) {
      String how = outcome.signalForwarded() != null ? " after xlac forwarded SIG" + outcome.signalForwarded() : "";
      String kept = intake.uniqueGraphs() > 0 ? "; the graphs it dumped before are in the cache" : "";
      boolean ignored = ignoreScriptErrors && intake.uniqueGraphs() > 0;
      return new CommandEnding(true, ignored ? null : outcome.exitStatus(), false, name + " exited with status "
          + outcome.exitStatus() + how + kept + (ignored ? " (ignored: --ignore-script-errors)" : ""));
    }
    if (intake.modules() == 0 && outcome.counts().filteredOut() == 0) {
      return new CommandEnding(false, null, true, name + " ran but no XLA graph was dumped (frontend "
          + outcome.frontend().cliName() + "); does it compile anything with JAX, PyTorch/XLA or Neuron?");
    }
    return new CommandEnding(false, null, false, null);
  }

  /** xlac's exit status: the command's when it decides, 1 when it dumped nothing, else {@code otherwise}. */
  public int exitStatus(ExitCode otherwise) {
    if (commandStatus != null) {
      return commandStatus;
    }
    return dumpedNothing ? ExitCode.WORK_FAILED.code() : otherwise.code();
  }
}
