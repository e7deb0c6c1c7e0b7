package dev.xlac.core.neuron;

import java.util.Optional;
import java.util.regex.Pattern;

/** What xlac reads out of a neuronx-cc log: the one rule for "the line that says what went wrong". */
public final class NeuronLogs {
  /** The longest error line quoted; longer ones are cut and end in "...". */
  public static final int MAX_LINE = 300;
  private static final Pattern ERROR_LINE = Pattern.compile(
      "\\bERROR\\b|\\bFATAL\\b|\\[[EF]\\d+\\]|(?i:\\b(?:error|fatal)\\s*:)");
  private static final Pattern NO_ERRORS = Pattern.compile("(?i)\\b(0|no) errors?\\b");

  private NeuronLogs() {}

  /**
   * The first line that reports an error, stripped and capped at {@link #MAX_LINE} characters: one with
   * {@code ERROR} or {@code FATAL} in capitals (neuronx-cc's {@code [ERROR]} lines), an {@code [E123]}/{@code [F137]}
   * code, or {@code error:}/{@code fatal:} in any case (argparse and Python tracebacks). Lines that say there were
   * no errors ("0 errors") do not count.
   */
  public static Optional<String> firstErrorLine(String log) {
    return log.lines().filter(l -> ERROR_LINE.matcher(l).find() && !NO_ERRORS.matcher(l).find())
        .map(l -> cap(l.strip())).findFirst();
  }

  /** {@code line}, cut to {@link #MAX_LINE} characters with "..." when longer. */
  public static String cap(String line) {
    return line.length() > MAX_LINE ? line.substring(0, MAX_LINE - 3) + "..." : line;
  }
}
