package dev.xlac.hlo;

/** The three kinds of file that carry a compiler-input HLO module. */
public enum HloFileKind {
  /** An XLA dump {@code *.hlo.pb} (optionally gzipped): an HloProto whose field 1 is the module. */
  HLO_PROTO("hlo_proto"),
  /** A bare HloModuleProto, as Neuron writes {@code model.hlo_module.pb}. */
  HLO_MODULE("hlo_module"),
  /** An XLA {@code *.hlo_snapshot.pb}: an HloSnapshot, an HloProto plus the arguments of one run. */
  HLO_SNAPSHOT("hlo_snapshot");

  private final String jsonName;

  HloFileKind(String jsonName) {
    this.jsonName = jsonName;
  }

  /** The stable name used in {@code --json} output. */
  public String jsonName() {
    return jsonName;
  }
}
