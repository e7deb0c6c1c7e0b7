package dev.xlac.faults;

import com.github.luben.zstd.ZstdOutputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The classic attacks on an archive importer, built from a good bundle: each method writes one
 * hostile bundle file. Entries named here: "the artifact" is the base bundle's first artifact.
 */
final class HostileBundles {
  private static final Map<Long, String> ZEROS_SHA = new ConcurrentHashMap<>();

  private final Bundle base;
  private final Random rng;

  HostileBundles(Bundle base, Random rng) {
    this.base = base;
    this.rng = rng;
  }

  Bundle.Manifest manifest() {
    return base.manifest().copy();
  }

  String[] firstArtifact(Bundle.Manifest m) {
    return m.lines("artifact").getFirst();
  }

  int indexOf(List<Tar.Entry> entries, String name) {
    for (int i = 0; i < entries.size(); i++) {
      if (entries.get(i).name().equals(name)) {
        return i;
      }
    }
    throw new IllegalStateException("no entry " + name);
  }

  List<Tar.Entry> entries() {
    return new ArrayList<>(base.entries);
  }

  String artifactName() {
    String[] a = firstArtifact(base.manifest());
    return Bundle.artifactEntry(a[1], a[2]);
  }

  // ---- writing ----

  static void writeTar(Path file, byte[] tar) throws IOException {
    Files.write(file, Bundle.zstd(tar));
  }

  static void writeEntries(Path file, List<Tar.Entry> entries) throws IOException {
    writeTar(file, Tar.toBytes(entries));
  }

  /** A bundle with the entries and this manifest (replacing the old one, kept first). */
  static void writeWith(Path file, List<Tar.Entry> entries, Bundle.Manifest m) throws IOException {
    List<Tar.Entry> copy = new ArrayList<>(entries);
    for (int i = 0; i < copy.size(); i++) {
      if (copy.get(i).name().equals(Bundle.MANIFEST)) {
        copy.set(i, copy.get(i).withData(m.bytes()));
      }
    }
    writeEntries(file, copy);
  }

  /** Replaces the artifact entry by an entry of another type (link, device, FIFO, directory, sparse). */
  void specialEntry(Path file, char type, String link) throws IOException {
    List<Tar.Entry> e = entries();
    int i = indexOf(e, artifactName());
    e.set(i, new Tar.Entry(artifactName(), type, 0, new byte[0], link));
    writeEntries(file, e);
  }

  void extraEntry(Path file, String name, byte[] data) throws IOException {
    List<Tar.Entry> e = entries();
    e.add(1, Tar.Entry.file(name, data));
    writeEntries(file, e);
  }

  void renamedArtifact(Path file, String newName) throws IOException {
    List<Tar.Entry> e = entries();
    int i = indexOf(e, artifactName());
    e.set(i, e.get(i).withName(newName));
    writeEntries(file, e);
  }

  void paxTraversal(Path file, String paxPath) throws IOException {
    ByteArrayOutputStream tar = new ByteArrayOutputStream();
    for (Tar.Entry e : base.entries) {
      if (e.name().equals(artifactName())) {
        Tar.writeWithPaxPath(tar, paxPath, e);
      } else {
        Tar.write(tar, e);
      }
    }
    Tar.end(tar);
    writeTar(file, tar.toByteArray());
  }

  void duplicate(Path file, boolean differentBytes) throws IOException {
    List<Tar.Entry> e = entries();
    int i = indexOf(e, artifactName());
    byte[] data = e.get(i).data().clone();
    if (differentBytes) {
      data[rng.nextInt(data.length)] ^= 0x40;
    }
    e.add(i + 1, e.get(i).withData(data));
    writeEntries(file, e);
  }

  void missingEntry(Path file) throws IOException {
    List<Tar.Entry> e = entries();
    e.remove(indexOf(e, artifactName()));
    writeEntries(file, e);
  }

  void flippedArtifact(Path file) throws IOException {
    List<Tar.Entry> e = entries();
    int i = indexOf(e, artifactName());
    byte[] data = e.get(i).data().clone();
    data[rng.nextInt(data.length)] ^= 0x01;
    e.set(i, e.get(i).withData(data));
    writeEntries(file, e);
  }

  /** Sets field {@code field} of the first line of {@code kind}. */
  void manifestField(Path file, String kind, int field, String value) throws IOException {
    Bundle.Manifest m = manifest();
    m.lines(kind).getFirst()[field] = value;
    writeWith(file, base.entries, m);
  }

  void manifestNotFirst(Path file) throws IOException {
    List<Tar.Entry> e = entries();
    Tar.Entry m = e.remove(indexOf(e, Bundle.MANIFEST));
    e.add(2, m);
    writeEntries(file, e);
  }

  void identityTextChanged(Path file) throws IOException {
    List<Tar.Entry> e = entries();
    String cid = manifest().lines("identity").getFirst()[1];
    int i = indexOf(e, Bundle.identityEntry(cid));
    byte[] text = (new String(e.get(i).data(), StandardCharsets.UTF_8).replace("target=cpu", "target=cpv"))
        .getBytes(StandardCharsets.UTF_8);
    e.set(i, e.get(i).withData(text));
    Bundle.Manifest m = manifest();
    m.lines("identity").getFirst()[2] = Integer.toString(text.length);
    m.lines("identity").getFirst()[3] = Bundle.sha256(text);
    writeWith(file, e, m);
  }

  /** An artifact whose graph is not in the bundle. */
  void orphanArtifact(Path file) throws IOException {
    Bundle.Manifest m = manifest();
    String fp = firstArtifact(m)[1];
    m.lines.removeIf(l -> l[0].equals("graph") && l[1].equals(fp));
    m.recount();
    List<Tar.Entry> e = entries();
    e.remove(indexOf(e, Bundle.graphEntry(fp)));
    writeWith(file, e, m);
  }

  void truncatedCompressed(Path file, double fraction) throws IOException {
    byte[] z = base.compressed();
    int cut = Math.max(1, Math.min(z.length - 1, (int) (z.length * fraction)));
    Files.write(file, Arrays.copyOf(z, cut));
  }

  void truncatedTar(Path file) throws IOException {
    byte[] tar = base.tar();
    int i = indexOf(base.entries, artifactName());
    // Somewhere inside the artifact's data: well past its header, before the archive's end.
    int cut = tar.length - 1024 - base.entries.subList(i + 1, base.entries.size()).stream()
        .mapToInt(x -> 1024 + x.data().length).sum() - 700;
    writeTar(file, Arrays.copyOf(tar, Math.max(1024, cut)));
  }

  void trailing(Path file, byte[] afterFrame, byte[] insideAfterTarEnd) throws IOException {
    byte[] tar = base.tar();
    byte[] inner = concat(tar, insideAfterTarEnd);
    Files.write(file, concat(Bundle.zstd(inner), afterFrame));
  }

  byte[] randomBytes(int n) {
    byte[] b = new byte[n];
    rng.nextBytes(b);
    return b;
  }

  static byte[] concat(byte[] a, byte[] b) {
    byte[] c = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, c, a.length, b.length);
    return c;
  }

  /** A graph renamed to another fingerprint (checksums right): only recomputing the fingerprint catches it. */
  void wrongFingerprint(Path file) throws IOException {
    Bundle.Manifest m = manifest();
    String fp = firstArtifact(m)[1];
    char last = fp.charAt(63);
    String other = fp.substring(0, 63) + (last == '0' ? '1' : '0');
    List<Tar.Entry> e = new ArrayList<>();
    for (Tar.Entry x : base.entries) {
      e.add(x.name().contains(fp) ? x.withName(x.name().replace(fp, other)) : x);
    }
    for (String[] l : m.lines) {
      if ((l[0].equals("graph") || l[0].equals("artifact") || l[0].equals("neuron")) && l[1].equals(fp)) {
        l[1] = other;
      }
    }
    writeWith(file, e, m);
  }

  /** The graph's stored bytes replaced by {@code stored} (sizes and checksum recomputed, raw size as given). */
  void graphStored(Path file, byte[] stored, long rawBytes) throws IOException {
    Bundle.Manifest m = manifest();
    String fp = firstArtifact(m)[1];
    String[] g = m.graph(fp);
    g[2] = Integer.toString(stored.length);
    g[3] = Bundle.sha256(stored);
    g[4] = Long.toString(rawBytes);
    List<Tar.Entry> e = entries();
    int i = indexOf(e, Bundle.graphEntry(fp));
    e.set(i, e.get(i).withData(stored));
    writeWith(file, e, m);
  }

  /** Two artifacts' bytes swapped, each with its manifest size and SHA-256 recomputed. */
  static Bundle swapped(Bundle b) {
    Bundle.Manifest m = b.manifest().copy();
    List<String[]> arts = m.lines("artifact");
    String[] a1 = arts.get(0);
    String[] a2 = arts.get(1);
    String n1 = Bundle.artifactEntry(a1[1], a1[2]);
    String n2 = Bundle.artifactEntry(a2[1], a2[2]);
    byte[] d1 = b.data(n1);
    byte[] d2 = b.data(n2);
    a1[4] = Integer.toString(d2.length);
    a1[5] = Bundle.sha256(d2);
    a2[4] = Integer.toString(d1.length);
    a2[5] = Bundle.sha256(d1);
    List<Tar.Entry> e = new ArrayList<>();
    for (Tar.Entry x : b.entries) {
      e.add(x.name().equals(n1) ? x.withData(d2) : x.name().equals(n2) ? x.withData(d1) : x);
    }
    return new Bundle(e).withManifest(m);
  }

  void neuronTraversal(Path file) throws IOException {
    Bundle.Manifest m = manifest();
    m.lines.getFirst()[1] = "2";
    String fp = firstArtifact(m)[1];
    int firstArtifactLine = m.lines.indexOf(m.lines("artifact").getFirst());
    m.lines.add(firstArtifactLine, new String[] {"neuron", fp, "..", "MODULE_1+2", "-"});
    m.recount();
    writeWith(file, base.entries, m);
  }

  // ---- bombs, streamed: nothing of their size is held in memory ----

  /**
   * The base bundle with one more artifact whose tar entry holds {@code actualBytes} zero bytes,
   * while its tar header says {@code headerBytes} and the manifest {@code manifestBytes} (with the
   * SHA-256 of {@code manifestBytes} zeros). All three equal: a consistent bomb.
   */
  void artifactBomb(Path file, long headerBytes, long actualBytes, long manifestBytes) throws IOException {
    Bundle.Manifest m = manifest();
    String[] a = firstArtifact(m);
    String fp = m.lines("graph").getLast()[1];
    m.lines.removeIf(l -> l[0].equals("artifact") && l[1].equals(fp));
    String[] bomb = a.clone();
    bomb[1] = fp;
    bomb[4] = Long.toString(manifestBytes);
    bomb[5] = zerosSha(manifestBytes);
    m.lines.add(m.lines.size() - 1, bomb);
    m.recount();
    try (RleZstdOutputStream out = new RleZstdOutputStream(new BufferedOutputStream(Files.newOutputStream(file),
        1 << 16))) {
      for (Tar.Entry e : base.entries) {
        if (e.name().equals(Bundle.MANIFEST)) {
          Tar.write(out, e.withData(m.bytes()));
        } else if (!(e.name().startsWith("artifacts/" + fp) || e.name().startsWith("logs/" + fp))) {
          Tar.write(out, e);
        }
      }
      Tar.writeHeader(out, Bundle.artifactEntry(fp, a[2]), Tar.REGULAR, headerBytes, "");
      out.writeZeros(actualBytes);
      if (actualBytes >= headerBytes) {
        Tar.pad(out, actualBytes);
        Tar.end(out);
      }
    }
  }

  /** A manifest entry of {@code bytes} bytes of plausible lines. */
  static void manifestBomb(Path file, long bytes) throws IOException {
    byte[] line = "created\t1\n".getBytes(StandardCharsets.US_ASCII);
    try (OutputStream out = new ZstdOutputStream(new BufferedOutputStream(Files.newOutputStream(file), 1 << 16), 3)) {
      long n = bytes / line.length;
      Tar.writeHeader(out, Bundle.MANIFEST, Tar.REGULAR, n * line.length, "");
      out.write("xlac-bundle\t1\n".getBytes(StandardCharsets.US_ASCII));
      byte[] chunk = new byte[line.length * 6553];
      for (int i = 0; i < chunk.length; i += line.length) {
        System.arraycopy(line, 0, chunk, i, line.length);
      }
      long left = n * line.length - 14;
      while (left > 0) {
        int k = (int) Math.min(chunk.length, left);
        out.write(chunk, 0, k);
        left -= k;
      }
      Tar.pad(out, n * line.length);
      Tar.end(out);
    }
  }

  /** The base bundle followed by {@code count} tiny entries that no manifest lists. */
  void tarBomb(Path file, int count) throws IOException {
    try (OutputStream out = new ZstdOutputStream(new BufferedOutputStream(Files.newOutputStream(file), 1 << 16), 3)) {
      for (Tar.Entry e : base.entries) {
        Tar.write(out, e);
      }
      byte[] one = {'x'};
      for (int i = 0; i < count; i++) {
        Tar.write(out, Tar.Entry.file(String.format("artifacts/%064x.%064x.bin", i, i), one));
      }
      Tar.end(out);
    }
  }

  /** A zstd frame of {@code n} zero bytes (kept in memory: it is about n / 32768 bytes). */
  static byte[] zstdZeros(long n) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (RleZstdOutputStream out = new RleZstdOutputStream(b)) {
      out.writeZeros(n);
    }
    return b.toByteArray();
  }

  static String zerosSha(long n) {
    return ZEROS_SHA.computeIfAbsent(n, k -> {
      try {
        MessageDigest d = MessageDigest.getInstance("SHA-256");
        byte[] zeros = new byte[1 << 20];
        for (long left = k; left > 0; ) {
          int c = (int) Math.min(zeros.length, left);
          d.update(zeros, 0, c);
          left -= c;
        }
        return HexFormat.of().formatHex(d.digest());
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException(e);
      }
    });
  }
}
