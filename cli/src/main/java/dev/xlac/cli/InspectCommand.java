package dev.xlac.cli;

import dev.xlac.core.Json;
import dev.xlac.core.Sizes;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.ModuleSummary;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "inspect", mixinStandardHelpOptions = true,
    description = "Summarise one HLO module file: name, entry parameters and result, instruction counts by opcode, "
        + "computations, constant bytes and fingerprint.",
    footer = "%nWith --json, one object with the keys file, kind, module, fingerprint, parameters, result,"
        + " computations, instructions, opcodes (opcode -> count), constants and constant_bytes.")
final class InspectCommand implements Callable<Integer> {
  @Parameters(paramLabel = "FILE", description = "An *.hlo.pb[.gz], *.hlo_snapshot.pb or *.hlo_module.pb file.")
  Path file;

  @Option(names = "--json", description = "Print a JSON object instead of text.")
  boolean json;

  @picocli.CommandLine.Spec
  picocli.CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    ModuleSummary s = ModuleSummary.of(new HloModuleReader().read(file));
    PrintWriter out = spec.commandLine().getOut();
    if (json) {
      out.println(Json.write(s.toJson()));
    } else {
      out.printf("module:        %s%n", s.module().isEmpty() ? "-" : s.module());
      out.printf("file:          %s (%s)%n", s.file(), s.kind().jsonName());
      out.printf("fingerprint:   %s%n", s.fingerprint());
      out.printf("parameters:    %d%n", s.parameters().size());
      for (int i = 0; i < s.parameters().size(); i++) {
        out.printf("  %3d  %s%n", i, s.parameters().get(i));
      }
      out.printf("result:        %s%n", s.result());
      out.printf("computations:  %d%n", s.computations());
      out.printf("instructions:  %d%n", s.instructions());
      out.printf("constants:     %d (%s)%n", s.constants(), Sizes.human(s.constantBytes()));
      out.println("opcodes:");
      for (Map.Entry<String, Integer> e : s.opcodeCounts().entrySet()) {
        out.printf("  %-28s %d%n", e.getKey(), e.getValue());
      }
    }
    out.flush();
    return 0;
  }
}
