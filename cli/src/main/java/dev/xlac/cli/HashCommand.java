package dev.xlac.cli;

import dev.xlac.core.ExitCode;
import dev.xlac.core.Json;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloFileKind;
import dev.xlac.pipeline.sources.PathSource;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "hash", mixinStandardHelpOptions = true,
    description = {"Print the canonical fingerprint of each HLO module in the given files or dump directories.",
        "Directories are searched recursively for compiler inputs (XLA *.before_optimizations.hlo.pb[.gz],"
            + " *.hlo_snapshot.pb, Neuron *.hlo_module.pb); other dump files are skipped."},
    footer = "%nOutput: one line per module, '<fingerprint>  <module name>  <file>'. With --json, an array of"
        + " objects with the keys file, module, fingerprint and kind (hlo_proto, hlo_module, hlo_snapshot)."
        + " Unreadable files are reported on stderr; the others are still printed, and the exit code is 2.")
final class HashCommand implements Callable<Integer> {
  @Parameters(arity = "1..*", paramLabel = "PATH", description = "Dump files or directories.")
  List<Path> paths;

  @Option(names = "--json", description = "Print a JSON array instead of lines.")
  boolean json;

  @picocli.CommandLine.Spec
  picocli.CommandLine.Model.CommandSpec spec;

  record Row(String file, String module, GraphFingerprint fingerprint, HloFileKind kind) {}

  @Override
  public Integer call() throws InterruptedException {
    PathSource.Listing<Row> read = PathSource.read(paths,
        m -> new Row(m.file().toString(), m.moduleName(), m.fingerprint(), m.kind()));
    InputReporter reporter = new InputReporter(spec.commandLine().getErr());
    ExitCode code = reporter.report(read.notes(), read.scanErrors(), List.of(), read.noModules() ? paths : null);
    var out = spec.commandLine().getOut();
    List<Map<String, Object>> jsonRows = new ArrayList<>();
    for (PathSource.Read<Row> o : read.reads()) {
      if (!o.ok()) {
        code = code.worst(reporter.error(o.error()));
        continue;
      }
      Row r = o.value();
      if (json) {
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("file", r.file());
        j.put("module", r.module());
        j.put("fingerprint", r.fingerprint().value());
        j.put("kind", r.kind().jsonName());
        jsonRows.add(j);
      } else {
        out.println(r.fingerprint() + "  " + (r.module().isEmpty() ? "-" : r.module()) + "  " + r.file());
      }
    }
    if (json) {
      out.println(Json.write(jsonRows));
    }
    out.flush();
    return code.code();
  }
}
