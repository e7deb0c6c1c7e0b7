package dev.xlac.cli;

import dev.xlac.cache.CacheStore;
import dev.xlac.compiler.select.DriverOptions;
import dev.xlac.compiler.select.DriverSpec;
import dev.xlac.compiler.select.Drivers;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.io.FileTrees;
import dev.xlac.pipeline.CompileRuns;
import dev.xlac.runtime.PluginIdentityText;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The training run of the launcher's ahead-of-time class cache for every command but {@code xlac run}
 * ({@code -XX:AOTCacheOutput}, JDK 25; {@code xlac run} has {@link dev.xlac.cli.run.RunTraining}): the commands a
 * user types most, in-process through {@link Main}, against a throwaway cache, so that the cache holds picocli's
 * model of the command tree, the cache's store (RocksDB) and the report printers, reads two small real JAX graphs
 * (resources of this package) the way hash, inspect and diff do, adds, exports, imports and prunes one graph, runs
 * parallel-compile with nothing to compile (over an empty cache, and over one holding a compiled recorded runtime
 * request) and dump on a command that compiles nothing ({@code true}). Prints
 * nothing; writes nothing outside its temporary directory but what any dump writes first: xlac's Python hooks, in
 * the user's cache directory ({@code dev.xlac.capture.PythonHooks}). A command that fails here (an environment where,
 * say, {@code true} cannot be started) only leaves its own classes out of the cache, so the training still exits 0
 * and the cache is made for the others; {@code CliTrainingTest} requires every command to go through.
 */
public final class CliTraining {
  private CliTraining() {}

  public static void main(String[] args) throws Exception {
    failures();
    System.exit(0);
  }

  /** Runs every command of the training; returns those that did not end as they should. */
  static List<String> failures() throws IOException, InterruptedException {
    Path dir = Files.createTempDirectory("xlac-aot-training-");
    List<String> failed = new ArrayList<>();
    try {
      String cache = dir.resolve("cache").toString();
      Path dumps = Files.createDirectory(dir.resolve("dumps"));
      String seed = copy("threefry_seed.hlo.pb", dumps);
      String unstack = copy("unstack.hlo.pb", dumps);
      String filled = dir.resolve("filled").toString();
      String imported = dir.resolve("imported").toString();
      String bundle = dir.resolve("bundle.tar.zst").toString();
      // parallel-compile over the empty cache, as a CI job's second run is: nothing to compile, so its plugin is
      // never loaded, and this one is a stand-in file whose identity is recorded where the run looks first.
      Path plugin = Files.writeString(dir.resolve("stand-in-pjrt-plugin.so"), "never loaded\n");
      Drivers.remember(standIn(plugin, Path.of(cache)), standInIdentity(Map.of()));
      String traced = dir.resolve("traced").toString();
      recordedRequestCompiled(Path.of(traced), plugin, Path.of(seed));
      String fingerprint = "hlo1:be30264999e8629bf5c681ec92c783c2531223f65a811c906174b8d28e0fdb8f"; // seed's
      String[][] commands = {
          {"--version"}, {"--help"}, {"cache", "stat", "--cache", cache}, {"cache", "ls", "--cache", cache},
          {"cache", "stat", "--json", "--cache", cache}, {"cache", "verify", "--cache", cache},
          {"cache", "config", "--cache", cache, "max-size"}, {"cache", "why", "--cache", cache, fingerprint},
          {"parallel-compile", "--cache", cache, "--plugin", plugin.toString()},
          {"parallel-compile", "--cache", traced, "--plugin", plugin.toString()},
          {"cache", "add", "--cache", filled, seed}, {"cache", "ls", "--cache", filled},
          {"cache", "log", "--cache", filled, fingerprint}, {"cache", "verify", "--cache", filled},
          {"cache", "export", "--cache", filled, bundle}, {"cache", "import", "--cache", imported, bundle},
          {"cache", "prune", "--cache", filled, "--max-size", "1G"},
          {"dump", "--cache", filled, "--", "true"},
          {"hash", dumps.toString()}, {"inspect", seed},
          {"diff", seed, unstack}, {"completion", "bash"},
          {"parallel-compile", "--help"}, {"diff", "--help"}, {"run", "--help"}, {"cache", "--help"}, {"cache", "stat", "--help"},
          {"no-such-command"}};
      for (String[] command : commands) {
        StringWriter sink = new StringWriter();
        int code = new Main(new PrintWriter(sink), new PrintWriter(sink)).run(command);
        boolean refused = command[0].equals("no-such-command") || command.length > 1 && command[1].equals("why");
        boolean dumpedNothing = command[0].equals("dump"); // `true` compiles no graph: exit 1
        if (code != (refused ? 2 : dumpedNothing ? 1 : 0)) {
          failed.add(String.join(" ", command) + ": exit " + code + ": " + sink);
        }
      }
    } finally {
      FileTrees.deleteTree(dir);
    }
    return failed;
  }

  /**
   * A cache as a traced command leaves it, its compiles done: one recorded runtime request with its executable, and,
   * in its probe directory, the stand-in plugin's identity and the plugin identity text the request is keyed with
   * (as the last run's driver would have left them), so that parallel-compile plans the request, finds it compiled
   * and starts no worker.
   */
  private static void recordedRequestCompiled(Path cache, Path plugin, Path program)
      throws IOException, InterruptedException {
    String sha = "0".repeat(64);
    String text = PluginIdentityText.of("training", "0", 0, 94, sha, List.of("training device"), "", "", "",
        List.of());
    byte[] format = "hlo".getBytes(StandardCharsets.UTF_8);
    byte[] code = Files.readAllBytes(program);
    byte[] options = {0x1a, 0x02, 0x20, 0x01};
    RecordedRequest request = new RecordedRequest(RequestKey.of(format, code, options,
        text.getBytes(StandardCharsets.UTF_8)), format, code, options, text, new byte[] {1}, 1_000_000);
    try (CacheStore store = CacheStore.open(cache, CacheStore.Mode.READ_WRITE, Duration.ZERO, notice -> { })) {
      store.putRequests(List.of(request));
    }
    Drivers.remember(standIn(plugin, cache), standInIdentity(Map.of("plugin.sha256", sha)),
        CompileRuns.identityTextContext(System.getenv()), text);
  }

  /** The spec parallel-compile makes of {@code --cache CACHE --plugin PLUGIN}, as it looks for records. */
  private static DriverSpec standIn(Path plugin, Path cache) {
    return Drivers.resolve(new DriverOptions("pjrt", plugin, null, null, Map.of(), Map.of(), Duration.ofMinutes(1),
        cache.resolve("probes")), Map.of());
  }

  private static CompilerIdentity standInIdentity(Map<String, String> options) {
    return new CompilerIdentity("pjrt", "cpu 0.0 (training stand-in)", "cpu", List.of(), options);
  }

  private static String copy(String resource, Path dir) throws IOException {
    Path file = dir.resolve(resource);
    try (InputStream in = CliTraining.class.getResourceAsStream("training/" + resource)) {
      Files.copy(in, file);
    }
    return file.toString();
  }
}
