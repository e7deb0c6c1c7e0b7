package dev.xlac.cli.run;

import dev.xlac.cli.Main;
import dev.xlac.core.io.FileTrees;
import dev.xlac.core.os.ProcessBytes;
import dev.xlac.pipeline.recording.RealPlugin;
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
      if (code == 0) {
        code = withRemote(cache, run, sink);
      }
    } finally {
      FileTrees.deleteTree(dir);
    }
    System.exit(code);
  }

  /**
   * The same run with a remote tier set, against a stand-in S3 endpoint on a loopback port that lists nothing (the
   * JDK's HTTP server), so that the cache also holds the S3 client's classes (building it, signing, a listing and its
   * answer): they are most of what a run with a remote adds to its start.
   */
  private static int withRemote(Path cache, String[] run, StringWriter sink) throws Exception {
    com.sun.net.httpserver.HttpServer s3 = com.sun.net.httpserver.HttpServer.create(
        new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0), 0);
    s3.createContext("/", exchange -> {
      byte[] body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult"
          + " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>training</Name><Prefix></Prefix><KeyCount>0"
          + "</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>")
          .getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().add("Content-Type", "application/xml");
      exchange.sendResponseHeaders(200, body.length);
      try (var out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    s3.start();
    try {
      System.setProperty("aws.accessKeyId", "training");
      System.setProperty("aws.secretAccessKey", "training");
      System.setProperty("aws.region", "us-east-1");
      StringWriter none = new StringWriter();
      String[] config = {"cache", "config", "remote", "s3://training/run", "--endpoint", "http://127.0.0.1:"
          + s3.getAddress().getPort(), "--cache", cache.toString()};
      int code = new Main(new PrintWriter(none), new PrintWriter(none)).run(config);
      if (code != 0) {
        return code;
      }
      List<byte[]> raw = Stream.of(run).map(a -> a.getBytes(StandardCharsets.UTF_8)).toList();
      return new Main(new PrintWriter(sink), new PrintWriter(sink)).run(raw, run);
    } finally {
      s3.stop(0);
    }
  }
}
