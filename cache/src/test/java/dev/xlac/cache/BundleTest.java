package dev.xlac.cache;

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
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
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

class BundleTest {
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
      BundleExporter.Result r = s.exportBundle(bundle, ExportRequest.all());
      assertThat(r.graphs()).isEqualTo(4);
      assertThat(r.artifacts()).isEqualTo(3);
      assertThat(r.failures()).isEqualTo(2);
    }
  }

  @Test
  void import_bringsEverything_andASecondImportChangesNothing() throws Exception {
    Path target = tmp.resolve("target");
    try (CacheStore t = open(target)) {
      BundleImporter.Result r = t.importBundle(bundle);
      assertThat(r.graphsAdded()).isEqualTo(4);
      assertThat(r.artifactsAdded()).isEqualTo(3);
      assertThat(r.failuresAdded()).isEqualTo(2);
      assertThat(t.getArtifact(key(0, TRN1)).orElseThrow().bytes()).isEqualTo(bytes(1, 50_000));
      assertThat(t.log(fp(2)).orElseThrow().artifacts().getFirst().log()).isEqualTo("neuronx-cc: error\n");
      assertThat(t.readGraph(fp(3))).isPresent();
      Totals before = t.currentTotals();
      List<ListRow> rows = t.list(ListQuery.all());
      BundleImporter.Result again = t.importBundle(bundle);
      assertThat(again.graphsAdded() + again.artifactsAdded() + again.failuresAdded()).isZero();
      assertThat(again.graphsPresent()).isEqualTo(4);
      assertThat(t.list(ListQuery.all())).isEqualTo(rows);
      assertThat(t.currentTotals().sameContents(before)).isTrue();
      assertThat(t.verify(false).clean()).isTrue();
    }
  }

  @Test
  void export_byCompiler_carriesOnlyItsArtifactsAndTheirGraphs() throws Exception {
    Path cpuOnly = tmp.resolve("cpu.tar.zst");
    try (CacheStore s = CacheStore.open(source, CacheStore.Mode.READ_ONLY, java.time.Duration.ZERO)) {
      BundleExporter.Result r = s.exportBundle(cpuOnly, new ExportRequest(CompilerFilter.parse("pjrt:cpu"), null));
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
    BundleLimits small = new BundleLimits(1 << 20, 1000, 60_000, 1 << 20, 4096, 1 << 20);
    try (CacheStore t = open(tmp.resolve("target"))) {
      assertThatThrownBy(() -> new BundleImporter(t, small).importBundle(bundle))
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
        ? new Entry(e.name(), new String(e.data(), StandardCharsets.UTF_8).replaceFirst("xlac-bundle\t1", "xlac-bundle\t2")
            .getBytes(StandardCharsets.UTF_8), e.type(), null)
        : e), "bundle format version 2 is not supported");
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

  record Entry(String name, byte[] data, byte type, String link) {
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
