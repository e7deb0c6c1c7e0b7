package dev.xlac.cli.compile;

import dev.xlac.cli.dump.CaptureReport;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.pipeline.CompileResult;
import dev.xlac.pipeline.CompileSetup;
import dev.xlac.pipeline.OneShotResult;
import dev.xlac.pipeline.SlurmCompile;
import dev.xlac.pipeline.SlurmSettings;
import dev.xlac.pipeline.TraceSpec;
import java.nio.file.Path;
import java.util.List;

/** {@code parallel-compile --executor slurm}: the same inputs, summary, reports and exit codes as a local run. */
final class SlurmRun {
  private final ParallelCompileCommand c;

  SlurmRun(ParallelCompileCommand command) {
    this.c = command;
  }

  int run(List<String> command, List<String> paths, SchedulerSettings settings) throws InterruptedException {
    SlurmSettings slurm = c.slurm.settings(c.options, c.cache.directory(), line -> {
      c.cache.err().println("xlac: " + line);
      c.cache.err().flush();
    });
    CompileSetup setup = c.setup(settings);
    if (command.isEmpty()) {
      CompileResult r = SlurmCompile.paths(setup, slurm, paths.stream().map(Path::of).toList());
      c.print(r.report());
      CaptureReport.whyNew(r.whyNew(), c.cache.out());
      return r.exitCode().code();
    }
    TraceSpec spec = c.trace.spec(command);
    if (c.options.recordingPlugin() != null) {
      spec = spec.withRecording(c.options.recordingPlugin(), c.cache.directory());
    }
    OneShotResult r = SlurmCompile.command(setup, slurm, spec);
    if (r.capture().notRunnable() != null) {
      return CaptureReport.notRunnable(r.capture(), c.cache.err());
    }
    CaptureReport.print(r.capture(), c.cache.out(), c.cache.err());
    c.print(r.report());
    CaptureReport.whyNew(r.capture(), c.cache.out());
    CaptureReport.ending(r.capture(), c.cache.err());
    return r.exitStatus();
  }
}
