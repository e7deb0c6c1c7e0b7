package dev.xlac.cache.store;

import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.GraphInfo;
import dev.xlac.core.neuron.NeuronName;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;

/**
 * The stored records and their binary encodings. Each value starts with a format byte so the
 * encoding can grow within a schema version; an unknown format byte is reported as damage.
 */
public final class Records {
  private static final byte FORMAT = 1;
  /** graph_meta with Neuron names (schema version 2): format 1's fields, then the names. */
  private static final byte GRAPH_FORMAT_NEURON = 2;

  private Records() {}

  /** graph_meta: fingerprint digest -> this. {@code storedSha256} covers the stored (compressed) value. */
  public record GraphRecord(String moduleName, String source, long firstSeen, long lastSeen, long seenCount, long rawBytes,
      long storedBytes, byte[] storedSha256, long lastAccess, java.util.List<NeuronName> neuronNames) {

    public GraphRecord {
      neuronNames = java.util.List.copyOf(neuronNames);
    }

    GraphRecord withLastAccess(long t) {
      return new GraphRecord(moduleName, source, firstSeen, lastSeen, seenCount, rawBytes, storedBytes, storedSha256, t,
          neuronNames);
    }

    GraphRecord seenAgain(long now) {
      return new GraphRecord(moduleName, source, firstSeen, Math.max(lastSeen, now), seenCount + 1, rawBytes, storedBytes,
          storedSha256, Math.max(lastAccess, now), neuronNames);
    }

    /** This record with {@code name} added, or replacing the name at the same location. */
    public GraphRecord withNeuronName(NeuronName name) {
      java.util.List<NeuronName> names = new java.util.ArrayList<>(neuronNames);
      names.removeIf(n -> n.sameLocation(name));
      names.add(name);
      return new GraphRecord(moduleName, source, firstSeen, lastSeen, seenCount, rawBytes, storedBytes, storedSha256,
          lastAccess, names);
    }
  }

  /**
   * artifact_meta: artifact key -> this. A compiled record's bytes live in the artifacts family, its
   * log (if any) in the logs family; a failed record has no bytes.
   */
  public record ArtifactRecord(EntryStatus status, long bytes, byte[] sha256, long compileMillis, long created, long lastAccess,
      String failureKind, String failureMessage, long logRawBytes, long logStoredBytes, byte[] logSha256) {

    ArtifactRecord withLastAccess(long t) {
      return new ArtifactRecord(status, bytes, sha256, compileMillis, created, t, failureKind, failureMessage, logRawBytes,
          logStoredBytes, logSha256);
    }

    /** What the entry occupies in the cache: its bytes and its stored log. */
    public long storedBytes() {
      return bytes + logStoredBytes;
    }
  }

  /**
   * request_meta: request key digest -> this (schema version 4). The request itself (format, program, options,
   * identity) is stored zstd-compressed in the requests family ({@code requestStoredBytes}, {@code requestSha256}
   * of the stored value, {@code requestRawBytes} before compression); the executable in the executables family.
   */
  public record RequestRecord(String format, String platformName, String pluginSha256, long programBytes,
      long requestRawBytes, long requestStoredBytes, byte[] requestSha256, long executableBytes,
      byte[] executableSha256, long compileNanos, long created, long lastAccess, long hits) {

    RequestRecord withLastAccess(long t) {
      return new RequestRecord(format, platformName, pluginSha256, programBytes, requestRawBytes, requestStoredBytes,
          requestSha256, executableBytes, executableSha256, compileNanos, created, t, hits);
    }

    RequestRecord withHits(long more, long t) {
      return new RequestRecord(format, platformName, pluginSha256, programBytes, requestRawBytes, requestStoredBytes,
          requestSha256, executableBytes, executableSha256, compileNanos, created, Math.max(lastAccess, t),
          hits + more);
    }

    /** What the entry occupies in the cache: the stored request and the executable. */
    public long storedBytes() {
      return requestStoredBytes + executableBytes;
    }

    /** The same uncompressed. */
    public long rawBytes() {
      return requestRawBytes + executableBytes;
    }
  }

  static byte[] encode(RequestRecord r) {
    return write(out -> {
      str(out, r.format());
      str(out, r.platformName());
      str(out, r.pluginSha256());
      out.writeLong(r.programBytes());
      out.writeLong(r.requestRawBytes());
      out.writeLong(r.requestStoredBytes());
      bytes(out, r.requestSha256());
      out.writeLong(r.executableBytes());
      bytes(out, r.executableSha256());
      out.writeLong(r.compileNanos());
      out.writeLong(r.created());
      out.writeLong(r.lastAccess());
      out.writeLong(r.hits());
    });
  }

  public static RequestRecord decodeRequest(byte[] value) {
    return read(value, in -> new RequestRecord(str(in), str(in), str(in), in.readLong(), in.readLong(), in.readLong(),
        bytes(in), in.readLong(), bytes(in), in.readLong(), in.readLong(), in.readLong(), in.readLong()));
  }

  static byte[] encode(GraphRecord r) {
    // A graph without Neuron names keeps format 1, byte for byte what schema version 1 wrote.
    return write(r.neuronNames().isEmpty() ? FORMAT : GRAPH_FORMAT_NEURON, out -> {
      str(out, r.moduleName());
      str(out, r.source());
      out.writeLong(r.firstSeen());
      out.writeLong(r.lastSeen());
      out.writeLong(r.seenCount());
      out.writeLong(r.rawBytes());
      out.writeLong(r.storedBytes());
      bytes(out, r.storedSha256());
      out.writeLong(r.lastAccess());
      if (!r.neuronNames().isEmpty()) {
        out.writeInt(r.neuronNames().size());
        for (NeuronName n : r.neuronNames()) {
          str(out, n.versionDirectory());
          str(out, n.moduleDirectory());
          str(out, n.compileFlagsJson());
        }
      }
    });
  }

  public static GraphRecord decodeGraph(byte[] value) {
    return read(value, java.util.Set.of(FORMAT, GRAPH_FORMAT_NEURON), (format, in) -> {
      String module = str(in);
      String source = str(in);
      long firstSeen = in.readLong();
      long lastSeen = in.readLong();
      long seen = in.readLong();
      long raw = in.readLong();
      long stored = in.readLong();
      byte[] sha = bytes(in);
      long access = in.readLong();
      java.util.List<NeuronName> names = new java.util.ArrayList<>();
      if (format == GRAPH_FORMAT_NEURON) {
        int n = in.readInt();
        if (n < 1 || n > in.available() / 12) {
          throw new IllegalArgumentException("bad number of Neuron names: " + n);
        }
        for (int i = 0; i < n; i++) {
          names.add(new NeuronName(str(in), str(in), str(in)));
        }
      }
      return new GraphRecord(module, source, firstSeen, lastSeen, seen, raw, stored, sha, access, names);
    });
  }

  static byte[] encode(ArtifactRecord r) {
    return write(out -> {
      out.writeByte(r.status().code());
      out.writeLong(r.bytes());
      bytes(out, r.sha256());
      out.writeLong(r.compileMillis());
      out.writeLong(r.created());
      out.writeLong(r.lastAccess());
      str(out, r.failureKind());
      str(out, r.failureMessage());
      out.writeLong(r.logRawBytes());
      out.writeLong(r.logStoredBytes());
      bytes(out, r.logSha256());
    });
  }

  public static ArtifactRecord decodeArtifact(byte[] value) {
    return read(value, in -> new ArtifactRecord(EntryStatus.ofCode(in.readByte()), in.readLong(), bytes(in), in.readLong(),
        in.readLong(), in.readLong(), str(in), str(in), in.readLong(), in.readLong(), bytes(in)));
  }

  /** What the public API says of a request record. */
  static dev.xlac.cache.RequestInfo info(dev.xlac.runtime.RequestKey key, RequestRecord r) {
    return new dev.xlac.cache.RequestInfo(key, r.format(), r.platformName(), r.pluginSha256(), r.programBytes(),
        r.executableBytes(), Duration.ofNanos(r.compileNanos()), Instant.ofEpochMilli(r.created()),
        Instant.ofEpochMilli(r.lastAccess()), r.hits(),
        r.executableSha256() == null ? "" : java.util.HexFormat.of().formatHex(r.executableSha256()), r.storedBytes());
  }

  /** What the public API says of a graph record. */
  static GraphInfo info(byte[] digest, GraphRecord r) {
    return new GraphInfo(Keys.fingerprint(digest), r.moduleName(), r.source(), Instant.ofEpochMilli(r.firstSeen()),
        Instant.ofEpochMilli(r.lastSeen()), r.seenCount(), r.rawBytes(), r.storedBytes(),
        Instant.ofEpochMilli(r.lastAccess()), r.neuronNames());
  }

  /** What the public API says of an artifact record. */
  static ArtifactInfo info(ArtifactKey key, ArtifactRecord r) {
    return new ArtifactInfo(key, r.status(), r.bytes(), Duration.ofMillis(r.compileMillis()),
        Instant.ofEpochMilli(r.created()), Instant.ofEpochMilli(r.lastAccess()), r.failureKind(), r.failureMessage(),
        r.logRawBytes());
  }

  static byte[] encode(Totals t) {
    return write(out -> {
      for (long v : t.toArray()) {
        out.writeLong(v);
      }
    });
  }

  public static Totals decodeTotals(byte[] value) {
    return read(value, in -> {
      // Schema versions 1 to 3 wrote 14 fields; version 4 adds the request fields.
      int n = in.available() == 8 * Totals.FIELDS_BEFORE_REQUESTS ? Totals.FIELDS_BEFORE_REQUESTS : Totals.FIELDS;
      long[] v = new long[n];
      for (int i = 0; i < v.length; i++) {
        v[i] = in.readLong();
      }
      return Totals.fromArray(v);
    });
  }

  /** access index value: the entry's stored size, status, and (artifacts) the compiler digest. */
  public static byte[] accessValue(long size, EntryStatus status, byte[] compilerDigest) {
    ByteBuffer b = ByteBuffer.allocate(9 + (compilerDigest == null ? 0 : compilerDigest.length));
    b.putLong(size).put(status.code());
    if (compilerDigest != null) {
      b.put(compilerDigest);
    }
    return b.array();
  }

  public static long accessSize(byte[] value) {
    return ByteBuffer.wrap(value).getLong();
  }

  public static EntryStatus accessStatus(byte[] value) {
    return EntryStatus.ofCode(value[8]);
  }

  private interface Writer {
    void write(Out out);
  }

  private interface Reader<T> {
    T read(In in);
  }

  /** A growable big-endian buffer; cheaper than stream layers for many small records. */
  private static final class Out {
    private ByteBuffer b = ByteBuffer.allocate(160);

    private void room(int n) {
      if (b.remaining() < n) {
        ByteBuffer bigger = ByteBuffer.allocate(Math.max(b.capacity() * 2, b.position() + n));
        b.flip();
        bigger.put(b);
        b = bigger;
      }
    }

    void writeByte(int v) {
      room(1);
      b.put((byte) v);
    }

    void writeLong(long v) {
      room(8);
      b.putLong(v);
    }

    void writeInt(int v) {
      room(4);
      b.putInt(v);
    }

    void write(byte[] v) {
      room(v.length);
      b.put(v);
    }

    byte[] toByteArray() {
      return java.util.Arrays.copyOf(b.array(), b.position());
    }
  }

  private static final class In {
    private final ByteBuffer b;

    In(byte[] value) {
      b = ByteBuffer.wrap(value);
    }

    byte readByte() {
      return b.get();
    }

    long readLong() {
      return b.getLong();
    }

    int readInt() {
      return b.getInt();
    }

    int available() {
      return b.remaining();
    }

    byte[] readNBytes(int n) {
      byte[] v = new byte[n];
      b.get(v);
      return v;
    }
  }

  private static byte[] write(Writer w) {
    return write(FORMAT, w);
  }

  private static byte[] write(byte format, Writer w) {
    Out out = new Out();
    out.writeByte(format);
    w.write(out);
    return out.toByteArray();
  }

  private static <T> T read(byte[] value, Reader<T> r) {
    return read(value, java.util.Set.of(FORMAT), (format, in) -> r.read(in));
  }

  private interface FormatReader<T> {
    T read(byte format, In in);
  }

  private static <T> T read(byte[] value, java.util.Set<Byte> formats, FormatReader<T> r) {
    try {
      In in = new In(value);
      byte format = in.readByte();
      if (!formats.contains(format)) {
        throw new IllegalArgumentException("unknown record format " + format);
      }
      T t = r.read(format, in);
      if (in.available() != 0) {
        throw new IllegalArgumentException("record has " + in.available() + " trailing bytes");
      }
      return t;
    } catch (java.nio.BufferUnderflowException e) {
      throw new IllegalArgumentException("truncated record", e);
    }
  }

  private static void str(Out out, String s) {
    bytes(out, s == null ? null : s.getBytes(StandardCharsets.UTF_8));
  }

  private static String str(In in) {
    byte[] b = bytes(in);
    return b == null ? null : new String(b, StandardCharsets.UTF_8);
  }

  private static void bytes(Out out, byte[] b) {
    out.writeInt(b == null ? -1 : b.length);
    if (b != null) {
      out.write(b);
    }
  }

  private static byte[] bytes(In in) {
    int n = in.readInt();
    if (n < 0) {
      return null;
    }
    if (n > in.available()) {
      throw new IllegalArgumentException("field longer than the record");
    }
    return in.readNBytes(n);
  }
}
