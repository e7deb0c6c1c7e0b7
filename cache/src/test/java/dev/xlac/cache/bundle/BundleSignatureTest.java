package dev.xlac.cache.bundle;

import dev.xlac.cache.ImportResult;
import static dev.xlac.cache.Fixtures.CPU;
import static dev.xlac.cache.Fixtures.TRN1;
import static dev.xlac.cache.Fixtures.bytes;
import static dev.xlac.cache.Fixtures.fp;
import static dev.xlac.cache.Fixtures.graph;
import static dev.xlac.cache.Fixtures.key;
import static dev.xlac.cache.Fixtures.open;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.BundleSigningKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.ExportRequest;
import dev.xlac.cache.ImportRequest;
import dev.xlac.cache.TrustSettings;
import dev.xlac.cache.bundle.BundleTest.Entry;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Signed bundles (format version 3), the trust settings, and the attack they stop. */
class BundleSignatureTest {
  @TempDir
  Path tmp;
  Path source;
  BundleSigningKey ci;
  BundleSigningKey other;

  @BeforeEach
  void aCacheWithTwoCompiledGraphs() throws Exception {
    source = tmp.resolve("source");
    try (CacheStore s = open(source)) {
      for (int n = 0; n < 3; n++) {
        graph(s, n);
      }
      s.putArtifact(key(0, CPU), bytes(0, 20_000), CompileInfo.of(3, "jit_multiply compiled"));
      s.putArtifact(key(1, CPU), bytes(1, 30_000), CompileInfo.of(9, ""));
      s.recordFailure(key(2, TRN1), "compile-error", "unsupported op", "neuronx-cc: error\n");
    }
    ci = BundleSigningKey.read(BundleSigningKey.generate(tmp.resolve("ci"), false).privateKeyFile());
    other = BundleSigningKey.read(BundleSigningKey.generate(tmp.resolve("other"), false).privateKeyFile());
  }

  private Path export(String name, BundleSigningKey signer) throws Exception {
    Path b = tmp.resolve(name);
    try (CacheStore s = CacheStore.open(source, CacheStore.Mode.READ_ONLY, java.time.Duration.ZERO)) {
      s.exportBundle(b, signer == null ? ExportRequest.all() : ExportRequest.all().signedBy(signer));
    }
    return b;
  }

  private static String artifactEntry(int n) {
    return "artifacts/" + fp(n).value().substring(5) + "." + CPU.digest() + ".bin";
  }

  /** The reported attack: two artifacts swapped, their checksums recomputed; every check of the bundle's own holds. */
  private Path swapArtifacts(Path bundle) throws Exception {
    List<Entry> es = Forgery.entries(bundle);
    byte[] a0 = data(es, artifactEntry(0));
    byte[] a1 = data(es, artifactEntry(1));
    return Forgery.write(tmp.resolve("swapped-" + bundle.getFileName()),
        Forgery.consistent(es, Map.of(artifactEntry(0), a1, artifactEntry(1), a0), t -> t));
  }

  private static byte[] data(List<Entry> es, String name) {
    return es.stream().filter(e -> e.name().equals(name)).findFirst().orElseThrow().data();
  }

  private void assertRefused(Path target, Path bundle, ImportRequest request, String why) throws Exception {
    try (CacheStore t = open(target)) {
      long graphs = t.statistics().graphs();
      assertThatThrownBy(() -> t.importBundle(bundle, request)).isInstanceOf(XlacException.class)
          .hasMessageContaining(why).hasMessageContaining("nothing was imported")
          .extracting(e -> ((XlacException) e).exitCode()).isEqualTo(ExitCode.BAD_INPUT);
      assertThat(t.statistics().graphs()).isEqualTo(graphs);
    }
  }

  private static ImportRequest trusting(BundleSigningKey... keys) {
    return new ImportRequest(java.util.Arrays.stream(keys).map(BundleSigningKey::publicKey).toList());
  }

  @Test
  void aSignedBundle_isFormatVersion3_withItsSignatureRightAfterTheManifest_andImportsWithItsKeyTrusted() throws Exception {
    Path signed = export("signed.tar.zst", ci);
    List<Entry> es = Forgery.entries(signed);
    assertThat(es.stream().map(Entry::name).limit(2)).containsExactly(BundleManifest.NAME, BundleSignature.NAME);
    assertThat(Forgery.manifest(es)).startsWith("xlac-bundle\t3\n");
    assertThat(new String(data(es, BundleSignature.NAME), StandardCharsets.US_ASCII))
        .startsWith("xlac-bundle-signature\t1\nalgorithm\ted25519\nkey-id\t" + ci.publicKey().id() + "\n");
    try (CacheStore t = open(tmp.resolve("target"))) {
      ImportResult r = t.importBundle(signed, trusting(ci));
      assertThat(r.signer()).isEqualTo(ci.publicKey());
      assertThat(r.signerTrusted()).isTrue();
      assertThat(r.artifactsAdded()).isEqualTo(2);
      assertThat(r.failuresAdded()).isEqualTo(1);
      assertThat(t.getArtifact(key(0, CPU)).orElseThrow().bytes()).isEqualTo(bytes(0, 20_000));
      assertThat(t.verify(false).clean()).isTrue();
    }
  }

  @Test
  void unsignedBundles_stayInTheLowestFormatVersion() throws Exception {
    assertThat(Forgery.manifest(Forgery.entries(export("plain.tar.zst", null)))).startsWith("xlac-bundle\t1\n");
  }

  /**
   * Issue #10 item 8: two artifacts swapped and their checksums recomputed imported fine, and
   * jit_multiply then held another graph's code. Signed, the changed manifest no longer matches
   * its signature; unsigned, a cache that requires signatures refuses it.
   */
  @Test
  void swappedArtifactsWithRecomputedChecksums_areRefused_signatureDoesNotMatch() throws Exception {
    Path forged = swapArtifacts(export("signed.tar.zst", ci));
    assertRefused(tmp.resolve("t1"), forged, trusting(ci), "the signature does not match the manifest: the bundle was"
        + " changed after key " + ci.publicKey().id() + " signed it");
    // A bad signature is refused even where signatures are not required.
    assertRefused(tmp.resolve("t2"), forged, ImportRequest.defaults(), "the signature does not match the manifest");

    Path unsigned = swapArtifacts(export("plain.tar.zst", null));
    Path strict = tmp.resolve("strict");
    try (CacheStore t = open(strict)) {
      t.trustKey(ci.publicKey(), "ci");
      t.setRequireSigned(true);
    }
    assertRefused(strict, unsigned, ImportRequest.defaults(), "the bundle is not signed, and this cache accepts only"
        + " signed bundles ('xlac cache config require-signed' is on)");
    assertRefused(tmp.resolve("t3"), unsigned, trusting(ci), "the bundle is not signed, and --trust asks for a bundle"
        + " signed by a trusted key");
    // The attacker's own signature does not help either.
    Path resigned = resign(unsigned, other);
    assertRefused(strict, resigned, ImportRequest.defaults(), "signed by key " + other.publicKey().id()
        + ", which is not trusted");
    // And the clean signed bundle goes in.
    try (CacheStore t = open(strict)) {
      ImportResult r = t.importBundle(export("clean.tar.zst", ci));
      assertThat(r.signerTrusted()).isTrue();
      assertThat(t.getArtifact(key(0, CPU)).orElseThrow().bytes()).isEqualTo(bytes(0, 20_000));
    }
  }

  /** The entries of {@code bundle} as format version 3, signed by {@code key}: what a holder of that key can make. */
  private Path resign(Path bundle, BundleSigningKey key) throws Exception {
    List<Entry> es = new ArrayList<>(Forgery.entries(bundle));
    byte[] manifest = Forgery.manifest(es).replaceFirst("^xlac-bundle\t[12]\n", "xlac-bundle\t3\n")
        .getBytes(StandardCharsets.UTF_8);
    es.set(0, new Entry(BundleManifest.NAME, manifest, TarConstants.LF_NORMAL, null));
    es.add(1, new Entry(BundleSignature.NAME, BundleSignature.sign(manifest, key), TarConstants.LF_NORMAL, null));
    return Forgery.write(tmp.resolve("resigned-" + System.nanoTime() + ".tar.zst"), es);
  }

  @Test
  void anUntrustedSigner_isNamedByKeyId_andRefusedWhereSignaturesAreRequired_elseImportedAsUntrusted() throws Exception {
    Path byOther = export("other.tar.zst", other);
    assertRefused(tmp.resolve("t1"), byOther, trusting(ci), "the bundle is signed by key " + other.publicKey().id()
        + ", which is not trusted (trust its public key with 'xlac cache config trust add PUBKEY', or pass"
        + " '--trust PUBKEY')");
    try (CacheStore t = open(tmp.resolve("lenient"))) {
      ImportResult r = t.importBundle(byOther);
      assertThat(r.signer()).isEqualTo(other.publicKey());
      assertThat(r.signerTrusted()).isFalse();
      assertThat(r.graphsAdded()).isEqualTo(3);
    }
  }

  @Test
  void aStrippedSignature_andASignatureInAnUnsignedFormat_areRefused() throws Exception {
    List<Entry> signed = Forgery.entries(export("signed.tar.zst", ci));
    List<Entry> stripped = new ArrayList<>(signed);
    stripped.remove(1);
    assertRefused(tmp.resolve("t1"), Forgery.write(tmp.resolve("stripped.tar.zst"), stripped), ImportRequest.defaults(),
        "its manifest is of the signed format version 3, but the signature entry xlac-bundle.sig does not follow it");
    List<Entry> downgraded = new ArrayList<>(signed);
    downgraded.set(0, new Entry(BundleManifest.NAME, Forgery.manifest(signed).replaceFirst("^xlac-bundle\t3", "xlac-bundle\t1")
        .getBytes(StandardCharsets.UTF_8), TarConstants.LF_NORMAL, null));
    assertRefused(tmp.resolve("t2"), Forgery.write(tmp.resolve("downgraded.tar.zst"), downgraded),
        ImportRequest.defaults(), "it has a signature entry xlac-bundle.sig, but its manifest is of an unsigned format"
            + " version");
    List<Entry> late = new ArrayList<>(signed);
    late.add(late.remove(1));
    assertRefused(tmp.resolve("t3"), Forgery.write(tmp.resolve("late.tar.zst"), late), ImportRequest.defaults(),
        "does not follow it");
  }

  @Test
  void aMalformedSignatureEntry_isRefused() throws Exception {
    List<Entry> signed = Forgery.entries(export("signed.tar.zst", ci));
    String sig = new String(signed.get(1).data(), StandardCharsets.US_ASCII);
    String otherId = sig.replace(ci.publicKey().id(), other.publicKey().id());
    String shortSig = sig.replaceFirst("\nsignature\t[^\n]*\n", "\nsignature\tAAAA\n");
    String garbage = "hello\n";
    for (String[] c : new String[][] {{otherId, "is not the id of its public key"}, {shortSig, "signature does not match"},
        {garbage, "the signature entry xlac-bundle.sig is malformed"}}) {
      List<Entry> es = new ArrayList<>(signed);
      es.set(1, new Entry(BundleSignature.NAME, c[0].getBytes(StandardCharsets.US_ASCII), TarConstants.LF_NORMAL, null));
      assertRefused(tmp.resolve("t-" + System.nanoTime()), Forgery.write(tmp.resolve("bad-" + System.nanoTime()), es),
          ImportRequest.defaults(), c[1]);
    }
  }

  @Test
  void trustSettings_areKeptInTheCache_andGovernImports() throws Exception {
    Path target = tmp.resolve("target");
    try (CacheStore t = open(target)) {
      assertThat(t.trustSettings()).isEqualTo(new TrustSettings(false, List.of()));
      assertThat(t.trustKey(ci.publicKey(), "ci")).isTrue();
      assertThat(t.trustKey(ci.publicKey(), "again")).isFalse();
      assertThat(t.trustKey(other.publicKey(), "other\tkey")).isTrue();
      t.setRequireSigned(true);
    }
    try (CacheStore t = CacheStore.open(target, CacheStore.Mode.READ_ONLY, java.time.Duration.ZERO)) {
      TrustSettings s = t.trustSettings();
      assertThat(s.requireSigned()).isTrue();
      assertThat(s.keys()).extracting(TrustSettings.TrustedKey::key).containsExactlyInAnyOrder(ci.publicKey(),
          other.publicKey());
      assertThat(s.find(other.publicKey().id()).label()).isEqualTo("other\tkey");
    }
    try (CacheStore t = open(target)) {
      assertThat(t.importBundle(export("by-other.tar.zst", other)).signerTrusted()).isTrue();
      assertThat(t.untrustKey(other.publicKey().id().substring(0, 10)).key()).isEqualTo(other.publicKey());
      assertThatThrownBy(() -> t.untrustKey(other.publicKey().id())).hasMessageContaining("no trusted key has id");
      assertThatThrownBy(() -> t.untrustKey("abc")).hasMessageContaining("not a key id: 'abc'");
      Path byOther = export("by-other-2.tar.zst", other);
      assertThatThrownBy(() -> t.importBundle(byOther)).hasMessageContaining("which is not trusted");
      t.setRequireSigned(false);
      assertThat(t.trustSettings().requireSigned()).isFalse();
    }
  }
}
