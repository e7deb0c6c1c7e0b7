package dev.xlac.cache.bundle;

import static dev.xlac.cache.Fixtures.open;
import static dev.xlac.cache.RequestFixtures.request;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.BundleSigningKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.ExportRequest;
import dev.xlac.cache.ExportResult;
import dev.xlac.cache.Fixtures;
import dev.xlac.cache.ImportRequest;
import dev.xlac.cache.ImportResult;
import dev.xlac.cache.Internals;
import dev.xlac.cache.RequestInfo;
import dev.xlac.cache.bundle.BundleTest.Entry;
import dev.xlac.cache.layout.PjrtRuntimeLayout;
import dev.xlac.cache.store.RocksDbStore;
import dev.xlac.cache.store.StoreInternals;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.runtime.RecordedRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runtime entries (recorded PJRT requests and their executables) in bundles: format versions 4 and 5. */
class RequestBundleTest {
  @TempDir
  Path tmp;
  Path source;
  Path bundle;
  List<RecordedRequest> requests;

  @BeforeEach
  void exportACacheWithRuntimeEntries() throws Exception {
    StoreInternals.chunkBytes(4096); // the large executable is written and imported in chunks
    source = tmp.resolve("source");
    bundle = tmp.resolve("runtime.tar.zst");
    requests = List.of(request(0, 1000), request(1, 20_000), request(2, 10));
    try (CacheStore s = open(source)) {
      Fixtures.graph(s, 0);
      s.putArtifact(Fixtures.key(0, Fixtures.CPU), Fixtures.bytes(0, 100), CompileInfo.of(1, ""));
      s.putRequests(requests);
      ExportResult r = s.exportBundle(bundle, ExportRequest.all());
      assertThat(r.requests()).isEqualTo(3);
      assertThat(r.graphs()).isEqualTo(1);
    }
  }

  @AfterEach
  void chunksBackToNormal() {
    StoreInternals.chunkBytes(0);
  }

  static String manifestOf(Path bundle) throws Exception {
    return Forgery.manifest(Forgery.entries(bundle));
  }

  @Test
  void aBundleOfAnOlderXlac_importsItsEntriesUnderTheirOldKeys_insteadOfRejectingTheBundle() throws Exception {
    RecordedRequest old = dev.xlac.cache.RequestFixtures.filedByAnOlderXlac(request(7, 300));
    Path oldSource = tmp.resolve("old-source");
    Path oldBundle = tmp.resolve("old.tar.zst");
    try (CacheStore s = open(oldSource)) {
      assertThat(s.putRequests(List.of(old)).added()).isEqualTo(1);
      assertThat(s.exportBundle(oldBundle, ExportRequest.all()).requests()).isEqualTo(1);
    }
    try (CacheStore t = open(tmp.resolve("target"))) {
      assertThat(t.importBundle(oldBundle).requestsAdded()).isEqualTo(1);
      assertThat(t.readRequest(old.key()).orElseThrow().executable()).isEqualTo(old.executable());
      assertThat(t.verify(false).problems()).isEmpty();
    }
  }

  @Test
  void aBundle_carriesRuntimeEntries_whichImportAndMaterializeAsInTheSource() throws Exception {
    assertThat(manifestOf(bundle)).startsWith("xlac-bundle\t4\n").contains("\nrequest\t" + requests.get(1).key().hex());
    Path target = tmp.resolve("target");
    try (CacheStore t = open(target)) {
      ImportResult r = t.importBundle(bundle);
      assertThat(r.requestsAdded()).isEqualTo(3);
      assertThat(r.artifactsAdded()).isEqualTo(1);
      for (RecordedRequest q : requests) {
        RecordedRequest back = t.readRequest(q.key()).orElseThrow();
        assertThat(back.executable()).isEqualTo(q.executable());
        assertThat(back.program()).isEqualTo(q.program());
        assertThat(back.compileNanos()).isEqualTo(q.compileNanos());
      }
      RequestInfo info = t.requestInfo(requests.get(1).key()).orElseThrow();
      assertThat(info.platformName()).isEqualTo("cpu");
      assertThat(info.pluginSha256()).isEqualTo(dev.xlac.cache.RequestFixtures.PLUGIN_A);
      assertThat(t.verify(false).problems()).isEmpty();
      ImportResult again = t.importBundle(bundle);
      assertThat(again.requestsAdded()).isZero();
      assertThat(again.requestsPresent()).isEqualTo(3);
      assertThat(t.statistics().runtimeEntries()).isEqualTo(3);
      // the fleet's layout is the CI's layout, byte for byte
      Path fleet = tmp.resolve("fleet-layout");
      Path ci = tmp.resolve("ci-layout");
      PjrtRuntimeLayout.materialize(t, fleet, Optional.empty(), p -> { throw new AssertionError(p); });
      try (CacheStore s = CacheStore.open(source, CacheStore.Mode.READ_ONLY, java.time.Duration.ZERO)) {
        PjrtRuntimeLayout.materialize(s, ci, Optional.empty(), p -> { throw new AssertionError(p); });
      }
      for (RecordedRequest q : requests) {
        Path rel = ci.relativize(dev.xlac.runtime.LayoutEntry.path(ci, q.key()));
        assertThat(Files.readAllBytes(fleet.resolve(rel))).isEqualTo(Files.readAllBytes(ci.resolve(rel)));
      }
    }
  }

  @Test
  void aSignedBundleWithRuntimeEntries_isVersion5_andItsSignatureCoversThem() throws Exception {
    BundleSigningKey ci = BundleSigningKey.read(BundleSigningKey.generate(tmp.resolve("ci"), false).privateKeyFile());
    Path signed = tmp.resolve("signed.tar.zst");
    try (CacheStore s = open(source)) {
      s.exportBundle(signed, ExportRequest.all().signedBy(ci));
    }
    assertThat(manifestOf(signed)).startsWith("xlac-bundle\t5\n");
    try (CacheStore t = open(tmp.resolve("t"))) {
      ImportResult r = t.importBundle(signed, new ImportRequest(List.of(ci.publicKey())));
      assertThat(r.signerTrusted()).isTrue();
      assertThat(r.requestsAdded()).isEqualTo(3);
    }
    // the swapped-executables attack: two executables exchanged, the manifest made to agree again
    List<Entry> entries = Forgery.entries(signed);
    String a = "executables/" + requests.get(0).key().hex() + ".bin";
    String b = "executables/" + requests.get(2).key().hex() + ".bin";
    byte[] da = entries.stream().filter(e -> e.name().equals(a)).findFirst().orElseThrow().data();
    byte[] db = entries.stream().filter(e -> e.name().equals(b)).findFirst().orElseThrow().data();
    Path swapped = Forgery.write(tmp.resolve("swapped.tar.zst"), Forgery.consistent(entries, Map.of(a, db, b, da), m -> m));
    try (CacheStore t = open(tmp.resolve("t2"))) {
      assertThatThrownBy(() -> t.importBundle(swapped)).isInstanceOf(XlacException.class)
          .hasMessageContaining("the signature does not match the manifest");
      assertThat(t.requests()).isEmpty();
    }
  }

  @Test
  void aRequestFiledUnderAnotherKey_isRefused_andNothingIsImported() throws Exception {
    List<Entry> entries = Forgery.entries(bundle);
    String a = "requests/" + requests.get(0).key().hex() + ".req.zst";
    String b = "requests/" + requests.get(2).key().hex() + ".req.zst";
    byte[] da = entries.stream().filter(e -> e.name().equals(a)).findFirst().orElseThrow().data();
    byte[] db = entries.stream().filter(e -> e.name().equals(b)).findFirst().orElseThrow().data();
    Path forged = Forgery.write(tmp.resolve("forged.tar.zst"), Forgery.consistent(entries, Map.of(a, db, b, da), m -> m));
    // whichever of the two comes first is caught
    assertRefused(forged, ", not the one it is filed under");
  }

  @Test
  void aManifestThatMisstatesARequestsPluginSha_isRefused_soNoMaterializeMeetsIt() throws Exception {
    String hex = requests.get(1).key().hex();
    List<Entry> wrong = Forgery.consistent(Forgery.entries(bundle), Map.of(),
        m -> editRequestLine(m, hex, 11, dev.xlac.cache.RequestFixtures.PLUGIN_B));
    assertRefused(Forgery.write(tmp.resolve("wrong-plugin.tar.zst"), wrong),
        "the manifest's plugin SHA-256 of runtime entry pjrt1:" + hex + " is not its request's");
    List<Entry> notSha = Forgery.consistent(Forgery.entries(bundle), Map.of(),
        m -> editRequestLine(m, hex, 11, "zz"));
    assertRefused(Forgery.write(tmp.resolve("not-a-sha.tar.zst"), notSha),
        "the plugin SHA-256 of runtime entry " + hex + " is not 64 lowercase hex digits");
  }

  @Test
  void aManifestThatMisstatesARequestsFormatPlatformOrProgramSize_isRefused() throws Exception {
    String hex = requests.get(0).key().hex();
    for (Object[] c : new Object[][] {{9, "hlo", "format"}, {10, "cuda", "platform name"}, {12, "7", "program size"}}) {
      List<Entry> wrong = Forgery.consistent(Forgery.entries(bundle), Map.of(),
          m -> editRequestLine(m, hex, (Integer) c[0], (String) c[1]));
      assertRefused(Forgery.write(tmp.resolve("wrong-" + c[0] + ".tar.zst"), wrong),
          "the manifest's " + c[2] + " of runtime entry pjrt1:" + hex + " is not its request's");
    }
  }

  /** The manifest with field {@code field} of the request line of {@code hex} set to {@code value}. */
  static String editRequestLine(String manifest, String hex, int field, String value) {
    StringBuilder b = new StringBuilder();
    for (String line : manifest.split("\n", -1)) {
      String[] f = line.split("\t", -1);
      if (f[0].equals("request") && f[1].equals(hex)) {
        f[field] = value;
      }
      b.append(String.join("\t", f)).append('\n');
    }
    return b.substring(0, b.length() - 1);
  }

  @Test
  void aRequestAfterItsExecutable_isRefused() throws Exception {
    List<Entry> entries = new ArrayList<>(Forgery.entries(bundle));
    String req = "requests/" + requests.get(1).key().hex() + ".req.zst";
    int i = entries.indexOf(entries.stream().filter(e -> e.name().equals(req)).findFirst().orElseThrow());
    Entry moved = entries.remove(i);
    entries.add(moved);
    assertRefused(Forgery.write(tmp.resolve("reordered.tar.zst"), entries), "follows its executable");
  }

  @Test
  void aRequestRecordInAnOlderVersion_isRefused() throws Exception {
    List<Entry> entries = Forgery.consistent(Forgery.entries(bundle), Map.of(),
        m -> m.replaceFirst("xlac-bundle\t4", "xlac-bundle\t3"));
    assertRefused(Forgery.write(tmp.resolve("v3.tar.zst"), entries), "a 'request' record in a version 3 bundle");
  }

  @Test
  void anExportMeetingADamagedExecutable_failsNamingIt() throws Exception {
    try (CacheStore s = open(source)) {
      byte[] bad = requests.get(0).executable().clone();
      bad[10] ^= 1;
      try (org.rocksdb.WriteBatch b = new org.rocksdb.WriteBatch()) {
        StoreInternals.db(Internals.store(s)).put(b, RocksDbStore.Cf.EXECUTABLES, requests.get(0).key().digest(), bad);
        StoreInternals.db(Internals.store(s)).write(b, true);
      }
      assertThatThrownBy(() -> s.exportBundle(tmp.resolve("x.tar.zst"), ExportRequest.all()))
          .isInstanceOf(XlacException.class)
          .hasMessageContaining("the executable of runtime entry pjrt1:" + requests.get(0).key().hex().substring(0, 12))
          .hasMessageContaining("fails its checksum");
    }
    assertThat(tmp.resolve("x.tar.zst")).doesNotExist();
  }

  @Test
  void aCompilerFilteredExport_holdsNoRuntimeEntries_andIsAnOlderVersion() throws Exception {
    Path filtered = tmp.resolve("cpu.tar.zst");
    try (CacheStore s = open(source)) {
      ExportResult r = s.exportBundle(filtered, new ExportRequest(dev.xlac.cache.CompilerFilter.parse("pjrt:cpu"), null));
      assertThat(r.requests()).isZero();
    }
    assertThat(manifestOf(filtered)).startsWith("xlac-bundle\t1\n").doesNotContain("\nrequest\t");
  }

  private void assertRefused(Path hostile, String why) throws Exception {
    try (CacheStore t = open(tmp.resolve("target-" + System.nanoTime()))) {
      assertThatThrownBy(() -> t.importBundle(hostile)).isInstanceOf(XlacException.class)
          .hasMessageContaining(why).hasMessageContaining("nothing was imported")
          .extracting(e -> ((XlacException) e).exitCode()).isEqualTo(ExitCode.BAD_INPUT);
      assertThat(t.requests()).isEmpty();
      assertThat(t.statistics().graphs()).isZero();
      assertThat(t.verify(false).clean()).isTrue();
    }
  }
}
