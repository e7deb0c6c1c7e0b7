package dev.xlac.capture;

import dev.xlac.core.XlaFlagsText;
import dev.xlac.core.XlacException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Merges the dump flags xlac needs into the user's {@code XLA_FLAGS} without losing any of the
 * user's flags. The user's flags are the words XLA reads ({@link XlaFlagsText}: quoted values are one
 * word; a value that names a file stands for the flags in it), written back so that XLA reads the same
 * words, with xlac's after them.
 *
 * <p>Two user flags are replaced, because the capture cannot work with them: {@code --xla_dump_to}
 * (xlac needs the dumps in its own directory; the user is told to use {@code --keep-dumps}) and
 * {@code --xla_dump_hlo_as_proto=false} (xlac reads protos). Everything else is kept in order,
 * including the user's other dump flags ({@code --xla_dump_hlo_as_text}, module or pass filters).
 */
public final class XlaFlags {
  private XlaFlags() {}

  static final String DUMP_TO = "--xla_dump_to";
  static final String AS_PROTO = "--xla_dump_hlo_as_proto";

  /** The merged value and what was replaced, for the user. */
  public record Merged(String flags, Optional<String> replacedDumpTo, List<String> notes) {}

  public static Merged merge(String userFlags, Path dumpDir) {
    List<String> out = new ArrayList<>();
    List<String> notes = new ArrayList<>();
    Optional<String> replacedDumpTo = Optional.empty();
    boolean proto = false;
    List<String> words;
    try {
      words = XlaFlagsText.words(userFlags);
    } catch (IOException e) {
      words = List.of(); // XLA would stop the command; dumping with xlac's flags alone lets it run
      notes.add("XLA_FLAGS names the file " + userFlags + ", which cannot be read (" + XlacException.reason(e)
          + "); the command runs with xlac's dump flags only");
    }
    for (String token : words) {
      String name = token.contains("=") ? token.substring(0, token.indexOf('=')) : token;
      if (name.equals(DUMP_TO)) {
        replacedDumpTo = Optional.of(token.substring(Math.min(token.length(), DUMP_TO.length() + 1)));
        continue;
      }
      if (name.equals(AS_PROTO)) {
        String v = token.equals(name) ? "true" : token.substring(name.length() + 1);
        if (v.equalsIgnoreCase("false") || v.equals("0")) {
          notes.add("XLA_FLAGS sets " + token + "; xlac needs protos, so it dumps them anyway");
          continue;
        }
        proto = true;
      }
      out.add(XlaFlagsText.quoted(token));
    }
    replacedDumpTo.ifPresent(d -> notes.add("XLA_FLAGS sets " + DUMP_TO + "=" + d + "; xlac dumps to its own directory"
        + " instead (use --keep-dumps " + (d.isEmpty() ? "DIR" : d) + " to keep the dumps there)"));
    out.add(XlaFlagsText.quoted(DUMP_TO + "=" + dumpDir));
    if (!proto) {
      out.add(AS_PROTO);
    }
    return new Merged(String.join(" ", out), replacedDumpTo, List.copyOf(notes));
  }
}
