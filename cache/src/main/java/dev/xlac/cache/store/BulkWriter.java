package dev.xlac.cache.store;

import org.rocksdb.WriteBatch;

/**
 * Batches that skip the write-ahead log (bulk imports), written through one native batch kept for
 * the whole import: it keeps its buffer's capacity instead of growing a fresh one (copy after copy,
 * page fault after page fault) for every batch. {@link #flush} makes them durable, one atomic flush
 * of every family; a process killed before loses them whole.
 */
public final class BulkWriter implements AutoCloseable {
  private final Store store;
  private final WriteBatch batch;

  BulkWriter(Store store, long reserveBytes) {
    this.store = store;
    this.batch = new WriteBatch((int) Math.min(Integer.MAX_VALUE - 64, reserveBytes));
  }

  /** One unlogged batch: as {@link Store#commit}, without the write-ahead log. */
  public <T> T commit(Store.TxnBody<T> body) {
    return store.commit(false, false, batch, body);
  }

  /** Makes every batch written so far durable. */
  public void flush() {
    store.flushUnlogged();
  }

  @Override
  public void close() {
    batch.close();
  }
}
