package dev.xlac.cli;

import dev.xlac.cli.cache.CacheOptions;
import dev.xlac.core.Json;
import dev.xlac.hlo.GraphDiff;
import dev.xlac.pipeline.explain.Diffs;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "diff", mixinStandardHelpOptions = true,
    description = {"Explain how two HLO graphs differ, with a one-line verdict first.",
        "A and B are dump files (any kind xlac reads), or fingerprints or unique prefixes (6 or more hex digits) of"
            + " graphs in the cache; a name is looked up in the cache only when no file of that name exists.",
        "The verdict is 'same program' exactly when the fingerprints are equal. Otherwise it is the shortest true"
            + " description of the difference: changed entry parameter shapes and how many instructions change shape"
            + " with them, changed constants, added or removed instructions and computations, changed"
            + " compile-relevant attributes (sharding, replica groups, frontend attributes, custom-call targets,"
            + " backend config). Instructions are matched structurally, through the fingerprint's canonical order,"
            + " never by names or ids; where the structure cannot be matched the verdict says so and gives summary"
            + " deltas."},
    footer = {"%nThe details follow the verdict: parameters and results with shapes and layouts, per-opcode count"
        + " deltas, changed constants, changed attributes, computations added or removed, and how much was matched.",
        "With --json, one object with the keys same, verdict, kinds, a, b, matching, parameters, shape_changes,"
            + " constants, attributes, replaced, instructions_added, instructions_removed, computations_added,"
            + " computations_removed, rewired, opcodes, module_fields and element_types (hlo/README.md, \"Diffs\").",
        "%nExit codes: 0 whether the graphs are the same or not (with --exit-code: 0 same, 1 different),"
            + " 2 bad input (an unreadable file, a fingerprint not in the cache or an ambiguous prefix),"
            + " 3 cache unusable."})
final class DiffCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "A", description = "A dump file, or a fingerprint or unique prefix in the cache.")
  String a;

  @Parameters(index = "1", paramLabel = "B", description = "The same, for the other graph.")
  String b;

  @Option(names = "--json", description = "Print a JSON object instead of text.")
  boolean json;

  @Option(names = "--exit-code", description = "Exit with 1 when the graphs differ, as git diff --exit-code does.")
  boolean exitCode;

  @Mixin
  CacheOptions cache;

  @Override
  public Integer call() throws InterruptedException {
    GraphDiff d = Diffs.diff(a, b, cache::openReadOnly);
    PrintWriter out = cache.out();
    if (json) {
      out.println(Json.write(d.toJson()));
    } else {
      print(d, out);
    }
    out.flush();
    return exitCode && !d.same() ? 1 : 0;
  }

  private static void print(GraphDiff d, PrintWriter out) {
    out.println(d.verdict());
    out.println();
    side("A", d.a(), out);
    side("B", d.b(), out);
    out.println("parameters:");
    for (GraphDiff.ParameterRow row : d.parameterRows()) {
      String x = row.a() == null ? "-" : row.a();
      String y = row.b() == null ? "-" : row.b();
      out.printf("  %3d  %s%n", row.number(), x.equals(y) ? x : x + " -> " + y);
    }
    String ra = d.a().result();
    String rb = d.b().result();
    out.printf("result:  %s%n", ra.equals(rb) ? ra : ra + " -> " + rb);
    GraphDiff.Matching m = d.matching();
    out.printf("matched: %d computations, %d instructions%s%n", m.computations(), m.instructions(),
        m.matched() ? "" : " (the structure cannot be matched: " + m.reason() + ")");
    if (d.same()) {
      return;
    }
    if (!d.opcodeDeltas().isEmpty()) {
      out.println("opcodes (B minus A):");
      d.opcodeDeltas().forEach((op, n) -> out.printf("  %-28s %+d%n", op, n));
    }
    if (d.shapeChanges() > 0) {
      out.printf("instructions changing shape: %d%n", d.shapeChanges());
    }
    list("element types", d.elementTypes().stream().map(t -> t.from() + " -> " + t.to() + ": " + t.instructions()
        + " instruction" + (t.instructions() == 1 ? "" : "s")).toList(), out);
    list("constants", d.constants().stream().map(c -> where(c.computation()) + ": " + c.shapeA()
        + (c.shapeA().equals(c.shapeB()) ? "" : " -> " + c.shapeB()) + " " + c.from() + " -> " + c.to()
        + " (used by " + c.users() + ")").toList(), out);
    list("attributes", d.attributes().stream().map(x -> where(x.computation()) + ": " + x.instruction() + ": "
        + String.join(", ", x.fields())).toList(), out);
    list("opcode changes", d.replaced().stream().map(r -> where(r.computation()) + ": " + r.from() + " -> "
        + r.to()).toList(), out);
    list("instructions added", d.added().stream().map(g -> where(g.computation()) + ": " + g.count() + " "
        + g.opcode()).toList(), out);
    list("instructions removed", d.removed().stream().map(g -> where(g.computation()) + ": " + g.count() + " "
        + g.opcode()).toList(), out);
    list("computations added", d.computationsAdded().stream().map(c -> c.computation() + " (" + c.instructions()
        + " instructions)").toList(), out);
    list("computations removed", d.computationsRemoved().stream().map(c -> c.computation() + " ("
        + c.instructions() + " instructions)").toList(), out);
    if (d.rewired() > 0) {
      out.printf("instructions taking other operands: %d%n", d.rewired());
    }
    list("module fields", d.moduleFields(), out);
  }

  private static void side(String label, GraphDiff.Side s, PrintWriter out) {
    out.printf("%s: %s (module %s, %s): %d computations, %d instructions%n", label, s.source(),
        s.module().isEmpty() ? "-" : s.module(), s.fingerprint(), s.computations(), s.instructions());
  }

  private static String where(String computation) {
    return computation == null ? "entry" : computation;
  }

  private static void list(String title, List<String> lines, PrintWriter out) {
    if (lines.isEmpty()) {
      return;
    }
    out.println(title + ":");
    lines.forEach(l -> out.println("  " + l));
  }
}
