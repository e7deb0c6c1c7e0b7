package dev.xlac.runtime;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The key of one compile request as the PJRT proxy computes it ({@code pjrt1}, runtime/README.md): the
 * SHA-256 of the program format, the {@link CanonicalProgram canonical program}, the canonical compile options
 * and the plugin identity text, each with its length. The C side ({@code src/main/c/key.c}) computes the same bytes; the tests check
 * one against the other.
 *
 * @param digest the 32 bytes of the SHA-256
 */
public record RequestKey(byte[] digest) implements Comparable<RequestKey>, dev.xlac.core.ProgramKey {
  public static final String VERSION = "pjrt1";
  private static final String PREFIX = VERSION + ":";
  private static final byte[] TAG = "xlac-pjrt-request/2\0".getBytes(StandardCharsets.US_ASCII);
  /** The tag of the keys of xlac versions that hashed the program as passed (before the canonical program). */
  private static final byte[] TAG_1 = "xlac-pjrt-request/1\0".getBytes(StandardCharsets.US_ASCII);
  private static final HexFormat HEX = HexFormat.of();

  public RequestKey {
    if (digest == null || digest.length != 32) {
      throw new IllegalArgumentException("a request key is 32 bytes");
    }
    digest = digest.clone();
  }

  @Override
  public byte[] digest() {
    return digest.clone();
  }

  /** Parses {@code pjrt1:<64 lowercase or uppercase hex digits>}. */
  public static RequestKey parse(String text) {
    if (text == null || !text.startsWith(PREFIX) || text.length() != PREFIX.length() + 64) {
      throw new IllegalArgumentException("not a " + VERSION + " request key: " + text);
    }
    try {
      return new RequestKey(HEX.parseHex(text, PREFIX.length(), text.length()));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("not a " + VERSION + " request key: " + text);
    }
  }

  /** The key of a compile request. {@code program} and {@code options} are the bytes the framework passed; they
   * are put in {@link CanonicalProgram canonical} and {@link CanonicalOptions canonical form} here. */
  public static RequestKey of(byte[] format, byte[] program, byte[] options, byte[] identityText) {
    return hash(TAG, format, CanonicalProgram.keyed(format, program), CanonicalOptions.canonical(options),
        identityText);
  }

  /**
   * Whether this is the key of the request made of these sections, by this xlac's rule ({@link #of}) or by the
   * rule of the xlac versions before the canonical program ({@code xlac-pjrt-request/1}: the program as passed).
   * A cache or bundle written by such a version holds entries under their old keys: they are intact, only never
   * served (the proxy asks for the new key), so they must not be taken for damaged.
   */
  public boolean isKeyOf(byte[] format, byte[] program, byte[] options, byte[] identityText) {
    return equals(of(format, program, options, identityText)) || isVersion1KeyOf(format, program, options,
        identityText);
  }

  /** Whether this is the key of these sections by the rule of {@code xlac-pjrt-request/1} (see {@link #isKeyOf}). */
  public boolean isVersion1KeyOf(byte[] format, byte[] program, byte[] options, byte[] identityText) {
    return equals(hash(TAG_1, format, program, CanonicalOptions.canonical(options), identityText));
  }

  private static RequestKey hash(byte[] tag, byte[] format, byte[] keyedProgram, byte[] canonicalOptions,
      byte[] identityText) {
    MessageDigest sha = sha256();
    sha.update(tag);
    for (byte[] part : new byte[][] {format, keyedProgram, canonicalOptions, identityText}) {
      sha.update(ByteBuffer.allocate(8).putLong(part.length).array()); // big-endian u64
      sha.update(part);
    }
    return new RequestKey(sha.digest());
  }

  /** {@code pjrt1:<hex>}. */
  public String text() {
    return PREFIX + hex();
  }

  /** {@code pjrt1:<hex>}, as {@link #text()}: the key as compile runs and their reports name it. */
  @Override
  public String value() {
    return text();
  }

  /** The 64 lowercase hex digits. */
  public String hex() {
    return HEX.formatHex(digest);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RequestKey k && Arrays.equals(digest, k.digest);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(digest);
  }

  @Override
  public String toString() {
    return text();
  }

  /** Key order: bytewise, unsigned (the order of the hex text). */
  @Override
  public int compareTo(RequestKey o) {
    return Arrays.compareUnsigned(digest, o.digest);
  }

  static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("this Java has no SHA-256", e);
    }
  }
}
