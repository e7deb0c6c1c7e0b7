package dev.xlac.hlo;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * The canonical fingerprint of an HLO module: {@code hlo1:} followed by 64 hex digits of SHA-256
 * over the module's canonical form. Equal for the same program across runs, processes, file
 * names and function names; different whenever the compiled program could differ. The
 * specification is in hlo/README.md; the version prefix changes whenever the canonical form does.
 */
public record GraphFingerprint(String value) implements Comparable<GraphFingerprint>, dev.xlac.core.ProgramKey {
  public static final String VERSION = "hlo1";
  private static final Pattern FORMAT = Pattern.compile("^hlo1:[0-9a-f]{64}$");
  /** What the canonical form is prefixed with in the digest (hlo/README.md). */
  static final byte[] DOMAIN = "xlac canonical HLO module, version 1\0".getBytes(StandardCharsets.US_ASCII);

  public GraphFingerprint {
    if (!FORMAT.matcher(value).matches()) {
      throw new IllegalArgumentException("not an xlac graph fingerprint: " + value);
    }
  }

  /** Fingerprints a module; a structurally broken module is an {@link IllegalArgumentException}. */
  public static GraphFingerprint of(HloModuleProto module) {
    byte[] bytes = module.toByteArray();
    HloWireIndex index;
    try {
      index = HloWireIndex.read(bytes, 0, bytes.length, HloFileKind.HLO_MODULE);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalArgumentException("the module cannot be read back: " + HloModuleReader.protobufReason(e), e);
    } catch (HloWireIndex.NoModuleException e) {
      throw new IllegalStateException("a bare module always has a module", e);
    }
    index.validate();
    return of(index);
  }

  /** Pass 2 over a read and validated module: its canonical form, streamed into SHA-256. */
  static GraphFingerprint of(HloWireIndex index) {
    CanonicalSink.Digest sink = new CanonicalSink.Digest(newDigest());
    new CanonicalWireEncoder(index, sink).module();
    return ofDigest(sink.finish());
  }

  /** The fingerprint's SHA-256, already fed the domain string: the canonical form goes next. */
  static MessageDigest newDigest() {
    MessageDigest sha;
    try {
      sha = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
    sha.update(DOMAIN);
    return sha;
  }

  /** The fingerprint of a finished {@link #newDigest()}. */
  static GraphFingerprint ofDigest(byte[] digest) {
    return new GraphFingerprint(VERSION + ":" + HexFormat.of().formatHex(digest));
  }

  /**
   * What a user's fingerprint argument names: the lowercase hex digits of a full fingerprint or of a
   * prefix of at least 6 digits, with or without {@code hlo1:}; null when {@code text} is neither.
   */
  public static String prefixDigits(String text) {
    String t = text.strip().toLowerCase(java.util.Locale.ROOT);
    if (t.startsWith(VERSION + ":")) {
      t = t.substring(VERSION.length() + 1);
    }
    return t.matches("[0-9a-f]{6,64}") ? t : null;
  }

  /** Parses user input: a full fingerprint. */
  public static GraphFingerprint parse(String text) {
    return new GraphFingerprint(text.strip().toLowerCase(java.util.Locale.ROOT));
  }

  /** The first 12 hex digits, as shown in tables. */
  @Override
  public String shortForm() {
    return value.substring(VERSION.length() + 1, VERSION.length() + 13);
  }

  /** {@code jit_step (0123456789ab)}: how messages and progress lines name a graph. */
  @Override
  public String describe(String moduleName) {
    return moduleName + " (" + shortForm() + ")";
  }

  /** The 32 digest bytes. */
  public byte[] digest() {
    return HexFormat.of().parseHex(value, VERSION.length() + 1, value.length());
  }

  @Override
  public int compareTo(GraphFingerprint o) {
    return value.compareTo(o.value);
  }

  @Override
  public String toString() {
    return value;
  }
}
