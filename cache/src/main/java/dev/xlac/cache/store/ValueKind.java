package dev.xlac.cache.store;

/**
 * The stored values a record refers to, each in its own family: graph modules, artifact bytes, compiler logs, and
 * (schema version 4) the runtime's recorded requests and their executables.
 */
public enum ValueKind {
  GRAPHS(RocksDbStore.Cf.GRAPHS),
  ARTIFACTS(RocksDbStore.Cf.ARTIFACTS),
  LOGS(RocksDbStore.Cf.LOGS),
  REQUESTS(RocksDbStore.Cf.REQUESTS),
  EXECUTABLES(RocksDbStore.Cf.EXECUTABLES);

  final RocksDbStore.Cf cf;

  ValueKind(RocksDbStore.Cf cf) {
    this.cf = cf;
  }
}
