package dev.xlac.cli.compile;

import dev.xlac.cli.CommandArgs;
import dev.xlac.cli.cache.CacheOptions;
import dev.xlac.cli.dump.CaptureReport;
import dev.xlac.cli.dump.TraceOptions;
import dev.xlac.compiler.schedule.MemoryProbe;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.XlacException;
import dev.xlac.pipeline.CompileExecutor;
import dev.xlac.pipeline.CompileResult;
import dev.xlac.pipeline.CompileRuns;
import dev.xlac.pipeline.CompileSetup;
import dev.xlac.pipeline.LocalExecutor;
import dev.xlac.pipeline.OneShotResult;
import dev.xlac.pipeline.RunReport;
import dev.xlac.pipeline.ray.RayExecutor;
import dev.xlac.pipeline.slurm.SlurmExecutor;
import dev.xlac.pipeline.sources.TraceSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

@Command(name = "parallel-compile", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"Compile every graph in the cache that lacks an artifact for this compiler, in parallel, storing"
        + " each artifact or failure in the cache as soon as it is done.",
        "Without PATHs and COMMAND this is the cache's own work: with a PJRT plugin (--plugin or $XLAC_PJRT_PLUGIN)"
            + " also every request the runtime recorded ('xlac run --record', 'xlac dump --plugin') that has no"
            + " executable for this plugin is compiled with its own program and options and stored under the key"
            + " 'xlac run' with this plugin looks up: after a plugin or compiler upgrade, the training run is all"
            + " hits. A request this plugin rejects is a failure; its log is in CACHE/runtime/failed-compiles/.",
        "With PATHs (dump files or directories), their graphs are added to the cache first and only they are"
            + " considered. Graphs already compiled are cache hits; graphs whose compile failed before are skipped"
            + " unless --retry-failed.",
        "%nOne-shot: with '-- COMMAND...' (instead of PATHs) the command runs as under 'xlac dump', and each graph"
            + " it dumps is compiled as it arrives, while the command still runs; only its graphs are considered."},
    footer = {"%nTransient failures (crash, timeout, out of memory) are retried --retries times; compile errors"
        + " never are. An out-of-memory failure lowers the number of parallel jobs by one and is retried once."
        + " Progress goes to stderr (a live bar on a terminal, plain lines otherwise); the summary to stdout.",
        "%nExit codes:",
        "  0  every graph compiled or was cached",
        "  1  some graph failed to compile (in this run, or in an earlier one and not",
        "     retried)",
        "  2  usage error or unreadable input",
        "  3  environment: plugin missing or not loadable, compiler not found, cache",
        "     locked",
        "%nWith -- COMMAND, a failed command's exit status (128+N for signal N) comes first, unless"
            + " --ignore-script-errors and it dumped graphs; its graphs are compiled and stored either way. A signal"
            + " is forwarded to the command's process group and stops the compiles still running. 127/126: the"
            + " command was not found or cannot run; 1: it dumped no graph. The plugin or compiler is checked before"
            + " the command starts (3); if it cannot start while the command runs, xlac stops the command (3).",
        "%nWith --executor slurm, one Slurm job array compiles the graphs in shards, one per node; the summary,"
            + " reports and exit codes are a local run's. No sbatch on PATH: 3. See docs/reference.md,"
            + " \"Distributed compiles on Slurm\".",
        "%nWith --executor ray, one Ray job per shard on an existing cluster, through its dashboard's Jobs API; the"
            + " same summary, reports and exit codes. Dashboard not answering: 3; bad --ray-resources: 2. See"
            + " docs/reference.md, \"Distributed compiles on Ray\"."})
public final class ParallelCompileCommand implements Callable<Integer> {
  @Mixin
  CompileOptions options;

  @Mixin
  TraceOptions trace;

  @Parameters(arity = "0..*", paramLabel = "PATH",
      description = "Dump files or directories to add and compile; or, after '--', the command to run.")
  List<String> positional = new ArrayList<>();

  @Mixin
  CacheOptions.Writer cache;

  @Mixin
  SlurmOptions slurm;

  @Mixin
  RayOptions ray;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException {
    CommandArgs args = CommandArgs.split(spec, positional);
    List<String> command = args.command();
    List<String> paths = args.before();
    if (args.delimiter() && command.isEmpty()) {
      throw XlacException.badInput("no command after '--': write it there, e.g. xlac parallel-compile -- python train.py");
    }
    if (!command.isEmpty() && !paths.isEmpty()) {
      throw XlacException.badInput("PATHs and '-- COMMAND' do not go together: compile dumps (" + paths.getFirst()
          + ") or run a command, not both");
    }
    if (command.isEmpty() && trace.anyGiven()) {
      throw XlacException.badInput("--frontend, --keep-dumps, --module-filter and --ignore-script-errors need a"
          + " command to run: write it after '--'");
    }
    if (ray.stopOrphans) {
      return stopOrphans(command, paths);
    }
    SchedulerSettings settings = options.settings();
    return command.isEmpty() ? compile(paths.stream().map(Path::of).toList(), settings) : oneShot(command, settings);
  }

  private CompileSetup setup(SchedulerSettings settings) {
    return new CompileSetup(cache::openWritable, options.drivers(cache.directory().resolve("probes")), settings,
        options.retryFailed(), new ProgressPrinter(cache.err(), ProgressPrinter.terminal()), MemoryProbe.system(),
        options.remotePolicy(), executor());
  }

  /** Where the compiles run: the one choice the command makes; the run is the same either way. */
  private CompileExecutor executor() {
    java.util.function.Consumer<String> progress = line -> {
      cache.err().println("xlac: " + line);
      cache.err().flush();
    };
    return switch (slurm.engine()) {
      case "slurm" -> {
        ray.requireNone();
        yield new SlurmExecutor(slurm.settings(options, cache.directory(), progress));
      }
      case "ray" -> rayExecutor(progress);
      default -> {
        ray.requireNone();
        yield LocalExecutor.INSTANCE;
      }
    };
  }

  /** --ray-stop-orphans: no compile; the dead submitters' jobs stopped, one line each on stdout. */
  private int stopOrphans(List<String> command, List<String> paths) throws InterruptedException {
    if (!slurm.engine().equals("ray") || !command.isEmpty() || !paths.isEmpty()) {
      throw XlacException.badInput("--ray-stop-orphans goes with --executor ray alone, without PATHs or a command");
    }
    RayExecutor executor = rayExecutor(line -> {});
    executor.checkReady();
    int n = executor.stopOrphans(cache.out()::println);
    cache.out().println("stopped " + n + " orphaned Ray job" + (n == 1 ? "" : "s"));
    cache.out().flush();
    return dev.xlac.core.ExitCode.OK.code();
  }

  private RayExecutor rayExecutor(java.util.function.Consumer<String> progress) {
    return new RayExecutor(ray.settings(slurm.shardSettings(options, cache.directory(), progress),
        SlurmOptions.taskCommand(options)));
  }

  private int compile(List<Path> paths, SchedulerSettings settings) throws InterruptedException {
    CompileResult r = paths.isEmpty() ? CompileRuns.cache(setup(settings)) : CompileRuns.paths(setup(settings), paths);
    print(r.report());
    CaptureReport.whyNew(r.whyNew(), cache.out()); // the same last line as one-shot's and dump's
    return r.exitCode().code();
  }

  private int oneShot(List<String> command, SchedulerSettings settings) throws InterruptedException {
    TraceSpec spec = trace.spec(command);
    if (options.recordingPlugin() != null) { // --plugin given: record the command's compiles too
      spec = spec.withRecording(options.recordingPlugin(), cache.directory());
    }
    OneShotResult r = CompileRuns.command(setup(settings), spec);
    if (r.capture().notRunnable() != null) {
      return CaptureReport.notRunnable(r.capture(), cache.err());
    }
    CaptureReport.print(r.capture(), cache.out(), cache.err());
    print(r.report());
    CaptureReport.whyNew(r.capture(), cache.out());
    CaptureReport.ending(r.capture(), cache.err());
    return r.exitStatus();
  }

  private void print(RunReport r) {
    r.summaryLines().forEach(cache.out()::println);
    cache.out().flush();
    options.writeReports(r);
  }
}
