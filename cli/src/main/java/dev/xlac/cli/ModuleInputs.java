package dev.xlac.cli;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.DumpDirectoryReader;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;

/** The files a command reads from its PATH arguments, with the scan's notes and errors already reported. */
record ModuleInputs(List<Path> files, ExitCode exitCode, PrintWriter err) {

  static ModuleInputs scan(List<Path> paths, PrintWriter err) {
    DumpDirectoryReader.Scan scan = DumpDirectoryReader.scan(paths);
    ExitCode code = ExitCode.OK;
    for (XlacException e : scan.errors()) {
      err.println("xlac: " + e.getMessage());
      code = code.worst(e.exitCode());
    }
    scan.notes().forEach(n -> err.println("xlac: " + n));
    if (scan.inputs().isEmpty() && scan.errors().isEmpty()) {
      err.println("xlac: no HLO modules found in " + paths.stream().map(Path::toString).reduce((a, b) -> a + ", " + b).orElse(""));
      code = ExitCode.BAD_INPUT;
    }
    err.flush();
    return new ModuleInputs(scan.inputs(), code, err);
  }

  /** Prints a per-file error and returns its exit code. */
  ExitCode report(XlacException e) {
    err.println("xlac: " + e.getMessage());
    err.flush();
    return e.exitCode();
  }
}
