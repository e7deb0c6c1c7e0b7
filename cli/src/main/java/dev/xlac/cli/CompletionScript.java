package dev.xlac.cli;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.AutoComplete;

/**
 * picocli's completion script for the whole command tree, made once at build time (cli/pom.xml runs {@link #main}
 * in the process-classes phase) into a resource that {@code xlac completion} prints: building the whole tree reads
 * every option of all commands, which costs a cold JVM about 0.1 s of CPU (bench/README.md, "Start-up").
 * CompletionCommandTest proves the resource is what picocli makes of the current tree.
 */
public final class CompletionScript {
  /** The resource, in this package, that the build writes. */
  static final String RESOURCE = "completion.bash";

  private CompletionScript() {}

  /** Writes the script to the file args[0] (the build's classes directory). */
  public static void main(String[] args) throws IOException {
    Path file = Path.of(args[0]);
    Files.createDirectories(file.getParent());
    Files.writeString(file, generated(), UTF_8);
  }

  /** What picocli makes of the tree now. */
  static String generated() {
    return AutoComplete.bash("xlac", CommandTree.whole(new XlacCommand()));
  }

  /** The prepared script; made from the tree when the build did not prepare it (classes built by an IDE). */
  static String prepared() {
    try (InputStream in = CompletionScript.class.getResourceAsStream(RESOURCE)) {
      return in == null ? generated() : new String(in.readAllBytes(), UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
