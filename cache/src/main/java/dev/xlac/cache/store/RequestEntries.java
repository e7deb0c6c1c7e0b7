package dev.xlac.cache.store;

import com.github.luben.zstd.Zstd;
import dev.xlac.cache.RequestInfo;
import dev.xlac.cache.RequestIngest;
import dev.xlac.cache.store.Records.RequestRecord;
import dev.xlac.cache.store.RocksDbStore.Cf;
import dev.xlac.cache.store.RocksDbStore.Cursor;
import dev.xlac.core.XlacException;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The runtime's recorded PJRT compile requests (schema version 4): a request record in {@code request_meta},
 * the request itself (format, program, options, plugin identity) zstd-compressed in {@code requests}, and the
 * serialized executable in {@code executables}, all under the request key's 32 digest bytes. Written in one fsynced
 * batch per call (a large executable's chunks before it, as for artifacts), read back checked against their
 * SHA-256s; a damaged value is a miss, counted and reported.
 */
public final class RequestEntries {
  private final Store store;

  RequestEntries(Store store) {
    this.store = store;
  }

  /**
   * Stores recorded requests in one atomic, fsynced batch. A request the cache holds already is kept as it is (a
   * recompile of the same request may give other executable bytes; the first one stays); of one key given twice,
   * the first is taken. Each request is checked first ({@link #problem}): one that fails is not stored and is named,
   * with the reason, in {@link RequestIngest#rejected()}, while the others go in.
   */
  public synchronized RequestIngest putRequests(List<RecordedRequest> requests) {
    store.requireWritable();
    long now = store.clock.millis();
    List<RecordedRequest> fresh = new ArrayList<>();
    List<byte[]> storedRequests = new ArrayList<>();
    List<RequestRecord> records = new ArrayList<>();
    List<String> rejected = new ArrayList<>();
    Set<RequestKey> seen = new HashSet<>();
    int present = 0;
    for (RecordedRequest r : requests) {
      Optional<String> problem = problem(r);
      if (problem.isPresent()) {
        rejected.add("runtime entry " + r.key().text() + ": " + problem.get() + "; not taken in");
        continue;
      }
      if (!seen.add(r.key()) || store.readRequestRecord(r.key().digest()) != null) {
        present++; // checked again in the batch, which decides
        continue;
      }
      byte[] stored = Zstd.compress(encodeRequest(r), Store.ZSTD_LEVEL);
      long raw = rawSize(r);
      fresh.add(r);
      storedRequests.add(stored);
      records.add(new RequestRecord(r.formatName(), r.platformName(), r.pluginSha256(), r.program().length, raw,
          stored.length, Checksums.sha256(stored), r.executable().length, Checksums.sha256(r.executable()),
          r.compileNanos(), now, now, 0));
    }
    if (fresh.isEmpty()) {
      return new RequestIngest(0, present, rejected);
    }
    // Large executables go out chunk by chunk before the batch that writes their records. The writer claims its key
    // first (another writer of this process, an import, waits for it), and only then is the key looked up: chunks
    // are written only under a key that has no record, so no reader meets them before the batch.
    List<StoredValues.ValueWriter> writers = new ArrayList<>();
    Set<RequestKey> presentMeanwhile = new HashSet<>();
    try {
      for (RecordedRequest r : fresh) {
        StoredValues.ValueWriter w = null;
        if (StoredValues.chunked(r.executable().length)) {
          w = store.values.writer(Cf.EXECUTABLES, r.key().digest(), r.executable().length, true);
          writers.add(w);
          if (store.readRequestRecord(r.key().digest()) == null) {
            w.write(r.executable());
          } else {
            presentMeanwhile.add(r.key());
          }
        } else {
          writers.add(null);
        }
      }
      int[] counts = new int[2];
      store.commit(true, txn -> {
        for (int i = 0; i < fresh.size(); i++) {
          byte[] digest = fresh.get(i).key().digest();
          if (txn.request(digest) != null || presentMeanwhile.contains(fresh.get(i).key())) {
            counts[1]++; // added meanwhile (an import): kept as it is
            continue;
          }
          StoredValues.ValueWriter w = writers.get(i);
          txn.writeRequest(digest, records.get(i), storedRequests.get(i), w == null ? fresh.get(i).executable() : null);
          if (w != null) {
            txn.commitValue(w);
          }
          counts[0]++;
        }
        return null;
      });
      store.enforceMaxSize();
      return new RequestIngest(counts[0], present + counts[1], rejected);
    } finally {
      writers.stream().filter(java.util.Objects::nonNull).forEach(StoredValues.ValueWriter::close);
    }
  }

  /**
   * Why a recorded request cannot be stored, or empty when it can: its key is not the key of its sections (computed
   * differently, or the record is not what it claims), its request is too large for one stored value, or its
   * plugin identity names a plugin SHA-256 that is not 64 lowercase hex digits.
   */
  public static Optional<String> problem(RecordedRequest r) {
    if (rawSize(r) > Store.MAX_ARRAY_BYTES) {
      return Optional.of("its request is too large to store (" + rawSize(r) + " bytes; at most "
          + Store.MAX_ARRAY_BYTES + ")");
    }
    byte[] identity = r.identityText().getBytes(StandardCharsets.UTF_8);
    RequestKey computed = RequestKey.of(r.format(), r.program(), r.options(), identity);
    if (!r.key().isKeyOf(r.format(), r.program(), r.options(), identity)) {
      return Optional.of("its key was computed differently from this xlac's key of its request ("
          + computed.text() + ")");
    }
    String plugin = r.pluginSha256();
    if (!plugin.isEmpty() && !PLUGIN_SHA.matcher(plugin).matches()) {
      return Optional.of("its plugin identity's plugin_sha256 is not 64 lowercase hex digits");
    }
    return Optional.empty();
  }

  private static final java.util.regex.Pattern PLUGIN_SHA = java.util.regex.Pattern.compile("[0-9a-f]{64}");

  /** Every stored request, in key order. */
  public List<RequestInfo> requests() {
    List<RequestInfo> out = new ArrayList<>();
    try (Cursor c = store.db.cursor(Cf.REQUEST_META, null)) {
      for (; c.valid(); c.next()) {
        out.add(Records.info(new RequestKey(c.key()), Records.decodeRequest(c.value())));
      }
    }
    return out;
  }

  /** One stored request's metadata, without reading its values. */
  public Optional<RequestInfo> requestInfo(RequestKey key) {
    RequestRecord r = store.readRequestRecord(key.digest());
    return r == null ? Optional.empty() : Optional.of(Records.info(key, r));
  }

  /**
   * The stored request with its executable, both checked against their SHA-256s (and the request against its
   * key); empty when absent, or damaged (counted and reported).
   */
  public Optional<RecordedRequest> readRequest(RequestKey key) {
    return read(key, true);
  }

  /**
   * The stored request without its executable (a {@link RecordedRequest} whose executable is empty), checked as
   * {@link #readRequest}: what compiling it again needs, without reading an executable of any size.
   */
  public Optional<RecordedRequest> readRequestWithoutExecutable(RequestKey key) {
    return read(key, false);
  }

  private Optional<RecordedRequest> read(RequestKey key, boolean withExecutable) {
    byte[] digest = key.digest();
    RequestRecord r = store.readRequestRecord(digest);
    if (r == null) {
      return Optional.empty();
    }
    if ((withExecutable && r.executableBytes() > Store.MAX_ARRAY_BYTES) || r.requestRawBytes() > Store.MAX_ARRAY_BYTES) {
      throw XlacException.badInput("request " + key.text() + " in cache " + store.dir + " is larger than one array"
          + " can hold; read its executable as a stream (materialize)");
    }
    byte[][] sections;
    switch (CheckedValue.read(store.values, Cf.REQUESTS, digest, r.requestStoredBytes(), r.requestSha256())) {
      case CheckedValue.Ok(byte[] stored) -> {
        try {
          sections = decodeRequest(Zstd.decompress(stored, Math.toIntExact(r.requestRawBytes())));
        } catch (RuntimeException e) {
          return damaged(key, "its request does not decode (" + e.getMessage() + ")");
        }
      }
      case CheckedValue.Gone() -> {
        return Optional.empty();
      }
      case CheckedValue outcome -> {
        return damaged(key, describe(outcome, "request"));
      }
    }
    if (!key.isKeyOf(sections[0], sections[1], sections[2], sections[3])) {
      return damaged(key, "its request is not the request of its key");
    }
    if (!withExecutable) {
      return Optional.of(new RecordedRequest(key, sections[0], sections[1], sections[2],
          new String(sections[3], StandardCharsets.UTF_8), new byte[0], r.compileNanos()));
    }
    byte[] executable;
    switch (CheckedValue.read(store.values, Cf.EXECUTABLES, digest, r.executableBytes(), r.executableSha256())) {
      case CheckedValue.Ok(byte[] bytes) -> executable = bytes;
      case CheckedValue.Gone() -> {
        return Optional.empty();
      }
      case CheckedValue outcome -> {
        return damaged(key, describe(outcome, "executable"));
      }
    }
    return Optional.of(new RecordedRequest(key, sections[0], sections[1], sections[2],
        new String(sections[3], StandardCharsets.UTF_8), executable, r.compileNanos()));
  }

  /**
   * Streams a stored executable into {@code out}, a chunk at a time, checked against its SHA-256 as it goes (the
   * outcome is known at the end: on false, discard what {@code out} got). False when absent or damaged (counted and
   * reported). Not counted as a hit.
   */
  public boolean readExecutable(RequestKey key, OutputStream out) throws IOException {
    byte[] digest = key.digest();
    RequestRecord r = store.readRequestRecord(digest);
    if (r == null) {
      return false;
    }
    CheckedValue outcome = CheckedValue.stream(store.values, Cf.EXECUTABLES, digest, r.executableBytes(),
        r.executableSha256(), out);
    if (outcome instanceof CheckedValue.Ok) {
      return true;
    }
    if (!(outcome instanceof CheckedValue.Gone)) {
      damaged(key, describe(outcome, "executable"));
    }
    return false;
  }

  /**
   * Adds the runtime's hits: each stored request's hit count and last access, and the usage counters (runtime hits,
   * compile time saved). One batch, fsynced; keys the cache no longer holds count in the totals only.
   */
  public void recordHits(Map<RequestKey, Long> hits, Duration saved) {
    store.requireWritable();
    long now = store.clock.millis();
    long total = hits.values().stream().mapToLong(Long::longValue).sum();
    store.commit(true, txn -> {
      for (Map.Entry<RequestKey, Long> e : hits.entrySet()) {
        byte[] digest = e.getKey().digest();
        RequestRecord r = txn.request(digest);
        if (r != null && e.getValue() > 0) {
          txn.writeRequest(digest, r.withHits(e.getValue(), now), null, null);
        }
      }
      txn.countRuntimeHits(total, saved.toMillis());
      return null;
    });
  }

  private <T> Optional<T> damaged(RequestKey key, String why) {
    store.pending.damagedRead();
    store.notices.accept("cache " + store.dir + ": runtime entry " + key.text() + " is damaged: " + why
        + "; treated as a miss (run 'xlac cache verify --repair')");
    return Optional.empty();
  }

  static String describe(CheckedValue outcome, String what) {
    return switch (outcome) {
      case CheckedValue.Ok ok -> "";
      case CheckedValue.Gone gone -> "";
      case CheckedValue.Missing() -> "its " + what + " is missing";
      case CheckedValue.Mismatch() -> "its " + what + " fails its checksum";
      case CheckedValue.Corrupt(String detail) -> "RocksDB reports its " + what + " corrupt (" + detail + ")";
    };
  }

  /** The request as stored before compression: four sections, each a big-endian length and its bytes. */
  static byte[] encodeRequest(RecordedRequest r) {
    byte[] identity = r.identityText().getBytes(StandardCharsets.UTF_8);
    long raw = rawSize(r);
    if (raw > Store.MAX_ARRAY_BYTES) {
      throw XlacException.badInput("request " + r.key().text() + " is too large to store (" + raw + " bytes)");
    }
    ByteBuffer b = ByteBuffer.allocate((int) raw);
    for (byte[] s : new byte[][] {r.format(), r.program(), r.options(), identity}) {
      b.putLong(s.length).put(s);
    }
    return b.array();
  }

  private static long rawSize(RecordedRequest r) {
    return 32L + r.format().length + r.program().length + r.options().length
        + r.identityText().getBytes(StandardCharsets.UTF_8).length;
  }

  /** The four sections of a stored request (format, program, options, identity); IllegalArgumentException when it is not one. */
  public static byte[][] decodeRequest(byte[] raw) {
    ByteBuffer b = ByteBuffer.wrap(raw);
    byte[][] out = new byte[4][];
    for (int i = 0; i < 4; i++) {
      if (b.remaining() < 8) {
        throw new IllegalArgumentException("cut short");
      }
      long n = b.getLong();
      if (n < 0 || n > b.remaining()) {
        throw new IllegalArgumentException("a section runs past the end");
      }
      out[i] = new byte[(int) n];
      b.get(out[i]);
    }
    if (b.hasRemaining()) {
      throw new IllegalArgumentException(b.remaining() + " bytes follow the sections");
    }
    return out;
  }
}
