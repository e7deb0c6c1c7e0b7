package dev.xlac.cache.store;

import dev.xlac.cache.DamagedCacheException;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.store.Records.ArtifactRecord;
import dev.xlac.cache.store.Records.GraphRecord;
import dev.xlac.cache.store.RocksDbStore.Cf;
import dev.xlac.cache.store.RocksDbStore.DamagedValueException;
import java.io.IOException;
import java.io.OutputStream;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * One read of a stored value checked against what its record says it is: the cache's promise that
 * it never hands back a wrong or damaged value rests on this. Each caller turns the outcome into its
 * own reaction (a miss, a verify problem, a failed export); this only says which outcome it was.
 *
 * <p>A reader's view of the database is the one it opened; a writer may since have collected a blob
 * file the view still points to. So for a read-only store, a value that reads as missing or corrupt
 * is read once more from a freshly opened view before that is the outcome; if its record is gone
 * from the fresh view, or now describes another value, the outcome is {@link Gone}, a plain miss.
 */
public sealed interface CheckedValue {
  /** For a caller that knows no size: only the SHA-256 is checked. */
  long ANY_SIZE = -1;

  /**
   * Present, of the expected size, with the expected SHA-256 ({@link #read}); or, from
   * {@link #stream}, every byte streamed and matching, and from {@link #probe}, every byte present
   * and passing RocksDB's checksums. {@code bytes} is null but for {@link #read}.
   */
  record Ok(byte[] bytes) implements CheckedValue {}

  /** No value under the key, or part of a chunked value absent, or its blob file gone. */
  record Missing() implements CheckedValue {}

  /** Present, but of another size or another SHA-256 than its record says. */
  record Mismatch() implements CheckedValue {}

  /** RocksDB's own block or blob checksum failed; {@code detail} is RocksDB's message. */
  record Corrupt(String detail) implements CheckedValue {}

  /** A reader's only: in a fresh view the record is gone or describes another value, so this is a plain miss, not damage. */
  record Gone() implements CheckedValue {}

  /**
   * Reads the value of {@code key} in {@code cf} whole and checks it. A null {@code expectedSha256}
   * matches nothing. Failures that are not damage (I/O, a closed store) still throw, as
   * {@link RocksDbStore#get} does. The caller makes sure the size fits an array.
   */
  static CheckedValue read(StoredValues values, Cf cf, byte[] key, long expectedSize, byte[] expectedSha256) {
    CheckedValue first = readOnce(values, cf, key, expectedSize, expectedSha256);
    return confirmed(values, cf, key, expectedSize, expectedSha256, first, true,
        () -> readOnce(values, cf, key, expectedSize, expectedSha256));
  }

  /**
   * Streams the value into {@code out} piece by piece (a chunk at a time), hashing as it goes: the
   * outcome is known only at the end, so a caller must discard what it wrote unless it is {@link Ok}.
   */
  static CheckedValue stream(StoredValues values, Cf cf, byte[] key, long expectedSize, byte[] expectedSha256,
      OutputStream out) throws IOException {
    long[] written = {0};
    OutputStream counting = new OutputStream() {
      @Override
      public void write(int b) throws IOException {
        out.write(b);
        written[0]++;
      }

      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        out.write(b, off, len);
        written[0] += len;
      }
    };
    CheckedValue first = streamOnce(values, cf, key, expectedSize, expectedSha256, counting);
    try {
      // Read again only if nothing reached the caller's stream yet.
      return confirmed(values, cf, key, expectedSize, expectedSha256, first, written[0] == 0, () -> {
        try {
          return streamOnce(values, cf, key, expectedSize, expectedSha256, counting);
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
    } catch (java.io.UncheckedIOException e) {
      throw e.getCause();
    }
  }

  /**
   * Checks that the value is there, whole, of the expected size and intact as far as RocksDB's
   * checksums (CRC32C of blocks and blob records) tell, without handing its bytes out or hashing them:
   * what a compile run needs to count an artifact as cached. {@code expectedSha256} is only used to
   * recognise a record that changed (see {@link Gone}).
   */
  static CheckedValue probe(StoredValues values, Cf cf, byte[] key, long expectedSize, byte[] expectedSha256) {
    CheckedValue first = probeOnce(values, cf, key, expectedSize);
    return confirmed(values, cf, key, expectedSize, expectedSha256, first, true,
        () -> probeOnce(values, cf, key, expectedSize));
  }

  private static CheckedValue readOnce(StoredValues values, Cf cf, byte[] key, long expectedSize, byte[] sha) {
    try {
      byte[] whole = values.whole(cf, key);
      if (whole != null) {
        return (expectedSize != ANY_SIZE && whole.length != expectedSize) || !Checksums.matches(whole, sha)
            ? new Mismatch() : new Ok(whole);
      }
      Joined joined = new Joined(expectedSize);
      long n = values.streamChunks(cf, key, expectedSize, joined);
      if (n == StoredValues.ABSENT || n == StoredValues.INCOMPLETE) {
        return new Missing();
      }
      byte[] v = joined.bytes();
      return v == null || (expectedSize != ANY_SIZE && n != expectedSize) || !Checksums.matches(v, sha)
          ? new Mismatch() : new Ok(v);
    } catch (DamagedValueException e) {
      return damage(e);
    } catch (IOException e) {
      throw new IllegalStateException(e); // Joined does not throw
    }
  }

  private static CheckedValue streamOnce(StoredValues values, Cf cf, byte[] key, long expectedSize, byte[] sha,
      OutputStream out) throws IOException {
    MessageDigest digest = Checksums.sha256();
    try {
      byte[] whole = values.whole(cf, key);
      long n;
      if (whole != null) {
        n = whole.length;
        if (expectedSize != ANY_SIZE && n != expectedSize) {
          return new Mismatch();
        }
        digest.update(whole);
        out.write(whole);
      } else {
        long[] left = {expectedSize == ANY_SIZE ? Long.MAX_VALUE : expectedSize};
        n = values.streamChunks(cf, key, expectedSize, piece -> {
          digest.update(piece);
          int give = (int) Math.min(piece.length, Math.max(0, left[0]));
          out.write(piece, 0, give); // never more than the caller was told to expect
          left[0] -= piece.length;
        });
        if (n == StoredValues.ABSENT || n == StoredValues.INCOMPLETE) {
          return new Missing();
        }
      }
      return (expectedSize != ANY_SIZE && n != expectedSize) || sha == null
          || !MessageDigest.isEqual(digest.digest(), sha) ? new Mismatch() : new Ok(null);
    } catch (DamagedValueException e) {
      return damage(e);
    }
  }

  private static CheckedValue probeOnce(StoredValues values, Cf cf, byte[] key, long expectedSize) {
    try {
      long n = values.probe(cf, key, expectedSize);
      if (n == StoredValues.ABSENT || n == StoredValues.INCOMPLETE) {
        return new Missing();
      }
      return expectedSize != ANY_SIZE && n != expectedSize ? new Mismatch() : new Ok(null);
    } catch (DamagedValueException e) {
      return damage(e);
    }
  }

  /** A blob file that is gone is a missing value, not a failing disk: RocksDB reports it as an I/O error. */
  private static CheckedValue damage(DamagedValueException e) {
    return e.fileMissing ? new Missing() : new Corrupt(e.getMessage());
  }

  /**
   * For a reader: confirms apparent damage against a fresh view of the database (see the class
   * comment). {@code again} reads from that view when {@code mayRetry}.
   */
  private static CheckedValue confirmed(StoredValues values, Cf cf, byte[] key, long expectedSize, byte[] sha,
      CheckedValue first, boolean mayRetry, java.util.function.Supplier<CheckedValue> again) {
    if (first instanceof Ok || !values.db().readOnly() || !values.db().refresh()) {
      return first;
    }
    Recorded now;
    try {
      now = recorded(values.db(), cf, key);
    } catch (IllegalArgumentException | DamagedValueException | DamagedCacheException e) {
      return first; // the record itself is damaged now: report what the value read showed
    }
    if (now == null || (expectedSize != ANY_SIZE && now.size() != expectedSize)
        || (sha != null && !Arrays.equals(now.sha256(), sha))) {
      return new Gone();
    }
    return mayRetry ? again.get() : first;
  }

  /** The size and SHA-256 a value's record holds now, or null when no record references a value under the key. */
  record Recorded(long size, byte[] sha256) {}

  private static Recorded recorded(RocksDbStore db, Cf cf, byte[] key) {
    switch (cf) {
      case GRAPHS -> {
        byte[] v = db.get(Cf.GRAPH_META, key);
        if (v == null) {
          return null;
        }
        GraphRecord g = Records.decodeGraph(v);
        return new Recorded(g.storedBytes(), g.storedSha256());
      }
      case ARTIFACTS, LOGS -> {
        byte[] v = db.get(Cf.ARTIFACT_META, key);
        if (v == null) {
          return null;
        }
        ArtifactRecord a = Records.decodeArtifact(v);
        if (cf == Cf.ARTIFACTS) {
          return a.status() == EntryStatus.COMPILED ? new Recorded(a.bytes(), a.sha256()) : null;
        }
        return a.logStoredBytes() > 0 ? new Recorded(a.logStoredBytes(), a.logSha256()) : null;
      }
      default -> {
        return null;
      }
    }
  }

  /** Joins the chunks of a value into one array, allocated at its expected size when that is known. */
  final class Joined implements StoredValues.Sink {
    private final long expected;
    private byte[] into;
    private java.io.ByteArrayOutputStream grown;
    private int at;
    private boolean overflow;

    Joined(long expected) {
      this.expected = expected;
    }

    @Override
    public void accept(byte[] piece) {
      if (expected == ANY_SIZE) {
        if (grown == null) {
          grown = new java.io.ByteArrayOutputStream();
        }
        grown.writeBytes(piece);
        return;
      }
      if (into == null) {
        into = new byte[Math.toIntExact(expected)];
      }
      int n = Math.min(piece.length, into.length - at);
      System.arraycopy(piece, 0, into, at, n);
      at += n;
      overflow |= n < piece.length;
    }

    /** The joined bytes; null when there were more than expected. */
    byte[] bytes() {
      if (expected == ANY_SIZE) {
        return grown == null ? new byte[0] : grown.toByteArray();
      }
      return overflow || into == null ? null : into;
    }
  }
}
