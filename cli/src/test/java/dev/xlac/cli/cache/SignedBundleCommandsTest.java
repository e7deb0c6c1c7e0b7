package dev.xlac.cli.cache;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cli.CliRunner;
import dev.xlac.cli.Main;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** keygen, export --sign, import --trust and the trust settings, through {@link Main} against real caches. */
class SignedBundleCommandsTest {
  @TempDir
  Path tmp;
  Path ci;
  Path trainer;
  Path bundle;
  Path signed;
  String ciId;

  record Run(int code, String out, String err) {
    /** A one-line error with exit code 2. */
    Run refused(String why) {
      assertThat(code).as(err).isEqualTo(2);
      assertThat(err).startsWith("xlac: ").contains(why).doesNotContain("Exception");
      assertThat(err.lines()).hasSize(1);
      return this;
    }
  }

  Run xlac(String... args) {
    CliRunner r = CliRunner.run(args);
    return new Run(r.exitCode(), r.out(), r.err());
  }

  @BeforeEach
  void aCiCacheAndItsKeys() throws Exception {
    ci = tmp.resolve("ci-cache");
    trainer = tmp.resolve("trainer-cache");
    bundle = tmp.resolve("warm.tar.zst");
    signed = tmp.resolve("signed.tar.zst");
    Path dumps = Path.of(SignedBundleCommandsTest.class.getResource("/dumps").toURI());
    assertThat(xlac("cache", "add", "--cache", ci.toString(), dumps.toString()).code()).isZero();
    Run keygen = xlac("cache", "keygen", tmp.resolve("ci").toString());
    assertThat(keygen.code()).as(keygen.err()).isZero();
    assertThat(keygen.out()).startsWith("Wrote " + tmp.resolve("ci.key") + " (private key: keep it secret) and "
        + tmp.resolve("ci.pub") + " (public key)\nKey id: ");
    ciId = keygen.out().lines().skip(1).findFirst().orElseThrow().substring("Key id: ".length());
    assertThat(ciId).matches("[0-9a-f]{64}");
    assertThat(xlac("cache", "export", "--cache", ci.toString(), bundle.toString()).code()).isZero();
    Run export = xlac("cache", "export", "--cache", ci.toString(), "--sign", tmp.resolve("ci.key").toString(),
        signed.toString());
    assertThat(export.code()).as(export.err()).isZero();
    assertThat(export.out()).contains("Exported 3 graphs").contains("\nSigned by key " + ciId + "\n");
  }

  private Run importInto(Path cache, Path file, String... more) {
    List<String> args = new ArrayList<>(List.of("cache", "import", "--cache", cache.toString()));
    args.addAll(List.of(more));
    args.add(file.toString());
    return xlac(args.toArray(String[]::new));
  }

  @Test
  void keygen_refusesToReplaceAKeyWithoutForce() {
    xlac("cache", "keygen", tmp.resolve("ci").toString()).refused(tmp.resolve("ci.key") + " already exists; pass --force");
    assertThat(xlac("cache", "keygen", "--force", tmp.resolve("ci").toString()).code()).isZero();
  }

  @Test
  void importWithTrust_acceptsTheSignedBundle_andRefusesTheUnsignedOne() {
    Run ok = importInto(trainer, signed, "--trust", tmp.resolve("ci.pub").toString());
    assertThat(ok.code()).as(ok.err()).isZero();
    assertThat(ok.out()).contains("graphs added 3").contains("\nSigned by trusted key " + ciId + "\n");
    importInto(tmp.resolve("other"), bundle, "--trust", tmp.resolve("ci.pub").toString())
        .refused("the bundle is not signed, and --trust asks for a bundle signed by a trusted key; nothing was imported");
  }

  @Test
  void requireSigned_refusesUnsignedAndUntrustedBundles_andTheTrustListGoverns() throws Exception {
    assertThat(xlac("cache", "config", "--cache", trainer.toString(), "require-signed").out()).isEqualTo("require-signed off\n");
    Run on = xlac("cache", "config", "--cache", trainer.toString(), "require-signed", "on");
    assertThat(on.out()).isEqualTo("require-signed on\n");
    assertThat(on.err()).contains("no key is trusted yet");
    importInto(trainer, bundle).refused("the bundle is not signed, and this cache accepts only signed bundles");
    importInto(trainer, signed).refused("the bundle is signed by key " + ciId + ", which is not trusted");

    Run add = xlac("cache", "config", "--cache", trainer.toString(), "trust", "add", tmp.resolve("ci.pub").toString());
    assertThat(add.out()).isEqualTo("Trusted key " + ciId + "\n");
    assertThat(xlac("cache", "config", "--cache", trainer.toString(), "trust", "list").out())
        .startsWith(ciId + "  ci.pub  added ");
    assertThat(importInto(trainer, signed).out()).contains("Signed by trusted key");

    Run remove = xlac("cache", "config", "--cache", trainer.toString(), "trust", "remove", ciId.substring(0, 12));
    assertThat(remove.out()).isEqualTo("Removed trusted key " + ciId + " (ci.pub)\n");
    assertThat(xlac("cache", "config", "--cache", trainer.toString(), "trust").out()).isEmpty();
    xlac("cache", "config", "--cache", trainer.toString(), "trust", "remove", "0123456789")
        .refused("no trusted key has id 0123456789");
    xlac("cache", "config", "--cache", trainer.toString(), "trust", "frobnicate")
        .refused("cache config trust takes 'list', 'add PUBKEY' or 'remove KEYID'");
    xlac("cache", "config", "--cache", trainer.toString(), "require-signed", "maybe")
        .refused("cache config require-signed takes on or off, not 'maybe'");
  }

  @Test
  void anUntrustedSigner_isImportedWithAWarning_whereSignaturesAreNotRequired() {
    Run r = importInto(trainer, signed);
    assertThat(r.code()).isZero();
    assertThat(r.err()).isEqualTo("xlac: the bundle is signed by key " + ciId + ", which this cache does not"
        + " trust; it was imported because signatures are not required ('xlac cache config require-signed on')\n");
  }

  @Test
  void badKeyFiles_getOneClearLineEach_withExitCode2() throws Exception {
    Path missing = tmp.resolve("missing.pub");
    importInto(trainer, signed, "--trust", missing.toString())
        .refused("cannot read key file " + missing + ": no such file or directory");
    Path garbage = Files.writeString(tmp.resolve("garbage.pub"), "garbage");
    importInto(trainer, signed, "--trust", garbage.toString()).refused("key file " + garbage + " is not a PEM key file");
    importInto(trainer, signed, "--trust", tmp.resolve("ci.key").toString())
        .refused("holds a private key; give the public key file here");
    xlac("cache", "export", "--cache", ci.toString(), "--sign", tmp.resolve("ci.pub").toString(),
        tmp.resolve("x.tar.zst").toString()).refused("holds a public key; signing needs the private key file");
    assertThat(tmp.resolve("x.tar.zst")).doesNotExist();
    xlac("cache", "config", "--cache", trainer.toString(), "trust", "add", garbage.toString())
        .refused("is not a PEM key file");
    xlac("cache", "import", "--cache", trainer.toString(), "--neuron-cache", tmp.toString(), "--trust",
        tmp.resolve("ci.pub").toString()).refused("--trust applies to bundles");
  }
}
