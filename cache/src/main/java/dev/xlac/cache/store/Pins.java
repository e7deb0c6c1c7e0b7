package dev.xlac.cache.store;

import java.nio.ByteBuffer;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The graphs and artifacts a running operation (a compile run) uses, which the automatic size limit
 * ({@code cache config max-size}) never removes. Opened by {@link Store#pinForRun()} (the public
 * handle is {@code RunPins}); while it
 * is open the store pins, before it writes them, every graph it stores ({@code putGraph}) or looks
 * an artifact up for, and every artifact it stores, records a failure for, or finds
 * ({@code lookup}, {@code getArtifact}). Pinning an artifact pins its graph,
 * so removing an unpinned graph (which removes its artifacts) never removes a pinned artifact.
 *
 * <p>The automatic cleanup skips pinned entries and removes the others, least recently used first,
 * until the cache is within its target. When the pinned entries alone are over the limit, the cache
 * stays over it for the rest of the run, and the store says so once (its {@code notices}).
 *
 * <p>{@link #close()} ends the run: nothing is pinned any more, and if the cache is over its limit
 * the automatic cleanup runs at once, as after any write, with the run's entries as candidates like
 * any others. Thread-safe: compile workers store results concurrently.
 */
public final class Pins {
  private final Store store;
  private final Set<ByteBuffer> graphs = ConcurrentHashMap.newKeySet();
  private final Set<ByteBuffer> artifacts = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean toldOverLimit = new AtomicBoolean();
  private final AtomicBoolean closed = new AtomicBoolean();
  /**
   * Set by a cleanup that removed every unpinned entry and still was over its target; cleared by any
   * write of an unpinned entry. While set, cleanups are skipped: they could remove nothing, and
   * scanning the whole access index after every write would make a run quadratic.
   */
  private volatile boolean onlyPinnedLeft;

  Pins(Store store) {
    this.store = store;
  }

  void pinGraph(byte[] fp) {
    graphs.add(ByteBuffer.wrap(fp.clone()));
  }

  /** Pins an artifact entry (key {@code fp ‖ cid}) and its graph. */
  void pinArtifact(byte[] key) {
    pinGraph(Keys.graphOf(key));
    artifacts.add(ByteBuffer.wrap(key.clone()));
  }

  /** Whether the access-index entry of this kind and id is pinned. */
  public boolean pinned(byte kind, byte[] id) {
    return switch (kind) {
      case Keys.KIND_GRAPH -> graphs.contains(ByteBuffer.wrap(id));
      case Keys.KIND_ARTIFACT -> artifacts.contains(ByteBuffer.wrap(id));
      default -> false; // requests are not a compile run's: the runtime serves them from a layout
    };
  }

  /** A batch writes this entry: an unpinned one gives the cleanup something to remove again. */
  void written(byte kind, byte[] id) {
    if (onlyPinnedLeft && !pinned(kind, id)) {
      onlyPinnedLeft = false;
    }
  }

  public boolean onlyPinnedLeft() {
    return onlyPinnedLeft;
  }

  public void onlyPinnedLeft(boolean value) {
    onlyPinnedLeft = value;
  }

  /** True the first time it is asked: the run says once that its entries hold the cache over its limit. */
  public boolean firstTimeOverLimit() {
    return toldOverLimit.compareAndSet(false, true);
  }

  public int pinnedGraphs() {
    return graphs.size();
  }

  public int pinnedArtifacts() {
    return artifacts.size();
  }

  /** Ends the run: unpins everything, then enforces the size limit at once. A second call does nothing. */
  public void close() {
    if (closed.compareAndSet(false, true)) {
      store.endRun(this);
    }
  }
}
