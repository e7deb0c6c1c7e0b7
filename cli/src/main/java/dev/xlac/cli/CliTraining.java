package dev.xlac.cli;

import dev.xlac.core.io.FileTrees;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The training run of the launcher's ahead-of-time class cache for every command but {@code xlac run}
 * ({@code -XX:AOTCacheOutput}, JDK 25; {@code xlac run} has {@link dev.xlac.cli.run.RunTraining}): the commands a
 * user types most, in-process through {@link Main}, against a throwaway cache, so that the cache holds picocli's
 * model of the command tree, the cache's store (RocksDB) and the report printers, and reads two small real JAX graphs
 * (resources of this package) the way hash, inspect and diff do. Prints nothing; exits 0 when every command went
 * through.
 */
public final class CliTraining {
  private CliTraining() {}

  public static void main(String[] args) throws Exception {
    System.exit(failures().isEmpty() ? 0 : 1);
  }

  /** Runs every command of the training; returns those that did not end as they should. */
  static List<String> failures() throws IOException {
    Path dir = Files.createTempDirectory("xlac-aot-training-");
    List<String> failed = new ArrayList<>();
    try {
      String cache = dir.resolve("cache").toString();
      Path dumps = Files.createDirectory(dir.resolve("dumps"));
      String seed = copy("threefry_seed.hlo.pb", dumps);
      String unstack = copy("unstack.hlo.pb", dumps);
      String[][] commands = {
          {"--version"}, {"--help"}, {"cache", "stat", "--cache", cache}, {"cache", "ls", "--cache", cache},
          {"cache", "stat", "--json", "--cache", cache}, {"hash", dumps.toString()}, {"inspect", seed},
          {"diff", seed, unstack}, {"completion", "bash"},
          {"parallel-compile", "--help"}, {"diff", "--help"}, {"run", "--help"}, {"cache", "--help"}, {"cache", "stat", "--help"},
          {"no-such-command"}};
      for (String[] command : commands) {
        StringWriter sink = new StringWriter();
        int code = new Main(new PrintWriter(sink), new PrintWriter(sink)).run(command);
        if (code != (command[0].equals("no-such-command") ? 2 : 0)) {
          failed.add(String.join(" ", command) + ": exit " + code + ": " + sink);
        }
      }
    } finally {
      FileTrees.deleteTree(dir);
    }
    return failed;
  }

  private static String copy(String resource, Path dir) throws IOException {
    Path file = dir.resolve(resource);
    try (InputStream in = CliTraining.class.getResourceAsStream("training/" + resource)) {
      Files.copy(in, file);
    }
    return file.toString();
  }
}
