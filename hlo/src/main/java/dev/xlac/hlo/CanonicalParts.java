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
  public void enterReferences() {
    switchTo(refsHash);
  }

  @Override
  public void exitReferences() {
    switchTo(localHash);
  }

  /** A streaming 64-bit hash over little-endian words; bytes left over carry to the next update. */
  static final class Hash {
    private static final long SEED = 0x243F6A8885A308D3L;
    private static final long K1 = 0x9E3779B97F4A7C15L;
    private static final long K2 = 0xC2B2AE3D27D4EB4FL;
    private long h = SEED;
    private long carry;
    private int carryBytes;
    private long length;

    void reset() {
      h = SEED;
      carry = 0;
      carryBytes = 0;
      length = 0;
    }

    void update(byte[] b, int off, int len) {
      length += len;
      int i = off;
      int end = off + len;
      while (carryBytes != 0 && i < end) {
        carry |= (b[i++] & 0xFFL) << (8 * carryBytes);
        if (++carryBytes == 8) {
          mix(carry);
          carry = 0;
          carryBytes = 0;
        }
      }
      for (; end - i >= 8; i += 8) {
        mix((long) LONG_LE.get(b, i));
      }
      while (i < end) {
        carry |= (b[i++] & 0xFFL) << (8 * carryBytes++);
      }
    }

    private void mix(long w) {
      h = Long.rotateLeft(h ^ (w * K1), 31) * K2;
    }

    long finish() {
      mix(carry);
      mix(length);
      long z = h;
      z = (z ^ (z >>> 33)) * 0xFF51AFD7ED558CCDL;
      z = (z ^ (z >>> 33)) * 0xC4CEB9FE1A85EC53L;
      return z ^ (z >>> 33);
    }
  }
}
