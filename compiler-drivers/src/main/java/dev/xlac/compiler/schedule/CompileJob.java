package dev.xlac.compiler.schedule;

import dev.xlac.compiler.CompileRequest;
import dev.xlac.hlo.GraphFingerprint;
import java.util.Objects;

/**
 * One graph for the {@link CompileScheduler}. The module's bytes are loaded only when a worker
 * takes the job, so a long queue (thousands of graphs, or a stream of them) holds no modules.
 */
public record CompileJob(GraphFingerprint fingerprint, String moduleName, ModuleLoader module) {

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
  }

  /** A job whose module is already in memory. */
  public static CompileJob of(CompileRequest request) {
    return new CompileJob(request.fingerprint(), request.moduleName(), request::hloModule);
  }

  /** {@code jit_step (hlo1:0123456789ab)}, as messages name a graph. */
  public String describe() {
    return fingerprint.describe(moduleName);
  }
}
