package dev.xlac.cli.compile;

import dev.xlac.cache.CacheStore;
import dev.xlac.capture.CommandNotRunnableException;
import dev.xlac.capture.CommandTracer;
import dev.xlac.capture.Frontend;
import dev.xlac.capture.StagingDirectories;
import dev.xlac.cli.cache.CacheOptions;
import dev.xlac.cli.dump.CommandEnding;
import dev.xlac.cli.dump.TraceOptions;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.compiler.schedule.RunReport;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

@Command(name = "parallel-compile", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"Compile every graph in the cache that lacks an artifact for this compiler, in parallel, storing"
        + " each artifact or failure in the cache as soon as it is done.",
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
            + " the command starts (3); if it cannot start while the command runs, xlac stops the command (3)."})
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

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException {
    List<String> args = spec.commandLine().getParseResult().originalArgs();
    int delimiter = args.indexOf("--");
    List<String> command = delimiter < 0 ? List.of() : args.subList(delimiter + 1, args.size());
    List<String> paths = positional.subList(0, positional.size() - command.size());
    if (delimiter >= 0 && command.isEmpty()) {
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
    SchedulerSettings settings = options.settings();
    return command.isEmpty() ? compile(paths.stream().map(Path::of).toList(), settings) : oneShot(command, settings);
  }

  private int compile(List<Path> paths, SchedulerSettings settings) throws InterruptedException {
    DriverSelection selection = options.selection(probeDir());
    CacheCompileRun.Outcome outcome;
    // With PATHs, compiles are almost always needed: the first worker starts now, while the cache
    // opens and the PATHs are read. Without, a run where everything is cached starts none. The
    // run's graphs and artifacts are pinned against the cache's max-size until it ends.
    try (PrestartedDrivers early = paths.isEmpty() ? PrestartedDrivers.none(selection)
            : PrestartedDrivers.start(selection);
        CacheStore store = cache.openWritable(); var _ = store.pinForRun();
        DriverFactory drivers = early.open();
        ProgressPrinter progress = new ProgressPrinter(cache.err(), ProgressPrinter.terminal())) {
      outcome = new CacheCompileRun(store, drivers, cache.err()).run(paths, settings, options.retryFailed(), progress);
    }
    print(outcome.report());
    return outcome.report().exitCode().worst(outcome.inputs()).code();
  }

  private int oneShot(List<String> command, SchedulerSettings settings) throws InterruptedException {
    PrintWriter out = cache.out();
    PrintWriter err = cache.err();
    Frontend frontend = trace.frontend();
    Pattern filter = trace.moduleFilter();
    OneShotRun.Outcome o;
    // Checked before the command starts (bad options are 2, a missing plugin or compiler 3); the
    // first worker then starts while the cache opens and the command starts. What the run uses is
    // pinned against the cache's max-size until it ends.
    try (PrestartedDrivers early = PrestartedDrivers.start(options.selection(probeDir()));
        StagingDirectories dirs = StagingDirectories.create(trace.keepDumps()); CacheStore store = cache.openWritable();
        var _ = store.pinForRun();
        ProgressPrinter progress = new ProgressPrinter(err, ProgressPrinter.terminal())) {
      try {
        o = new OneShotRun(store, early, settings, options.retryFailed(), progress, err).run(
            new CommandTracer.Request(command, frontend, dirs.dumps(), dirs.support(), filter, System.getenv(),
                CommandTracer.DEFAULT_POLL_INTERVAL));
      } catch (CommandNotRunnableException e) {
        err.println("xlac: " + e.getMessage());
        err.flush();
        return e.status();
      }
      o.trace().notes().forEach(n -> err.println("xlac: " + n));
      out.println(o.ingest().summary());
      if (dirs.keptDumps()) {
        out.println("dumps kept in " + dirs.dumps());
      }
    }
    print(o.report());
    CommandEnding ending = new CommandEnding(command, o.trace(), o.ingest(), trace.ignoreScriptErrors(), err);
    Integer failure = ending.failureStatus();
    if (failure != null) {
      return failure;
    }
    if (ending.dumpedNothing()) {
      return ExitCode.WORK_FAILED.code();
    }
    return o.report().exitCode().worst(o.ingest().unreadable() > 0 ? ExitCode.BAD_INPUT : ExitCode.OK).code();
  }

  private Path probeDir() {
    return cache.directory().resolve("probes");
  }

  private void print(RunReport r) {
    r.summaryLines().forEach(cache.out()::println);
    cache.out().flush();
    options.writeReports(r);
  }
}
