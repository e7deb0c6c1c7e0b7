package dev.xlac.compiler.schedule;

import dev.xlac.compiler.CompileRequest;
import dev.xlac.core.ProgramKey;
import dev.xlac.hlo.GraphFingerprint;
import java.util.Objects;

/**
 * One graph (or recorded request) for the {@link CompileScheduler}. The module's bytes are loaded only
 * when a worker takes the job, so a long queue (thousands of graphs, or a stream of them) holds no modules.
 *
 * @param format the program's PJRT format ({@code hlo} for a graph)
 * @param compileOptions a recorded request's serialized {@code CompileOptionsProto}; null for a graph (the
 *     driver's own options)
 */
public record CompileJob(ProgramKey fingerprint, String moduleName, ModuleLoader module, String format,
    byte[] compileOptions) {

  /** Reads the serialized {@code xla.HloModuleProto}, e.g. from the cache. */
  @FunctionalInterface
  public interface ModuleLoader {
    /** Throws when the module cannot be read; the job then fails without running the compiler. */
    byte[] load() throws Exception;
  }

  public CompileJob {
    Objects.requireNonNull(fingerprint, "fingerprint");
    Objects.requireNonNull(moduleName, "moduleName");
    Objects.requireNonNull(module, "module");
    Objects.requireNonNull(format, "format");
  }

  /** A graph: an HLO module, compiled with the driver's own options. */
  public CompileJob(GraphFingerprint fingerprint, String moduleName, ModuleLoader module) {
    this(fingerprint, moduleName, module, CompileRequest.HLO, null);
  }

  /** A job whose module is already in memory. */
  public static CompileJob of(CompileRequest request) {
    return new CompileJob(request.fingerprint(), request.moduleName(), request::hloModule, request.format(),
        request.compileOptions());
  }

  /** The request a worker compiles, with the module as loaded. */
  public CompileRequest request(byte[] loaded) {
    return new CompileRequest(fingerprint, moduleName, loaded, format, compileOptions);
  }

  /** {@code jit_step (hlo1:0123456789ab)}, as messages name a graph. */
  public String describe() {
    return fingerprint.describe(moduleName);
  }
}
