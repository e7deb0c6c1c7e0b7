package dev.xlac.compiler;

import dev.xlac.core.FailureKind;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The result of one {@link CompilerDriver#compile}: an artifact or a typed failure. Both carry the
 * compiler's log (may be empty) and the wall time the driver spent on the request.
 */
public sealed interface CompileOutcome {

  /** {@code text} with its line breaks (and the blanks around them) made single spaces; "" for null. */
  static String oneLine(String text) {
    return text == null ? "" : text.replaceAll("\\s*\\R\\s*", " ").strip();
  }

  /** The compiler's own output, for {@code model.log}-style diagnostics. Never null. */
  String log();

  /** Wall time from the driver receiving the request to the outcome. */
  Duration elapsed();

  /** True for {@link Success}. */
  default boolean succeeded() {
    return this instanceof Success;
  }

  /**
   * A compiled artifact.
   *
   * @param artifact the serialized executable, in the compiler's own format (never empty)
   * @param phases wall time per driver phase, in the order they ran (e.g. {@code compile},
   *     {@code serialize})
   */
  record Success(byte[] artifact, String log, Duration elapsed, Map<String, Duration> phases)
      implements CompileOutcome {
    public Success {
      Objects.requireNonNull(artifact, "artifact");
      if (artifact.length == 0) {
        throw new IllegalArgumentException("a compiler produced an empty artifact");
      }
      log = log == null ? "" : log;
      Objects.requireNonNull(elapsed, "elapsed");
      phases = Collections.unmodifiableMap(new LinkedHashMap<>(phases));
    }

    @Override
    public String toString() {
      return "Success[" + artifact.length + " bytes in " + elapsed.toMillis() + " ms]";
    }
  }

  /**
   * No artifact.
   *
   * @param message one line saying what went wrong, with the compiler's error code if it gave one
   */
  record Failure(FailureKind kind, String message, String log, Duration elapsed) implements CompileOutcome {
    public Failure {
      Objects.requireNonNull(kind, "kind");
      Objects.requireNonNull(message, "message");
      if (message.contains("\n")) {
        throw new IllegalArgumentException("a failure message is one line: " + message);
      }
      log = log == null ? "" : log;
      Objects.requireNonNull(elapsed, "elapsed");
    }

    @Override
    public String toString() {
      return "Failure[" + kind + ": " + message + "]";
    }
  }
}
