package dev.xlac.hlo;

import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import java.nio.file.Path;

/** Turns structural defects found while indexing a module into a read error naming the file. */
final class HloModuleValidator {
  private HloModuleValidator() {}

  static HloGraph validate(Path file, HloModuleProto module) {
    try {
      return HloGraph.of(module);
    } catch (IllegalArgumentException e) {
      throw new HloReadException(file, "malformed HLO module: " + e.getMessage(), e);
    }
  }
}
