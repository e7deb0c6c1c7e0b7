package dev.xlac.hlo;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;

/**
 * The canonical form of a module (hlo/README.md) cut into its parts and each part hashed on its
 * own: per instruction, its fields without its references ({@link #local}) and its references
 * (operands, control predecessors and callees as canonical indices, {@link #refs}); per
 * computation, its own fields without its instructions; and the module's own fields without its
 * computations. Two parts with equal canonical bytes have equal hashes, so a part whose hashes are
 * equal in two modules contributes the same bytes to both fingerprints. It is written by the same
 * encoder as the fingerprint, in one pass, so it agrees with the fingerprint by construction.
 *
 * <p>The hash is a 64-bit multiply-rotate hash over the canonical bytes, independent of how the
 * encoder's buffer cuts them into chunks. It is not cryptographic: it only decides which parts the
 * diff looks at closely. Whether two modules are the same program is decided by their
 * fingerprints alone.
 */
final class CanonicalParts extends CanonicalSink implements CanonicalWireEncoder.Spans {
  private static final VarHandle LONG_LE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  /** Per instruction (file position in the module): its canonical fields other than its references. */
  final long[] local;
  /** Per instruction: its references. */
  final long[] refs;
  /** Per computation (file position): its own canonical fields other than its instructions. */
  final long[] computation;
  /** The module's own canonical fields other than its computations. */
  long module;
  /** Per instruction: where its opcode's bytes are in the index's buffer (-1, -1: none), seen while encoding. */
  final int[] opcodeFrom;
  final int[] opcodeTo;

  private final Hash moduleHash = new Hash();
  private final Hash computationHash = new Hash();
  private final Hash localHash = new Hash();
  private final Hash refsHash = new Hash();
  private Hash current = moduleHash;

  /** Also fed every byte, after the domain string, when the parts are computed with the fingerprint. */
  private MessageDigest sha;
  private GraphFingerprint fingerprint;

  private CanonicalParts(HloWireIndex x) {
    local = new long[x.instructionCount()];
    refs = new long[x.instructionCount()];
    computation = new long[x.computationCount()];
    opcodeFrom = new int[x.instructionCount()];
    opcodeTo = new int[x.instructionCount()];
  }

  /** Encodes a validated module once, hashing each part. */
  static CanonicalParts of(HloWireIndex x) {
    CanonicalParts parts = new CanonicalParts(x);
    new CanonicalWireEncoder(x, parts, parts).module();
    parts.flush();
    parts.module = parts.moduleHash.finish();
    return parts;
  }

  /**
   * Encodes once, hashing each part and the whole: the fingerprint is the one {@link GraphFingerprint}
   * computes, since SHA-256 sees the same bytes in the same order, only cut at other places.
   */
  static CanonicalParts withFingerprint(HloWireIndex x) {
    CanonicalParts parts = new CanonicalParts(x);
    parts.sha = GraphFingerprint.newDigest();
    new CanonicalWireEncoder(x, parts, parts).module();
    parts.flush();
    parts.module = parts.moduleHash.finish();
    parts.fingerprint = GraphFingerprint.ofDigest(parts.sha.digest());
    return parts;
  }

  /** The fingerprint, when computed with the parts ({@link #withFingerprint}); else null. */
  GraphFingerprint fingerprint() {
    return fingerprint;
  }

  @Override
  protected void drain(byte[] b, int off, int len) {
    if (sha != null) {
      sha.update(b, off, len);
    }
    current.update(b, off, len);
  }

  @Override
  protected void drain(ByteBuffer b) {
    if (sha != null) {
      sha.update(b.duplicate());
    }
    if (b.hasArray()) {
      current.update(b.array(), b.arrayOffset() + b.position(), b.remaining());
      return;
    }
    byte[] chunk = new byte[Math.min(b.remaining(), 1 << 16)];
    while (b.hasRemaining()) {
      int n = Math.min(chunk.length, b.remaining());
      b.get(chunk, 0, n);
      current.update(chunk, 0, n);
    }
  }

  private void switchTo(Hash next) {
    flush();
    current = next;
  }

  @Override
  public void enterComputation(int p) {
    computationHash.reset();
    switchTo(computationHash);
  }

  @Override
  public void exitComputation(int p) {
    switchTo(moduleHash);
    computation[p] = computationHash.finish();
  }

  @Override
  public void enterInstruction(int g) {
    localHash.reset();
    refsHash.reset();
    switchTo(localHash);
  }

  @Override
  public void exitInstruction(int g) {
    switchTo(computationHash);
    local[g] = localHash.finish();
    refs[g] = refsHash.finish();
  }

  @Override
  public void opcode(int g, int from, int to) {
    opcodeFrom[g] = from;
    opcodeTo[g] = to;
  }

  @Override
  public void enterReferences() {
    switchTo(refsHash);
  }

  @Override
  public void exitReferences() {
    switchTo(localHash);
  }

  /**
   * A streaming 64-bit hash over 32-byte blocks, each of four little-endian words, one per lane. The four
   * lanes' multiply chains are independent, so the processor runs them side by side (one lane, as before,
   * was a third of the diff reader's time). Bytes short of a block wait for the next update, so the result
   * does not depend on how the bytes are cut into updates.
   */
  static final class Hash {
    private static final long K1 = 0x9E3779B97F4A7C15L;
    private static final long K2 = 0xC2B2AE3D27D4EB4FL;
    private long h1;
    private long h2;
    private long h3;
    private long h4;
    private final byte[] pending = new byte[32];
    private int pendingBytes;
    private long length;

    Hash() {
      reset();
    }

    void reset() {
      h1 = 0x243F6A8885A308D3L;
      h2 = 0x13198A2E03707344L;
      h3 = 0xA4093822299F31D0L;
      h4 = 0x082EFA98EC4E6C89L;
      pendingBytes = 0;
      length = 0;
    }

    void update(byte[] b, int off, int len) {
      length += len;
      int i = off;
      int end = off + len;
      if (pendingBytes != 0) {
        int n = Math.min(32 - pendingBytes, len);
        System.arraycopy(b, i, pending, pendingBytes, n);
        pendingBytes += n;
        i += n;
        if (pendingBytes < 32) {
          return;
        }
        blocks(pending, 0, 32);
        pendingBytes = 0;
      }
      int whole = (end - i) & ~31;
      if (whole > 0) {
        blocks(b, i, i + whole);
        i += whole;
      }
      if (i < end) {
        System.arraycopy(b, i, pending, 0, end - i);
        pendingBytes = end - i;
      }
    }

    private void blocks(byte[] b, int from, int to) {
      long a1 = h1;
      long a2 = h2;
      long a3 = h3;
      long a4 = h4;
      for (int i = from; i < to; i += 32) {
        a1 = Long.rotateLeft(a1 ^ ((long) LONG_LE.get(b, i) * K1), 31) * K2;
        a2 = Long.rotateLeft(a2 ^ ((long) LONG_LE.get(b, i + 8) * K1), 31) * K2;
        a3 = Long.rotateLeft(a3 ^ ((long) LONG_LE.get(b, i + 16) * K1), 31) * K2;
        a4 = Long.rotateLeft(a4 ^ ((long) LONG_LE.get(b, i + 24) * K1), 31) * K2;
      }
      h1 = a1;
      h2 = a2;
      h3 = a3;
      h4 = a4;
    }

    long finish() {
      if (pendingBytes > 0) {
        java.util.Arrays.fill(pending, pendingBytes, 32, (byte) 0);
        blocks(pending, 0, 32);
      }
      long z = Long.rotateLeft(h1, 7) ^ Long.rotateLeft(h2, 19) ^ Long.rotateLeft(h3, 37) ^ h4 ^ (length * K1);
      z = (z ^ (z >>> 33)) * 0xFF51AFD7ED558CCDL;
      z = (z ^ (z >>> 33)) * 0xC4CEB9FE1A85EC53L;
      return z ^ (z >>> 33);
    }
  }
}
