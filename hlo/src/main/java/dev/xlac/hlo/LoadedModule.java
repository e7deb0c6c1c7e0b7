package dev.xlac.hlo;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.ExtensionRegistryLite;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnsafeByteOperations;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * An HLO module read from a file and validated: where it came from, its kind, its name and
 * fingerprint, the size of the file on disk, and the module's bytes (for a dump or snapshot, the
 * HloModuleProto inside its HloProto is a slice of the file).
 *
 * <p>The fingerprint is computed from the wire bytes when the file is read; the protobuf object
 * model ({@link #module()}) is only built when asked for, since it costs several times the file's
 * size in heap for modules with many small instructions.
 *
 * <p>A large file is fingerprinted from a read-only mapping that is closed when the read ends, so
 * such a module holds no bytes: {@link #moduleBytes()} and {@link #module()} read the file again on
 * first use, check that it still has this fingerprint, and keep those bytes.
 */
public final class LoadedModule {
  private final Path file;
  private final HloFileKind kind;
  private final long fileBytes;
  /** The file's bytes (inflated, for a gzipped dump); null until first use for a mapped file. */
  private byte[] bytes;
  /** Ranges (start, end pairs) of {@link #bytes} that make up the HloModuleProto, in order. */
  private int[] moduleSegments;
  private final String moduleName;
  private final GraphFingerprint fingerprint;
  private HloModuleProto module;
  /** Kept by a {@link HloModuleReader#forDiff()} reader: the validated index and the canonical parts. */
  private HloWireIndex keptIndex;
  private CanonicalParts keptParts;

  LoadedModule(Path file, HloFileKind kind, long fileBytes, byte[] bytes, int[] moduleSegments, String moduleName,
      GraphFingerprint fingerprint) {
    this.file = file;
    this.kind = kind;
    this.fileBytes = fileBytes;
    this.bytes = bytes;
    this.moduleSegments = moduleSegments;
    this.moduleName = moduleName;
    this.fingerprint = fingerprint;
  }

  public Path file() {
    return file;
  }

  public HloFileKind kind() {
    return kind;
  }

  /** The size of the file on disk (compressed, for a gzipped dump), or -1 if unknown. */
  public long fileBytes() {
    return fileBytes;
  }

  public String moduleName() {
    return moduleName;
  }

  public GraphFingerprint fingerprint() {
    return fingerprint;
  }

  /**
   * The serialized HloModuleProto, exactly as it is in the file (what PJRT's "hlo" format and
   * Neuron's {@code model.hlo_module.pb} take), without parsing it into objects.
   */
  public byte[] moduleBytes() {
    byte[] bytes = bytes();
    int[] moduleSegments = this.moduleSegments;
    if (moduleSegments.length == 2) {
      return Arrays.copyOfRange(bytes, moduleSegments[0], moduleSegments[1]);
    }
    // The field appeared more than once: protobuf merges the parts, and so does their concatenation.
    int size = 0;
    for (int i = 0; i < moduleSegments.length; i += 2) {
      size += moduleSegments[i + 1] - moduleSegments[i];
    }
    byte[] out = new byte[size];
    int at = 0;
    for (int i = 0; i < moduleSegments.length; i += 2) {
      int len = moduleSegments[i + 1] - moduleSegments[i];
      System.arraycopy(bytes, moduleSegments[i], out, at, len);
      at += len;
    }
    return out;
  }

  /**
   * The file's bytes; for a file that was mapped, read again now and checked against the
   * fingerprint, since the file may have been rewritten since. A mismatch is an {@link HloReadException}.
   */
  private synchronized byte[] bytes() {
    if (bytes == null) {
      LoadedModule again = new HloModuleReader(HloModuleReader.MAX_MODULE_BYTES, Long.MAX_VALUE, f -> { })
          .read(file, kind);
      if (!again.fingerprint.equals(fingerprint)) {
        throw new HloReadException(file, "file changed since it was read (fingerprint " + fingerprint.shortForm()
            + " then, " + again.fingerprint.shortForm() + " now)");
      }
      moduleSegments = again.moduleSegments;
      bytes = again.bytes;
    }
    return bytes;
  }

  /** The module as protobuf objects, parsed on first use (the bytes were already checked when the file was read). */
  public synchronized HloModuleProto module() {
    if (module == null) {
      byte[] bytes = bytes();
      CodedInputStream in = moduleSegments.length == 2
          ? UnsafeByteOperations.unsafeWrap(bytes, moduleSegments[0], moduleSegments[1] - moduleSegments[0]).newCodedInput()
          : CodedInputStream.newInstance(moduleBytes());
      in.enableAliasing(true);
      in.setRecursionLimit(HloModuleReader.RECURSION_LIMIT);
      try {
        module = HloModuleProto.parseFrom(in, ExtensionRegistryLite.getEmptyRegistry());
      } catch (java.io.IOException e) {
        throw new IllegalStateException("a checked module failed to parse: " + file, e);
      }
    }
    return module;
  }

  /**
   * The module's wire index, read again from its bytes and validated: the canonical order of its
   * computations and instructions by file position, for what needs more than the fingerprint
   * ({@link ModuleSummary}). Not kept: the fingerprint path drops its index once it has hashed.
   */
  HloWireIndex index() {
    if (keptIndex != null) {
      return keptIndex;
    }
    byte[] bytes = bytes();
    int[] segments = moduleSegments;
    byte[] wire = segments.length == 2 ? bytes : moduleBytes();
    int from = segments.length == 2 ? segments[0] : 0;
    int to = segments.length == 2 ? segments[1] : wire.length;
    try {
      HloWireIndex index = HloWireIndex.read(wire, from, to - from, HloFileKind.HLO_MODULE);
      index.validate();
      return index;
    } catch (InvalidProtocolBufferException | HloWireIndex.NoModuleException | IllegalArgumentException e) {
      throw new IllegalStateException("a checked module failed to read again: " + file, e);
    }
  }

  /** A diff's module read from a mapping it keeps: the file's size and time when it was read. */
  private java.nio.file.attribute.BasicFileAttributes mappedFrom;

  void keepMapped(java.nio.file.attribute.BasicFileAttributes before) {
    mappedFrom = before;
  }

  /**
   * For a module whose index reads a mapping of its file: throws an {@link HloReadException} if the file changed
   * since it was read (what was read from the mapping may then be of two versions).
   */
  void checkUnchanged() {
    if (mappedFrom != null && HloModuleReader.changedSince(file, mappedFrom)) {
      throw new HloReadException(file, HloModuleReader.CHANGED);
    }
  }

  void keep(HloWireIndex index, CanonicalParts parts) {
    keptIndex = index;
    keptParts = parts;
  }

  /** The canonical parts a {@link HloModuleReader#forDiff()} reader kept, else null. */
  CanonicalParts keptParts() {
    return keptParts;
  }

  @Override
  public String toString() {
    return "LoadedModule[" + file + ", " + kind + ", " + moduleName + ", " + fingerprint + "]";
  }
}
