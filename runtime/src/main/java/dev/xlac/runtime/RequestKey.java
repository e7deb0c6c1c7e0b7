package dev.xlac.runtime;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The key of one PJRT compile request ({@code pjrt1:} + 64 hex digits; runtime/README.md "The request key").
 * <p>Placeholder for the cache side (helper H2): the options are hashed as given, without the canonical form;
 * H1's version, with {@code CanonicalOptions}, replaces this file.
 */
public record RequestKey(byte[] digest) {
  public static final String VERSION = "pjrt1";
  private static final String PREFIX = VERSION + ":";
  private static final byte[] DOMAIN = "xlac-pjrt-request/1\0".getBytes(StandardCharsets.US_ASCII);

  public RequestKey {
    if (digest == null || digest.length != 32) {
      throw new IllegalArgumentException("a request key has 32 digest bytes");
    }
    digest = digest.clone();
  }

  @Override
  public byte[] digest() {
    return digest.clone();
  }

  /** {@code pjrt1:<64 lowercase or uppercase hex>}; IllegalArgumentException otherwise. */
  public static RequestKey parse(String text) {
    if (text == null || !text.startsWith(PREFIX) || text.length() != PREFIX.length() + 64) {
      throw new IllegalArgumentException("not a request key (pjrt1: and 64 hex digits): " + text);
    }
    try {
      return new RequestKey(HexFormat.of().parseHex(text.substring(PREFIX.length())));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("not a request key (pjrt1: and 64 hex digits): " + text);
    }
  }

  public String text() {
    return PREFIX + hex();
  }

  public String hex() {
    return HexFormat.of().formatHex(digest);
  }

  public static RequestKey of(byte[] format, byte[] program, byte[] options, byte[] identityText) {
    MessageDigest sha;
    try {
      sha = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    sha.update(DOMAIN);
    for (byte[] part : new byte[][] {format, program, options, identityText}) {
      sha.update(ByteBuffer.allocate(8).putLong(part.length).array());
      sha.update(part);
    }
    return new RequestKey(sha.digest());
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
}
