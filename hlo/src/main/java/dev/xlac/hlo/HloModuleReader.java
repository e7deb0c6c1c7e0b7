package dev.xlac.hlo;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.ExtensionRegistryLite;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnsafeByteOperations;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;

/**
 * Reads one file holding a compiler-input HLO module: an XLA dump ({@code *.hlo.pb}, optionally
 * gzipped), an XLA snapshot ({@code *.hlo_snapshot.pb}) or a bare HloModuleProto (Neuron's
 * {@code model.hlo_module.pb}).
 *
 * <p>Hostile input is expected: sizes are checked before allocation, gzip output is capped,
 * protobuf nesting is bounded, and every failure becomes an {@link HloReadException} that names
 * the file and the reason in one line. Parsing aliases the file's bytes, so large constants are
 * not copied a second time.
 */
public final class HloModuleReader {
  /** Java arrays end a little below 2 GiB; no real module comes near it. */
  public static final long MAX_MODULE_BYTES = Integer.MAX_VALUE - 64;
  /** XLA's own messages nest a few levels deep (tuple shapes, literals); hostile files nest more. */
  static final int RECURSION_LIMIT = 100;

  private final long maxModuleBytes;

  public HloModuleReader() {
    this(MAX_MODULE_BYTES);
  }

  public HloModuleReader(long maxModuleBytes) {
    this.maxModuleBytes = maxModuleBytes;
  }

  /** Reads a file whose kind is taken from its name, or sniffed from its content if the name says nothing. */
  public LoadedModule read(Path file) {
    DumpFileName name = DumpFileName.of(file.getFileName().toString());
    boolean gz = name.gzipped() || file.getFileName().toString().endsWith(".gz");
    byte[] bytes = load(file, gz);
    long fileBytes = fileSize(file);
    if (name.kind().isPresent()) {
      return parse(file, name.kind().get(), bytes, fileBytes);
    }
    return sniff(file, bytes, fileBytes);
  }

  /** Reads a file as the given kind. */
  public LoadedModule read(Path file, HloFileKind kind) {
    boolean gz = file.getFileName().toString().endsWith(".gz");
    return parse(file, kind, load(file, gz), fileSize(file));
  }

  private static long fileSize(Path file) {
    try {
      return Files.size(file);
    } catch (IOException e) {
      return -1;
    }
  }

  byte[] load(Path file, boolean gzipped) {
    long size;
    try {
      if (Files.isDirectory(file)) {
        throw new HloReadException(file, "is a directory");
      }
      size = Files.size(file);
    } catch (NoSuchFileException e) {
      throw new HloReadException(file, "no such file");
    } catch (AccessDeniedException e) {
      throw new HloReadException(file, "permission denied");
    } catch (IOException e) {
      throw new HloReadException(file, ioReason(e), e);
    }
    if (size == 0) {
      throw new HloReadException(file, "empty file");
    }
    if (size > maxModuleBytes) {
      throw new HloReadException(file, String.format(Locale.ROOT,
          "file is %,d bytes; xlac reads modules of up to %,d bytes", size, maxModuleBytes));
    }
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
    rejectText(file, bytes);
    HloWireIndex index;
    try {
      // The wire bytes are checked as protobuf-java would parse them, then indexed without building objects.
      index = HloWireIndex.read(bytes, 0, bytes.length, kind);
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
    GraphFingerprint fingerprint = GraphFingerprint.of(index);
    return new LoadedModule(file, kind, fileBytes, bytes,
        Arrays.copyOf(index.moduleSegments, index.moduleSegmentCount * 2), index.moduleName(), fingerprint);
  }

  /**
   * Works out the kind of a file whose name says nothing. An HloProto and an HloModuleProto both
   * start with a length-delimited field 1, so the content decides: a module has computations.
   */
  private LoadedModule sniff(Path file, byte[] bytes, long fileBytes) {
    rejectText(file, bytes);
    for (HloFileKind kind : new HloFileKind[] {HloFileKind.HLO_PROTO, HloFileKind.HLO_SNAPSHOT, HloFileKind.HLO_MODULE}) {
      try {
        // A valid reading has at least one computation, which is what tells the kinds apart.
        return parse(file, kind, bytes, fileBytes);
      } catch (HloReadException e) {
        // try the next interpretation
      }
    }
    // Report the reason for the most common kind, so the message is about the file.
    try {
      return parse(file, HloFileKind.HLO_PROTO, bytes, fileBytes);
    } catch (HloReadException e) {
      throw new HloReadException(file, "not an HLO module, HloProto or HloSnapshot (" + e.reason() + ")", e);
    }
  }

  private static void rejectText(Path file, byte[] bytes) {
    String head = new String(bytes, 0, Math.min(bytes.length, 64), StandardCharsets.ISO_8859_1);
    if (head.startsWith("HloModule ")) {
      throw new HloReadException(file,
          "this is an HLO text dump; xlac reads protos: dump with XLA_FLAGS=--xla_dump_hlo_as_proto");
    }
    if (head.startsWith("module @") || head.startsWith("#loc") || head.startsWith("module {")) {
      throw new HloReadException(file, "this is MLIR/StableHLO text; xlac reads HLO protos: dump with XLA_FLAGS=--xla_dump_hlo_as_proto");
    }
  }

  private static CodedInputStream stream(byte[] bytes) {
    // Wrapping marks the buffer immutable, which is what lets the parser alias bytes fields
    // (constants) instead of copying them; the buffer is never written after this point.
    CodedInputStream in = UnsafeByteOperations.unsafeWrap(bytes).newCodedInput();
    in.enableAliasing(true);
    in.setRecursionLimit(RECURSION_LIMIT);
    return in;
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
    return lower(e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage(), "I/O error");
  }
}
