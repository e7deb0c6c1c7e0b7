package dev.xlac.cli.compile;

import dev.xlac.cache.RemotePolicy;
import dev.xlac.cli.cache.CacheOptions;
import dev.xlac.compiler.schedule.MemoryProbe;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.compiler.select.DriverKind;
import dev.xlac.compiler.select.DriverOptions;
import dev.xlac.core.ExitCode;
import dev.xlac.core.Json;
import dev.xlac.core.Sizes;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.pipeline.DriverSource;
import dev.xlac.pipeline.RunReport;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Option;

/** The options of {@code xlac parallel-compile} (both modes): the compiler, the scheduler and the reports. */
final class CompileOptions {
  @Option(names = "--driver", paramLabel = "NAME", defaultValue = "pjrt",
      description = "pjrt (default) or neuronx-cc.")
  String driver;

  @Option(names = "--plugin", paramLabel = "PATH", description = "The PJRT plugin (default: $XLAC_PJRT_PLUGIN). Given"
      + " with -- COMMAND, the command's own compiles are also recorded through xlac's runtime proxy in front of it,"
      + " so that 'xlac run' serves them. Without PATHs and COMMAND, the requests recorded with any plugin are also"
      + " compiled for this one.")
  Path plugin;

  @Option(names = "--target", paramLabel = "T", description = "The target (pjrt: checked against the plugin's platform).")
  String target;

  @Option(names = "--compiler-flags", paramLabel = "\"...\"", description = "Flags for neuronx-cc.")
  String compilerFlags;

  @Option(names = "--client-option", paramLabel = "KEY=VALUE", description = "A PJRT client create option.")
  Map<String, String> clientOptions = new LinkedHashMap<>();

  @Option(names = "--compile-option", paramLabel = "KEY=VALUE",
      description = "A PJRT compile option: device_ordinal, num_replicas, num_partitions.")
  Map<String, String> compileOptions = new LinkedHashMap<>();

  @Option(names = "--jobs", paramLabel = "N",
      description = "Compiles at once (default: min(cores, available memory / --memory-per-job)).")
  Integer jobs;

  @Option(names = "--memory-per-job", paramLabel = "SIZE", converter = CacheOptions.SizeConverter.class,
      description = "Memory one compile may need, e.g. 4G (default: 2G for pjrt, 64G for neuronx-cc; at least 256MiB).")
  Long memoryPerJob;

  @Option(names = "--timeout", paramLabel = "DURATION", converter = CacheOptions.DurationConverter.class,
      description = "Stop a compile after this long, e.g. 30m (default: no limit).")
  Duration timeout;

  @Option(names = "--retries", paramLabel = "N", defaultValue = "0",
      description = "Retries of a crashed, timed-out or out-of-memory compile (default: 0).")
  int retries;

  @Option(names = "--retry-failed", description = "Compile again the graphs whose compile failed in an earlier run.")
  boolean retryFailed;

  @Option(names = "--require-remote", description = "Fail (exit code 3) when the cache's remote tier is not set, cannot be"
      + " reached or refuses access, rather than warning once and going on with the local cache (for CI).")
  boolean requireRemote;

  @Option(names = "--no-remote", description = "Neither read through to nor write through to the cache's remote tier"
      + " (with --executor slurm or ray: the shards' results come back through --shared-dir instead).")
  boolean noRemote;

  @Option(names = "--report", paramLabel = "FILE.json", description = "Write a JSON report.")
  Path report;

  @Option(names = "--junit", paramLabel = "FILE.xml", description = "Write a JUnit XML report, one testcase per graph.")
  Path junit;

  /** The scheduler's settings; bad values are usage errors. Also checks that the report files can be written. */
  SchedulerSettings settings() {
    long perJob = memoryPerJob == null ? DriverKind.memoryPerJob(driver) : memoryPerJob;
    if (jobs != null && jobs < 1 || retries < 0) {
      throw XlacException.badInput("--jobs must be at least 1 and --retries at least 0");
    }
    if (memoryPerJob != null && memoryPerJob < SchedulerSettings.MIN_MEMORY_PER_JOB) {
      throw XlacException.badInput("--memory-per-job " + Sizes.human(memoryPerJob) + " is too small: no compile fits"
          + " in less than " + Sizes.human(SchedulerSettings.MIN_MEMORY_PER_JOB) + " (a PJRT compile worker alone takes"
          + " about 250 MiB); to run more compiles at once, use --jobs N");
    }
    requireWritableParent(report, "--report");
    requireWritableParent(junit, "--junit");
    return new SchedulerSettings(
        jobs != null ? jobs : SchedulerSettings.defaultJobs(perJob, MemoryProbe.system()), perJob, retries);
  }

  /**
   * The compiler to use, resolved when the run needs it; {@code probeDir} is where drivers remember
   * what they learnt (in the cache directory).
   */
  DriverSource drivers(Path probeDir) {
    return new DriverSource.FromOptions(new DriverOptions(driver, plugin, target, compilerFlags, clientOptions,
        compileOptions, timeout == null ? Duration.ZERO : timeout, probeDir), System.getenv());
  }

  /**
   * The plugin whose compiles a one-shot run also records through the runtime proxy: {@code --plugin} when it
   * was given (not {@code $XLAC_PJRT_PLUGIN}) for the pjrt driver; else null.
   */
  Path recordingPlugin() {
    return plugin != null && "pjrt".equals(driver) ? plugin : null;
  }

  boolean retryFailed() {
    return retryFailed;
  }

  /** {@code --require-remote} / {@code --no-remote}: how the run uses the cache's remote tier. */
  RemotePolicy remotePolicy() {
    if (requireRemote && noRemote) {
      throw XlacException.badInput("--require-remote and --no-remote do not go together");
    }
    return requireRemote ? RemotePolicy.REQUIRE : noRemote ? RemotePolicy.OFF : RemotePolicy.USE;
  }

  /** Writes {@code --report} and {@code --junit} when given, each whole or not at all. */
  void writeReports(RunReport r) {
    write(report, Json.write(r.toJson()) + "\n");
    write(junit, r.toJunitXml());
  }

  private static void requireWritableParent(Path file, String option) {
    if (file == null) {
      return;
    }
    Path parent = file.toAbsolutePath().getParent();
    if (!Files.isDirectory(parent) || !Files.isWritable(parent)) {
      throw XlacException.badInput(option + " " + file + ": the directory " + parent + " does not exist or is not"
          + " writable");
    }
  }

  private static void write(Path file, String text) {
    if (file == null) {
      return;
    }
    try {
      AtomicFiles.writeString(file, text);
    } catch (IOException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot write " + file + ": " + XlacException.reason(e), e);
    }
  }
}
