package dev.xlac.hlo;

import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** What {@code xlac inspect} shows about a module. */
public record ModuleSummary(
    Path file,
    HloFileKind kind,
    String module,
    GraphFingerprint fingerprint,
    List<String> parameters,
    String result,
    int computations,
    int instructions,
    Map<String, Integer> opcodeCounts,
    int constants,
    long constantBytes) {

  /**
   * Summarises a module: counts and the entry's shapes come from its validated wire index (the
   * canonical order, by file position), opcodes and shapes from the parsed module.
   */
  public static ModuleSummary of(LoadedModule m) {
    HloWireIndex x = m.index();
    HloModuleProto module = m.module();
    Map<String, Integer> counts = new TreeMap<>();
    int constants = 0;
    long constantBytes = 0;
    for (HloComputationProto c : module.getComputationsList()) {
      for (HloInstructionProto in : c.getInstructionsList()) {
        counts.merge(in.getOpcode(), 1, Integer::sum);
        if (in.getOpcode().equals("constant")) {
          constants++;
          constantBytes += HloShapes.byteSize(in.getShape());
        }
      }
    }
    int entryPos = x.entryPosition();
    HloComputationProto entry = module.getComputations(entryPos);
    // In canonical order, so that of two parameters with one number the later one wins, as it always has.
    TreeMap<Long, String> params = new TreeMap<>();
    for (int j = 0; j < x.instructionCount(entryPos); j++) {
      HloInstructionProto in = entry.getInstructions(x.canonicalInstruction(entryPos, j));
      if (in.getOpcode().equals("parameter")) {
        params.put(in.getParameterNumber(), HloShapes.format(in.getShape()));
      }
    }
    String result = HloShapes.format(entry.getInstructions(x.rootPosition(entryPos)).getShape());
    // Most frequent opcodes first; ties by name, so output is stable.
    List<Map.Entry<String, Integer>> sorted = new ArrayList<>(counts.entrySet());
    sorted.sort(Map.Entry.<String, Integer>comparingByValue(Comparator.reverseOrder()).thenComparing(Map.Entry.comparingByKey()));
    Map<String, Integer> ordered = new LinkedHashMap<>();
    sorted.forEach(e -> ordered.put(e.getKey(), e.getValue()));
    return new ModuleSummary(m.file(), m.kind(), m.moduleName(), m.fingerprint(), List.copyOf(params.values()), result,
        x.computationCount(), x.instructionCount(), ordered, constants, constantBytes);
  }

  /** The stable {@code --json} form. */
  public Map<String, Object> toJson() {
    Map<String, Object> j = new LinkedHashMap<>();
    j.put("file", file.toString());
    j.put("kind", kind.jsonName());
    j.put("module", module);
    j.put("fingerprint", fingerprint.value());
    j.put("parameters", parameters);
    j.put("result", result);
    j.put("computations", computations);
    j.put("instructions", instructions);
    j.put("opcodes", opcodeCounts);
    j.put("constants", constants);
    j.put("constant_bytes", constantBytes);
    return j;
  }
}
