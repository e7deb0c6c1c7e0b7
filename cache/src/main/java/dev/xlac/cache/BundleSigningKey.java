package dev.xlac.cache;

import dev.xlac.cache.bundle.KeyFiles;
import dev.xlac.core.XlacException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.Signature;

/**
 * A private Ed25519 key that signs bundles ({@code cache export --sign KEYFILE}), with its public
 * half. The JDK's own Ed25519 does the signing; the key files are PEM (PKCS#8 private key, X.509
 * public key), so OpenSSL reads them and {@code openssl genpkey -algorithm ed25519} keys work too.
 */
public final class BundleSigningKey {
  private final PrivateKey privateKey;
  private final BundleKey publicKey;

  public BundleSigningKey(PrivateKey privateKey, BundleKey publicKey) {
    this.privateKey = privateKey;
    this.publicKey = publicKey;
  }

  /** Where {@link #generate} wrote a key pair, and its public key. */
  public record GeneratedKeyPair(Path privateKeyFile, Path publicKeyFile, BundleKey key) {}

  /**
   * Makes a key pair and writes {@code PREFIX.key} (the private key, PKCS#8 PEM, readable by its
   * owner only) and {@code PREFIX.pub} (the public key, X.509 PEM).
   *
   * @param force replace existing files; without it an existing file is refused (exit code 2)
   */
  public static GeneratedKeyPair generate(Path prefix, boolean force) {
    KeyPair pair;
    try {
      pair = KeyPairGenerator.getInstance(KeyFiles.ED25519).generateKeyPair();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("this Java runtime has no Ed25519", e);
    }
    KeyFiles.WrittenPair written = KeyFiles.writePair(prefix, pair, force);
    return new GeneratedKeyPair(written.privateKeyFile(), written.publicKeyFile(), BundleKey.of(pair.getPublic()));
  }

  /**
   * Reads a private key file ({@code PREFIX.key}).
   *
   * @throws XlacException exit code 2, one line: a missing, unreadable or malformed file, an
   *     encrypted or OpenSSH key, a public key, or a key that is not Ed25519
   */
  public static BundleSigningKey read(Path file) {
    KeyPair pair = KeyFiles.readPrivate(file);
    return new BundleSigningKey(pair.getPrivate(), BundleKey.of(pair.getPublic()));
  }

  /** The public half: what importers trust. */
  public BundleKey publicKey() {
    return publicKey;
  }

  public byte[] sign(byte[] message) {
    try {
      Signature s = Signature.getInstance(KeyFiles.ED25519);
      s.initSign(privateKey);
      s.update(message);
      return s.sign();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot sign with key " + publicKey.id(), e);
    }
  }
}
