package dev.xlac.cache.store;

import com.github.luben.zstd.Zstd;
import dev.xlac.cache.GraphEntry;
import dev.xlac.cache.PutOutcome;
import dev.xlac.cache.store.Records.GraphRecord;
import dev.xlac.cache.store.RocksDbStore.Cf;
import dev.xlac.core.XlacException;
import dev.xlac.core.neuron.NeuronName;
import dev.xlac.hlo.GraphFingerprint;
import java.util.List;

/**
 * Graph writes: one graph, with its Neuron name when it has one, in one transaction ({@link GraphEntry}); a
 * Neuron name for a stored graph.
 */
public final class GraphWrites {
  private final Store store;

  GraphWrites(Store store) {
    this.store = store;
  }

  /**
   * Stores a graph, deduplicated by fingerprint, and its Neuron name when it has one, in one
   * transaction: a graph already present only gets its last-seen time and count updated (and the
   * name added, see {@link #addNeuronName}). The module's bytes are asked for only when it is new.
   */
  public PutOutcome putGraph(GraphEntry entry) {
    store.requireWritable();
    byte[] fp = entry.fingerprint().digest();
    store.pinGraph(fp);
    long now = store.clock.millis();
    if (store.readGraphRecord(fp) != null) { // the common case: no need to compress it
      PutOutcome seen = store.commit(false, txn -> markSeen(txn, fp, now, entry));
      if (seen != null) {
        return seen;
      }
      // removed meanwhile: store it below
    }
    byte[] moduleBytes = entry.bytesIfNew().get();
    byte[] stored = Zstd.compress(moduleBytes, store.ZSTD_LEVEL);
    GraphRecord plain = new GraphRecord(entry.moduleName(), entry.source(), now, now, 1, moduleBytes.length,
        stored.length, Checksums.sha256(stored), now, List.of());
    GraphRecord rec = entry.neuronName().map(plain::withNeuronName).orElse(plain);
    PutOutcome outcome;
    if (StoredValues.chunked(stored.length)) {
      // Chunk by chunk, each its own batch; the claim on the key keeps a second thread storing the
      // same graph from writing chunks under it, and it finds the graph stored when it gets the claim.
      try (StoredValues.ValueWriter w = store.values.writer(Cf.GRAPHS, fp, stored.length, true)) {
        boolean fresh = store.readGraphRecord(fp) == null;
        if (fresh) {
          w.write(stored);
        }
        outcome = store.commit(false, txn -> {
          PutOutcome seen = markSeen(txn, fp, now, entry);
          if (seen != null || !fresh) {
            return seen;
          }
          txn.writeGraph(fp, rec, null);
          txn.commitValue(w);
          return PutOutcome.ADDED;
        });
      }
      if (outcome == null) { // stored by another thread, then removed, meanwhile: store it now
        return putGraph(new GraphEntry(entry.fingerprint(), entry.moduleName(), () -> moduleBytes, entry.source(),
            entry.neuronName()));
      }
    } else {
      outcome = store.commit(false, txn -> {
        PutOutcome seen = markSeen(txn, fp, now, entry);
        if (seen != null) {
          return seen;
        }
        txn.writeGraph(fp, rec, stored);
        return PutOutcome.ADDED;
      });
    }
    store.enforceMaxSize();
    return outcome;
  }

  /**
   * Counts one more sighting of a stored graph (adding the entry's Neuron name); null (nothing
   * written) when it is not stored.
   */
  private static PutOutcome markSeen(Txn txn, byte[] fp, long now, GraphEntry entry) {
    GraphRecord old = txn.graph(fp);
    if (old == null) {
      return null;
    }
    GraphRecord seen = old.seenAgain(now);
    if (entry.neuronName().isPresent() && !seen.neuronNames().contains(entry.neuronName().get())) {
      seen = seen.withNeuronName(entry.neuronName().get());
    }
    txn.writeGraph(fp, seen, null);
    return PutOutcome.ALREADY_PRESENT;
  }

  /**
   * Remembers where a stored graph lives in a Neuron compile cache. A name at the same location
   * (version and MODULE directory) is replaced; the graph keeps all its other names.
   *
   * @return false when exactly this name was already recorded
   * @throws XlacException (bad input) when the graph is not stored
   */
  public boolean addNeuronName(GraphFingerprint fingerprint, NeuronName name) {
    byte[] fp = fingerprint.digest();
    return store.commit(false, txn -> {
      GraphRecord g = txn.graph(fp);
      if (g == null) {
        throw XlacException.badInput("graph " + fingerprint + " is not in cache " + store.dir
            + "; store the graph before its Neuron name");
      }
      if (g.neuronNames().contains(name)) {
        return false;
      }
      txn.writeGraph(fp, g.withNeuronName(name), null);
      return true;
    });
  }
}
