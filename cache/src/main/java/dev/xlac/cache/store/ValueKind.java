package dev.xlac.cache.store;

/** The stored values a record refers to, each in its own family: graph modules, artifact bytes, compiler logs. */
public enum ValueKind {
  GRAPHS(RocksDbStore.Cf.GRAPHS),
  ARTIFACTS(RocksDbStore.Cf.ARTIFACTS),
  LOGS(RocksDbStore.Cf.LOGS);

  final RocksDbStore.Cf cf;

  ValueKind(RocksDbStore.Cf cf) {
    this.cf = cf;
  }
}
