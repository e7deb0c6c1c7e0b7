package dev.xlac.cli;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.DumpDirectoryReader;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;

/** The files a command reads from its PATH arguments, with the scan's notes and errors already reported. */
record ModuleInputs(List<Path> files, ExitCode exitCode, InputReporter reporter) {

  static ModuleInputs scan(List<Path> paths, PrintWriter err) {
    DumpDirectoryReader.Scan scan = DumpDirectoryReader.scan(paths);
    InputReporter reporter = new InputReporter(err);
    ExitCode code = reporter.report(scan.notes(), scan.errors(), List.of(),
        scan.inputs().isEmpty() && scan.errors().isEmpty() ? paths : null);
    return new ModuleInputs(scan.inputs(), code, reporter);
  }

  /** Prints a per-file error and returns its exit code. */
  ExitCode report(XlacException e) {
    return reporter.error(e);
  }
}
