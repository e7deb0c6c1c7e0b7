package dev.xlac.cache;

import dev.xlac.cache.bundle.KeyFiles;
import dev.xlac.cache.store.Checksums;
import dev.xlac.cache.store.Keys;
import dev.xlac.core.XlacException;
import java.nio.file.Path;
import java.security.PublicKey;

/**
 * The public half of a key that signs bundles: an Ed25519 key and its id, the SHA-256 of its
 * X.509 SubjectPublicKeyInfo encoding (DER) in 64 hex digits. The id is what messages, the trust
 * list and {@code xlac cache keygen} show.
 */
public final class BundleKey {
  private final String id;
  private final byte[] encoded;
  private final PublicKey publicKey;

  private BundleKey(byte[] encoded, PublicKey publicKey) {
    this.encoded = encoded.clone();
    this.publicKey = publicKey;
    this.id = Keys.hex(Checksums.sha256(encoded));
  }

  public static BundleKey of(PublicKey key) {
    return new BundleKey(key.getEncoded(), key);
  }

  /** An Ed25519 key from its X.509 SubjectPublicKeyInfo encoding; an {@link IllegalArgumentException} says why not. */
  public static BundleKey fromEncoded(byte[] der) {
    return new BundleKey(der, KeyFiles.ed25519Public(der));
  }

  /**
   * Reads a public key file ({@code PREFIX.pub} from {@code xlac cache keygen}: PEM, "PUBLIC KEY").
   *
   * @throws XlacException exit code 2, one line: a missing, unreadable or malformed file, or one
   *     that holds a private key or a key of another kind
   */
  public static BundleKey read(Path file) {
    return of(KeyFiles.readPublic(file));
  }

  /** The key id: the SHA-256 of {@link #encoded()}, 64 hex digits. */
  public String id() {
    return id;
  }

  /** The X.509 SubjectPublicKeyInfo encoding (DER). */
  public byte[] encoded() {
    return encoded.clone();
  }

  public PublicKey publicKey() {
    return publicKey;
  }

  /** The key as a PEM "PUBLIC KEY" file's text. */
  public String pem() {
    return KeyFiles.pem("PUBLIC KEY", encoded);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof BundleKey k && k.id.equals(id);
  }

  @Override
  public int hashCode() {
    return id.hashCode();
  }

  @Override
  public String toString() {
    return "ed25519 key " + id;
  }
}
