package dev.xlac.cli.run;

import dev.xlac.cli.Main;
import dev.xlac.core.io.FileTrees;
import dev.xlac.core.os.ProcessBytes;
import dev.xlac.pipeline.RealPlugin;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * The training run of the {@code ./xlac} launcher's ahead-of-time class cache for {@code xlac run}
 * ({@code -XX:AOTCacheOutput}, JDK 25): one {@code xlac run -- true} in a throwaway cache, with a
 * stand-in plugin whose memo is written ahead, so that it takes the path of a real warm run (memo,
 * proxy library, environment, command, layout, statistics) without a real plugin, through the same entry
 * as {@code Main.main} (argument check, and the parser that a simple {@code xlac run} takes). Prints nothing;
 * exits 0 when the run went through.
 */
public final class RunTraining {
  private RunTraining() {}

  public static void main(String[] args) throws Exception {
    Path dir = Files.createTempDirectory("xlac-aot-training-");
    int code;
    try {
      Path cache = dir.resolve("cache");
      Path plugin = Files.writeString(dir.resolve("plugin.so"), "stand-in");
      RealPlugin.known(plugin, "0".repeat(64), "0.0").remember(RealPlugin.memoDir(cache));
      StringWriter sink = new StringWriter();
      String[] run = {"run", "--cache", cache.toString(), "--plugin", plugin.toString(), "--report",
          dir.resolve("report.json").toString(), "--", "true"};
      // As Main.main runs it: the process's own argument bytes read, each argument checked against its bytes.
      ProcessBytes.lastArguments(args.length);
      List<byte[]> raw = Stream.of(run).map(a -> a.getBytes(StandardCharsets.UTF_8)).toList();
      code = new Main(new PrintWriter(sink), new PrintWriter(sink)).run(raw, run);
    } finally {
      FileTrees.deleteTree(dir);
    }
    System.exit(code);
  }
}
