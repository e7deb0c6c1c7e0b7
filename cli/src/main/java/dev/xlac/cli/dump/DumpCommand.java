package dev.xlac.cli.dump;

import dev.xlac.cli.cache.CacheOptions;
import dev.xlac.core.XlacException;
import dev.xlac.pipeline.sources.CaptureResult;
import dev.xlac.pipeline.sources.Captures;
import dev.xlac.pipeline.sources.TraceSpec;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
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
        + " --xla_dump_to in them is replaced (use --keep-dumps for that directory).",
        "%nWith --plugin, JAX compiles through xlac's runtime proxy in front of that plugin (as under 'xlac run'),"
        + " which records each compile's executable; they go into the cache when the command ends."})
public final class DumpCommand implements Callable<Integer> {
  @Mixin
  TraceOptions trace;

  @Parameters(arity = "0..*", paramLabel = "COMMAND", description = "The command and its arguments, after '--'.")
  List<String> command = List.of();

  @Option(names = "--plugin", paramLabel = "PATH",
      description = "Also record every compile through xlac's runtime proxy in front of this PJRT plugin, and put"
          + " the executables into the cache, so that 'xlac run' serves them.")
  Path plugin;

  @Mixin
  CacheOptions.Writer cache;

  @Override
  public Integer call() throws InterruptedException {
    PrintWriter err = cache.err();
    TraceSpec spec = trace.spec(command); // a bad --frontend or --module-filter first
    if (plugin != null) {
      spec = spec.withRecording(plugin, cache.directory());
    }
    if (command.isEmpty()) {
      throw XlacException.badInput("no command given: write it after '--', e.g. xlac dump -- python train.py");
    }
    CaptureResult r = Captures.dump(cache::openWritable, spec, m -> {
      err.println("xlac: " + m);
      err.flush();
    });
    if (r.notRunnable() != null) {
      return CaptureReport.notRunnable(r, err);
    }
    CaptureReport.print(r, cache.out(), err);
    CaptureReport.whyNew(r, cache.out());
    CaptureReport.ending(r, err);
    return r.exitStatus();
  }
}
