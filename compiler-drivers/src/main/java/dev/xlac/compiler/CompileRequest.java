package dev.xlac.compiler;

import dev.xlac.core.ProgramKey;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.LoadedModule;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * One program to compile: its key (for reports and cache keys), its name (for messages) and its bytes. A
 * graph is a serialized {@code xla.HloModuleProto} (format {@code hlo}, compiled with the driver's own
 * options; a dump's {@code HloProto} wrapper must already be removed, {@link #of(LoadedModule)} does that).
 * A recorded runtime request is compiled exactly as the framework asked: its PJRT program format
 * ({@code mlir}, {@code hlo}) and bytes, and its serialized {@code CompileOptionsProto} as given
 * ({@link #recorded}).
 *
 * <p>The byte arrays are not copied: callers hand them over and must not change them afterwards.
 *
 * @param hloModule the program's bytes (an HLO module unless {@code format} says otherwise)
 * @param format the PJRT program format; {@code hlo} for a graph
 * @param compileOptions the serialized {@code CompileOptionsProto} to compile with, or null for the driver's own
 */
public record CompileRequest(ProgramKey fingerprint, String moduleName, byte[] hloModule, String format,
    byte[] compileOptions) {
  public static final String HLO = "hlo";

  public CompileRequest {
    Objects.requireNonNull(fingerprint, "fingerprint");
    Objects.requireNonNull(moduleName, "moduleName");
    Objects.requireNonNull(hloModule, "hloModule");
    Objects.requireNonNull(format, "format");
    if (hloModule.length == 0) {
      throw new IllegalArgumentException("empty program: " + moduleName);
    }
  }

  /** A graph: an HLO module, compiled with the driver's own options. */
  public CompileRequest(GraphFingerprint fingerprint, String moduleName, byte[] hloModule) {
    this(fingerprint, moduleName, hloModule, HLO, null);
  }

  /** A recorded request: the program in its format, with the options the framework passed. */
  public static CompileRequest recorded(ProgramKey key, String name, String format, byte[] program,
      byte[] compileOptions) {
    return new CompileRequest(key, name, program, format, Objects.requireNonNull(compileOptions, "compileOptions"));
  }

  /** The request for a module read from a dump, snapshot or bare module file. */
  public static CompileRequest of(LoadedModule module) {
    return new CompileRequest(module.fingerprint(), module.moduleName(), module.moduleBytes());
  }

  /** True for a recorded request (its own format and options), false for a graph. */
  public boolean isRecorded() {
    return compileOptions != null;
  }

  /** The format's bytes, as {@code PJRT_Program} takes them. */
  public byte[] formatBytes() {
    return format.getBytes(StandardCharsets.UTF_8);
  }

  /** {@code jit_step (0123456789ab)}: how messages name the program. */
  public String describe() {
    return fingerprint.describe(moduleName);
  }

  @Override
  public String toString() {
    return "CompileRequest[" + describe() + ", " + format + ", " + hloModule.length + " bytes]";
  }
}
