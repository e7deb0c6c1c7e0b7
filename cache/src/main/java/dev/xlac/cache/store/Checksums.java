package dev.xlac.cache.store;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/** SHA-256, the checksum of every stored value and bundle entry. */
public final class Checksums {
  private Checksums() {}

  public static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  public static byte[] sha256(byte[] data) {
    return sha256().digest(data);
  }

  public static boolean matches(byte[] data, byte[] expected) {
    return data != null && MessageDigest.isEqual(sha256(data), expected);
  }
}
