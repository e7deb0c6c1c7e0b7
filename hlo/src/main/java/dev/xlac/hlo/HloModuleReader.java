package dev.xlac.hlo;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.xlac.core.XlacException;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Arrays;
import java.util.Locale;
import java.util.function.Consumer;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;

/**
 * Reads one file holding a compiler-input HLO module: an XLA dump ({@code *.hlo.pb}, optionally
 * gzipped), an XLA snapshot ({@code *.hlo_snapshot.pb}) or a bare HloModuleProto (Neuron's
 * {@code model.hlo_module.pb}).
 *
 * <p>Hostile input is expected: sizes are checked before allocation, gzip output is capped,
 * protobuf nesting is bounded, and every failure becomes an {@link HloReadException} that names
 * the file and the reason in one line.
 *
 * <p>Uncompressed files of {@link #MAP_THRESHOLD} bytes or more are mapped read-only while they are
 * fingerprinted instead of being read onto the heap, so the heap holds only the index. The mapping
 * is closed before {@link #read} returns; {@link LoadedModule#moduleBytes()} reads the file again
 * and checks its fingerprint. A mapped file that shrinks while it is read (a dump still being
 * written, then rewritten) makes the JVM raise an {@link InternalError} on the read that faults;
 * that, and any failure after which the file's size or time differ, is reported as
 * "file changed while reading".
 */
public final class HloModuleReader {
  /** Java arrays end a little below 2 GiB; no real module comes near it. */
  public static final long MAX_MODULE_BYTES = Integer.MAX_VALUE - 64;
  /** XLA's own messages nest a few levels deep (tuple shapes, literals); hostile files nest more. */
  static final int RECURSION_LIMIT = 100;

  /** Smaller files are read onto the heap: mapping costs system calls that only pay off for large files. */
  static final long MAP_THRESHOLD = 1 << 20;
  static final String CHANGED = "file changed while reading (it was rewritten or truncated meanwhile)";

  private final long maxModuleBytes;
  private final long mapThreshold;
  /** Runs between pass 1 and pass 2 of a mapped file (tests use it to change the file there). */
  private final Consumer<Path> betweenPasses;

  public HloModuleReader() {
    this(MAX_MODULE_BYTES);
  }

  public HloModuleReader(long maxModuleBytes) {
    this(maxModuleBytes, MAP_THRESHOLD, f -> { });
  }

  HloModuleReader(long maxModuleBytes, long mapThreshold, Consumer<Path> betweenPasses) {
    this(maxModuleBytes, mapThreshold, betweenPasses, false);
  }

  private HloModuleReader(long maxModuleBytes, long mapThreshold, Consumer<Path> betweenPasses, boolean keepParts) {
    this.maxModuleBytes = maxModuleBytes;
    this.mapThreshold = mapThreshold;
    this.betweenPasses = betweenPasses;
    this.keepParts = keepParts;
  }

  /** Whether modules keep their index and canonical parts (see {@link #forDiff()}). */
  private final boolean keepParts;

  /**
   * A reader for {@link GraphDiff}: small files are read onto the heap, large ones mapped as {@code hash} maps
   * them, the mapping kept open while the module is reachable; each module keeps its validated index and its
   * canonical form hashed part by part, computed in the same pass as the fingerprint. A diff of modules read this way costs about what hashing both does; the index takes
   * about 0.6x the file's size in heap while the module is held.
   */
  public static HloModuleReader forDiff() {
    return new HloModuleReader(MAX_MODULE_BYTES, MAP_THRESHOLD, f -> { }, true);
  }

  /** Reads a file whose kind is taken from its name, or sniffed from its content if the name says nothing. */
  public LoadedModule read(Path file) {
    DumpFileName name = DumpFileName.of(file.getFileName().toString());
    boolean gz = name.gzipped() || file.getFileName().toString().endsWith(".gz");
    return read(file, name.kind().orElse(null), gz);
  }

  /** Reads a file as the given kind. */
  public LoadedModule read(Path file, HloFileKind kind) {
    return read(file, kind, file.getFileName().toString().endsWith(".gz"));
  }

  /** {@code kind} null: sniffed from the content. */
  private LoadedModule read(Path file, HloFileKind kind, boolean gz) {
    BasicFileAttributes before = checkedAttributes(file);
    if (!gz && before.size() >= mapThreshold) {
      return keepParts ? readKeptMapping(file, kind, before) : readMapped(file, kind, before);
    }
    byte[] bytes = load(file, gz, before.size());
    MemorySegment segment = MemorySegment.ofArray(bytes);
    long fileBytes = before.size();
    return kind != null ? parse(file, kind, segment, bytes, fileBytes) : sniff(file, segment, bytes, fileBytes);
  }

  /**
   * A diff's read of a large file: mapped, as {@code hash} reads it (no copy), but the mapping stays open until
   * the module is no longer reachable, since the diff reads instructions from it afterwards. The module
   * remembers the file's size and time, and {@link GraphDiff#of} checks them when it is done (a file changed
   * meanwhile is an {@link HloReadException}, never a diff of mixed contents).
   */
  private LoadedModule readKeptMapping(Path file, HloFileKind kind, BasicFileAttributes before) {
    return readMapping(file, kind, before, Arena.ofAuto(), true);
  }

  private LoadedModule readMapped(Path file, HloFileKind kind, BasicFileAttributes before) {
    // Shared, not confined: pass 2 may hand large byte strings to the hashing thread.
    try (Arena arena = Arena.ofShared()) {
      return readMapping(file, kind, before, arena, false);
    }
  }

  /** {@code keep}: the module keeps its index over the mapping (a diff's read), so {@code arena} must outlive it. */
  private LoadedModule readMapping(Path file, HloFileKind kind, BasicFileAttributes before, Arena arena,
      boolean keep) {
    long size = before.size();
    MemorySegment segment;
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      segment = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
    } catch (AccessDeniedException e) {
      throw new HloReadException(file, "permission denied");
    } catch (IOException e) {
      throw new HloReadException(file, ioReason(e), e);
    }
    LoadedModule m;
    try {
      m = kind != null ? parse(file, kind, segment, null, size, keep) : sniff(file, segment, null, size, keep);
    } catch (InternalError e) {
      // The JVM's report of SIGBUS: a page of the mapping is no longer backed by the file.
      throw new HloReadException(file, CHANGED, e);
    } catch (RuntimeException e) {
      if (changedSince(file, before)) {
        throw new HloReadException(file, CHANGED, e);
      }
      throw e;
    }
    if (changedSince(file, before)) {
      throw new HloReadException(file, CHANGED);
    }
    if (keep) {
      m.keepMapped(before);
    }
    return m;
  }

  static boolean changedSince(Path file, BasicFileAttributes before) {
    try {
      BasicFileAttributes now = Files.readAttributes(file, BasicFileAttributes.class);
      return now.size() != before.size() || !now.lastModifiedTime().equals(before.lastModifiedTime());
    } catch (IOException e) {
      return true; // gone or unreadable now
    }
  }

  /** The file's attributes, once it is known to be a non-empty regular file within the size limit. */
  private BasicFileAttributes checkedAttributes(Path file) {
    BasicFileAttributes a;
    try {
      if (Files.isDirectory(file)) {
        throw new HloReadException(file, "is a directory");
      }
      a = Files.readAttributes(file, BasicFileAttributes.class);
    } catch (NoSuchFileException e) {
      throw new HloReadException(file, "no such file");
    } catch (AccessDeniedException e) {
      throw new HloReadException(file, "permission denied");
    } catch (IOException e) {
      throw new HloReadException(file, ioReason(e), e);
    }
    if (a.size() == 0) {
      throw new HloReadException(file, "empty file");
    }
    if (a.size() > maxModuleBytes) {
      throw new HloReadException(file, String.format(Locale.ROOT,
          "file is %,d bytes; xlac reads modules of up to %,d bytes", a.size(), maxModuleBytes));
    }
    return a;
  }

  private byte[] load(Path file, boolean gzipped, long size) {
    try {
      if (!gzipped) {
        return Files.readAllBytes(file);
      }
      try (InputStream in = new GZIPInputStream(Files.newInputStream(file), 1 << 16)) {
        return readCapped(file, in);
      }
    } catch (HloReadException e) {
      throw e;
    } catch (ZipException | EOFException e) {
      throw new HloReadException(file, "corrupt gzip stream (" + lower(e.getMessage(), "truncated") + ")", e);
    } catch (AccessDeniedException e) {
      throw new HloReadException(file, "permission denied");
    } catch (IOException e) {
      throw new HloReadException(file, ioReason(e), e);
    } catch (OutOfMemoryError e) {
      throw new HloReadException(file, "not enough memory to load it (" + size + " bytes)");
    }
  }

  private byte[] readCapped(Path file, InputStream in) throws IOException {
    // Grow as data arrives rather than trusting any declared size: a gzip bomb stops at the cap.
    byte[] buf = new byte[1 << 20];
    int n = 0;
    while (true) {
      if (n == buf.length) {
        if (n >= maxModuleBytes) {
          throw new HloReadException(file, String.format(Locale.ROOT,
              "decompresses to more than %,d bytes; refusing to read further", maxModuleBytes));
        }
        buf = java.util.Arrays.copyOf(buf, (int) Math.min(maxModuleBytes, (long) buf.length * 2));
      }
      int r = in.read(buf, n, buf.length - n);
      if (r < 0) {
        break;
      }
      n += r;
    }
    if (n == 0) {
      throw new HloReadException(file, "empty after decompression");
    }
    return n == buf.length ? buf : java.util.Arrays.copyOf(buf, n);
  }

  /** Parses already-loaded bytes (used for in-memory modules, e.g. from the cache or a bundle). */
  public LoadedModule parse(Path file, HloFileKind kind, byte[] bytes, long fileBytes) {
    return parse(file, kind, MemorySegment.ofArray(bytes), bytes, fileBytes);
  }

  /** {@code heap}: the array behind {@code bytes}, kept by the module; null for a mapped file. */
  private LoadedModule parse(Path file, HloFileKind kind, MemorySegment bytes, byte[] heap, long fileBytes) {
    return parse(file, kind, bytes, heap, fileBytes, heap != null);
  }

  /**
   * {@code outlives}: {@code bytes} stays valid after the read ({@code heap}'s array, or a mapping that stays open
   * while the module is reachable), so a module read for a diff may keep its index over them; false for a mapping
   * that closes when the read ends.
   */
  private LoadedModule parse(Path file, HloFileKind kind, MemorySegment bytes, byte[] heap, long fileBytes,
      boolean outlives) {
    rejectText(file, bytes);
    HloWireIndex index;
    try {
      // The wire bytes are checked as protobuf-java would parse them, then indexed without building objects.
      index = HloWireIndex.read(bytes, 0, (int) bytes.byteSize(), kind);
    } catch (InvalidProtocolBufferException e) {
      throw new HloReadException(file, protobufReason(e), e);
    } catch (HloWireIndex.NoModuleException e) {
      throw new HloReadException(file, kind == HloFileKind.HLO_SNAPSHOT
          ? "not an XLA HloSnapshot (it has no HLO module in field 1)"
          : "not an XLA HloProto dump (it has no HLO module in field 1)");
    } catch (OutOfMemoryError e) {
      throw new HloReadException(file, "not enough memory to parse it (declared sizes exceed the heap)");
    }
    HloModuleValidator.validate(file, index);
    if (!outlives) {
      betweenPasses.accept(file);
    }
    if (keepParts && outlives) {
      CanonicalParts parts = CanonicalParts.withFingerprint(index);
      index.opcodes(parts.opcodeFrom, parts.opcodeTo); // what the diff reads first: now, on the reading thread
      LoadedModule m = new LoadedModule(file, kind, fileBytes, heap,
          Arrays.copyOf(index.moduleSegments, index.moduleSegmentCount * 2), index.moduleName(), parts.fingerprint());
      m.keep(index, parts);
      return m;
    }
    GraphFingerprint fingerprint = GraphFingerprint.of(index);
    return new LoadedModule(file, kind, fileBytes, heap,
        Arrays.copyOf(index.moduleSegments, index.moduleSegmentCount * 2), index.moduleName(), fingerprint);
  }

  /**
   * Works out the kind of a file whose name says nothing. An HloProto and an HloModuleProto both
   * start with a length-delimited field 1, so the content decides: a module has computations.
   */
  private LoadedModule sniff(Path file, MemorySegment bytes, byte[] heap, long fileBytes) {
    return sniff(file, bytes, heap, fileBytes, heap != null);
  }

  private LoadedModule sniff(Path file, MemorySegment bytes, byte[] heap, long fileBytes, boolean outlives) {
    rejectText(file, bytes);
    for (HloFileKind kind : new HloFileKind[] {HloFileKind.HLO_PROTO, HloFileKind.HLO_SNAPSHOT, HloFileKind.HLO_MODULE}) {
      try {
        // A valid reading has at least one computation, which is what tells the kinds apart.
        return parse(file, kind, bytes, heap, fileBytes, outlives);
      } catch (HloReadException e) {
        // try the next interpretation
      }
    }
    // Report the reason for the most common kind, so the message is about the file.
    try {
      return parse(file, HloFileKind.HLO_PROTO, bytes, heap, fileBytes, outlives);
    } catch (HloReadException e) {
      throw new HloReadException(file, "not an HLO module, HloProto or HloSnapshot (" + e.reason() + ")", e);
    }
  }

  private static void rejectText(Path file, MemorySegment bytes) {
    byte[] first = bytes.asSlice(0, Math.min(bytes.byteSize(), 64)).toArray(ValueLayout.JAVA_BYTE);
    String head = new String(first, StandardCharsets.ISO_8859_1);
    if (head.startsWith("HloModule ")) {
      throw new HloReadException(file,
          "this is an HLO text dump; xlac reads protos: dump with XLA_FLAGS=--xla_dump_hlo_as_proto");
    }
    if (head.startsWith("module @") || head.startsWith("#loc") || head.startsWith("module {")) {
      throw new HloReadException(file, "this is MLIR/StableHLO text; xlac reads HLO protos: dump with XLA_FLAGS=--xla_dump_hlo_as_proto");
    }
  }

  static String protobufReason(InvalidProtocolBufferException e) {
    String m = e.getMessage() == null ? "" : e.getMessage();
    if (m.contains("input ended unexpectedly") || m.contains("truncated")) {
      return "truncated protobuf (a field runs past the end of the data)";
    }
    if (m.contains("too large")) {
      return "truncated or corrupt protobuf (a field declares a length beyond the end of the data)";
    }
    if (m.contains("too many levels of nesting")) {
      return "protobuf nested more than " + RECURSION_LIMIT + " levels deep";
    }
    if (m.contains("negative size")) {
      return "corrupt protobuf (a field declares a negative length)";
    }
    if (m.contains("invalid tag") || m.contains("invalid wire type") || m.contains("malformed varint")
        || m.contains("end-group tag")) {
      return "not a valid protobuf (" + lower(m, "corrupt") + ")";
    }
    if (m.contains("UTF-8")) {
      return "corrupt protobuf (a string field is not valid UTF-8)";
    }
    return "corrupt protobuf (" + lower(m, "unknown reason") + ")";
  }

  private static String lower(String message, String fallback) {
    if (message == null || message.isBlank()) {
      return fallback;
    }
    String m = message.strip();
    if (m.endsWith(".")) {
      m = m.substring(0, m.length() - 1);
    }
    return Character.toLowerCase(m.charAt(0)) + m.substring(1);
  }

  private static String ioReason(IOException e) {
    return lower(XlacException.reason(e), "I/O error");
  }
}
