package dev.xlac.cache.repair;

import dev.xlac.cache.DamagedCacheException;
import dev.xlac.cache.store.Checksums;
import dev.xlac.cache.store.RocksDbStore;
import dev.xlac.cache.store.RocksDbStore.Cf;
import dev.xlac.cache.store.StoredValues;
import dev.xlac.core.XlacException;
import java.io.IOException;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Reads values that the database no longer hands out whole, for a repair: each piece of a value
 * (the value under its key, or chunk {@code i} under {@code key ‖ BE32(i)}) is taken from the first
 * source that can read it — the databases given, in order, then the blob files ({@link BlobFiles},
 * newest copy first, its record CRC checked) — and the value is accepted only when its SHA-256 is
 * the one its record holds. So a value whose blob file RocksDB cannot read any more (truncated,
 * or unknown to a database rebuilt by RepairDB) is still recovered, byte for byte, when its record
 * in the file is intact.
 */
final class ValueSalvage {
  /** Opens the writer a copied value goes into, for a value of {@code size} bytes. */
  @FunctionalInterface
  interface Target {
    StoredValues.ValueWriter open(long size);
  }

  /** A value copied into {@code writer} (to be committed by the caller); {@code fromBlobFiles}: part of it was read by xlac from a blob file. */
  record Copy(StoredValues.ValueWriter writer, boolean fromBlobFiles) {}

  private final List<RocksDbStore> stores;
  private final BlobFiles blobs;
  private final Map<Cf, Integer> familyIds;

  /**
   * @param stores the databases to read from, most trusted first
   * @param blobs the blob files' records, or null
   * @param familyIds each value family's column family id in the blob files' headers
   */
  ValueSalvage(List<RocksDbStore> stores, BlobFiles blobs, Map<Cf, Integer> familyIds) {
    this.stores = List.copyOf(stores);
    this.blobs = blobs;
    this.familyIds = Map.copyOf(familyIds);
  }

  /** One way to read a piece: bytes a database returned, or a record in a blob file (with its bytes once read). */
  private record Candidate(byte[] bytes, BlobFiles.Location location) {
    long length() {
      return bytes != null ? bytes.length : location.valueSize();
    }
  }

  /**
   * Copies the value of {@code key} ({@code size} bytes, SHA-256 {@code sha}) into a writer from
   * {@code target}; null when no combination of the sources yields it.
   */
  Copy copy(Cf cf, byte[] key, long size, byte[] sha, Target target) {
    if (sha == null) {
      return null;
    }
    // A whole value: each candidate is checked on its own.
    for (Candidate c : candidates(cf, key, false)) {
      if (c.length() != size) {
        continue;
      }
      Copy done = attempt(target, size, sha, (w, d) -> write(c, w, d));
      if (done != null) {
        return done;
      }
    }
    // A chunked value: chunk by chunk from the first source that has it; then with the blob files first.
    for (boolean blobFirst : new boolean[] {false, true}) {
      Copy done = attempt(target, size, sha, (w, d) -> {
        long written = 0;
        boolean usedBlob = false;
        for (int i = 0; written < size; i++) {
          Candidate piece = firstReadable(candidates(cf, StoredValues.chunkKey(key, i), blobFirst));
          if (piece == null || written + piece.length() > size) {
            return null;
          }
          Boolean blob = write(piece, w, d);
          if (blob == null) {
            return null;
          }
          usedBlob |= blob;
          written += piece.length();
        }
        return usedBlob;
      });
      if (done != null) {
        return done;
      }
    }
    return null;
  }

  /**
   * A value whose record is lost: the first whole candidate, or else the chunks 0, 1, ... present
   * (from the first source that has each), that {@code accept} takes; null when none. At most
   * {@code maxBytes} are read.
   */
  byte[] readWithoutRecord(Cf cf, byte[] key, long maxBytes, Predicate<byte[]> accept) {
    for (Candidate c : candidates(cf, key, false)) {
      if (c.length() <= maxBytes) {
        byte[] v = bytes(c);
        if (v != null && accept.test(v)) {
          return v;
        }
      }
    }
    java.io.ByteArrayOutputStream joined = new java.io.ByteArrayOutputStream();
    for (int i = 0; ; i++) {
      Candidate piece = firstReadable(candidates(cf, StoredValues.chunkKey(key, i), false));
      if (piece == null) {
        break;
      }
      byte[] v = bytes(piece);
      if (v == null || joined.size() + (long) v.length > maxBytes) {
        return null;
      }
      joined.writeBytes(v);
    }
    byte[] v = joined.toByteArray();
    return v.length > 0 && accept.test(v) ? v : null;
  }

  private interface Body {
    /** Writes the value; true/false: done (from blob files or not), null: failed. */
    Boolean run(StoredValues.ValueWriter w, MessageDigest d) throws IOException;
  }

  private static Copy attempt(Target target, long size, byte[] sha, Body body) {
    StoredValues.ValueWriter w = target.open(size);
    boolean ok = false;
    try {
      MessageDigest d = Checksums.sha256();
      Boolean fromBlobs = body.run(w, d);
      ok = fromBlobs != null && MessageDigest.isEqual(d.digest(), sha);
      return ok ? new Copy(w, fromBlobs) : null;
    } catch (XlacException e) {
      if (!(e instanceof DamagedCacheException)) {
        // Reads of the sources never get here (candidates() takes their failures): this is a write
        // of the copy that failed (a full disk), and the rebuild must stop rather than lose it.
        throw e;
      }
      return null;
    } catch (IOException | RuntimeException e) {
      return null; // unreadable after all: the next way, or lost
    } finally {
      if (!ok) {
        w.close(); // removes the chunks it wrote
      }
    }
  }

  /** Writes a candidate; true when it came from a blob file, null when its bytes fail their CRC. */
  private static Boolean write(Candidate c, StoredValues.ValueWriter w, MessageDigest d) throws IOException {
    if (c.bytes() != null) {
      d.update(c.bytes());
      w.write(c.bytes());
      return c.location() != null; // read from a blob file already (and its CRC checked)
    }
    boolean crcOk = BlobFiles.stream(c.location(), (piece, off, len) -> {
      d.update(piece, off, len);
      w.write(piece, off, len);
    });
    return crcOk ? Boolean.TRUE : null;
  }

  /** The candidate's bytes; for a blob record, null when its CRC fails or it is too large for an array. */
  private static byte[] bytes(Candidate c) {
    if (c.bytes() != null) {
      return c.bytes();
    }
    try {
      return BlobFiles.read(c.location());
    } catch (IOException e) {
      return null;
    }
  }

  /** The first candidate whose bytes can be read (a blob record: read into memory, CRC checked). */
  private static Candidate firstReadable(List<Candidate> candidates) {
    for (Candidate c : candidates) {
      byte[] b = bytes(c);
      if (b != null) {
        return new Candidate(b, c.location());
      }
    }
    return null;
  }

  /** Every source's piece under {@code key}: the databases' (those that read it), and the blob files' records. */
  private List<Candidate> candidates(Cf cf, byte[] key, boolean blobFirst) {
    List<Candidate> fromStores = new ArrayList<>();
    for (RocksDbStore s : stores) {
      try {
        byte[] v = s.get(cf, key);
        if (v != null) {
          fromStores.add(new Candidate(v, null));
        }
      } catch (RuntimeException e) {
        // damaged here (a bad block, a blob file it cannot read): maybe another source has it
      }
    }
    List<Candidate> fromBlobs = new ArrayList<>();
    Integer id = familyIds.get(cf);
    if (blobs != null && id != null) {
      for (BlobFiles.Location l : blobs.find(id, key)) {
        fromBlobs.add(new Candidate(null, l));
      }
    }
    List<Candidate> all = new ArrayList<>(blobFirst ? fromBlobs : fromStores);
    all.addAll(blobFirst ? fromStores : fromBlobs);
    // The same bytes from two databases need not be tried twice.
    List<Candidate> distinct = new ArrayList<>();
    for (Candidate c : all) {
      if (c.bytes() == null || distinct.stream().noneMatch(o -> o.bytes() != null && Arrays.equals(o.bytes(), c.bytes()))) {
        distinct.add(c);
      }
    }
    return distinct;
  }
}
