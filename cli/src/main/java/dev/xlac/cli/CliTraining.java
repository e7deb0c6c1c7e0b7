package dev.xlac.cli;

import dev.xlac.core.io.FileTrees;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The training run of the launcher's ahead-of-time class cache for every command but {@code xlac run}
 * ({@code -XX:AOTCacheOutput}, JDK 25; {@code xlac run} has {@link dev.xlac.cli.run.RunTraining}): the commands a
 * user types most, in-process through {@link Main}, against a throwaway cache, so that the cache holds picocli's
 * model of the command tree, the cache's store (RocksDB) and the report printers. Prints nothing; exits 0 when every
 * command went through.
 */
public final class CliTraining {
  private CliTraining() {}

  public static void main(String[] args) throws Exception {
    Path dir = Files.createTempDirectory("xlac-aot-training-");
    int failed = 0;
    try {
      String cache = dir.resolve("cache").toString();
      String[][] commands = {
          {"--version"}, {"--help"}, {"cache", "stat", "--cache", cache}, {"cache", "ls", "--cache", cache},
          {"cache", "stat", "--json", "--cache", cache}, {"hash", dir.toString()}, {"completion", "bash"},
          {"parallel-compile", "--help"}, {"diff", "--help"}, {"cache", "--help"}, {"cache", "stat", "--help"},
          {"no-such-command"}};
      for (String[] command : commands) {
        StringWriter sink = new StringWriter();
        int code = new Main(new PrintWriter(sink), new PrintWriter(sink)).run(command);
        boolean expected = command[0].equals("no-such-command") ? code == 2 : code == 0 || command[0].equals("hash");
        failed += expected ? 0 : 1;
      }
    } finally {
      FileTrees.deleteTree(dir);
    }
    System.exit(failed == 0 ? 0 : 1);
  }
}
