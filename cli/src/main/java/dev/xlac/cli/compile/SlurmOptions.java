package dev.xlac.cli.compile;

import dev.xlac.cli.Main;
import dev.xlac.core.XlacException;
import dev.xlac.pipeline.shard.ShardSettings;
import dev.xlac.pipeline.slurm.SlurmSettings;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import picocli.CommandLine.Option;

/**
 * {@code parallel-compile --executor}, the options the sharding engines (slurm, ray) share, Slurm's own, and what each
 * task runs ({@code xlac compile-shard}).
 */
final class SlurmOptions {
  @Option(names = "--executor", paramLabel = "NAME", defaultValue = "local",
      description = "local (default): compile on this machine; slurm: one Slurm job array, each task compiling a shard"
          + " of the graphs on its node; ray: one job per shard on a Ray cluster (docs/reference.md,"
          + " \"Distributed compiles on Slurm\" and \"... on Ray\").")
  String executor;

  @Option(names = "--shards", paramLabel = "N", description = "slurm, ray: the most shards, one task or job each"
      + " (default: 8).")
  Integer shards;

  @Option(names = "--sbatch-arg", paramLabel = "ARG", description = "slurm: an argument for sbatch, e.g."
      + " --sbatch-arg=--partition=cpu (repeatable; after xlac's own, so it may override --output or --job-name).")
  List<String> sbatchArgs = new ArrayList<>();

  @Option(names = "--shared-dir", paramLabel = "DIR", description = "slurm, ray: a directory every node sees, through"
      + " which"
      + " the shards, the tasks' logs and (without a remote tier, or with --no-remote) their results travel (default:"
      + " CACHE/slurm or CACHE/ray, fine when the cache is on a shared file system).")
  Path sharedDir;

  /** The engine named by --executor (local, slurm or ray), checked against the options given. */
  String engine() {
    return switch (executor) {
      case "local" -> {
        if (shards != null || !sbatchArgs.isEmpty() || sharedDir != null) {
          throw XlacException.badInput("--shards, --sbatch-arg and --shared-dir need --executor slurm or ray");
        }
        yield executor;
      }
      case "slurm" -> executor;
      case "ray" -> {
        if (!sbatchArgs.isEmpty()) {
          throw XlacException.badInput("--sbatch-arg needs --executor slurm");
        }
        yield executor;
      }
      default -> throw XlacException.badInput("--executor " + executor + ": not an executor (local, slurm or ray)");
    };
  }

  SlurmSettings settings(CompileOptions compile, Path cacheDir, Consumer<String> progress) {
    ShardSettings s = shardSettings(compile, cacheDir, progress);
    return new SlurmSettings(s.shards(), sbatchArgs, s.taskRetries(), s.sharedDir(), taskCommand(compile),
        System.getenv(), s.poll(), progress);
  }

  /** What every sharding engine takes from the options: the shared directory defaults to CACHE/ENGINE. */
  ShardSettings shardSettings(CompileOptions compile, Path cacheDir, Consumer<String> progress) {
    int n = shards == null ? 8 : shards;
    if (n < 1) {
      throw XlacException.badInput("--shards must be at least 1");
    }
    Path shared = sharedDir != null ? sharedDir : cacheDir.resolve(executor);
    return new ShardSettings(n, compile.retries, shared.toAbsolutePath(), SlurmSettings.DEFAULT_POLL, progress);
  }

  /** What a task runs before its run directory: this xlac's {@code compile-shard} with the compile options. */
  static List<String> taskCommand(CompileOptions compile) {
    List<String> task = new ArrayList<>(launcher());
    task.add("compile-shard");
    task.addAll(forwarded(compile));
    return task;
  }

  /** The compile options a task needs, as it parses them; the plugin's path made absolute. */
  static List<String> forwarded(CompileOptions o) {
    List<String> a = new ArrayList<>(List.of("--driver", o.driver));
    if (o.plugin != null) {
      a.addAll(List.of("--plugin", o.plugin.toAbsolutePath().toString()));
    }
    if (o.target != null) {
      a.addAll(List.of("--target", o.target));
    }
    if (o.compilerFlags != null) {
      a.add("--compiler-flags=" + o.compilerFlags);
    }
    for (Map.Entry<String, String> e : o.clientOptions.entrySet()) {
      a.addAll(List.of("--client-option", e.getKey() + "=" + e.getValue()));
    }
    for (Map.Entry<String, String> e : o.compileOptions.entrySet()) {
      a.addAll(List.of("--compile-option", e.getKey() + "=" + e.getValue()));
    }
    if (o.jobs != null) {
      a.addAll(List.of("--jobs", o.jobs.toString()));
    }
    if (o.memoryPerJob != null) {
      a.addAll(List.of("--memory-per-job", o.memoryPerJob.toString()));
    }
    if (o.timeout != null) {
      a.addAll(List.of("--timeout", o.timeout.toMillis() + "ms"));
    }
    a.addAll(List.of("--retries", Integer.toString(o.retries)));
    if (o.retryFailed) {
      a.add("--retry-failed");
    }
    return a;
  }

  /**
   * How to start this same xlac on a node: the launcher beside the jar (a checkout's {@code ROOT/cli/target/xlac.jar}
   * -> {@code ROOT/xlac}; an installed release's {@code HOME/xlac.jar} -> {@code HOME/bin/xlac}) when there is one,
   * else this JVM with its class path.
   */
  static List<String> launcher() {
    try {
      Path jar = Path.of(Main.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toAbsolutePath();
      return launcherBeside(jar).map(p -> List.of(p.toString())).orElseGet(SlurmOptions::thisJvm);
    } catch (URISyntaxException | RuntimeException e) {
      return thisJvm();
    }
  }

  static java.util.Optional<Path> launcherBeside(Path jar) {
    Path dir = jar.getParent();
    Path root = dir == null || dir.getParent() == null ? null : dir.getParent().getParent();
    for (Path candidate : new Path[] {root == null ? null : root.resolve("xlac"), dir == null ? null : dir.resolve("bin/xlac")}) {
      if (candidate != null && Files.isExecutable(candidate) && Files.isRegularFile(candidate)) {
        return java.util.Optional.of(candidate);
      }
    }
    return java.util.Optional.empty();
  }

  private static List<String> thisJvm() {
    String java = ProcessHandle.current().info().command().orElse("java");
    return List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
        Main.class.getName());
  }
}
