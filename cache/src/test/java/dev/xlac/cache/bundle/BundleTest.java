package dev.xlac.cache.bundle;

import dev.xlac.cache.ImportResult;
import dev.xlac.cache.ExportResult;
import dev.xlac.cache.Internals;
import dev.xlac.cache.store.StoreInternals;
import static dev.xlac.cache.Fixtures.CPU;
import static dev.xlac.cache.Fixtures.TRN1;
import static dev.xlac.cache.Fixtures.bytes;
import static dev.xlac.cache.Fixtures.fp;
import static dev.xlac.cache.Fixtures.graph;
import static dev.xlac.cache.Fixtures.key;
import static dev.xlac.cache.Fixtures.open;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.github.luben.zstd.ZstdInputStream;
import com.github.luben.zstd.ZstdOutputStream;
import dev.xlac.cache.BundleLimits;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.CompilerFilter;
import dev.xlac.cache.ExportRequest;
import dev.xlac.cache.Fixtures;
import dev.xlac.cache.GraphInfo;
import dev.xlac.cache.ListQuery;
import dev.xlac.cache.ListRow;
import dev.xlac.cache.store.Checksums;
import dev.xlac.cache.store.RocksDbStore;
import dev.xlac.cache.store.Totals;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.neuron.NeuronName;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

public class BundleTest {
  @TempDir
  Path tmp;
  Path source;
  Path bundle;

  @BeforeEach
  void exportAWarmCache() throws Exception {
    source = tmp.resolve("source");
    bundle = tmp.resolve("warm.tar.zst");
    try (CacheStore s = open(source)) {
      for (int n = 0; n < 4; n++) {
        graph(s, n);
      }
      s.putArtifact(key(0, CPU), bytes(0, 100_000), CompileInfo.of(12, "compiled fine"));
      s.putArtifact(key(0, TRN1), bytes(1, 50_000), CompileInfo.of(600, ""));
      s.putArtifact(key(1, CPU), bytes(2, 10), CompileInfo.of(1, ""));
      s.recordFailure(key(2, TRN1), "compile-error", "unsupported op", "neuronx-cc: error\n");
      s.recordFailure(key(3, TRN1), "timeout", "took too long", "");
      ExportResult r = s.exportBundle(bundle, ExportRequest.all());
      assertThat(r.graphs()).isEqualTo(4);
      assertThat(r.artifacts()).isEqualTo(3);
      assertThat(r.failures()).isEqualTo(2);
    }
  }

  @Test
  void export_ofADamagedArtifact_failsNamingIt_andLeavesNoBundle() throws Exception {
    Path out = tmp.resolve("damaged.tar.zst");
    try (CacheStore s = open(source)) {
      byte[] bad = bytes(1, 50_000);
      bad[40_000] ^= 1;
      try (org.rocksdb.WriteBatch b = new org.rocksdb.WriteBatch()) {
        StoreInternals.db(Internals.store(s)).put(b, RocksDbStore.Cf.ARTIFACTS, key(0, TRN1).bytes(), bad);
        StoreInternals.db(Internals.store(s)).write(b, true);
      }
      assertThatThrownBy(() -> s.exportBundle(out, ExportRequest.all()))
          .isInstanceOf(XlacException.class)
          .hasMessageContaining("artifact " + fp(0).shortForm())
          .hasMessageContaining("fails its checksum")
          .hasMessageContaining("xlac cache verify --repair")
          .satisfies(e -> assertThat(((XlacException) e).exitCode()).isEqualTo(ExitCode.WORK_FAILED));
    }
    assertThat(out).doesNotExist();
    try (var files = Files.list(tmp)) {
      assertThat(files.map(p -> p.getFileName().toString())).noneMatch(n -> n.contains(".tmp-"));
    }
    assertThat(Thread.getAllStackTraces().keySet().stream().map(Thread::getName))
        .doesNotContain("xlac-export-reader");
  }

  @Test
  void import_bringsEverything_andASecondImportChangesNothing() throws Exception {
    Path target = tmp.resolve("target");
    try (CacheStore t = open(target)) {
      ImportResult r = t.importBundle(bundle);
      assertThat(r.graphsAdded()).isEqualTo(4);
      assertThat(r.artifactsAdded()).isEqualTo(3);
      assertThat(r.failuresAdded()).isEqualTo(2);
      assertThat(t.getArtifact(key(0, TRN1)).orElseThrow().bytes()).isEqualTo(bytes(1, 50_000));
      assertThat(t.log(fp(2)).orElseThrow().artifacts().getFirst().log()).isEqualTo("neuronx-cc: error\n");
      assertThat(t.readGraph(fp(3))).isPresent();
      Totals before = Internals.store(t).totals();
      List<ListRow> rows = t.list(ListQuery.all());
      ImportResult again = t.importBundle(bundle);
      assertThat(again.graphsAdded() + again.artifactsAdded() + again.failuresAdded()).isZero();
      assertThat(again.graphsPresent()).isEqualTo(4);
      assertThat(t.list(ListQuery.all())).isEqualTo(rows);
      assertThat(Internals.store(t).totals().sameContents(before)).isTrue();
      assertThat(t.verify(false).clean()).isTrue();
    }
  }

  @Test
  void export_byCompiler_carriesOnlyItsArtifactsAndTheirGraphs() throws Exception {
    Path cpuOnly = tmp.resolve("cpu.tar.zst");
    try (CacheStore s = CacheStore.open(source, CacheStore.Mode.READ_ONLY, java.time.Duration.ZERO)) {
      ExportResult r = s.exportBundle(cpuOnly, new ExportRequest(CompilerFilter.parse("pjrt:cpu"), null));
      assertThat(r.graphs()).isEqualTo(2);
      assertThat(r.artifacts()).isEqualTo(2);
      assertThat(r.failures()).isZero();
    }
    assertThat(entryNames(cpuOnly)).first().isEqualTo("xlac-bundle.manifest");
  }

  @Test
  void aFailureInTheTarget_isReplacedByACompiledArtifactFromTheBundle_butNotTheOtherWayRound() throws Exception {
    Path target = tmp.resolve("target");
    try (CacheStore t = open(target)) {
      graph(t, 0);
      graph(t, 2);
      t.recordFailure(key(0, CPU), "oom-killed", "killed", "");
      t.putArtifact(key(2, TRN1), bytes(9, 99), CompileInfo.of(1, ""));
      t.importBundle(bundle);
      assertThat(t.getArtifact(key(0, CPU)).orElseThrow().bytes()).isEqualTo(bytes(0, 100_000));
      assertThat(t.getArtifact(key(2, TRN1)).orElseThrow().bytes()).isEqualTo(bytes(9, 99));
      assertThat(t.verify(false).clean()).isTrue();
    }
  }

  // ------------------------------------------------------------------ format versions, Neuron names

  static final NeuronName NAME_A = new NeuronName("neuronxcc-2.15.128.0+56dc5a86", "MODULE_1111+aaaaaaaa",
      "[\"--target=trn2\", \"-O1\"]");
  static final NeuronName NAME_B = new NeuronName("neuronxcc-2.16.1.0+deadbeef", "MODULE_1111+bbbbbbbb", null);

  @Test
  void aBundleWithoutNeuronNames_isWrittenInFormatVersion1_soOlderXlacsStillReadIt() throws Exception {
    assertThat(manifest(bundle)).startsWith("xlac-bundle\t1\n").doesNotContain("\nneuron\t");
  }

  @Test
  void neuronNames_travelInFormatVersion2_andMergeByLocation() throws Exception {
    try (CacheStore s = open(source)) {
      s.addNeuronName(fp(0), NAME_A);
      s.addNeuronName(fp(0), NAME_B);
      s.exportBundle(bundle, ExportRequest.all());
    }
    assertThat(manifest(bundle)).startsWith("xlac-bundle\t2\n").contains("\nneuron\t" + hex(0)
        + "\tneuronxcc-2.15.128.0+56dc5a86\tMODULE_1111+aaaaaaaa\t[\"--target=trn2\", \"-O1\"]\n",
        "\nneuron\t" + hex(0) + "\tneuronxcc-2.16.1.0+deadbeef\tMODULE_1111+bbbbbbbb\t-\n");
    Path target = tmp.resolve("target");
    NeuronName ownA = new NeuronName(NAME_A.versionDirectory(), NAME_A.moduleDirectory(), "[\"--target=trn1\"]");
    try (CacheStore t = open(target)) {
      graph(t, 0);
      t.addNeuronName(fp(0), ownA); // the target's own name at the same location stays
      ImportResult r = t.importBundle(bundle);
      assertThat(r.neuronNamesAdded()).isEqualTo(1);
      assertThat(t.graph(fp(0)).orElseThrow().neuronNames()).containsExactlyInAnyOrder(ownA, NAME_B);
      assertThat(t.graph(fp(1)).orElseThrow().neuronNames()).isEmpty();
      assertThat(t.importBundle(bundle).neuronNamesAdded()).isZero();
      assertThat(t.verify(false).clean()).isTrue();
    }
    try (CacheStore fresh = open(tmp.resolve("fresh"))) {
      assertThat(fresh.importBundle(bundle).neuronNamesAdded()).isEqualTo(2);
      assertThat(fresh.graph(fp(0)).orElseThrow().neuronNames()).containsExactly(NAME_A, NAME_B);
    }
  }

  /** A version-1 bundle written out by hand, field by field, as the first bundle format defined it. */
  @Test
  void aVersion1Bundle_asTheFirstFormatWroteIt_stillImports() throws Exception {
    // graph 7's module under a name with a tab (names are not part of the fingerprint)
    byte[] module = dev.xlac.hlo.TestModules.mulAdd(7).toBuilder().setName("jit\told").build().toByteArray();
    byte[] stored = com.github.luben.zstd.Zstd.compress(module);
    byte[] identity = CPU.encode().getBytes(StandardCharsets.UTF_8);
    byte[] artifact = bytes(78, 5000);
    String fp = hex(7);
    String cid = CPU.digest();
    String manifest = String.join("\n",
        "xlac-bundle\t1",
        "created\t1700000000000",
        "identity\t" + cid + "\t" + identity.length + "\t" + sha(identity),
        "graph\t" + fp + "\t" + stored.length + "\t" + sha(stored) + "\t" + module.length
            + "\t1700000000000\t1700000001000\t3\tjit%09old\tdumps/module_0001.hlo.pb",
        "artifact\t" + fp + "\t" + cid + "\tcompiled\t" + artifact.length + "\t" + sha(artifact)
            + "\t2500\t1700000002000\t0\t-\t0\t\t",
        "end\t3", "");
    Path old = write(List.of(
        new Entry(BundleManifest.NAME, manifest.getBytes(StandardCharsets.UTF_8), TarConstants.LF_NORMAL, null),
        new Entry("identities/" + cid + ".txt", identity, TarConstants.LF_NORMAL, null),
        new Entry("graphs/" + fp + ".hlo.zst", stored, TarConstants.LF_NORMAL, null),
        new Entry("artifacts/" + fp + "." + cid + ".bin", artifact, TarConstants.LF_NORMAL, null)));
    try (CacheStore t = open(tmp.resolve("target"))) {
      ImportResult r = t.importBundle(old);
      assertThat(r.graphsAdded()).isEqualTo(1);
      assertThat(r.artifactsAdded()).isEqualTo(1);
      assertThat(r.neuronNamesAdded()).isZero();
      GraphInfo g = t.graph(fp(7)).orElseThrow();
      assertThat(g.moduleName()).isEqualTo("jit\told");
      assertThat(g.seenCount()).isEqualTo(3);
      assertThat(g.neuronNames()).isEmpty();
      assertThat(t.readGraph(fp(7)).orElseThrow()).isEqualTo(module);
      assertThat(t.getArtifact(key(7, CPU)).orElseThrow().bytes()).isEqualTo(artifact);
      assertThat(t.verify(false).clean()).isTrue();
    }
  }

  @Test
  void hostileNeuronNames_areRefused() throws Exception {
    String fp0 = hex(0);
    assertRefused(withNeuronLines(1, "neuron\t" + fp0 + "\tneuronxcc-2.15.1\tMODULE_1+a\t-"), "a 'neuron' record in a version 1");
    assertRefused(withNeuronLines(2, "neuron\t" + fp0 + "\tneuronxcc-2.15.1\t..\t-"), "not a Neuron cache MODULE directory name");
    assertRefused(withNeuronLines(2, "neuron\t" + fp0 + "\t..\tMODULE_1+a\t-"), "not a Neuron cache version directory name");
    assertRefused(withNeuronLines(2, "neuron\t" + fp0 + "\tneuronxcc-2.15.1\tMODULE_1/../../../etc\t-"),
        "not a Neuron cache MODULE directory name");
    assertRefused(withNeuronLines(2, "neuron\t" + fp0 + "\tneuronxcc-2.15.1\tMODULE_1%0Ax\t-"),
        "not a Neuron cache MODULE directory name");
    assertRefused(withNeuronLines(2, "neuron\t" + fp0 + "\tetc\tMODULE_1+a\t-"), "is not a Neuron cache version directory");
    assertRefused(withNeuronLines(2, "neuron\t" + fp0 + "\tneuronxcc-2.15.1\tpasswd\t-"), "is not a Neuron cache MODULE directory");
    assertRefused(withNeuronLines(2, "neuron\t" + fp0 + "\tneuronxcc-2.15.1\tMODULE_" + "9".repeat(260) + "\t-"),
        "longer than 255 bytes");
    assertRefused(withNeuronLines(2, "neuron\t" + fp0 + "\tneuronxcc-2.15.1\tMODULE_1+a\t{\"a\": 1}"),
        "not a JSON list of strings");
    assertRefused(withNeuronLines(2, "neuron\t" + fp0 + "\tneuronxcc-2.15.1\tMODULE_1+a\t[\"--target=trn9\"]"),
        "target 'trn9' is not one of");
    assertRefused(withNeuronLines(2, "neuron\t" + fp0 + "\tneuronxcc-2.15.1\tMODULE_1+a\t[\"" + "x".repeat(70_000) + "\"]"),
        "exceeds the limit of 65536");
    assertRefused(withNeuronLines(2, "neuron\t" + hex(99) + "\tneuronxcc-2.15.1\tMODULE_1+a\t-"),
        "which the bundle does not hold");
    assertRefused(withNeuronLines(2, "neuron\t" + fp0 + "\tneuronxcc-2.15.1\tMODULE_1+a\t-",
        "neuron\t" + fp0 + "\tneuronxcc-2.15.1\tMODULE_1+a\t[]"), "twice");
    assertRefused(withNeuronLines(2, "neuron\t" + fp0 + "\tneuronxcc-2.15.1\tMODULE_1+a"), "malformed 'neuron' record");
  }

  /** The set-up's bundle with {@code lines} added before its end line, the count fixed, in format {@code version}. */
  private Path withNeuronLines(int version, String... lines) throws IOException {
    return rewrite(e -> {
      if (!e.name().equals(BundleManifest.NAME)) {
        return e;
      }
      String text = new String(e.data(), StandardCharsets.UTF_8).replaceFirst("^xlac-bundle\t1", "xlac-bundle\t" + version);
      int end = text.lastIndexOf("end\t");
      int count = Integer.parseInt(text.substring(end + 4).strip());
      text = text.substring(0, end) + String.join("\n", lines) + "\nend\t" + (count + lines.length) + "\n";
      return new Entry(e.name(), text.getBytes(StandardCharsets.UTF_8), e.type(), null);
    });
  }

  private String manifest(Path file) throws IOException {
    return new String(entries(file).getFirst().data(), StandardCharsets.UTF_8);
  }

  private static String hex(int graph) {
    return fp(graph).value().substring("hlo1:".length());
  }

  private static String sha(byte[] b) {
    return java.util.HexFormat.of().formatHex(Checksums.sha256(b));
  }

  // ------------------------------------------------------------------ hostile bundles

  @Test
  void pathTraversal_isRefused() throws Exception {
    assertRefused(rewrite(e -> e.name().startsWith("graphs/") ? e.renamed("graphs/../../etc/" + e.name().substring(7)) : e),
        "path that leaves the bundle");
  }

  @Test
  void anAbsolutePath_isRefused() throws Exception {
    assertRefused(rewrite(e -> e.name().startsWith("graphs/") ? e.renamed("/" + e.name()) : e), "absolute or unsafe path");
  }

  @Test
  void aSymbolicLink_isRefused() throws Exception {
    assertRefused(addEntry(link("artifacts/x", TarConstants.LF_SYMLINK, "/etc/passwd")), "is a symbolic link");
  }

  @Test
  void aHardLink_isRefused() throws Exception {
    assertRefused(addEntry(link("artifacts/x", TarConstants.LF_LINK, "xlac-bundle.manifest")), "is a hard link");
  }

  @Test
  void aDeviceFile_isRefused() throws Exception {
    assertRefused(addEntry(link("dev/sda", TarConstants.LF_BLK, "")), "is a device file");
  }

  @Test
  void anEntryTheManifestDoesNotList_isRefused() throws Exception {
    assertRefused(addEntry(new Entry("graphs/" + "ab".repeat(32) + ".hlo.zst", new byte[10], TarConstants.LF_NORMAL,
        null)), "is not in the manifest");
  }

  @Test
  void anOversizedEntry_isRefused() throws Exception {
    BundleLimits small = new BundleLimits(1 << 20, 1000, 60_000, 60_000, 1 << 20, 4096, 1 << 20, 4096);
    try (CacheStore t = open(tmp.resolve("target"))) {
      assertThatThrownBy(() -> new BundleImporter(Internals.store(t), small).importBundle(bundle))
          .hasMessageContaining("exceeds the limit of 60000").hasMessageContaining("nothing was imported");
      assertThat(t.statistics().graphs()).isZero();
    }
  }

  @Test
  void aDamagedEntry_isRefused() throws Exception {
    assertRefused(rewrite(e -> {
      if (!e.name().startsWith("artifacts/")) {
        return e;
      }
      byte[] d = e.data().clone();
      d[d.length / 2] ^= 1;
      return new Entry(e.name(), d, e.type(), null);
    }), "fails its checksum");
  }

  @Test
  void aTruncatedBundle_isRefused() throws Exception {
    assertRefused(rewrite(e -> e.name().startsWith("artifacts/") ? null : e), "missing (truncated bundle?)");
    byte[] all = Files.readAllBytes(bundle);
    Path cut = tmp.resolve("cut.tar.zst");
    Files.write(cut, java.util.Arrays.copyOf(all, all.length * 2 / 3));
    assertRefused(cut, "malformed bundle");
  }

  @Test
  void garbage_isRefused() throws Exception {
    Path junk = tmp.resolve("junk.tar.zst");
    Files.write(junk, bytes(5, 5000));
    assertRefused(junk, "malformed bundle");
  }

  @Test
  void anUnknownFormatVersion_isRefused() throws Exception {
    assertRefused(rewrite(e -> e.name().equals(BundleManifest.NAME)
        ? new Entry(e.name(), new String(e.data(), StandardCharsets.UTF_8).replaceFirst("xlac-bundle\t1", "xlac-bundle\t6")
            .getBytes(StandardCharsets.UTF_8), e.type(), null)
        : e), "bundle format version 6 is not supported (this xlac reads versions 1 to 5; it was written by a newer xlac)");
  }

  @Test
  void aBundleThatChangesBetweenTheTwoPasses_isCaughtBeforeTheChangedEntryIsWritten() throws Exception {
    Path changed = rewrite(e -> {
      if (!e.name().startsWith("artifacts/")) {
        return e;
      }
      byte[] d = e.data().clone();
      d[d.length / 2] ^= 1;
      return new Entry(e.name(), d, e.type(), null);
    });
    Path original = tmp.resolve("original.tar.zst");
    Files.copy(bundle, original);
    try (CacheStore t = open(tmp.resolve("target"))) {
      BundleImporter swapping = new BundleImporter(Internals.store(t), BundleLimits.DEFAULT, BundleImporter.Trust.NONE, () -> {
        try {
          Files.copy(changed, bundle, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
      assertThatThrownBy(() -> swapping.importBundle(bundle)).isInstanceOf(XlacException.class)
          .hasMessageContaining("changed while being imported").hasMessageContaining("is not what was checked")
          .extracting(e -> ((XlacException) e).exitCode()).isEqualTo(ExitCode.WORK_FAILED);
      assertThat(t.verify(false).clean()).isTrue();
      assertThat(t.statistics().compiled()).isZero();
      // Imported again from the unchanged file, it completes.
      assertThat(t.importBundle(original).artifactsAdded()).isEqualTo(3);
      assertThat(t.verify(false).clean()).isTrue();
    }
  }

  // ------------------------------------------------------------------ the content decides, not the manifest

  private static String graphEntry(int n) {
    return "graphs/" + hex(n) + ".hlo.zst";
  }

  private Path forged(Map<String, byte[]> replaced, UnaryOperator<String> manifestEdit) throws IOException {
    return Forgery.write(tmp.resolve("forged-" + System.nanoTime() + ".tar.zst"),
        Forgery.consistent(Forgery.entries(bundle), replaced, manifestEdit));
  }

  /** Replaces field {@code field} of the manifest line that starts with {@code prefix}. */
  private static UnaryOperator<String> field(String prefix, int field, String value) {
    return text -> {
      StringBuilder b = new StringBuilder();
      for (String line : text.split("\n", -1)) {
        if (line.startsWith(prefix)) {
          String[] f = line.split("\t", -1);
          f[field] = value;
          line = String.join("\t", f);
        }
        b.append(line).append('\n');
      }
      return b.substring(0, b.length() - 1);
    };
  }

  @Test
  void aGraphFiledUnderAnotherFingerprint_isRefused() throws Exception {
    List<Entry> es = Forgery.entries(bundle);
    byte[] g0 = es.stream().filter(e -> e.name().equals(graphEntry(0))).findFirst().orElseThrow().data();
    byte[] g1 = es.stream().filter(e -> e.name().equals(graphEntry(1))).findFirst().orElseThrow().data();
    // Graph 1's module under graph 0's fingerprint and back, names swapped too: every checksum and size holds.
    Path swapped = forged(Map.of(graphEntry(0), g1, graphEntry(1), g0),
        field("graph\t" + hex(0), 8, "jit_g1").andThen(field("graph\t" + hex(1), 8, "jit_g0"))::apply);
    assertRefused(swapped, "'" + graphEntry(0) + "' holds a module whose fingerprint is " + fp(1).value() + ", not the "
        + fp(0).value() + " it is filed under");
  }

  @Test
  void aGraphThatIsNotAnHloModule_isRefused() throws Exception {
    assertRefused(forged(Map.of(graphEntry(2), com.github.luben.zstd.Zstd.compress(bytes(5, 300))), t -> t),
        "'" + graphEntry(2) + "' is not a valid HLO module");
  }

  @Test
  void aGraphWhoseRawSizeTheManifestMisstates_isRefused() throws Exception {
    int raw = Fixtures.module(3).length;
    assertRefused(forged(Map.of(), field("graph\t" + hex(3), 4, Integer.toString(raw + 1000))),
        "'" + graphEntry(3) + "' holds a module of " + raw + " bytes; the manifest says " + (raw + 1000));
    assertRefused(forged(Map.of(), field("graph\t" + hex(3), 4, Integer.toString(raw - 1))),
        "'" + graphEntry(3) + "': its module is larger than the " + (raw - 1) + " bytes the manifest gives");
  }

  @Test
  void aGraphWhoseNameTheManifestMisstates_isRefused() throws Exception {
    assertRefused(forged(Map.of(), field("graph\t" + hex(1), 8, "jit_train_step")),
        "is named 'jit_train_step' in the manifest, but its module is named 'jit_g1'");
  }

  @Test
  void aLogWhoseRawSizeTheManifestMisstates_isRefused() throws Exception {
    int raw = "compiled fine".length();
    assertRefused(forged(Map.of(), field("artifact\t" + hex(0) + "\t" + CPU.digest(), 10, "999")),
        "holds a log of " + raw + " bytes; the manifest says 999");
  }

  /** These two were refused before the content checks too: the tar header's size must match the manifest's. */
  @Test
  void storedAndArtifactSizesTheManifestMisstates_areRefused() throws Exception {
    assertRefused(forged(Map.of(), field("graph\t" + hex(1), 2, "9")), "the manifest says 9");
    assertRefused(forged(Map.of(), field("artifact\t" + hex(1) + "\t" + CPU.digest(), 4, "11")),
        "is 10 bytes; the manifest says 11");
  }

  @Test
  void aGraphEntryWithDataAfterItsZstdFrame_isRefused() throws Exception {
    byte[] stored = com.github.luben.zstd.Zstd.compress(Fixtures.module(2));
    byte[] padded = java.util.Arrays.copyOf(stored, stored.length + 7);
    padded[stored.length] = 'x';
    assertRefused(forged(Map.of(graphEntry(2), padded), t -> t), "'" + graphEntry(2) + "': it has data after its zstd frame");
  }

  @Test
  void trailingDataAfterTheEndOfTheTarArchive_isRefused() throws Exception {
    Path tail = Forgery.write(tmp.resolve("tail.tar.zst"), Forgery.entries(bundle),
        "#!/bin/sh\necho owned\n".getBytes(StandardCharsets.UTF_8), new byte[0]);
    assertRefused(tail, "trailing data after the end of the tar archive");
    // A tar writer's zero padding is not trailing data.
    Path padded = Forgery.write(tmp.resolve("padded.tar.zst"), Forgery.entries(bundle), new byte[20480], new byte[0]);
    try (CacheStore t = open(tmp.resolve("padded-target"))) {
      assertThat(t.importBundle(padded).graphsAdded()).isEqualTo(4);
    }
  }

  @Test
  void trailingDataAfterTheZstdFrame_isRefused() throws Exception {
    Path junk = Forgery.write(tmp.resolve("junk-after.tar.zst"), Forgery.entries(bundle), new byte[0],
        "appended".getBytes(StandardCharsets.UTF_8));
    assertRefused(junk, "trailing data after its zstd frame");
    // A second, well-formed zstd frame (here of zeros, which a decompressor would append to the tar's padding)
    Path second = Forgery.write(tmp.resolve("second-frame.tar.zst"), Forgery.entries(bundle), new byte[0],
        com.github.luben.zstd.Zstd.compress(new byte[4096]));
    assertRefused(second, "trailing data after its zstd frame");
  }

  /**
   * A module of 2 MiB is decompressed into a scratch file in the cache directory and fingerprinted
   * from a mapping of it; a forged one is refused the same way, and no scratch file stays behind,
   * while one left by a killed importer (its pid is gone) is removed.
   */
  @Test
  void aLargeGraph_isCheckedThroughAScratchFileInTheCacheDirectory() throws Exception {
    byte[] weights = bytes(11, 2 << 20);
    var module = dev.xlac.hlo.TestModules.mulAdd(1).toBuilder().setName("jit_large").addComputations(
        dev.xlac.hlo.proto.HloProtos.HloComputationProto.newBuilder().setId(99).setName("weights")
            .addInstructions(dev.xlac.hlo.proto.HloProtos.HloInstructionProto.newBuilder().setId(98).setName("w")
                .setOpcode("constant").setShape(dev.xlac.hlo.TestModules.f32(512 * 1024))
                .setLiteral(dev.xlac.hlo.proto.XlaDataProtos.LiteralProto.newBuilder()
                    .setShape(dev.xlac.hlo.TestModules.f32(512 * 1024))
                    .setF32S(com.google.protobuf.ByteString.copyFrom(weights))))
            .setRootId(98)).build().toByteArray();
    dev.xlac.hlo.GraphFingerprint large = new dev.xlac.hlo.HloModuleReader().parse(Path.of("large"),
        dev.xlac.hlo.HloFileKind.HLO_MODULE, module, module.length).fingerprint();
    assertThat(module.length).isGreaterThan((int) BundleContent.HEAP_MODULE_BYTES);
    Path big = tmp.resolve("big.tar.zst");
    try (CacheStore s = open(tmp.resolve("big-source"))) {
      s.putGraph(large, "jit_large", module, "test");
      graph(s, 5);
      s.exportBundle(big, ExportRequest.all());
    }
    Process dead = new ProcessBuilder("true").start();
    dead.waitFor();
    Path target = tmp.resolve("big-target");
    Files.createDirectories(target);
    Path stale = Files.write(target.resolve(".import-graph.tmp-" + dead.pid()), new byte[100]);
    try (CacheStore t = open(target)) {
      assertThat(t.importBundle(big).graphsAdded()).isEqualTo(2);
      assertThat(t.readGraph(large).orElseThrow()).isEqualTo(module);
    }
    assertThat(stale).doesNotExist();
    try (var files = Files.list(target)) {
      assertThat(files.map(p -> p.getFileName().toString())).noneMatch(n -> n.startsWith(".import-graph"));
    }
    String largeHex = large.value().substring(5);
    List<Entry> es = Forgery.entries(big);
    byte[] bigStored = es.stream().filter(e -> e.name().contains(largeHex)).findFirst().orElseThrow().data();
    Path swapped = Forgery.write(tmp.resolve("big-swapped.tar.zst"), Forgery.consistent(es,
        Map.of(graphEntry(5), bigStored), field("graph\t" + hex(5), 8, "jit_large")));
    assertRefused(swapped, "'" + graphEntry(5) + "' holds a module whose fingerprint is " + large.value());
  }

  private void assertRefused(Path hostile, String why) throws Exception {
    Path target = tmp.resolve("target-" + System.nanoTime());
    try (CacheStore t = open(target)) {
      graph(t, 42);
      assertThatThrownBy(() -> t.importBundle(hostile)).isInstanceOf(XlacException.class)
          .hasMessageContaining(why).hasMessageContaining("nothing was imported")
          .extracting(e -> ((XlacException) e).exitCode()).isEqualTo(ExitCode.BAD_INPUT);
      assertThat(t.statistics().graphs()).isEqualTo(1);
      assertThat(t.list(ListQuery.all())).singleElement().extracting(ListRow::fingerprint).isEqualTo(fp(42));
      assertThat(t.verify(false).clean()).isTrue();
    }
  }

  public record Entry(String name, byte[] data, byte type, String link) {
    Entry renamed(String n) {
      return new Entry(n, data, type, link);
    }
  }

  static Entry link(String name, byte type, String target) {
    return new Entry(name, new byte[0], type, target);
  }

  private List<Entry> entries(Path file) throws IOException {
    List<Entry> out = new ArrayList<>();
    try (InputStream in = new ZstdInputStream(Files.newInputStream(file));
        TarArchiveInputStream tar = new TarArchiveInputStream(in)) {
      for (TarArchiveEntry e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
        out.add(new Entry(e.getName(), tar.readAllBytes(), e.getLinkFlag(), null));
      }
    }
    return out;
  }

  private List<String> entryNames(Path file) throws IOException {
    return entries(file).stream().map(Entry::name).toList();
  }

  private Path rewrite(UnaryOperator<Entry> change) throws IOException {
    List<Entry> out = new ArrayList<>();
    for (Entry e : entries(bundle)) {
      Entry c = change.apply(e);
      if (c != null) {
        out.add(c);
      }
    }
    return write(out);
  }

  private Path addEntry(Entry extra) throws IOException {
    List<Entry> out = new ArrayList<>(entries(bundle));
    out.add(2, extra);
    return write(out);
  }

  private Path write(List<Entry> entries) throws IOException {
    Path p = tmp.resolve("hostile-" + System.nanoTime() + ".tar.zst");
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (OutputStream z = new ZstdOutputStream(bytes); TarArchiveOutputStream tar = new TarArchiveOutputStream(z)) {
      tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      for (Entry e : entries) {
        TarArchiveEntry t = new TarArchiveEntry(e.name(), e.type(), e.name().startsWith("/"));
        if (e.link() != null) {
          t.setLinkName(e.link());
        } else {
          t.setSize(e.data().length);
        }
        tar.putArchiveEntry(t);
        if (e.link() == null) {
          tar.write(e.data());
        }
        tar.closeArchiveEntry();
      }
    }
    Files.write(p, bytes.toByteArray());
    return p;
  }

  @SuppressWarnings("unused")
  private static Map<String, byte[]> asMap(List<Entry> es) {
    Map<String, byte[]> m = new LinkedHashMap<>();
    es.forEach(e -> m.put(e.name(), e.data()));
    return m;
  }
}
