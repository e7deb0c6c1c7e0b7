package dev.xlac.cache.store;

import dev.xlac.hlo.GraphFingerprint;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HexFormat;

/** Binary key layouts of the column families (see cache/README.md, "On-disk schema"). */
public final class Keys {
  public static final int DIGEST = 32;
  public static final int ARTIFACT = 2 * DIGEST;
  public static final byte KIND_ARTIFACT = 0;
  public static final byte KIND_GRAPH = 1;
  /** A recorded PJRT compile request with its executable (schema version 4); its id is the key's 32 digest bytes. */
  public static final byte KIND_REQUEST = 2;

  private Keys() {}

  public static byte[] artifact(byte[] graph, byte[] compiler) {
    byte[] k = Arrays.copyOf(graph, ARTIFACT);
    System.arraycopy(compiler, 0, k, DIGEST, DIGEST);
    return k;
  }

  public static byte[] graphOf(byte[] artifactKey) {
    return Arrays.copyOf(artifactKey, DIGEST);
  }

  public static byte[] compilerOf(byte[] artifactKey) {
    return Arrays.copyOfRange(artifactKey, DIGEST, ARTIFACT);
  }

  /** The access index: last access (big-endian millis, so iteration is oldest first), kind, id. */
  public static byte[] access(long lastAccessMillis, byte kind, byte[] id) {
    ByteBuffer b = ByteBuffer.allocate(9 + id.length);
    b.putLong(lastAccessMillis ^ Long.MIN_VALUE).put(kind).put(id);
    return b.array();
  }

  public static long accessTime(byte[] key) {
    return ByteBuffer.wrap(key).getLong() ^ Long.MIN_VALUE;
  }

  public static byte accessKind(byte[] key) {
    return key[8];
  }

  public static byte[] accessId(byte[] key) {
    return Arrays.copyOfRange(key, 9, key.length);
  }

  public static String hex(byte[] b) {
    return HexFormat.of().formatHex(b);
  }

  /** The fingerprint whose digest is {@code digest} (a graph key). */
  public static GraphFingerprint fingerprint(byte[] digest) {
    return new GraphFingerprint(GraphFingerprint.VERSION + ":" + hex(digest));
  }

  public static boolean startsWith(byte[] key, byte[] prefix) {
    return key.length >= prefix.length && Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length);
  }
}
