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
 */
public record DumpFileName(Role role, Optional<HloFileKind> kind, boolean gzipped, Optional<String> moduleName) {

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
    Matcher m = BEFORE_OPT_PROTO.matcher(fileName);
    if (m.matches()) {
      return new DumpFileName(Role.COMPILER_INPUT, Optional.of(HloFileKind.HLO_PROTO), m.group("gz") != null,
          Optional.ofNullable(m.group("name")));
    }
    m = SNAPSHOT.matcher(fileName);
    if (m.matches()) {
      return new DumpFileName(Role.COMPILER_INPUT, Optional.of(HloFileKind.HLO_SNAPSHOT), false,
          Optional.ofNullable(m.group("name")));
    }
    if (fileName.endsWith(".hlo_snapshot.pb")) {
      return input(HloFileKind.HLO_SNAPSHOT, false);
    }
    m = BEFORE_OPT_TEXT.matcher(fileName);
    if (m.matches()) {
      return new DumpFileName(Role.TEXT_INPUT, Optional.empty(), false, Optional.ofNullable(m.group("name")));
    }
    if (DUMP.matcher(fileName).matches()) {
      // Optimised modules, per-pass dumps, buffer assignments, configs: not compiler inputs.
      return other();
    }
    if (fileName.endsWith(".hlo_module.pb")) {
      return input(HloFileKind.HLO_MODULE, false);
    }
    if (fileName.endsWith(".hlo.pb")) {
      return input(HloFileKind.HLO_PROTO, false);
    }
    if (fileName.endsWith(".hlo.pb.gz")) {
      return input(HloFileKind.HLO_PROTO, true);
    }
    return other();
  }

  private static DumpFileName input(HloFileKind kind, boolean gz) {
    return new DumpFileName(Role.COMPILER_INPUT, Optional.of(kind), gz, Optional.empty());
  }

  private static DumpFileName other() {
    return new DumpFileName(Role.OTHER, Optional.empty(), false, Optional.empty());
  }
}
