package dev.xlac.pipeline;

import dev.xlac.capture.CommandTracer;
import dev.xlac.capture.Frontend;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A command to run traced, as {@code xlac dump} and {@code parallel-compile -- COMMAND} run it.
 *
 * @param keepDumps keep the raw dumps in this (new or empty) directory; null to remove them
 * @param moduleFilter only take modules whose name contains a match; null for all
 * @param ignoreScriptErrors a failed command that dumped graphs does not fail the run
 * @param env the environment the command runs in (xlac adds its dump settings)
 */
public record TraceSpec(List<String> command, Frontend frontend, Path keepDumps, Pattern moduleFilter,
    boolean ignoreScriptErrors, Map<String, String> env, Duration pollInterval) {
  /** How often the dump directories are looked at: the tracer's default. */
  public static final Duration DEFAULT_POLL_INTERVAL = CommandTracer.DEFAULT_POLL_INTERVAL;

  public TraceSpec {
    command = List.copyOf(command);
  }
}
