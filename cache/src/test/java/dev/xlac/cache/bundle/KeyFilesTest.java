package dev.xlac.cache.bundle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.BundleKey;
import dev.xlac.cache.BundleSigningKey;
import dev.xlac.cache.store.Checksums;
import dev.xlac.cache.store.Keys;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyPairGenerator;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Key files: keygen, and one clear line (exit code 2) for every file that is not the key asked for. */
class KeyFilesTest {
  @TempDir
  Path tmp;

  @Test
  void keygen_writesAPrivateKeyOnlyItsOwnerCanRead_andAPublicKey_whoseIdsAgree() throws Exception {
    BundleSigningKey.GeneratedKeyPair pair = BundleSigningKey.generate(tmp.resolve("ci"), false);
    assertThat(pair.privateKeyFile()).isEqualTo(tmp.resolve("ci.key"));
    assertThat(pair.publicKeyFile()).isEqualTo(tmp.resolve("ci.pub"));
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(pair.privateKeyFile()))).isEqualTo("rw-------");
    assertThat(Files.readString(pair.privateKeyFile())).startsWith("-----BEGIN PRIVATE KEY-----\n")
        .endsWith("-----END PRIVATE KEY-----\n");
    assertThat(Files.readString(pair.publicKeyFile())).startsWith("-----BEGIN PUBLIC KEY-----\n");
    BundleKey pub = BundleKey.read(pair.publicKeyFile());
    assertThat(pub).isEqualTo(pair.key());
    assertThat(pub.id()).matches("[0-9a-f]{64}").isEqualTo(Keys.hex(Checksums.sha256(pub.encoded())));
    assertThat(BundleSigningKey.read(pair.privateKeyFile()).publicKey()).isEqualTo(pub);
    try (var files = Files.list(tmp)) {
      assertThat(files.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("ci.key", "ci.pub");
    }
  }

  @Test
  void keygen_refusesToReplaceAKey_unlessForced() throws Exception {
    BundleSigningKey.GeneratedKeyPair first = BundleSigningKey.generate(tmp.resolve("ci"), false);
    badInput(() -> BundleSigningKey.generate(tmp.resolve("ci"), false), tmp.resolve("ci.key")
        + " already exists; pass --force to replace the key pair");
    assertThat(BundleKey.read(first.publicKeyFile())).isEqualTo(first.key());
    BundleSigningKey.GeneratedKeyPair second = BundleSigningKey.generate(tmp.resolve("ci"), true);
    assertThat(second.key()).isNotEqualTo(first.key());
    assertThat(BundleSigningKey.read(second.privateKeyFile()).publicKey()).isEqualTo(second.key());
    badInput(() -> BundleSigningKey.generate(tmp.resolve("no/such/dir/ci"), false), "cannot write "
        + tmp.resolve("no/such/dir/ci.key") + ": no such file or directory");
  }

  @Test
  void missingGarbageAndWrongTypeFiles_eachGetOneClearLine() throws Exception {
    BundleSigningKey.GeneratedKeyPair pair = BundleSigningKey.generate(tmp.resolve("ci"), false);
    Path missing = tmp.resolve("nope.key");
    badInput(() -> BundleSigningKey.read(missing), "cannot read key file " + missing + ": no such file or directory");
    badInput(() -> BundleKey.read(missing), "cannot read key file " + missing + ": no such file or directory");
    badInput(() -> BundleSigningKey.read(tmp), "key file " + tmp + " is a directory");
    Path garbage = Files.writeString(tmp.resolve("garbage.key"), "this is not a key\n");
    badInput(() -> BundleSigningKey.read(garbage), "key file " + garbage + " is not a PEM key file");
    Path empty = Files.writeString(tmp.resolve("empty.pub"), "");
    badInput(() -> BundleKey.read(empty), "key file " + empty + " is empty");
    Path cut = Files.writeString(tmp.resolve("cut.key"), Files.readString(pair.privateKeyFile()).lines().limit(2)
        .reduce("", (a, b) -> a + b + "\n"));
    badInput(() -> BundleSigningKey.read(cut), "is a truncated PEM file (no '-----END PRIVATE KEY-----' line)");
    Path damaged = Files.writeString(tmp.resolve("damaged.key"), "-----BEGIN PRIVATE KEY-----\n!!!\n-----END PRIVATE KEY-----\n");
    badInput(() -> BundleSigningKey.read(damaged), "has a damaged 'PRIVATE KEY' block (not base64)");

    // the wrong half, either way round
    badInput(() -> BundleSigningKey.read(pair.publicKeyFile()), "key file " + pair.publicKeyFile() + " holds a public"
        + " key; signing needs the private key file (PREFIX.key, written beside PREFIX.pub by 'xlac cache keygen PREFIX')");
    badInput(() -> BundleKey.read(pair.privateKeyFile()), "key file " + pair.privateKeyFile() + " holds a private key;"
        + " give the public key file here (PREFIX.pub from 'xlac cache keygen PREFIX')");

    // other kinds of keys
    Path encrypted = Files.writeString(tmp.resolve("enc.key"), "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n"
        + "-----END ENCRYPTED PRIVATE KEY-----\n");
    badInput(() -> BundleSigningKey.read(encrypted), "holds an encrypted (password-protected) private key; xlac reads"
        + " unencrypted PKCS#8 keys");
    Path openssh = Files.writeString(tmp.resolve("id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n"
        + "-----END OPENSSH PRIVATE KEY-----\n");
    badInput(() -> BundleSigningKey.read(openssh), "holds an OpenSSH private key; xlac reads PKCS#8 PEM keys");
    Path sshPub = Files.writeString(tmp.resolve("id_ed25519.pub"), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA me@host\n");
    badInput(() -> BundleKey.read(sshPub), "holds an OpenSSH public key; xlac reads PEM keys");
    var rsa = KeyPairGenerator.getInstance("RSA").generateKeyPair();
    Path rsaKey = Files.writeString(tmp.resolve("rsa.key"), KeyFiles.pem("PRIVATE KEY", rsa.getPrivate().getEncoded()));
    badInput(() -> BundleSigningKey.read(rsaKey), "holds an RSA private key; bundles are signed with Ed25519 keys");
    Path rsaPub = Files.writeString(tmp.resolve("rsa.pub"), KeyFiles.pem("PUBLIC KEY", rsa.getPublic().getEncoded()));
    badInput(() -> BundleKey.read(rsaPub), "holds an RSA public key; bundles are signed with Ed25519 keys");
    Path cert = Files.writeString(tmp.resolve("ci.crt"), "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    badInput(() -> BundleKey.read(cert), "holds a certificate, not a key");
  }

  /** Keys from OpenSSL work both ways: its keys are read, and it reads ours (when openssl is installed). */
  @Test
  void keysAreOpenSslCompatible() throws Exception {
    Path key = tmp.resolve("openssl.key");
    Process p;
    try {
      p = new ProcessBuilder("openssl", "genpkey", "-algorithm", "ed25519", "-out", key.toString()).start();
    } catch (java.io.IOException e) {
      Assumptions.abort("openssl is not installed");
      return;
    }
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).isZero();
    Path pub = tmp.resolve("openssl.pub");
    Process q = new ProcessBuilder("openssl", "pkey", "-in", key.toString(), "-pubout", "-out", pub.toString()).start();
    assertThat(q.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(BundleSigningKey.read(key).publicKey()).isEqualTo(BundleKey.read(pub));

    BundleSigningKey.GeneratedKeyPair ours = BundleSigningKey.generate(tmp.resolve("ours"), false);
    Path derived = tmp.resolve("derived.pub");
    Process r = new ProcessBuilder("openssl", "pkey", "-in", ours.privateKeyFile().toString(), "-pubout", "-out",
        derived.toString()).start();
    assertThat(r.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(Files.readString(derived)).isEqualTo(Files.readString(ours.publicKeyFile()));
  }

  private static void badInput(ThrowingCallable call, String message) {
    assertThatThrownBy(call).isInstanceOf(XlacException.class).hasMessageContaining(message)
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n").doesNotContain("Exception"))
        .extracting(e -> ((XlacException) e).exitCode()).isEqualTo(ExitCode.BAD_INPUT);
  }
}
