package dev.xlac.pipeline.sources;

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
 * @param recording also record the command's compiles through the runtime proxy, or null
 */
public record TraceSpec(List<String> command, Frontend frontend, Path keepDumps, Pattern moduleFilter,
    boolean ignoreScriptErrors, Map<String, String> env, Duration pollInterval, Recording recording) {
  /** How often the dump directories are looked at: the tracer's default. */
  public static final Duration DEFAULT_POLL_INTERVAL = CommandTracer.DEFAULT_POLL_INTERVAL;

  public TraceSpec {
    command = List.copyOf(command);
  }

  /** Without recording. */
  public TraceSpec(List<String> command, Frontend frontend, Path keepDumps, Pattern moduleFilter,
      boolean ignoreScriptErrors, Map<String, String> env, Duration pollInterval) {
    this(command, frontend, keepDumps, moduleFilter, ignoreScriptErrors, env, pollInterval, null);
  }

  /** This run, also recording its compiles through the runtime proxy in front of {@code plugin}. */
  public TraceSpec withRecording(Path plugin, Path cacheDir) {
    return new TraceSpec(command, frontend, keepDumps, moduleFilter, ignoreScriptErrors, env, pollInterval,
        new Recording(plugin, cacheDir));
  }

  /**
   * Recording during a capture ({@code xlac dump --plugin}, the one-shot {@code parallel-compile --plugin}):
   * the framework loads xlac's runtime proxy in front of {@code plugin}, which serves nothing and writes every
   * compile (request and executable) to a spool that is put into the cache when the command ends.
   *
   * @param cacheDir the cache directory (the spool and the plugin memo live under {@code CACHE/runtime})
   */
  public record Recording(Path plugin, Path cacheDir) {}
}
