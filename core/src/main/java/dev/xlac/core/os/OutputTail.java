package dev.xlac.core.os;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The last bytes a child process wrote to a pipe, kept while a thread of its own drains the pipe, so the child never
 * blocks on a full pipe and a long-running child costs bounded memory. The one output tail of xlac's drivers: a
 * compiler's output, a worker JVM's stderr.
 *
 * <p>{@link #text()} is the kept bytes as UTF-8, headed by {@code [... first N bytes left out ...]} when more than the
 * limit arrived. The drain ends at end of stream or on a read error (the child is gone); what was read is kept.
 */
public final class OutputTail {
  private final byte[] ring;
  private long total; // bytes appended since the start or the last clear(); guarded by this
  private final Thread drain;

  private OutputTail(int limit, InputStream in, String threadName) {
    if (limit <= 0) {
      throw new IllegalArgumentException("limit must be positive: " + limit);
    }
    this.ring = new byte[limit];
    this.drain = Thread.ofPlatform().daemon().name(threadName).unstarted(() -> drain(in));
  }

  /**
   * Starts draining {@code in} on a daemon thread named {@code threadName}, keeping its last {@code limit} bytes. The
   * stream is closed when it ends.
   */
  public static OutputTail drain(InputStream in, int limit, String threadName) {
    OutputTail tail = new OutputTail(limit, in, threadName);
    tail.drain.start();
    return tail;
  }

  private void drain(InputStream in) {
    byte[] buf = new byte[8192];
    try (in) {
      for (int n; (n = in.read(buf)) > 0; ) {
        append(buf, n);
      }
    } catch (IOException e) {
      // the process is gone; what was read is kept
    }
  }

  private synchronized void append(byte[] b, int n) {
    int limit = ring.length;
    for (int i = 0; i < n; i++) {
      ring[(int) ((total + i) % limit)] = b[i];
    }
    total += n;
  }

  /** Forgets what was kept so far (e.g. a worker's output of an earlier request); the drain goes on. */
  public synchronized void clear() {
    total = 0;
  }

  /** What was kept, as UTF-8, with a header saying how many bytes were left out before it, if any. */
  public synchronized String text() {
    int limit = ring.length;
    int len = (int) Math.min(total, limit);
    byte[] out = new byte[len];
    long from = total - len;
    for (int i = 0; i < len; i++) {
      out[i] = ring[(int) ((from + i) % limit)];
    }
    String s = new String(out, StandardCharsets.UTF_8);
    return total > limit ? "[... first " + (total - limit) + " bytes left out ...]\n" + s : s;
  }

  /**
   * Waits at most {@code max} for the stream to end; true when it has. Bounded because a stray grandchild can hold
   * the pipe open long after the child exited.
   */
  public boolean join(Duration max) throws InterruptedException {
    return drain.join(max);
  }
}
