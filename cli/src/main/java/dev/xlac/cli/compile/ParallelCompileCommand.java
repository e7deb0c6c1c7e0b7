package dev.xlac.cli.compile;

import dev.xlac.cache.CacheStore;
import dev.xlac.cli.cache.CacheOptions;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.schedule.MemoryProbe;
import dev.xlac.compiler.schedule.RunReport;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.ExitCode;
import dev.xlac.core.Json;
import dev.xlac.core.XlacException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "parallel-compile", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"Compile every graph in the cache that lacks an artifact for this compiler, in parallel, storing",
        "each artifact or failure in the cache as soon as it is done. With PATHs (dump files or directories),",
        "their graphs are added to the cache first and only they are considered. Graphs already compiled are",
        "cache hits; graphs whose compile failed before are skipped unless --retry-failed."},
    footer = {"%nTransient failures (crash, timeout, out of memory) are retried --retries times; compile errors",
        "never are. An out-of-memory failure lowers the number of parallel jobs by one and is retried once.",
        "Progress goes to stderr (a live bar on a terminal, plain lines otherwise); the summary to stdout.",
        "%nExit codes:",
        "  0  every graph compiled or was cached",
        "  1  some graph failed to compile (in this run, or in an earlier one and not retried)",
        "  2  usage error or unreadable input",
        "  3  environment: plugin missing or not loadable, compiler not found, cache locked"})
public final class ParallelCompileCommand implements Callable<Integer> {
  @Option(names = "--driver", paramLabel = "NAME", defaultValue = DriverSelection.PJRT,
      description = "pjrt (default) or neuronx-cc.")
  String driver;

  @Option(names = "--plugin", paramLabel = "PATH", description = "The PJRT plugin (default: $XLAC_PJRT_PLUGIN).")
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
      description = "Memory one compile may need, e.g. 4G (default: 2G for pjrt, 64G for neuronx-cc).")
  Long memoryPerJob;

  @Option(names = "--timeout", paramLabel = "DURATION", converter = CacheOptions.DurationConverter.class,
      description = "Stop a compile after this long, e.g. 30m (default: no limit).")
  Duration timeout;

  @Option(names = "--retries", paramLabel = "N", defaultValue = "0",
      description = "Retries of a crashed, timed-out or out-of-memory compile (default: 0).")
  int retries;

  @Option(names = "--retry-failed", description = "Compile again the graphs whose compile failed in an earlier run.")
  boolean retryFailed;

  @Option(names = "--report", paramLabel = "FILE.json", description = "Write a JSON report.")
  Path report;

  @Option(names = "--junit", paramLabel = "FILE.xml", description = "Write a JUnit XML report, one testcase per graph.")
  Path junit;

  @Parameters(arity = "0..*", paramLabel = "PATH", description = "Dump files or directories to add and compile.")
  List<Path> paths = new ArrayList<>();

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    PrintWriter out = cache.out();
    PrintWriter err = cache.err();
    long perJob = memoryPerJob == null ? DriverSelection.defaultMemoryPerJob(driver) : memoryPerJob;
    if (jobs != null && jobs < 1 || retries < 0) {
      throw XlacException.badInput("--jobs must be at least 1 and --retries at least 0");
    }
    requireWritableParent(report, "--report");
    requireWritableParent(junit, "--junit");
    SchedulerSettings settings = new SchedulerSettings(
        jobs != null ? jobs : SchedulerSettings.defaultJobs(perJob, MemoryProbe.system()), perJob, retries);
    Path pluginPath = plugin != null || !DriverSelection.PJRT.equals(driver) ? plugin
        : System.getenv("XLAC_PJRT_PLUGIN") == null || System.getenv("XLAC_PJRT_PLUGIN").isBlank() ? null
        : Path.of(System.getenv("XLAC_PJRT_PLUGIN"));
    Duration perCompile = timeout == null ? Duration.ZERO : timeout;
    CacheCompileRun.Outcome outcome;
    try (CacheStore store = cache.openWritable();
        DriverFactory drivers = new DriverSelection(driver, pluginPath, target, compilerFlags, clientOptions,
            compileOptions, perCompile, store.directory().resolve("probes")).open();
        ProgressPrinter progress = new ProgressPrinter(err, ProgressPrinter.terminal())) {
      outcome = new CacheCompileRun(store, drivers, err).run(paths, settings, retryFailed, progress);
    }
    RunReport r = outcome.report();
    r.summaryLines().forEach(out::println);
    out.flush();
    write(report, Json.write(r.toJson()) + "\n");
    write(junit, r.toJunitXml());
    return r.exitCode().worst(outcome.inputs()).code();
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
      Files.writeString(file, text, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot write " + file + ": " + e.getMessage(), e);
    }
  }
}
