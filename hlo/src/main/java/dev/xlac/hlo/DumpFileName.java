package dev.xlac.hlo;

import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a file name says about a file in an XLA dump directory or a Neuron cache.
 *
 * <p>XLA names dump files {@code [<timestamp>.]module_<NNNN>[.<module name>].<suffix>}; the number
 * comes from a process-wide counter, so it is never used for identity. Module names may contain
 * dots (PyTorch/XLA's {@code SyncTensorsGraph.12}), so names are recognised by their suffix.
 *
 * @param beforeOptimizations the name has {@code .before_optimizations.} in it: XLA's dump of a
 *     module as the compiler received it
 */
public record DumpFileName(Role role, Optional<HloFileKind> kind, boolean gzipped, Optional<String> moduleName,
    boolean beforeOptimizations) {

  /** How xlac treats a file it meets while scanning a directory. */
  public enum Role {
    /** A compiler input (the module before optimisation, a snapshot, a Neuron module): read it. */
    COMPILER_INPUT,
    /** An HLO text dump of a compiler input: xlac needs protos, so the user is told how to get them. */
    TEXT_INPUT,
    /** Any other file XLA or Neuron writes (optimised modules, per-pass dumps, logs, NEFFs): skipped. */
    OTHER
  }

  private static final Pattern DUMP =
      Pattern.compile("^(?:\\d+\\.)?module_\\d+(?:\\.(?<name>.+?))?\\.(?<suffix>before_optimizations\\..+|.+)$");
  private static final Pattern BEFORE_OPT_PROTO =
      Pattern.compile("^(?:\\d+\\.)?module_\\d+(?:\\.(?<name>.+?))?\\.before_optimizations\\.hlo\\.pb(?<gz>\\.gz)?$");
  private static final Pattern BEFORE_OPT_TEXT =
      Pattern.compile("^(?:\\d+\\.)?module_\\d+(?:\\.(?<name>.+?))?\\.before_optimizations\\.txt$");
  /** Older XLA: {@code module_NNNN.name.execution_NNNN.hlo_snapshot.pb}; newer: {@code module_NNNN.name.snapshot.N.pb}. */
  private static final Pattern SNAPSHOT = Pattern.compile(
      "^(?:\\d+\\.)?module_\\d+(?:\\.(?<name>.+?))?\\.(?:execution_\\d+\\.hlo_snapshot|snapshot\\.-?\\d+)\\.pb$");

  /** Classifies a file name (the last path element). */
  public static DumpFileName of(String fileName) {
    boolean before = fileName.contains(".before_optimizations.");
    Matcher m = BEFORE_OPT_PROTO.matcher(fileName);
    if (m.matches()) {
      return new DumpFileName(Role.COMPILER_INPUT, Optional.of(HloFileKind.HLO_PROTO), m.group("gz") != null,
          Optional.ofNullable(m.group("name")), before);
    }
    m = SNAPSHOT.matcher(fileName);
    if (m.matches()) {
      return new DumpFileName(Role.COMPILER_INPUT, Optional.of(HloFileKind.HLO_SNAPSHOT), false,
          Optional.ofNullable(m.group("name")), before);
    }
    if (fileName.endsWith(".hlo_snapshot.pb")) {
      return input(HloFileKind.HLO_SNAPSHOT, false, before);
    }
    m = BEFORE_OPT_TEXT.matcher(fileName);
    if (m.matches()) {
      return new DumpFileName(Role.TEXT_INPUT, Optional.empty(), false, Optional.ofNullable(m.group("name")), before);
    }
    if (DUMP.matcher(fileName).matches()) {
      // Optimised modules, per-pass dumps, buffer assignments, configs: not compiler inputs.
      return other(before);
    }
    if (fileName.endsWith(".hlo_module.pb")) {
      return input(HloFileKind.HLO_MODULE, false, before);
    }
    if (fileName.endsWith(".hlo.pb")) {
      return input(HloFileKind.HLO_PROTO, false, before);
    }
    if (fileName.endsWith(".hlo.pb.gz")) {
      return input(HloFileKind.HLO_PROTO, true, before);
    }
    return other(before);
  }

  /**
   * XLA's {@code before_optimizations} proto of a module: the compiler input of a dump. What a dump
   * is captured from, and what makes a snapshot of the same module redundant (a snapshot holds the
   * optimised module).
   */
  public boolean isBeforeOptimizationsProto() {
    return role == Role.COMPILER_INPUT && kind.orElse(null) == HloFileKind.HLO_PROTO && beforeOptimizations;
  }

  private static DumpFileName input(HloFileKind kind, boolean gz, boolean before) {
    return new DumpFileName(Role.COMPILER_INPUT, Optional.of(kind), gz, Optional.empty(), before);
  }

  private static DumpFileName other(boolean before) {
    return new DumpFileName(Role.OTHER, Optional.empty(), false, Optional.empty(), before);
  }
}
