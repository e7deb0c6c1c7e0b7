package dev.xlac.faults;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdInputStream;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

/**
 * A bundle held in memory: its tar entries in order, the manifest first. The suite reads what
 * {@code xlac cache export} wrote (docs/cache-internals.md, "Bundle format"), and writes bundles of its own,
 * good or hostile. Only small bundles are held like this; the bombs are streamed by {@link HostileBundles}.
 */
final class Bundle {
  static final String MANIFEST = "xlac-bundle.manifest";

  final List<Tar.Entry> entries;

  Bundle(List<Tar.Entry> entries) {
    this.entries = new ArrayList<>(entries);
  }

  static Bundle read(Path file) throws IOException {
    try (InputStream in = new ZstdInputStream(new BufferedInputStream(Files.newInputStream(file)))) {
      return new Bundle(Tar.read(in));
    }
  }

  Manifest manifest() {
    return Manifest.parse(data(MANIFEST));
  }

  byte[] data(String name) {
    return entries.stream().filter(e -> e.name().equals(name)).findFirst().map(Tar.Entry::data)
        .orElseThrow(() -> new IllegalStateException("bundle has no entry " + name));
  }

  boolean has(String name) {
    return entries.stream().anyMatch(e -> e.name().equals(name));
  }

  /** A copy with the manifest replaced (and kept first). */
  Bundle withManifest(Manifest m) {
    List<Tar.Entry> copy = new ArrayList<>(entries);
    for (int i = 0; i < copy.size(); i++) {
      if (copy.get(i).name().equals(MANIFEST)) {
        copy.set(i, copy.get(i).withData(m.bytes()));
      }
    }
    return new Bundle(copy);
  }

  byte[] tar() throws IOException {
    return Tar.toBytes(entries);
  }

  byte[] compressed() throws IOException {
    return zstd(tar());
  }

  void write(Path file) throws IOException {
    Files.write(file, compressed());
  }

  static byte[] zstd(byte[] raw) {
    return Zstd.compress(raw, 3);
  }

  static String sha256(byte[] data) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  static String graphEntry(String fp) {
    return "graphs/" + fp + ".hlo.zst";
  }

  static String artifactEntry(String fp, String cid) {
    return "artifacts/" + fp + "." + cid + ".bin";
  }

  static String logEntry(String fp, String cid) {
    return "logs/" + fp + "." + cid + ".log.zst";
  }

  static String identityEntry(String cid) {
    return "identities/" + cid + ".txt";
  }

  /**
   * A bundle of the given graphs (taken as they are from {@code source}) with one synthetic
   * compiler identity, {@code salt}, and an artifact of {@code artifactBytes} random bytes per graph.
   * Real xlac never made these artifacts, so they are new to every cache; their content is what
   * the suite later checks byte for byte.
   */
  static Bundle synthetic(Bundle source, List<String> fps, String salt, int artifactBytes, Random rng) {
    Manifest src = source.manifest();
    String[] realIdentity = src.lines("identity").getFirst();
    String identityText = new String(source.data(identityEntry(realIdentity[1])), StandardCharsets.UTF_8)
        .replaceFirst("(?m)^version=.*$", "version=xlac-fault-suite " + salt);
    byte[] identity = identityText.getBytes(StandardCharsets.UTF_8);
    String cid = sha256(identity);
    long now = System.currentTimeMillis();
    Manifest m = new Manifest(new ArrayList<>());
    m.add("xlac-bundle", "1");
    m.add("created", Long.toString(now));
    m.add("identity", cid, Integer.toString(identity.length), cid);
    List<Tar.Entry> graphEntries = new ArrayList<>();
    List<Tar.Entry> artifactEntries = new ArrayList<>();
    for (String fp : fps) {
      m.lines.add(src.graph(fp).clone());
      graphEntries.add(Tar.Entry.file(graphEntry(fp), source.data(graphEntry(fp))));
    }
    for (String fp : fps) {
      byte[] bytes = new byte[artifactBytes];
      rng.nextBytes(bytes);
      m.add("artifact", fp, cid, "compiled", Integer.toString(bytes.length), sha256(bytes), "1", Long.toString(now),
          "0", "-", "0", "", "");
      artifactEntries.add(Tar.Entry.file(artifactEntry(fp, cid), bytes));
    }
    m.recount();
    List<Tar.Entry> entries = new ArrayList<>();
    entries.add(Tar.Entry.file(MANIFEST, m.bytes()));
    entries.add(Tar.Entry.file(identityEntry(cid), identity));
    entries.addAll(graphEntries);
    entries.addAll(artifactEntries);
    return new Bundle(entries);
  }

  /** The manifest: tab-separated fields per line (docs/cache-internals.md, "Bundle format"). Kept as read; edits keep the rest intact. */
  static final class Manifest {
    final List<String[]> lines;

    Manifest(List<String[]> lines) {
      this.lines = lines;
    }

    static Manifest parse(byte[] bytes) {
      List<String[]> lines = new ArrayList<>();
      for (String l : new String(bytes, StandardCharsets.UTF_8).split("\n")) {
        if (!l.isEmpty()) {
          lines.add(l.split("\t", -1));
        }
      }
      return new Manifest(lines);
    }

    Manifest copy() {
      List<String[]> c = new ArrayList<>();
      lines.forEach(l -> c.add(l.clone()));
      return new Manifest(c);
    }

    void add(String... fields) {
      lines.add(fields);
    }

    List<String[]> lines(String kind) {
      return lines.stream().filter(l -> l[0].equals(kind)).toList();
    }

    String[] graph(String fp) {
      return lines("graph").stream().filter(l -> l[1].equals(fp)).findFirst()
          .orElseThrow(() -> new IllegalStateException("manifest has no graph " + fp));
    }

    /** Sets the {@code end} line to the number of identity, graph, neuron and artifact lines. */
    void recount() {
      lines.removeIf(l -> l[0].equals("end"));
      long n = lines.stream().filter(l -> switch (l[0]) {
        case "identity", "graph", "neuron", "artifact" -> true;
        default -> false;
      }).count();
      lines.add(new String[] {"end", Long.toString(n)});
    }

    byte[] bytes() {
      StringBuilder b = new StringBuilder();
      for (String[] l : lines) {
        b.append(String.join("\t", l)).append('\n');
      }
      return b.toString().getBytes(StandardCharsets.UTF_8);
    }
  }
}
