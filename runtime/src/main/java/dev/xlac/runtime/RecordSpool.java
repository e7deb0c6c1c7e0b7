package dev.xlac.runtime;

import dev.xlac.core.XlacException;
import dev.xlac.core.io.PrivateFiles;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The record spool the proxy writes in record mode (runtime/README.md "The record spool"): {@code SPOOL/<hex>.xpr},
 * one file per request key, and {@code SPOOL/.tmp-*} writes in progress.
 */
public final class RecordSpool {
  /** The magic of a record file. */
  public static final byte[] MAGIC = "XLACPJR1".getBytes(StandardCharsets.US_ASCII);
  /** What a record file's name ends with. */
  public static final String SUFFIX = ".xpr";
  /** The prefix of a write in progress. */
  public static final String TEMPORARY_PREFIX = ".tmp-";
  /** The largest section this reader holds (a Java array). */
  static final long MAX_SECTION = Integer.MAX_VALUE - 16;
  private static final Pattern KEY_NAME = Pattern.compile("[0-9a-f]{64}\\.xpr");
  private static final String[] SECTIONS = {"format", "program", "options", "identity", "executable"};

  private RecordSpool() {}

  /**
   * Reads one record file, checking its magic, its lengths, its SHA-256 and its key (recomputed from the sections;
   * a file named {@code <hex>.xpr} must also be named after it). An unreadable file is an IOException, a whole
   * record with a section too large for a Java array a {@link TooLargeException}; a file that is not a whole, intact
   * record an {@link XlacException} (bad input) naming the file and the reason, a {@link KeyMismatchException} when
   * it is whole but its key was computed differently from {@link RequestKey#of}.
   */
  public static RecordedRequest read(Path file) throws IOException {
    // A FIFO or a device is never opened: a FIFO would wait for a writer for ever.
    var attributes = Files.readAttributes(file, java.nio.file.attribute.BasicFileAttributes.class,
        LinkOption.NOFOLLOW_LINKS);
    if (!attributes.isRegularFile()) {
      throw bad(file, "not a regular file");
    }
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
      long size = ch.size();
      Reader r = new Reader(file, ch, size);
      byte[] magic = r.bytes(MAGIC.length, "magic");
      if (!Arrays.equals(magic, MAGIC)) {
        throw bad(file, "not a record file (no XLACPJR1 magic)");
      }
      byte[] digest = r.bytes(32, "key");
      byte[][] sections = new byte[SECTIONS.length][];
      for (int i = 0; i < SECTIONS.length; i++) {
        long length = r.u64(SECTIONS[i] + " length");
        if (length < 0 || length > r.remaining()) {
          throw bad(file, "cut short or damaged: the " + SECTIONS[i] + " section's length (" + Long.toUnsignedString(length)
              + " bytes) runs past the end of the file");
        }
        if (length > MAX_SECTION) {
          throw new TooLargeException(file, SECTIONS[i], length);
        }
        sections[i] = r.bytes((int) length, SECTIONS[i]);
      }
      long compileNanos = r.u64("compile time");
      byte[] expected = r.sha.digest();
      byte[] stored = r.bytes(32, "checksum");
      if (r.remaining() != 0) {
        throw bad(file, (size - r.position) + " bytes follow the checksum");
      }
      if (!MessageDigest.isEqual(expected, stored)) {
        throw bad(file, "its SHA-256 does not match its bytes (damaged or cut short)");
      }
      String identity;
      try {
        identity = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(sections[3])).toString();
      } catch (CharacterCodingException e) {
        throw bad(file, "its plugin identity text is not UTF-8");
      }
      RequestKey key = new RequestKey(digest);
      RequestKey computed = RequestKey.of(sections[0], sections[1], sections[2], sections[3]);
      if (!computed.equals(key)) {
        throw new KeyMismatchException(file, key, computed);
      }
      String name = file.getFileName().toString();
      if (KEY_NAME.matcher(name).matches() && !name.equals(key.hex() + SUFFIX)) {
        throw bad(file, "it holds the request " + key.text() + ", not the one it is named after");
      }
      if (compileNanos < 0) {
        throw bad(file, "its compile time is out of range");
      }
      return new RecordedRequest(key, sections[0], sections[1], sections[2], identity, sections[4], compileNanos);
    }
  }

  /** A record file's bytes (what the proxy writes; for tests and tools). */
  public static byte[] encode(RecordedRequest r) {
    byte[] identity = r.identityText().getBytes(StandardCharsets.UTF_8);
    byte[][] sections = {r.format(), r.program(), r.options(), identity, r.executable()};
    long total = MAGIC.length + 32 + 8L * sections.length + 8 + 32;
    for (byte[] s : sections) {
      total += s.length;
    }
    if (total > Integer.MAX_VALUE - 16) {
      throw new IllegalArgumentException("record too large to encode in memory: " + total + " bytes");
    }
    ByteBuffer b = ByteBuffer.allocate((int) total).order(ByteOrder.LITTLE_ENDIAN);
    b.put(MAGIC).put(r.key().digest());
    for (byte[] s : sections) {
      b.putLong(s.length).put(s);
    }
    b.putLong(r.compileNanos());
    MessageDigest sha = RequestKey.sha256();
    sha.update(b.array(), 0, b.position());
    b.put(sha.digest());
    return b.array();
  }

  /** Writes {@code r} into {@code spool} as {@code <hex>.xpr}, atomically (a temporary, fsync, rename). */
  public static Path write(Path spool, RecordedRequest r) throws IOException {
    PrivateFiles.createDirectories(spool);
    Path target = spool.resolve(r.key().hex() + SUFFIX);
    PrivateFiles.writeBytes(target, encode(r));
    return target;
  }


  /**
   * Every record file in {@code spool} ({@code *.xpr}, regular files, not hidden), sorted by name, which for the
   * proxy's {@code <hex>.xpr} names is key order. Writes in progress ({@code .tmp-*}) are not listed.
   */
  public static List<Path> files(Path spool) throws IOException {
    List<Path> out = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(spool, RecordSpool::isRecordName)) {
      for (Path p : entries) {
        if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
          out.add(p);
        }
      }
    }
    out.sort((a, b) -> a.getFileName().toString().compareTo(b.getFileName().toString()));
    return out;
  }

  /** The writes in progress in {@code spool} ({@code .tmp-*} regular files). */
  public static List<Path> temporaries(Path spool) throws IOException {
    List<Path> out = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(spool,
        p -> p.getFileName().toString().startsWith(TEMPORARY_PREFIX))) {
      for (Path p : entries) {
        if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
          out.add(p);
        }
      }
    }
    out.sort(null);
    return out;
  }

  /** True when {@code dir} is a directory holding at least one record file. */
  public static boolean looksLikeSpool(Path dir) {
    if (!Files.isDirectory(dir)) {
      return false;
    }
    try {
      return !files(dir).isEmpty();
    } catch (IOException e) {
      return false;
    }
  }

  private static boolean isRecordName(Path p) {
    String name = p.getFileName().toString();
    return name.endsWith(SUFFIX) && !name.startsWith(".") && name.length() > SUFFIX.length();
  }

  /**
   * A whole record whose section is larger than this reader can hold (a Java array): not damaged, just too large to
   * take in. What the ingest leaves in the spool rather than rejecting.
   */
  public static final class TooLargeException extends IOException {
    private static final long serialVersionUID = 1L;

    TooLargeException(Path file, String section, long length) {
      super("record " + file + ": its " + section + " section (" + length + " bytes) is larger than this xlac can take"
          + " in (at most " + MAX_SECTION + " bytes)");
    }
  }

  /**
   * A record whose stored key is not the key this xlac computes from its sections: the proxy computed it differently
   * (another version of the key's rules), or the file is not what it claims. Bad input, kept apart from damage so
   * that a caller can keep the record for a later xlac rather than throw it away.
   */
  public static final class KeyMismatchException extends XlacException {
    private static final long serialVersionUID = 1L;
    private final RequestKey stored;
    private final RequestKey computed;

    KeyMismatchException(Path file, RequestKey stored, RequestKey computed) {
      super(dev.xlac.core.ExitCode.BAD_INPUT, "record " + file + ": its key " + stored.text() + " was computed"
          + " differently from this xlac's key of its request (" + computed.text() + ")");
      this.stored = stored;
      this.computed = computed;
    }

    public RequestKey stored() {
      return stored;
    }

    public RequestKey computed() {
      return computed;
    }
  }

  private static XlacException bad(Path file, String reason) {
    return XlacException.badInput("record " + file + ": " + reason);
  }

  /** Reads the file front to back, hashing every byte it hands out. */
  private static final class Reader {
    private final Path file;
    private final FileChannel ch;
    private final long size;
    private final MessageDigest sha;
    private long position;

    Reader(Path file, FileChannel ch, long size) {
      this.file = file;
      this.ch = ch;
      this.size = size;
      this.sha = RequestKey.sha256();
    }

    long remaining() {
      return size - position;
    }

    long u64(String what) throws IOException {
      byte[] b = bytes(8, what);
      return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getLong();
    }

    byte[] bytes(int n, String what) throws IOException {
      if (n > remaining()) {
        throw bad(file, "cut short in its " + what + " (" + size + " bytes)");
      }
      byte[] out = new byte[n];
      ByteBuffer buf = ByteBuffer.wrap(out);
      while (buf.hasRemaining()) {
        if (ch.read(buf, position + buf.position()) < 0) {
          throw new EOFException(file + " shrank while it was read");
        }
      }
      position += n;
      if (!"checksum".equals(what)) {
        sha.update(out);
      }
      return out;
    }
  }
}
