package dev.xlac.compiler;

import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.LoadedModule;
import java.util.Objects;

/**
 * One graph to compile: its fingerprint (for reports and artifact keys), its module name (for
 * messages) and the serialized {@code xla.HloModuleProto}. A dump's {@code HloProto} wrapper must
 * already be removed; {@link #of(LoadedModule)} does that.
 *
 * <p>The byte array is not copied: callers hand it over and must not change it afterwards.
 */
public record CompileRequest(GraphFingerprint fingerprint, String moduleName, byte[] hloModule) {

  public CompileRequest {
    Objects.requireNonNull(fingerprint, "fingerprint");
    Objects.requireNonNull(moduleName, "moduleName");
    Objects.requireNonNull(hloModule, "hloModule");
    if (hloModule.length == 0) {
      throw new IllegalArgumentException("empty HLO module: " + moduleName);
    }
  }

  /** The request for a module read from a dump, snapshot or bare module file. */
  public static CompileRequest of(LoadedModule module) {
    return new CompileRequest(module.fingerprint(), module.moduleName(), module.moduleBytes());
  }

  /** {@code jit_step (hlo1:0123456789ab)}: how messages name the graph. */
  public String describe() {
    return fingerprint.describe(moduleName);
  }

  @Override
  public String toString() {
    return "CompileRequest[" + describe() + ", " + hloModule.length + " bytes]";
  }
}
