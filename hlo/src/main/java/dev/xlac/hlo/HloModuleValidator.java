package dev.xlac.hlo;

import java.nio.file.Path;

/** Turns structural defects found while indexing a module into a read error naming the file. */
final class HloModuleValidator {
  private HloModuleValidator() {}

  static void validate(Path file, HloWireIndex index) {
    try {
      index.validate();
    } catch (IllegalArgumentException e) {
      throw new HloReadException(file, "malformed HLO module: " + e.getMessage(), e);
    }
  }
}
