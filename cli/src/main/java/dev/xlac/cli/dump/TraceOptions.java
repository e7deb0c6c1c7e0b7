package dev.xlac.cli.dump;

import dev.xlac.capture.Frontend;
import dev.xlac.core.XlacException;
import dev.xlac.pipeline.sources.TraceSpec;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import picocli.CommandLine.Option;

/**
 * The options of running a traced command, shared by {@code xlac dump} and the one-shot
 * {@code xlac parallel-compile -- COMMAND}. Defaults are null or false, so a command can tell
 * whether any was given ({@link #anyGiven()}).
 */
public final class TraceOptions {
  @Option(names = "--frontend", paramLabel = "NAME",
      description = "auto, jax, torch-xla or neuron (default: auto).")
  String frontend;

  @Option(names = "--keep-dumps", paramLabel = "DIR",
      description = "Keep the raw dumps in DIR (new or empty), one directory per process; else they are removed.")
  Path keepDumps;

  @Option(names = "--module-filter", paramLabel = "REGEX",
      description = "Only ingest modules whose name contains a match of REGEX (Java syntax).")
  String moduleFilter;

  @Option(names = "--ignore-script-errors",
      description = "Do not fail because the command failed, as long as it dumped graphs.")
  boolean ignoreScriptErrors;

  /** Whether any of these options was given on the command line. */
  public boolean anyGiven() {
    return frontend != null || keepDumps != null || moduleFilter != null || ignoreScriptErrors;
  }

  /** The frontend; an unknown name is a usage error. */
  public Frontend frontend() {
    String name = frontend == null ? "auto" : frontend;
    Frontend fe = Frontend.parse(name);
    if (fe == null) {
      throw XlacException.badInput("--frontend " + name + ": unknown frontend (use auto, jax, torch-xla or neuron)");
    }
    return fe;
  }

  /** The module filter, or null for all modules; a bad expression is a usage error. */
  public Pattern moduleFilter() {
    if (moduleFilter == null) {
      return null;
    }
    try {
      return Pattern.compile(moduleFilter);
    } catch (PatternSyntaxException e) {
      throw XlacException.badInput("--module-filter " + moduleFilter + ": bad regular expression ("
          + e.getDescription() + " at index " + e.getIndex() + ")");
    }
  }

  /**
   * The traced run of {@code command} these options ask for, in this process's environment; a bad
   * frontend or filter is a usage error.
   */
  public TraceSpec spec(List<String> command) {
    return new TraceSpec(command, frontend(), keepDumps, moduleFilter(), ignoreScriptErrors, System.getenv(),
        TraceSpec.DEFAULT_POLL_INTERVAL);
  }

  public Path keepDumps() {
    return keepDumps;
  }

  public boolean ignoreScriptErrors() {
    return ignoreScriptErrors;
  }
}
