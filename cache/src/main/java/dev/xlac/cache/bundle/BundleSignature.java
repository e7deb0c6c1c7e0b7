package dev.xlac.cache.bundle;

import dev.xlac.cache.BundleKey;
import dev.xlac.cache.BundleSigningKey;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.Signature;
import java.util.Base64;
import java.util.regex.Pattern;

/**
 * The second entry of a signed bundle (format version 3), {@value #NAME}: who signed the
 * manifest, and the Ed25519 signature. A text file of tab-separated lines:
 *
 * <pre>
 * xlac-bundle-signature  1
 * algorithm              ed25519
 * key-id                 64 hex digits: SHA-256 of the public key's X.509 encoding
 * public-key             base64 of that encoding
 * signature              base64 of the 64-byte Ed25519 signature
 * </pre>
 *
 * <p>The signature is over {@link #DOMAIN} followed by the manifest's exact bytes. The manifest
 * lists every entry's size and SHA-256 and every record's metadata, so the signature binds every
 * byte of the bundle; the domain string keeps a signature over a manifest from being valid for
 * anything else that key signs.
 */
final class BundleSignature {
  static final String NAME = "xlac-bundle.sig";
  static final String MAGIC = "xlac-bundle-signature";
  static final byte[] DOMAIN = "xlac bundle manifest signature, version 1\0".getBytes(StandardCharsets.US_ASCII);
  /** The entry is about 250 bytes. */
  static final int MAX_BYTES = 4096;
  private static final Pattern HEX64 = Pattern.compile("^[0-9a-f]{64}$");

  private BundleSignature() {}

  static byte[] sign(byte[] manifest, BundleSigningKey key) {
    byte[] signature = key.sign(message(manifest));
    String text = MAGIC + "\t1\n"
        + "algorithm\ted25519\n"
        + "key-id\t" + key.publicKey().id() + "\n"
        + "public-key\t" + Base64.getEncoder().encodeToString(key.publicKey().encoded()) + "\n"
        + "signature\t" + Base64.getEncoder().encodeToString(signature) + "\n";
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  /**
   * The key that signed {@code manifest}, once the signature is checked.
   *
   * @throws IllegalArgumentException a malformed entry, or a signature that does not match
   */
  static BundleKey verify(byte[] entry, byte[] manifest) {
    String[] lines = new String(entry, StandardCharsets.US_ASCII).split("\n", -1);
    if (lines.length != 6 || !lines[5].isEmpty()) {
      throw malformed("it has " + (lines.length - 1) + " lines, not 5");
    }
    field(lines[0], MAGIC, "1");
    field(lines[1], "algorithm", "ed25519");
    String id = field(lines[2], "key-id", null);
    if (!HEX64.matcher(id).matches()) {
      throw malformed("the key id is not 64 hex digits");
    }
    BundleKey key;
    byte[] signature;
    try {
      key = BundleKey.fromEncoded(Base64.getDecoder().decode(field(lines[3], "public-key", null)));
      signature = Base64.getDecoder().decode(field(lines[4], "signature", null));
    } catch (IllegalArgumentException e) {
      throw malformed(e.getMessage());
    }
    if (!key.id().equals(id)) {
      throw malformed("its key id " + id + " is not the id of its public key (" + key.id() + ")");
    }
    boolean ok;
    try {
      Signature v = Signature.getInstance(KeyFiles.ED25519);
      v.initVerify(key.publicKey());
      v.update(message(manifest));
      ok = signature.length == 64 && v.verify(signature);
    } catch (GeneralSecurityException e) {
      ok = false;
    }
    if (!ok) {
      throw new IllegalArgumentException("the signature does not match the manifest: the bundle was changed after"
          + " key " + id + " signed it, or the signature is forged");
    }
    return key;
  }

  private static byte[] message(byte[] manifest) {
    byte[] m = new byte[DOMAIN.length + manifest.length];
    System.arraycopy(DOMAIN, 0, m, 0, DOMAIN.length);
    System.arraycopy(manifest, 0, m, DOMAIN.length, manifest.length);
    return m;
  }

  /** The value of a {@code name<TAB>value} line; {@code expected} non-null: it must be that. */
  private static String field(String line, String name, String expected) {
    String[] f = line.split("\t", -1);
    if (f.length != 2 || !f[0].equals(name)) {
      throw malformed("expected a '" + name + "' line");
    }
    if (expected != null && !f[1].equals(expected)) {
      throw malformed("unsupported " + name + " '" + BundleManifest.printable(f[1]) + "' (this xlac knows '" + expected
          + "')");
    }
    return f[1];
  }

  private static IllegalArgumentException malformed(String why) {
    return new IllegalArgumentException("the signature entry " + NAME + " is malformed (" + why + ")");
  }
}
