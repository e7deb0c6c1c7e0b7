package dev.xlac.pipeline.shard;

import dev.xlac.cache.CacheStore;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.TestModules;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.SequencedMap;

/** The submitter's side of the shard tests: graphs put into a cache, planned over shards and sent. */
public final class ShardFixtures {
  private ShardFixtures() {}

  /**
   * {@code count} distinct small graphs (constants {@code first}, {@code first + 1}, ...; dumps written to
   * {@code dumps}) put into {@code store}, planned over {@code shards} shards and sent through {@code transport}.
   */
  public static ShardPlan sendGraphs(CacheStore store, Path dumps, ShardTransport transport, int count, float first,
      int shards) throws Exception {
    SequencedMap<GraphFingerprint, String> graphs = new LinkedHashMap<>();
    for (int i = 0; i < count; i++) {
      LoadedModule m = new HloModuleReader().read(TestModules.writeDump(dumps,
          "m" + i + ".before_optimizations.hlo.pb", TestModules.mulAdd(first + i, 1, "_" + i, 10)));
      store.putGraph(m);
      graphs.put(m.fingerprint(), m.moduleName());
    }
    ShardPlan plan = ShardPlan.plan(ShardPlan.costs(store, graphs), shards);
    transport.sendInputs(plan, store);
    return plan;
  }
}
