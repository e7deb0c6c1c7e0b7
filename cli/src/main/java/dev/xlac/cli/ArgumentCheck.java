package dev.xlac.cli;

import dev.xlac.core.os.ProcessBytes;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Refuses an argument that Java's string does not stand for faithfully (see {@link ProcessBytes}): a path
 * that is not valid UTF-8 would silently become another path, and a command's argument could not be passed
 * on unchanged. Says which argument, with its bytes escaped. Names no picocli type itself: a simple
 * {@code xlac run} loads no picocli class at all (see {@code RunCommand#parseSimple}).
 */
final class ArgumentCheck {
  private ArgumentCheck() {}

  /** The one-line refusal for the first such argument; empty when all are faithful. */
  static Optional<String> refusal(String[] args, List<byte[]> raw) {
    for (int i = 0; i < args.length; i++) {
      byte[] bytes = raw.get(i);
      if (!ProcessBytes.faithful(args[i], bytes)) {
        String what = "argument " + (i + 1) + " ('" + ProcessBytes.escaped(bytes) + "')";
        if (isCommandToRun(args, i)) {
          return Optional.of(what + ", part of the command to run, " + ProcessBytes.whyUnfaithful(bytes)
              + "; xlac could not pass it on to the command unchanged");
        }
        return Optional.of(what + " " + ProcessBytes.whyUnfaithful(bytes) + (ProcessBytes.validUtf8(bytes) ? ""
            : "; xlac refuses it rather than use a different name (rename it, or link to it from a valid UTF-8 name)"));
      }
    }
    return Optional.empty();
  }

  /** Whether {@code args[i]} belongs to the command that {@code dump}, {@code run} or {@code parallel-compile} runs. */
  private static boolean isCommandToRun(String[] args, int i) {
    if (args.length == 0 || !List.of("dump", "run", "parallel-compile").contains(args[0])) {
      return false;
    }
    int delimiter = Arrays.asList(args).indexOf("--");
    if (delimiter >= 0 && i > delimiter) {
      return true;
    }
    if (delimiter < 0 && !args[0].equals("parallel-compile")) {
      // `xlac dump python train.py`: the command starts at the first positional argument.
      return i >= args.length - CommandTree.commandLength(args);
    }
    return false;
  }
}
