package dev.xlac.cache.bundle;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdInputStream;
import com.github.luben.zstd.ZstdOutputStream;
import dev.xlac.cache.bundle.BundleTest.Entry;
import dev.xlac.cache.store.Checksums;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;

/**
 * What someone who can write a bundle can do without any key: take it apart, change entries, and
 * make the manifest agree with them again (sizes and SHA-256 recomputed), so every checksum in the
 * bundle holds.
 */
final class Forgery {
  private Forgery() {}

  static List<Entry> entries(Path bundle) throws IOException {
    List<Entry> out = new ArrayList<>();
    try (InputStream in = new ZstdInputStream(Files.newInputStream(bundle));
        TarArchiveInputStream tar = new TarArchiveInputStream(in)) {
      for (TarArchiveEntry e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
        out.add(new Entry(e.getName(), tar.readAllBytes(), e.getLinkFlag(), null));
      }
    }
    return out;
  }

  static String manifest(List<Entry> entries) {
    return new String(entries.getFirst().data(), StandardCharsets.UTF_8);
  }

  /** The entries with their data replaced where {@code replaced} says, and the manifest recomputed to match. */
  static List<Entry> consistent(List<Entry> entries, Map<String, byte[]> replaced, UnaryOperator<String> manifestEdit) {
    Map<String, byte[]> data = new LinkedHashMap<>();
    for (Entry e : entries) {
      data.put(e.name(), replaced.getOrDefault(e.name(), e.data()));
    }
    String text = manifestEdit.apply(fix(manifest(entries), data));
    List<Entry> out = new ArrayList<>();
    for (Entry e : entries) {
      byte[] d = e.name().equals(BundleManifest.NAME) ? text.getBytes(StandardCharsets.UTF_8) : data.get(e.name());
      out.add(new Entry(e.name(), d, e.type(), null));
    }
    return out;
  }

  /** Sizes and checksums of every manifest line, recomputed from {@code data}. */
  private static String fix(String manifest, Map<String, byte[]> data) {
    StringBuilder b = new StringBuilder();
    for (String line : manifest.split("\n", -1)) {
      String[] f = line.split("\t", -1);
      switch (f[0]) {
        case "identity" -> set(f, data.get("identities/" + f[1] + ".txt"), 2, 3, -1);
        case "graph" -> set(f, data.get("graphs/" + f[1] + ".hlo.zst"), 2, 3, 4);
        case "artifact" -> {
          String key = f[1] + "." + f[2];
          if (f[3].equals("compiled")) {
            set(f, data.get("artifacts/" + key + ".bin"), 4, 5, -1);
          }
          if (data.containsKey("logs/" + key + ".log.zst")) {
            set(f, data.get("logs/" + key + ".log.zst"), 8, 9, 10);
          }
        }
        case "request" -> {
          set(f, data.get("requests/" + f[1] + ".req.zst"), 2, 3, 4);
          set(f, data.get("executables/" + f[1] + ".bin"), 5, 6, -1);
        }
        default -> { }
      }
      b.append(String.join("\t", f)).append('\n');
    }
    return b.substring(0, b.length() - 1);
  }

  private static void set(String[] f, byte[] d, int size, int sha, int raw) {
    f[size] = Long.toString(d.length);
    f[sha] = HexFormat.of().formatHex(Checksums.sha256(d));
    if (raw >= 0) {
      long r = Zstd.getFrameContentSize(d);
      if (r >= 0) {
        f[raw] = Long.toString(r);
      }
    }
  }

  /** Writes a bundle of {@code entries}, then {@code afterTar} inside the zstd frame and {@code afterFrame} after it. */
  static Path write(Path file, List<Entry> entries, byte[] afterTar, byte[] afterFrame) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (OutputStream z = new ZstdOutputStream(bytes)) {
      TarArchiveOutputStream tar = new TarArchiveOutputStream(new java.io.FilterOutputStream(z) {
        @Override
        public void close() throws IOException {
          flush(); // the zstd frame stays open for afterTar
        }
      });
      tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      for (Entry e : entries) {
        TarArchiveEntry t = new TarArchiveEntry(e.name(), e.type() == 0 ? TarConstants.LF_NORMAL : e.type(), false);
        t.setSize(e.data().length);
        tar.putArchiveEntry(t);
        tar.write(e.data());
        tar.closeArchiveEntry();
      }
      tar.close();
      z.write(afterTar);
    }
    bytes.write(afterFrame);
    Files.write(file, bytes.toByteArray());
    return file;
  }

  static Path write(Path file, List<Entry> entries) throws IOException {
    return write(file, entries, new byte[0], new byte[0]);
  }
}
