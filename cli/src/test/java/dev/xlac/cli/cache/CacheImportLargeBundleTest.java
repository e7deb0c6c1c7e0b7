package dev.xlac.cli.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.github.luben.zstd.ZstdInputStream;
import com.github.luben.zstd.ZstdOutputStream;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cli.CliRunner;
import dev.xlac.cli.Main;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.hlo.GraphFingerprint;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #10, item 6: "A 636 KB bundle brings down the importer". A consistent bundle holding one
 * artifact of 2e9 zero bytes (a few hundred KB compressed): on the xlac before the fix, its import
 * read each entry whole into one array, took 30 s and 6 GB, and with a small heap died with an
 * OutOfMemoryError and its stack trace. Now it streams within a small heap, a limit on unpacked
 * bytes refuses it in one line, and so does a filesystem too small for it, before anything is
 * written. The imports that matter run the real CLI in child JVMs.
 */
class CacheImportLargeBundleTest {
  static final long ARTIFACT_BYTES = 2_000_000_000L;
  static final CompilerIdentity CPU = new CompilerIdentity("pjrt", "cpu test", "cpu", List.of(), Map.of());

  @TempDir
  static Path shared;
  static Path bundle;
  static String zerosSha;
  static ArtifactKey key;

  @TempDir
  Path tmp;

  static CliRunner xlac(String... args) {
    return CliRunner.run(args);
  }

  /** The real CLI in a child JVM with options {@code jvm} (a heap), under {@code wrapper} (a command that runs it). */
  static CliRunner child(List<String> wrapper, List<String> jvm, Duration limit, String... args) throws Exception {
    String java = ProcessHandle.current().info().command().orElse("java");
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<String> cmd = new ArrayList<>(wrapper);
    cmd.addAll(List.of(java, "--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC"));
    cmd.addAll(jvm);
    cmd.addAll(List.of("-cp", cp, Main.class.getName()));
    cmd.addAll(List.of(args));
    Path out = Files.createTempFile(shared, "out", ".txt");
    Path err = Files.createTempFile(shared, "err", ".txt");
    Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    if (!p.waitFor(limit.toSeconds(), TimeUnit.SECONDS)) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      throw new AssertionError("not done within " + limit + ": " + Files.readString(err));
    }
    return new CliRunner(p.exitValue(), Files.readString(out), Files.readString(err));
  }

  /**
   * The bundle: the graphs of the test dumps, exported, plus one compiler identity and one compiled
   * artifact of {@link #ARTIFACT_BYTES} zeros, with a manifest that agrees with every byte.
   */
  @BeforeAll
  static void aBundleWithA2e9ByteArtifact() throws Exception {
    Path dumps = Path.of(CacheImportLargeBundleTest.class.getResource("/dumps").toURI());
    Path source = shared.resolve("source");
    Path graphs = shared.resolve("graphs.tar.zst");
    assertThat(xlac("cache", "add", "--cache", source.toString(), dumps.toString()).exitCode()).isZero();
    assertThat(xlac("cache", "export", "--cache", source.toString(), graphs.toString()).exitCode()).isZero();
    Map<String, byte[]> entries = new LinkedHashMap<>();
    try (InputStream in = new ZstdInputStream(Files.newInputStream(graphs));
        TarArchiveInputStream tar = new TarArchiveInputStream(in)) {
      for (TarArchiveEntry e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
        entries.put(e.getName(), tar.readAllBytes());
      }
    }
    List<String> lines = new ArrayList<>(new String(entries.remove("xlac-bundle.manifest"), StandardCharsets.UTF_8)
        .lines().toList());
    String fp = lines.stream().filter(l -> l.startsWith("graph\t")).findFirst().orElseThrow().split("\t")[1];
    key = new ArtifactKey(new GraphFingerprint(GraphFingerprint.VERSION + ":" + fp), CPU);
    byte[] identity = CPU.encode().getBytes(StandardCharsets.UTF_8);
    MessageDigest zeros = MessageDigest.getInstance("SHA-256");
    byte[] block = new byte[1 << 20];
    for (long left = ARTIFACT_BYTES; left > 0; left -= block.length) {
      zeros.update(block, 0, (int) Math.min(block.length, left));
    }
    zerosSha = HexFormat.of().formatHex(zeros.digest());
    lines.add(2, String.join("\t", "identity", CPU.digest(), Long.toString(identity.length), sha(identity)));
    String end = lines.removeLast();
    lines.add(String.join("\t", "artifact", fp, CPU.digest(), "compiled", Long.toString(ARTIFACT_BYTES), zerosSha, "1000",
        "1700000000000", "0", "-", "0", "", ""));
    lines.add("end\t" + (Long.parseLong(end.split("\t")[1]) + 2));
    byte[] manifest = (String.join("\n", lines) + "\n").getBytes(StandardCharsets.UTF_8);

    bundle = shared.resolve("two-gb-artifact.tar.zst");
    try (OutputStream z = new ZstdOutputStream(new BufferedOutputStream(Files.newOutputStream(bundle), 1 << 16), 3);
        TarArchiveOutputStream tar = new TarArchiveOutputStream(z)) {
      tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
      put(tar, "xlac-bundle.manifest", manifest);
      put(tar, "identities/" + CPU.digest() + ".txt", identity);
      for (Map.Entry<String, byte[]> e : entries.entrySet()) {
        put(tar, e.getKey(), e.getValue());
      }
      TarArchiveEntry a = new TarArchiveEntry("artifacts/" + fp + "." + CPU.digest() + ".bin");
      a.setSize(ARTIFACT_BYTES);
      tar.putArchiveEntry(a);
      for (long left = ARTIFACT_BYTES; left > 0; left -= block.length) {
        tar.write(block, 0, (int) Math.min(block.length, left));
      }
      tar.closeArchiveEntry();
    }
    assertThat(Files.size(bundle)).as("the bundle is small").isLessThan(1 << 20);
  }

  private static void put(TarArchiveOutputStream tar, String name, byte[] data) throws IOException {
    TarArchiveEntry e = new TarArchiveEntry(name);
    e.setSize(data.length);
    tar.putArchiveEntry(e);
    tar.write(data);
    tar.closeArchiveEntry();
  }

  private static String sha(byte[] b) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
  }

  private static void assertOneLine(CliRunner r) {
    assertThat(r.err()).startsWith("xlac: ").doesNotContain("Exception").doesNotContain("OutOfMemoryError")
        .doesNotContain("\tat ");
    assertThat(r.err().lines().filter(l -> !l.isBlank())).as(r.err()).hasSize(1);
  }

  private static void assertNothingImported(Path cache) {
    CliRunner ls = xlac("cache", "ls", "--json", "--cache", cache.toString());
    assertThat(ls.exitCode()).as(ls.err()).isZero();
    assertThat(ls.out()).doesNotContain("\"fingerprint\"");
  }

  @Test
  void import_ofA2e9ByteArtifact_streamsItInA256MiBHeap_withoutAStackTrace_andItReadsBackByteIdentical()
      throws Exception {
    Path cache = tmp.resolve("cache");
    // (The child is stopped after 5 minutes, so a hang fails the test; its speed is bench/'s business.)
    CliRunner r = child(List.of(), List.of("-Xmx256m"), Duration.ofMinutes(5), "cache", "import", "--cache",
        cache.toString(), bundle.toString());
    assertThat(r.err()).as("no stack trace, no OutOfMemoryError").doesNotContain("Exception")
        .doesNotContain("OutOfMemoryError").doesNotContain("\tat ");
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).contains("artifacts added 1");
    // Streamed back a chunk at a time: the SHA-256 of what comes out is that of 2e9 zeros.
    try (CacheStore s = CacheStore.open(cache, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      MessageDigest out = MessageDigest.getInstance("SHA-256");
      long[] count = new long[1];
      OutputStream counting = new OutputStream() {
        @Override
        public void write(int b) {
          count[0]++;
        }

        @Override
        public void write(byte[] b, int off, int len) {
          count[0] += len;
        }
      };
      assertThat(s.readArtifact(key, new DigestOutputStream(counting, out))).isTrue();
      assertThat(count[0]).isEqualTo(ARTIFACT_BYTES);
      assertThat(HexFormat.of().formatHex(out.digest())).isEqualTo(zerosSha);
    }
  }

  @Test
  void import_withMaxUnpacked1G_refusesThe2e9ByteBundleInOneLine() {
    Path cache = tmp.resolve("cache");
    CliRunner r = xlac("cache", "import", "--cache", cache.toString(), "--max-unpacked", "1G", bundle.toString());
    assertThat(r.exitCode()).as(r.err()).isEqualTo(2);
    assertOneLine(r);
    assertThat(r.err()).contains("cannot import " + bundle + ": it unpacks to 1.9 GiB")
        .contains("over the limit on unpacked bytes of 953.7 MiB (given with --max-unpacked)")
        .endsWith("; nothing was imported\n");
    assertNothingImported(cache);
    CliRunner bad = xlac("cache", "import", "--cache", cache.toString(), "--max-unpacked", "lots", bundle.toString());
    assertThat(bad.exitCode()).isEqualTo(2);
    assertThat(bad.err()).isEqualTo("xlac: --max-unpacked takes a size (500G, 2TiB, 1048576) or none, not 'lots'\n");
  }

  @Test
  void import_overTheCachesImportMaxUnpackedSetting_refusesThe2e9ByteBundleInOneLine() {
    Path cache = tmp.resolve("cache");
    CliRunner show = xlac("cache", "config", "--cache", cache.toString(), "import-max-unpacked");
    assertThat(show.out()).isEqualTo("import-max-unpacked 1099511627776 (1.0 TiB), the default\n");
    CliRunner set = xlac("cache", "config", "--cache", cache.toString(), "import-max-unpacked", "1G");
    assertThat(set.exitCode()).as(set.err()).isZero();
    assertThat(set.out()).isEqualTo("import-max-unpacked 1000000000 (953.7 MiB)\n");
    assertThat(xlac("cache", "config", "--cache", cache.toString(), "import-max-unpacked").out()).isEqualTo(set.out());
    CliRunner r = xlac("cache", "import", "--cache", cache.toString(), bundle.toString());
    assertThat(r.exitCode()).as(r.err()).isEqualTo(2);
    assertOneLine(r);
    assertThat(r.err()).contains("over the limit on unpacked bytes of 953.7 MiB (the cache's import-max-unpacked"
        + " setting; pass --max-unpacked SIZE to import it anyway); nothing was imported");
    assertNothingImported(cache);
    assertThat(xlac("cache", "config", "--cache", cache.toString(), "import-max-unpacked", "none").out())
        .isEqualTo("import-max-unpacked none\n");
    assertThat(xlac("cache", "config", "--cache", cache.toString(), "import-max-unpacked", "default").out())
        .isEqualTo("import-max-unpacked 1099511627776 (1.0 TiB), the default\n");
  }

  /**
   * A manifest is parsed in memory, where it takes several times its size: one of 100 MB (within
   * the 256 MiB limit on manifests) in a 256 MiB heap ran the importer out of memory, with a stack
   * trace. Now it is refused in one line that says how much memory it needs.
   */
  @Test
  void import_ofA100MBManifest_inA256MiBHeap_isRefusedInOneLine_notAnOutOfMemoryError() throws Exception {
    Path file = tmp.resolve("manifest-bomb.tar.zst");
    byte[] line = "created\t1\n".getBytes(StandardCharsets.US_ASCII);
    long size = 10_000_000L * line.length;
    try (OutputStream z = new ZstdOutputStream(new BufferedOutputStream(Files.newOutputStream(file), 1 << 16), 3);
        TarArchiveOutputStream tar = new TarArchiveOutputStream(z)) {
      TarArchiveEntry e = new TarArchiveEntry("xlac-bundle.manifest");
      e.setSize(size);
      tar.putArchiveEntry(e);
      tar.write("xlac-bundle\t1\n".getBytes(StandardCharsets.US_ASCII));
      byte[] block = new byte[line.length * 100_000];
      for (int i = 0; i < block.length; i += line.length) {
        System.arraycopy(line, 0, block, i, line.length);
      }
      for (long left = size - 14; left > 0; left -= block.length) {
        tar.write(block, 0, (int) Math.min(block.length, left));
      }
      tar.closeArchiveEntry();
    }
    Path cache = tmp.resolve("cache");
    CliRunner r = child(List.of(), List.of("-Xmx256m"), Duration.ofMinutes(2), "cache", "import", "--cache",
        cache.toString(), file.toString());
    assertOneLine(r);
    assertThat(r.exitCode()).as(r.err()).isEqualTo(3);
    assertThat(r.err()).contains("cannot import " + file + ": its manifest of 95.4 MiB needs about 953.7 MiB of memory"
        + " to be checked, more than this JVM may use").contains("run xlac with a larger heap (XLAC_JAVA_OPTS=-Xmx1g);"
        + " nothing was imported");
    assertNothingImported(cache);
  }

  /**
   * A cache on a 64 MiB tmpfs (a private mount namespace: {@code unshare -Urm}): the 2e9-byte
   * bundle is refused before anything is written, saying "disk full", exit code 3, and the
   * filesystem holds no more than the empty cache's files afterwards.
   */
  @Test
  void import_largerThanTheFreeSpace_isRefusedBeforeWriting_asDiskFull() throws Exception {
    Path mount = Files.createDirectories(tmp.resolve("small-fs"));
    Path cache = mount.resolve("cache");
    CliRunner probe;
    try {
      probe = child(List.of(), List.of(), Duration.ofSeconds(30), "--version"); // the JVM runs at all
      Process p = new ProcessBuilder("unshare", "-Urm", "sh", "-c", "mount -t tmpfs -o size=64m xlac-test \"$0\"",
          mount.toString()).redirectErrorStream(true).start();
      String why = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      assumeTrue(p.waitFor() == 0, "cannot mount a tmpfs in a private mount namespace here (unshare -Urm: " + why
          + "); run where unprivileged user namespaces are allowed");
    } catch (IOException e) {
      assumeTrue(false, "no unshare here: " + e.getMessage());
      return;
    }
    assertThat(probe.exitCode()).isZero();
    // In the namespace: mount, import, then report how much of the filesystem the cache took.
    String script = "mount -t tmpfs -o size=64m xlac-test \"$0\" || exit 97; \"$@\"; code=$?;"
        + " echo \"used-kib $(du -sk \"$0\" | cut -f1)\"; exit $code";
    List<String> wrapper = List.of("unshare", "-Urm", "sh", "-c", script, mount.toString());
    CliRunner r = child(wrapper, List.of("-Xmx256m"), Duration.ofMinutes(3), "cache", "import", "--cache", cache.toString(),
        bundle.toString());
    assertThat(r.exitCode()).as(r.err()).isEqualTo(3);
    assertOneLine(r);
    assertThat(r.err()).contains("cannot import " + bundle + ": disk full: importing it needs 1.9 GiB").contains(
        "nothing was imported");
    long usedKib = Long.parseLong(r.out().lines().filter(l -> l.startsWith("used-kib ")).findFirst().orElseThrow()
        .substring(9));
    assertThat(usedKib).as("what the refused import left on the filesystem, KiB").isLessThan(8 << 10);
  }
}
