package dev.xlac.runtime;

import dev.xlac.core.XlacException;
import dev.xlac.core.io.PrivateFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * The manifest of a runtime layout, {@code DIR/xlac-pjrt-layout}: a version line and one {@code plugin <sha256>}
 * line per plugin file whose executables the layout holds. Written last, atomically.
 */
public final class LayoutManifest {
  public static final String FILE = "xlac-pjrt-layout";
  static final String FIRST_LINE = "xlac-pjrt-layout 1";
  private static final Pattern SHA = Pattern.compile("[0-9a-f]{64}");
  private static final long MAX_BYTES = 1 << 20;

  private LayoutManifest() {}

  /**
   * The plugin SHA-256s of the layout in {@code layoutDir}; empty when it has no manifest. A manifest that is not
   * one (another version, a wrong line) is bad input naming the file and the line.
   */
  public static Optional<Set<String>> read(Path layoutDir) throws IOException {
    Path file = layoutDir.resolve(FILE);
    List<String> lines;
    try {
      if (Files.size(file) > MAX_BYTES) {
        throw bad(file, "larger than 1 MiB");
      }
      lines = List.of(new String(Files.readAllBytes(file), StandardCharsets.UTF_8).split("\n", -1));
    } catch (NoSuchFileException e) {
      return Optional.empty();
    }
    if (lines.isEmpty() || !lines.getFirst().equals(FIRST_LINE)) {
      throw bad(file, "not a runtime layout manifest of version 1 (first line \"" + clip(lines.getFirst()) + "\")");
    }
    Set<String> shas = new TreeSet<>();
    for (int i = 1; i < lines.size(); i++) {
      String line = lines.get(i);
      if (line.isEmpty() && i == lines.size() - 1) {
        break;
      }
      if (!line.startsWith("plugin ") || !SHA.matcher(line.substring(7)).matches()) {
        throw bad(file, "line " + (i + 1) + " is not \"plugin <64 hex digits>\": \"" + clip(line) + "\"");
      }
      shas.add(line.substring(7));
    }
    return Optional.of(Collections.unmodifiableSet(shas));
  }

  /** Writes the manifest atomically (a temporary, fsync, rename, directory fsync). */
  public static void write(Path layoutDir, Set<String> pluginShas) throws IOException {
    StringBuilder text = new StringBuilder(FIRST_LINE).append('\n');
    for (String sha : new TreeSet<>(pluginShas)) {
      if (!SHA.matcher(sha).matches()) {
        throw new IllegalArgumentException("not a plugin SHA-256: " + sha);
      }
      text.append("plugin ").append(sha).append('\n');
    }
    PrivateFiles.createDirectories(layoutDir);
    PrivateFiles.writeString(layoutDir.resolve(FILE), text.toString());
  }

  private static String clip(String s) {
    String printable = s.replaceAll("\\p{Cntrl}", "?");
    return printable.length() > 80 ? printable.substring(0, 80) + "..." : printable;
  }

  private static XlacException bad(Path file, String reason) {
    return XlacException.badInput("runtime layout manifest " + file + ": " + reason);
  }
}
