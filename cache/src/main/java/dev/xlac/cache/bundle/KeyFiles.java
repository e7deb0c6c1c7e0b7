package dev.xlac.cache.bundle;

import dev.xlac.core.XlacException;
import dev.xlac.core.io.AtomicFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.interfaces.EdECPrivateKey;
import java.security.spec.NamedParameterSpec;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads and writes the key files of bundle signing: PEM (RFC 7468) with a PKCS#8 "PRIVATE KEY"
 * or an X.509 "PUBLIC KEY" block holding an Ed25519 key (RFC 8410). Every problem with a file is
 * one line, exit code 2, that says what the file holds instead and what to give. It deals in the
 * JDK's key types: {@code BundleKey} and {@code BundleSigningKey} wrap what it reads.
 */
public final class KeyFiles {
  public static final String ED25519 = "Ed25519";
  /** Key files are a few hundred bytes; a larger one is not a key file. */
  private static final int MAX_KEY_FILE_BYTES = 64 << 10;
  private static final Pattern BEGIN = Pattern.compile("-----BEGIN ([A-Z0-9 ]+)-----");

  private KeyFiles() {}

  /** An Ed25519 key from its X.509 SubjectPublicKeyInfo encoding; an {@link IllegalArgumentException} says why not. */
  public static PublicKey ed25519Public(byte[] der) {
    PublicKey k;
    try {
      k = KeyFactory.getInstance(ED25519).generatePublic(new X509EncodedKeySpec(der));
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException("not an Ed25519 public key");
    }
    if (!Arrays.equals(k.getEncoded(), der)) {
      throw new IllegalArgumentException("not an Ed25519 public key in its standard encoding");
    }
    return k;
  }

  /** The Ed25519 public key of a public key file, in its standard encoding. */
  public static PublicKey readPublic(Path file) {
    Pem pem = read(file);
    switch (pem.label()) {
      case "PUBLIC KEY" -> {
        try {
          return ed25519Public(pem.der());
        } catch (IllegalArgumentException e) {
          throw bad(file, "holds " + describePublic(pem.der()) + "; bundles are signed with Ed25519 keys (make a pair"
              + " with 'xlac cache keygen PREFIX')");
        }
      }
      case "PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "OPENSSH PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY" ->
          throw bad(file, "holds a private key; give the public key file here (PREFIX.pub from 'xlac cache keygen"
              + " PREFIX'): the private key stays with whoever signs bundles");
      default -> throw bad(file, otherBlock(pem.label()) + "; give the public key file (PREFIX.pub from"
          + " 'xlac cache keygen PREFIX')");
    }
  }

  /** The Ed25519 private key of a private key file, with its public half. */
  public static KeyPair readPrivate(Path file) {
    Pem pem = read(file);
    switch (pem.label()) {
      case "PRIVATE KEY" -> {
        PrivateKey k;
        try {
          k = KeyFactory.getInstance(ED25519).generatePrivate(new PKCS8EncodedKeySpec(pem.der()));
        } catch (GeneralSecurityException e) {
          throw bad(file, "holds " + describePrivate(pem.der()) + "; bundles are signed with Ed25519 keys (make a"
              + " pair with 'xlac cache keygen PREFIX')");
        }
        return new KeyPair(publicOf(file, k), k);
      }
      case "PUBLIC KEY" -> throw bad(file, "holds a public key; signing needs the private key file (PREFIX.key,"
          + " written beside PREFIX.pub by 'xlac cache keygen PREFIX')");
      case "ENCRYPTED PRIVATE KEY" -> throw bad(file, "holds an encrypted (password-protected) private key; xlac"
          + " reads unencrypted PKCS#8 keys: protect the file itself instead (mode 0600, or a CI secret)");
      case "OPENSSH PRIVATE KEY" -> throw bad(file, "holds an OpenSSH private key; xlac reads PKCS#8 PEM keys (make"
          + " a pair with 'xlac cache keygen PREFIX')");
      case "RSA PRIVATE KEY", "EC PRIVATE KEY" -> throw bad(file, "holds an " + pem.label().split(" ")[0]
          + " private key; bundles are signed with Ed25519 keys (make a pair with 'xlac cache keygen PREFIX')");
      default -> throw bad(file, otherBlock(pem.label()) + "; signing needs the private key file (PREFIX.key from"
          + " 'xlac cache keygen PREFIX')");
    }
  }

  /**
   * The public half of an Ed25519 private key. The JDK has no call for it, but its Ed25519 key
   * pair generator draws the 32-byte private key from the random source it is given and computes
   * the public key from it; a probe signature confirms that the two halves belong together.
   */
  private static PublicKey publicOf(Path file, PrivateKey k) {
    byte[] seed = k instanceof EdECPrivateKey ed ? ed.getBytes().orElse(null) : null;
    if (seed == null || seed.length != 32) {
      throw bad(file, "holds an Ed25519 private key whose key bytes this Java runtime does not expose");
    }
    try {
      KeyPairGenerator g = KeyPairGenerator.getInstance(ED25519);
      g.initialize(NamedParameterSpec.ED25519, new SecureRandom() {
        private static final long serialVersionUID = 1L;

        @Override
        public void nextBytes(byte[] bytes) {
          System.arraycopy(seed, 0, bytes, 0, Math.min(seed.length, bytes.length));
        }
      });
      PublicKey pub = g.generateKeyPair().getPublic();
      byte[] probe = "xlac key check".getBytes(StandardCharsets.US_ASCII);
      Signature s = Signature.getInstance(ED25519);
      s.initSign(k);
      s.update(probe);
      byte[] sig = s.sign();
      Signature v = Signature.getInstance(ED25519);
      v.initVerify(pub);
      v.update(probe);
      if (!v.verify(sig)) {
        throw new GeneralSecurityException("derived public key does not verify");
      }
      return pub;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot derive the public key of " + file + " (" + XlacException.reason(e) + ")", e);
    } finally {
      Arrays.fill(seed, (byte) 0);
    }
  }

  /** Where {@link #writePair} wrote a key pair. */
  public record WrittenPair(Path privateKeyFile, Path publicKeyFile) {}

  public static WrittenPair writePair(Path prefix, KeyPair pair, boolean force) {
    Path priv = prefix.resolveSibling(prefix.getFileName() + ".key");
    Path pub = prefix.resolveSibling(prefix.getFileName() + ".pub");
    if (!force) {
      for (Path p : List.of(priv, pub)) {
        if (Files.exists(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
          throw XlacException.badInput(p + " already exists; pass --force to replace the key pair (bundles signed"
              + " with the old key then no longer verify against the new public key)");
        }
      }
    }
    write(priv, pem("PRIVATE KEY", pair.getPrivate().getEncoded()), true);
    write(pub, pem("PUBLIC KEY", pair.getPublic().getEncoded()), false);
    return new WrittenPair(priv, pub);
  }

  /** Writes atomically ({@link AtomicFiles}), the temporary created with the final permissions. */
  private static void write(Path target, String text, boolean secret) {
    try {
      AtomicFiles.write(target, PosixFilePermissions.fromString(secret ? "rw-------" : "rw-r--r--"), out -> {
        out.write(text.getBytes(StandardCharsets.US_ASCII));
        return true;
      });
    } catch (IOException e) {
      throw XlacException.badInput("cannot write " + target + ": " + ioReason(e));
    }
  }

  public static String pem(String label, byte[] der) {
    return "-----BEGIN " + label + "-----\n"
        + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der) + "\n-----END " + label + "-----\n";
  }

  private record Pem(String label, byte[] der) {}

  /** The first PEM block of the file (text around it is allowed, as RFC 7468 says). */
  private static Pem read(Path file) {
    byte[] bytes;
    try {
      if (Files.isDirectory(file)) {
        throw bad(file, "is a directory");
      }
      long size = Files.size(file);
      if (size > MAX_KEY_FILE_BYTES) {
        throw bad(file, "is " + size + " bytes, too large for a key file");
      }
      bytes = Files.readAllBytes(file);
    } catch (IOException e) {
      throw XlacException.badInput("cannot read key file " + file + ": " + ioReason(e));
    }
    String text = new String(bytes, StandardCharsets.ISO_8859_1);
    Matcher begin = BEGIN.matcher(text);
    if (!begin.find()) {
      if (text.startsWith("ssh-ed25519 ") || text.startsWith("ssh-rsa ") || text.startsWith("ecdsa-sha2-")) {
        throw bad(file, "holds an OpenSSH public key; xlac reads PEM keys (make a pair with 'xlac cache keygen"
            + " PREFIX')");
      }
      throw bad(file, bytes.length == 0 ? "is empty" : "is not a PEM key file (it has no '-----BEGIN ...-----' line;"
          + " make a key pair with 'xlac cache keygen PREFIX')");
    }
    String label = begin.group(1);
    String end = "-----END " + label + "-----";
    int stop = text.indexOf(end, begin.end());
    if (stop < 0) {
      throw bad(file, "is a truncated PEM file (no '" + end + "' line)");
    }
    String body = text.substring(begin.end(), stop);
    if (body.contains(":")) {
      // RFC 1421 headers ("Proc-Type: 4,ENCRYPTED") mark an old-style encrypted key
      throw bad(file, "holds an encrypted (password-protected) key; xlac reads unencrypted PKCS#8 keys");
    }
    try {
      byte[] der = Base64.getDecoder().decode(body.replaceAll("\\s", ""));
      if (der.length == 0) {
        throw bad(file, "has an empty '" + label + "' block");
      }
      return new Pem(label, der);
    } catch (IllegalArgumentException e) {
      throw bad(file, "has a damaged '" + label + "' block (not base64)");
    }
  }

  private static String otherBlock(String label) {
    return label.equals("CERTIFICATE") ? "holds a certificate, not a key" : "holds a PEM '" + label + "' block, not a key";
  }

  private static String describePrivate(byte[] der) {
    return describe("private", f -> f.generatePrivate(new PKCS8EncodedKeySpec(der)));
  }

  private static String describePublic(byte[] der) {
    return describe("public", f -> f.generatePublic(new X509EncodedKeySpec(der)));
  }

  private interface Decode {
    void with(KeyFactory factory) throws GeneralSecurityException;
  }

  /** What kind of key (other than Ed25519) the bytes hold: "an RSA private key", ... */
  private static String describe(String kind, Decode decode) {
    for (String alg : List.of("Ed448", "RSA", "EC", "XDH", "DSA")) {
      try {
        decode.with(KeyFactory.getInstance(alg));
        return article(name(alg)) + " " + kind + " key";
      } catch (GeneralSecurityException e) {
        // not this one
      }
    }
    return "a " + kind + " key that cannot be decoded";
  }

  private static String name(String alg) {
    return alg.equals("XDH") ? "X25519/X448" : alg;
  }

  private static String article(String word) {
    return (word.equals("DSA") ? "a " : "an ") + word; // an Ed448, an RSA, an EC, an X25519
  }

  private static XlacException bad(Path file, String why) {
    return XlacException.badInput("key file " + file + " " + why);
  }

  static String ioReason(IOException e) {
    if (e instanceof NoSuchFileException) {
      return "no such file or directory";
    }
    if (e instanceof AccessDeniedException) {
      return "permission denied";
    }
    if (e instanceof FileAlreadyExistsException) {
      return "it already exists";
    }
    if (e instanceof java.nio.file.FileSystemException f && f.getReason() != null) {
      return f.getReason().toLowerCase(java.util.Locale.ROOT);
    }
    return XlacException.reason(e);
  }
}
