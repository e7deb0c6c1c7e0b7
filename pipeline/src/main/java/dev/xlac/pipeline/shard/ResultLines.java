package dev.xlac.pipeline.shard;

import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.core.FailureKind;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.runtime.RequestKey;
import java.time.Duration;
import java.util.Locale;

/**
 * The shard's result lines, which a task writes ({@link ShardTask}) and the submitter reads back through either
 * transport ({@link SharedDirectoryTransport}, {@link RemoteShardTransport}): one per graph or recorded request.
 */
public final class ResultLines {
  private ResultLines() {}

  /**
   * One graph's result as a line: fingerprint, status, compile milliseconds, attempts, failure kind ({@code -}
   * for none), module name, error (empty for none), tab-separated.
   */
  public static String of(GraphResult g) {
    return String.join("\t", g.fingerprint().value(), g.status().name(), Long.toString(g.compileTime().toMillis()),
        Integer.toString(g.attempts()), g.failureKind() == null ? "-" : g.failureKind().name(),
        SharedDirectoryTransport.oneField(g.moduleName()),
        g.error() == null ? "" : SharedDirectoryTransport.oneField(g.error()));
  }

  /** The result a {@link #of} describes; a malformed line is an IllegalArgumentException. */
  public static GraphResult parse(String line) {
    String[] f = line.split("\t", -1);
    if (f.length != 7) {
      throw new IllegalArgumentException("not a shard result line (" + f.length + " fields, 7 expected)");
    }
    GraphResult.Status status = named(GraphResult.Status.class, f[1].toUpperCase(Locale.ROOT), "status");
    FailureKind kind = f[4].equals("-") ? null : named(FailureKind.class, f[4], "failure kind");
    return new GraphResult(programKey(f[0]), f[5], status, Duration.ofMillis(number(f[2],
        "compile milliseconds")), (int) number(f[3], "attempts"), kind, f[6].isEmpty() ? null : f[6]);
  }

  /** A graph's fingerprint ({@code hlo1:}) or a recorded request's key ({@code pjrt1:}). */
  private static dev.xlac.core.ProgramKey programKey(String text) {
    return text.startsWith(RequestKey.VERSION + ":") ? RequestKey.parse(text) : GraphFingerprint.parse(text);
  }

  private static <E extends Enum<E>> E named(Class<E> type, String name, String what) {
    for (E e : type.getEnumConstants()) {
      if (e.name().equals(name)) {
        return e;
      }
    }
    throw new IllegalArgumentException("unknown " + what + " '" + name + "'");
  }

  private static long number(String text, String what) {
    if (!text.matches("\\d{1,9}")) {
      throw new IllegalArgumentException(what + " '" + text + "' is not a number");
    }
    return Long.parseLong(text);
  }
}
