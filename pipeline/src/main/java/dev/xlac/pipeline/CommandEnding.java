package dev.xlac.cli.dump;

import dev.xlac.capture.CommandTracer;
import java.io.PrintWriter;
import java.util.List;

/**
 * What the way a traced command ended means for xlac's exit status, with the line that says so on
 * stderr. Shared by {@code xlac dump} and the one-shot {@code xlac parallel-compile -- COMMAND}.
 */
public final class CommandEnding {
  private final String command;
  private final CommandTracer.Outcome outcome;
  private final DumpIngest ingest;
  private final boolean ignoreScriptErrors;
  private final PrintWriter err;

  public CommandEnding(List<String> command, CommandTracer.Outcome outcome, DumpIngest ingest,
      boolean ignoreScriptErrors, PrintWriter err) {
    this.command = command.getFirst();
    this.outcome = outcome;
    this.ingest = ingest;
    this.ignoreScriptErrors = ignoreScriptErrors;
    this.err = err;
  }

  public boolean failed() {
    return outcome.exitStatus() != 0;
  }

  /**
   * When the command failed, says so, and returns its exit status unless {@code --ignore-script-errors}
   * applies (it failed after dumping graphs); returns null when the command succeeded or the failure is ignored.
   */
  public Integer failureStatus() {
    if (!failed()) {
      return null;
    }
    String how = outcome.signalForwarded() != null ? " after xlac forwarded SIG" + outcome.signalForwarded() : "";
    String kept = ingest.uniqueGraphs() > 0 ? "; the graphs it dumped before are in the cache" : "";
    boolean ignored = ignoreScriptErrors && ingest.uniqueGraphs() > 0;
    err.println("xlac: " + command + " exited with status " + outcome.exitStatus() + how + kept
        + (ignored ? " (ignored: --ignore-script-errors)" : ""));
    err.flush();
    return ignored ? null : outcome.exitStatus();
  }

  /** Whether the command succeeded without dumping any graph (none at all, not just filtered out); says so. */
  public boolean dumpedNothing() {
    if (failed() || ingest.modules() > 0 || outcome.counts().filteredOut() > 0) {
      return false;
    }
    err.println("xlac: " + command + " ran but no XLA graph was dumped (frontend " + outcome.frontend().cliName()
        + "); does it compile anything with JAX, PyTorch/XLA or Neuron?");
    err.flush();
    return true;
  }
}
