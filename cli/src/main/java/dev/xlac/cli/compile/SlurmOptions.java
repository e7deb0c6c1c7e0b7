package dev.xlac.cli.compile;

import dev.xlac.cli.Main;
import dev.xlac.core.XlacException;
import dev.xlac.pipeline.slurm.SlurmSettings;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import picocli.CommandLine.Option;

/** {@code parallel-compile --executor slurm}'s options, and what each array task runs ({@code xlac compile-shard}). */
final class SlurmOptions {
  @Option(names = "--executor", paramLabel = "NAME", defaultValue = "local",
      description = "local (default): compile on this machine; slurm: one Slurm job array, each task compiling a shard"
          + " of the graphs on its node (README, \"Slurm\").")
  String executor;

  @Option(names = "--shards", paramLabel = "N", description = "slurm: the most array tasks (default: 8).")
  Integer shards;

  @Option(names = "--sbatch-arg", paramLabel = "ARG", description = "slurm: an argument for sbatch, e.g."
      + " --sbatch-arg=--partition=cpu (repeatable; after xlac's own, so it may override --output or --job-name).")
  List<String> sbatchArgs = new ArrayList<>();

  @Option(names = "--shared-dir", paramLabel = "DIR", description = "slurm: a directory every node sees, through which"
      + " the shards, the tasks' logs and (without a remote tier, or with --no-remote) their results travel (default:"
      + " CACHE/slurm, fine when the cache is on a shared file system).")
  Path sharedDir;

  boolean slurm() {
    return switch (executor) {
      case "local" -> {
        if (shards != null || !sbatchArgs.isEmpty() || sharedDir != null) {
          throw XlacException.badInput("--shards, --sbatch-arg and --shared-dir need --executor slurm");
        }
        yield false;
      }
      case "slurm" -> true;
      default -> throw XlacException.badInput("--executor " + executor + ": not an executor (local or slurm)");
    };
  }

  SlurmSettings settings(CompileOptions compile, Path cacheDir, Consumer<String> progress) {
    int n = shards == null ? 8 : shards;
    if (n < 1) {
      throw XlacException.badInput("--shards must be at least 1");
    }
    List<String> task = new ArrayList<>(launcher());
    task.add("compile-shard");
    task.addAll(forwarded(compile));
    Path shared = sharedDir != null ? sharedDir : cacheDir.resolve("slurm");
    return new SlurmSettings(n, sbatchArgs, compile.retries, shared.toAbsolutePath(), task, System.getenv(),
        SlurmSettings.DEFAULT_POLL, progress);
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
