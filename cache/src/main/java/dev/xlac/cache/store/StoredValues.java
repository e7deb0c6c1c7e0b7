package dev.xlac.cache.store;

import dev.xlac.cache.store.RocksDbStore.Cf;
import dev.xlac.cache.store.RocksDbStore.Cursor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import org.rocksdb.WriteBatch;

/**
 * Value I/O: the stored modules, artifacts and logs of their families, whole or in chunks (schema
 * version 3). A value of at most {@link #CHUNK_BYTES} lives under its key; a larger one in chunks
 * of {@code CHUNK_BYTES} under {@code key ‖ BE32(index)}, in the same family, and nothing under the
 * key. Readers take the key, and when it is absent the chunks 0, 1, ... until the record's size is
 * reached: they do not depend on the chunk size. The record's size and SHA-256 cover the whole value.
 *
 * <p>This class moves bytes; {@link CheckedValue} decides whether what it read is the value its
 * record describes. Writing: small values go into the record's own batch ({@link #put}); large ones
 * through a {@link ValueWriter}, chunk by chunk in batches of their own, so neither memory nor a
 * batch ever holds a whole large value. A {@code meta} marker {@code pending/<family>/<key hex>},
 * written with the first chunk and deleted by the batch that writes the record, lets a writer's open
 * ({@link #removeLeftovers}) delete the chunks of a value whose writer was killed.
 */
public final class StoredValues {
  /** Values larger than this are stored in chunks of this size. */
  static final int CHUNK_BYTES = 8 << 20;
  /** Tests only: when positive, the chunk size (so that small values exercise the chunked form). */
  static int chunkBytesForTests = 0;
  /** What {@link #streamChunks} and {@link #probe} return when there is no value at all. */
  static final long ABSENT = -1;
  /** What they return when the chunks end before the expected size: part of the value is missing. */
  static final long INCOMPLETE = -2;
  public static final byte[] PENDING_PREFIX = "pending/".getBytes(StandardCharsets.US_ASCII);
  private static final int INDEX_BYTES = 4;
  /** A lookup only needs the length RocksDB reports; it reads and checks the whole value regardless. */
  private static final int PROBE_VALUE_BYTES = 16;
  private static final int PROBE_KEY_BYTES = 256;

  private final RocksDbStore db;
  private final ThreadLocal<ByteBuffer[]> probeBuffers = ThreadLocal.withInitial(() -> new ByteBuffer[] {
      ByteBuffer.allocateDirect(PROBE_KEY_BYTES), ByteBuffer.allocateDirect(PROBE_VALUE_BYTES)});
  /** Keys a {@link ValueWriter} of this process is writing: one writer per key at a time. */
  private final ConcurrentHashMap<ByteBuffer, CountDownLatch> claims = new ConcurrentHashMap<>();

  StoredValues(RocksDbStore db) {
    this.db = db;
  }

  RocksDbStore db() {
    return db;
  }

  static int chunkBytes() {
    return chunkBytesForTests > 0 ? chunkBytesForTests : CHUNK_BYTES;
  }

  /** Whether a value of {@code size} bytes is stored in chunks. */
  static boolean chunked(long size) {
    return size > chunkBytes();
  }

  public static byte[] chunkKey(byte[] key, int index) {
    byte[] k = Arrays.copyOf(key, key.length + INDEX_BYTES);
    ByteBuffer.wrap(k, key.length, INDEX_BYTES).putInt(index);
    return k;
  }

  // ---------------------------------------------------------------- writing within a record's batch

  /**
   * Adds {@code value} under {@code key} to {@code b}: whole, or (larger than the chunk size) as all
   * its chunks, in this one batch. {@code oldSize} is the size of the value the key held before (-1:
   * none), whose other form is removed in the same batch. For values that should not sit in one
   * batch (or in memory) whole, use a {@link ValueWriter}.
   */
  void put(WriteBatch b, Cf cf, byte[] key, byte[] value, long oldSize) {
    if (!chunked(value.length)) {
      if (oldSize >= 0 && chunked(oldSize)) {
        deleteChunks(b, cf, key);
      }
      db.put(b, cf, key, value);
      return;
    }
    db.delete(b, cf, key);
    if (oldSize >= 0 && chunked(oldSize)) {
      deleteChunks(b, cf, key); // an older, longer value may have more chunks than this one
    }
    int size = chunkBytes();
    for (int i = 0, off = 0; off < value.length; i++, off += size) {
      db.put(b, cf, chunkKey(key, i), Arrays.copyOfRange(value, off, Math.min(value.length, off + size)));
    }
  }

  /** Adds the deletion of the value under {@code key} of {@code size} bytes (-1: not known) to {@code b}. */
  void delete(WriteBatch b, Cf cf, byte[] key, long size) {
    db.delete(b, cf, key);
    if (size < 0 || chunked(size)) {
      deleteChunks(b, cf, key);
    }
  }

  private void deleteChunks(WriteBatch b, Cf cf, byte[] key) {
    byte[] from = chunkKey(key, 0);
    byte[] to = Arrays.copyOf(key, key.length + INDEX_BYTES + 1);
    Arrays.fill(to, key.length, to.length, (byte) 0xff); // above key ‖ FFFFFFFF
    db.deleteRange(b, cf, from, to);
  }

  // ---------------------------------------------------------------- reading

  /** The whole value under {@code key}, or null (absent, or stored in chunks). */
  byte[] whole(Cf cf, byte[] key) {
    return db.get(cf, key);
  }

  /** Receives the pieces of a value in order. */
  @FunctionalInterface
  interface Sink {
    void accept(byte[] piece) throws IOException;
  }

  /**
   * Streams the chunks of a chunked value, one get per chunk, until {@code expectedSize} bytes have
   * come ({@link CheckedValue#ANY_SIZE}: until the chunks end). Returns the bytes delivered (more than
   * expected when the last chunk overshoots), {@link #ABSENT} when there is no chunk 0, or
   * {@link #INCOMPLETE} when the chunks end early.
   */
  long streamChunks(Cf cf, byte[] key, long expectedSize, Sink sink) throws IOException {
    long delivered = 0;
    for (int i = 0; ; i++) {
      if (i > 0 && expectedSize >= 0 && delivered >= expectedSize) {
        return delivered;
      }
      byte[] c = db.get(cf, chunkKey(key, i));
      if (c == null) {
        return i == 0 ? ABSENT : expectedSize < 0 ? delivered : INCOMPLETE;
      }
      sink.accept(c);
      delivered += c.length;
    }
  }

  /**
   * The stored length of the value, read with its checksums verified into a small reused direct
   * buffer: RocksDB reads and checks every byte (block checksum, or blob record CRC) but copies only
   * what fits, and nothing is hashed. {@link #ABSENT} or {@link #INCOMPLETE} as for
   * {@link #streamChunks}; damage is a {@link RocksDbStore.DamagedValueException}.
   */
  long probe(Cf cf, byte[] key, long expectedSize) {
    ByteBuffer[] buffers = probeBuffers.get();
    int n = probeOne(cf, key, -1, buffers);
    if (n >= 0) {
      return n;
    }
    long total = 0;
    for (int i = 0; ; i++) {
      if (i > 0 && expectedSize >= 0 && total >= expectedSize) {
        return total;
      }
      n = probeOne(cf, key, i, buffers);
      if (n < 0) {
        return i == 0 ? ABSENT : expectedSize < 0 ? total : INCOMPLETE;
      }
      total += n;
    }
  }

  private int probeOne(Cf cf, byte[] key, int index, ByteBuffer[] buffers) {
    ByteBuffer k = buffers[0].clear();
    ByteBuffer v = buffers[1].clear();
    if (key.length + INDEX_BYTES > k.capacity()) {
      byte[] whole = index < 0 ? db.get(cf, key) : db.get(cf, chunkKey(key, index));
      return whole == null ? -1 : whole.length;
    }
    k.put(key);
    if (index >= 0) {
      k.putInt(index);
    }
    k.flip();
    return db.get(cf, k, v);
  }

  // ---------------------------------------------------------------- writing in pieces

  /**
   * Opens a writer for the value of {@code key} in {@code cf}, of exactly {@code size} bytes. It
   * waits while another writer of this process writes the same key (an interrupt meanwhile is kept
   * for the caller's next blocking call). {@code logged}: whether its batches go through the
   * write-ahead log (false for imports, which flush at the end).
   *
   * <p>Open it only for a key whose record references no chunked value (remove such an entry first,
   * while holding the writer): chunks are written before the record, so readers of an old record
   * would meet the new chunks. A whole old value under the key is fine: it stays readable until the
   * record batch replaces it.
   */
  public ValueWriter writer(Cf cf, byte[] key, long size, boolean logged) {
    ByteBuffer id = ByteBuffer.wrap(marker(cf, key));
    CountDownLatch mine = new CountDownLatch(1);
    boolean interrupted = false;
    try {
      while (true) {
        CountDownLatch other = claims.putIfAbsent(id, mine);
        if (other == null) {
          break;
        }
        try {
          other.await();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
    return new ValueWriter(cf, key, size, logged, id, mine);
  }

  private static byte[] marker(Cf cf, byte[] key) {
    return (new String(PENDING_PREFIX, StandardCharsets.US_ASCII) + cf.cfName + "/" + HexFormat.of().formatHex(key))
        .getBytes(StandardCharsets.US_ASCII);
  }

  /**
   * One value written in pieces (see {@link #writer}). Whole-sized values (at most the chunk size)
   * are kept in memory and go into the record's batch; larger ones are written chunk by chunk as
   * they fill, each chunk its own batch, the first one with the pending marker. Then
   * {@link CacheStore.Txn#commitValue} adds what is left (the whole value, or the marker's removal)
   * to the batch that writes the record. A writer closed before that batch was written removes
   * whatever it wrote.
   */
  public final class ValueWriter implements AutoCloseable {
    private final Cf cf;
    private final byte[] key;
    private final long size;
    private final boolean logged;
    private final ByteBuffer claim;
    private final CountDownLatch released;
    private byte[] chunk;
    private int filled;
    private int nextIndex;
    private long written;
    private boolean markerWritten;
    private boolean committed;
    private boolean closed;

    private ValueWriter(Cf cf, byte[] key, long size, boolean logged, ByteBuffer claim, CountDownLatch released) {
      if (size < 0) {
        throw new IllegalArgumentException("negative size " + size);
      }
      this.cf = cf;
      this.key = key.clone();
      this.size = size;
      this.logged = logged;
      this.claim = claim;
      this.released = released;
    }

    long size() {
      return size;
    }

    public void write(byte[] b) {
      write(b, 0, b.length);
    }

    /** Appends bytes; more than the declared size is an error. */
    public void write(byte[] b, int off, int len) {
      if (closed || committed) {
        throw new IllegalStateException("value writer is finished");
      }
      if (written + len > size) {
        throw new IllegalArgumentException("value of " + size + " bytes given more (" + (written + len) + ")");
      }
      while (len > 0) {
        if (chunk == null) {
          long left = size - (chunked(size) ? (long) nextIndex * chunkBytes() : 0);
          chunk = new byte[(int) Math.min(chunked(size) ? chunkBytes() : size, left)];
        }
        int n = Math.min(len, chunk.length - filled);
        System.arraycopy(b, off, chunk, filled, n);
        filled += n;
        off += n;
        len -= n;
        written += n;
        if (chunked(size) && filled == chunk.length) {
          writeChunk();
        }
      }
    }

    private void writeChunk() {
      try (WriteBatch b = new WriteBatch()) {
        if (!markerWritten) {
          db.put(b, Cf.META, claim.array(), Long.toString(size).getBytes(StandardCharsets.US_ASCII));
        }
        db.put(b, cf, chunkKey(key, nextIndex), chunk);
        writeBatch(b);
      }
      markerWritten = true;
      nextIndex++;
      chunk = null;
      filled = 0;
    }

    private void writeBatch(WriteBatch b) {
      if (logged) {
        db.write(b, false); // the record's batch is synced (or flushed) after these
      } else {
        db.writeUnlogged(b);
      }
    }

    /** Adds the rest of the value to the record's batch; the caller then writes that batch. */
    void addTo(WriteBatch b) {
      if (written != size) {
        throw new IllegalStateException("value of " + size + " bytes was given " + written);
      }
      if (chunked(size)) {
        db.delete(b, cf, key); // an older whole value
        db.delete(b, Cf.META, claim.array());
      } else {
        db.put(b, cf, key, chunk == null ? new byte[0] : chunk);
      }
    }

    /** Called once the record's batch is written: the value belongs to its record now. */
    void committed() {
      committed = true;
      chunk = null;
    }

    /** Releases the key; a value not committed has its chunks and marker removed. */
    @Override
    public void close() {
      if (closed) {
        return;
      }
      closed = true;
      chunk = null;
      try {
        if (!committed && markerWritten) {
          try (WriteBatch b = new WriteBatch()) {
            deleteChunks(b, cf, key);
            db.delete(b, Cf.META, claim.array());
            writeBatch(b);
          }
        }
      } finally {
        claims.remove(claim, released);
        released.countDown();
      }
    }
  }

  // ---------------------------------------------------------------- leftovers

  /**
   * Deletes the chunks of every value whose writer was killed before its record was written (each
   * left its pending marker), and the markers; returns how many there were. A writer's open calls
   * it, while no other writer can run.
   */
  int removeLeftovers() {
    int n = 0;
    try (WriteBatch b = new WriteBatch(); Cursor c = db.cursor(Cf.META, PENDING_PREFIX)) {
      for (; c.valid() && Keys.startsWith(c.key(), PENDING_PREFIX); c.next()) {
        byte[] marker = c.key();
        String text = new String(marker, PENDING_PREFIX.length, marker.length - PENDING_PREFIX.length,
            StandardCharsets.US_ASCII);
        int slash = text.indexOf('/');
        Cf cf = slash < 0 ? null : Cf.named(text.substring(0, slash));
        if (cf != null && cf != Cf.META) {
          try {
            deleteChunks(b, cf, HexFormat.of().parseHex(text.substring(slash + 1)));
          } catch (IllegalArgumentException e) {
            // not a marker of ours: drop it below
          }
        }
        db.delete(b, Cf.META, marker);
        n++;
      }
      if (n > 0) {
        db.write(b, true);
      }
    }
    return n;
  }
}
