package dev.xlac.cli.dump;

import dev.xlac.cache.CacheStore;
import dev.xlac.capture.CommandNotRunnableException;
import dev.xlac.capture.CommandTracer;
import dev.xlac.capture.Frontend;
import dev.xlac.capture.StagingDirectories;
import dev.xlac.cli.cache.CacheOptions;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

@Command(name = "dump", mixinStandardHelpOptions = true,
    description = {"Run a training command with XLA (or Neuron) dumping every graph it compiles, and put the graphs"
        + " into the cache while it runs.",
        "COMMAND is anything you run: python, torchrun, a shell script."},
    footer = {"%nThe command's output passes through; Ctrl-C, SIGTERM and SIGHUP are forwarded to its whole process"
        + " group. xlac exits with the command's exit status (128+N if signal N ended it); what it dumped before it"
        + " ended is ingested either way. Otherwise: 127 the command was not found, 126 it cannot be run, 1 it"
        + " succeeded but dumped no graph, 2 bad options or unreadable dumps, 3 the cache is locked or unusable."
        + " With --ignore-script-errors, a failed command that dumped graphs gives 0.",
        "%nFrontends: auto (XLA dumps for JAX and PyTorch/XLA; Neuron if PJRT_DEVICE=NEURON), jax, torch-xla,"
        + " neuron (NEURON_EXTRACT_GRAPHS_ONLY=1 into a staging compile cache). Your XLA_FLAGS are kept; a"
        + " --xla_dump_to in them is replaced (use --keep-dumps for that directory)."})
public final class DumpCommand implements Callable<Integer> {
  @Mixin
  TraceOptions trace;

  @Parameters(arity = "0..*", paramLabel = "COMMAND", description = "The command and its arguments, after '--'.")
  List<String> command = List.of();

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    PrintWriter out = cache.out();
    PrintWriter err = cache.err();
    Frontend frontend = trace.frontend();
    Pattern filter = trace.moduleFilter();
    if (command.isEmpty()) {
      throw XlacException.badInput("no command given: write it after '--', e.g. xlac dump -- python train.py");
    }
    CommandTracer.Outcome o;
    DumpIngest ingest;
    try (StagingDirectories dirs = StagingDirectories.create(trace.keepDumps()); CacheStore store = cache.openWritable()) {
      ingest = new DumpIngest(store, err);
      try {
        o = CommandTracer.run(new CommandTracer.Request(command, frontend, dirs.dumps(), dirs.support(), filter,
            System.getenv(), CommandTracer.DEFAULT_POLL_INTERVAL), ingest);
      } catch (CommandNotRunnableException e) {
        err.println("xlac: " + e.getMessage());
        err.flush();
        return e.status();
      }
      o.notes().forEach(n -> err.println("xlac: " + n));
      out.println(ingest.summary());
      ingest.alreadyCompiled().forEach((compiler, n) -> out.printf("%d already compiled for %s%n", n, compiler));
      if (dirs.keptDumps()) {
        out.println("dumps kept in " + dirs.dumps());
      }
      out.flush();
    }
    CommandEnding ending = new CommandEnding(command, o, ingest, trace.ignoreScriptErrors(), err);
    Integer failure = ending.failureStatus();
    if (ending.failed()) {
      return failure != null ? failure : ExitCode.OK.code(); // null: ignored (--ignore-script-errors)
    }
    if (ending.dumpedNothing()) {
      return ExitCode.WORK_FAILED.code();
    }
    return ingest.unreadable() > 0 ? ExitCode.BAD_INPUT.code() : ExitCode.OK.code();
  }
}
