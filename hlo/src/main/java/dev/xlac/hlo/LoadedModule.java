package dev.xlac.hlo;

import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import java.nio.file.Path;

/**
 * An HLO module read from a file and validated: the module (for a dump or snapshot, the
 * HloModuleProto unwrapped from its HloProto) indexed as a graph, where it came from, and the
 * size of the file on disk.
 */
public record LoadedModule(Path file, HloFileKind kind, HloGraph graph, long fileBytes) {

  public HloModuleProto module() {
    return graph.module();
  }

  public String moduleName() {
    return graph.module().getName();
  }

  public GraphFingerprint fingerprint() {
    return GraphFingerprint.of(graph);
  }
}
