package dev.xlac.cache.bundle;

import com.github.luben.zstd.ZstdOutputStream;
import dev.xlac.cache.Artifact;
import dev.xlac.cache.BundleSigningKey;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.ExportResult;
import dev.xlac.cache.ExportRequest;
import dev.xlac.cache.store.CheckedValue;
import dev.xlac.cache.store.Checksums;
import dev.xlac.cache.store.Keys;
import dev.xlac.cache.store.Records;
import dev.xlac.cache.store.Records.ArtifactRecord;
import dev.xlac.cache.store.Records.GraphRecord;
import dev.xlac.cache.store.RocksDbStore.Cursor;
import dev.xlac.cache.store.Store;
import dev.xlac.cache.store.StoredValues;
import dev.xlac.cache.store.ValueKind;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.AtomicFiles;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * Writes a portable bundle: a POSIX tar stream compressed with zstd whose first entry is the
 * {@link BundleManifest} (which also carries the graphs' Neuron cache names), then, in a signed
 * bundle, the {@link BundleSignature}, followed by identities, graphs and, per artifact, its log
 * and its bytes, then per runtime entry its request and its executable.
 * Every value is checked against its checksum as it is read; a damaged one aborts the export
 * (the cache must be repaired first) rather than shipping it. Reading and checking run on a
 * thread of their own ({@link ReadAhead}), ahead of tar, zstd and the file, so the two halves
 * use two cores; a value larger than a chunk ({@link StoredValues}) is instead streamed into its
 * tar entry a chunk at a time, so no value is ever held whole. The bundle is written to a
 * temporary file beside {@code file}, fsynced, and renamed into place.
 */
public final class BundleExporter {
  static final int ZSTD_LEVEL = 3;
  /** How far (in bytes of values) the reading and checking may run ahead of tar and zstd. */
  private static final long READ_AHEAD_BYTES = 64L << 20;
  private final Store store;

  public BundleExporter(Store store) {
    this.store = store;
  }

  public ExportResult export(Path file, ExportRequest request) {
    long cutoff = request.since() == null ? Long.MIN_VALUE : store.clock().millis() - request.since().toMillis();
    Map<String, ArtifactRecord> artifacts = new LinkedHashMap<>();
    TreeMap<String, GraphRecord> graphs = new TreeMap<>();
    BundleManifest m = new BundleManifest(store.clock().millis());
    try (Cursor a = store.artifacts(null)) {
      for (; a.valid(); a.next()) {
        ArtifactRecord r = Records.decodeArtifact(a.value());
        String digest = Keys.hex(Keys.compilerOf(a.key()));
        CompilerIdentity id = store.identity(digest);
        if (r.created() < cutoff || (request.compiler() != null && !request.compiler().matches(digest, id))) {
          continue;
        }
        if (id == null) {
          throw damaged("artifact " + Keys.hex(a.key()).substring(0, 12) + " has no compiler identity record");
        }
        artifacts.put(Keys.hex(a.key()), r);
      }
    }
    java.util.Set<String> artifactGraphs = new java.util.HashSet<>();
    artifacts.keySet().forEach(k -> artifactGraphs.add(k.substring(0, 64)));
    try (Cursor g = store.graphs(null)) {
      for (; g.valid(); g.next()) {
        String fp = Keys.hex(g.key());
        GraphRecord r = Records.decodeGraph(g.value());
        boolean wanted = request.compiler() == null && r.lastSeen() >= cutoff;
        if (wanted || artifactGraphs.contains(fp)) {
          graphs.put(fp, r);
        }
      }
    }
    for (Map.Entry<String, ArtifactRecord> e : artifacts.entrySet()) {
      String fp = e.getKey().substring(0, 64);
      String digest = e.getKey().substring(64);
      if (!graphs.containsKey(fp)) {
        throw damaged("artifact " + fp.substring(0, 12) + "/" + digest.substring(0, 12) + " has no graph");
      }
      if (!m.identities.containsKey(digest)) {
        byte[] text = store.identity(digest).encode().getBytes(StandardCharsets.UTF_8);
        m.identities.put(digest, new BundleManifest.Identity(digest, text.length, Keys.hex(Checksums.sha256(text))));
      }
      ArtifactRecord r = e.getValue();
      m.artifacts.put(fp + "." + digest, new BundleManifest.Artifact(fp, digest, r.status(), r.bytes(),
          r.sha256() == null ? null : Keys.hex(r.sha256()), r.compileMillis(), r.created(), r.logStoredBytes(),
          r.logSha256() == null ? null : Keys.hex(r.logSha256()), r.logRawBytes(), r.failureKind(), r.failureMessage()));
    }
    for (Map.Entry<String, GraphRecord> e : graphs.entrySet()) {
      GraphRecord r = e.getValue();
      m.graphs.put(e.getKey(), new BundleManifest.Graph(e.getKey(), r.storedBytes(), Keys.hex(r.storedSha256()), r.rawBytes(),
          r.firstSeen(), r.lastSeen(), r.seenCount(), r.moduleName(), r.source()));
      if (!r.neuronNames().isEmpty()) {
        m.neuronNames.put(e.getKey(), r.neuronNames());
      }
    }
    if (request.compiler() == null) {
      try (Cursor q = store.requests(null)) {
        for (; q.valid(); q.next()) {
          Records.RequestRecord r = Records.decodeRequest(q.value());
          if (r.created() < cutoff) {
            continue;
          }
          String key = Keys.hex(q.key());
          m.requests.put(key, new BundleManifest.Request(key, r.requestStoredBytes(), Keys.hex(r.requestSha256()),
              r.requestRawBytes(), r.executableBytes(), Keys.hex(r.executableSha256()), r.compileNanos(), r.created(),
              r.format(), r.platformName(), r.pluginSha256(), r.programBytes()));
        }
      }
    }
    m.signed = request.signer() != null;
    return write(file, m, request.signer());
  }

  private ExportResult write(Path file, BundleManifest m, BundleSigningKey signer) {
    Path abs = file.toAbsolutePath();
    long compiled = 0;
    long failed = 0;
    FileTime mtime = FileTime.fromMillis(m.created);
    List<Item> items = new ArrayList<>();
    for (BundleManifest.Identity i : m.identities.values()) {
      byte[] text = store.identity(i.digest()).encode().getBytes(StandardCharsets.UTF_8);
      items.add(new Item(i.entryName(), false, null, null, text.length, null, null, () -> text));
    }
    for (BundleManifest.Graph g : m.graphs.values()) {
      items.add(value(g.entryName(), ValueKind.GRAPHS, HexFormat.of().parseHex(g.fp()), g.storedBytes(), g.storedSha(),
          "graph " + g.fp().substring(0, 12) + " (" + g.module() + ")"));
    }
    for (BundleManifest.Artifact a : m.artifacts.values()) {
      byte[] key = HexFormat.of().parseHex(a.fp() + a.digest());
      String name = "artifact " + a.fp().substring(0, 12) + "/" + store.identity(a.digest()).shortName();
      if (a.logStoredBytes() > 0) {
        items.add(value(a.logEntryName(), ValueKind.LOGS, key, a.logStoredBytes(), a.logSha(), "the log of " + name));
      }
      if (a.status() == EntryStatus.COMPILED) {
        items.add(value(a.entryName(), ValueKind.ARTIFACTS, key, a.bytes(), a.sha(), name));
        compiled++;
      } else {
        failed++;
      }
    }
    for (BundleManifest.Request q : m.requests.values()) {
      byte[] key = HexFormat.of().parseHex(q.key());
      String name = "runtime entry " + dev.xlac.runtime.RequestKey.VERSION + ":" + q.key().substring(0, 12);
      items.add(value(q.entryName(), ValueKind.REQUESTS, key, q.storedBytes(), q.storedSha(), "the request of " + name));
      items.add(value(q.executableEntryName(), ValueKind.EXECUTABLES, key, q.executableBytes(), q.executableSha(),
          "the executable of " + name));
    }
    long[] written = new long[1];
    try {
      AtomicFiles.write(abs, fileOut -> {
        try (ZstdOutputStream zstd = new ZstdOutputStream(new BufferedOutputStream(kept(fileOut), 1 << 20), ZSTD_LEVEL);
            TarArchiveOutputStream tar = new TarArchiveOutputStream(zstd)) {
          zstd.setChecksum(true);
          tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
          tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
          byte[] manifest = m.format();
          entry(tar, BundleManifest.NAME, manifest, mtime);
          if (signer != null) {
            entry(tar, BundleSignature.NAME, BundleSignature.sign(manifest, signer), mtime);
          }
          try (ReadAhead<Item, Read> reads = new ReadAhead<>(items,
              item -> new Read(item, item.streamed() ? null : item.read.get()),
              r -> r.data == null ? 0L : (long) r.data.length, READ_AHEAD_BYTES, "xlac-export-reader")) {
            while (reads.hasNext()) {
              Read r = reads.next();
              if (r.data == null) {
                streamedEntry(tar, r.item, mtime);
              } else {
                entry(tar, r.item.name, r.data, mtime);
              }
              written[0] += r.item.payload ? r.item.size : 0;
            }
          }
          tar.finish();
        }
        return true;
      });
      return new ExportResult(abs, m.graphs.size(), compiled, failed, written[0], Files.size(abs), m.requests.size());
    } catch (IOException e) {
      String msg = XlacException.reason(e);
      if (Store.isDiskFull(msg)) {
        throw new XlacException(ExitCode.ENVIRONMENT, "cannot write bundle " + abs + ": disk full (" + msg + ")", e);
      }
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot write bundle " + abs + ": " + msg, e);
    }
  }

  /** {@code out}, which closing leaves open (flushed): {@link AtomicFiles} syncs and closes the file itself. */
  private static OutputStream kept(OutputStream out) {
    return new java.io.FilterOutputStream(out) {
      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        out.write(b, off, len);
      }

      @Override
      public void close() throws IOException {
        flush();
      }
    };
  }

  /**
   * One tar entry after the manifest; {@code payload} when it counts as graph, log or artifact bytes.
   * A stored value ({@code cf} not null; {@code sha} its manifest SHA-256, {@code what} its name for
   * messages) larger than a chunk is streamed into its entry rather than read ahead.
   */
  private record Item(String name, boolean payload, ValueKind cf, byte[] key, long size, byte[] sha, String what,
      Supplier<byte[]> read) {
    boolean streamed() {
      return cf != null && Store.chunked(size);
    }
  }

  private record Read(Item item, byte[] data) {}

  private Item value(String entry, ValueKind cf, byte[] key, long size, String sha, String what) {
    byte[] expected = sha == null ? null : HexFormat.of().parseHex(sha);
    return new Item(entry, true, cf, key, size, expected, what, () -> read(cf, key, size, expected, what));
  }

  /** The verified value. */
  private byte[] read(ValueKind cf, byte[] key, long size, byte[] sha, String what) {
    CheckedValue outcome = store.read(cf, key, size, sha);
    if (outcome instanceof CheckedValue.Ok(byte[] v)) {
      return v;
    }
    throw failed(what, outcome);
  }

  private void streamedEntry(TarArchiveOutputStream tar, Item item, FileTime mtime) throws IOException {
    TarArchiveEntry e = new TarArchiveEntry(item.name);
    e.setSize(item.size);
    e.setMode(0644);
    e.setLastModifiedTime(mtime);
    tar.putArchiveEntry(e);
    CheckedValue outcome = store.stream(item.cf, item.key, item.size, item.sha, tar);
    if (!(outcome instanceof CheckedValue.Ok)) {
      throw failed(item.what, outcome);
    }
    tar.closeArchiveEntry();
  }

  private XlacException failed(String what, CheckedValue outcome) {
    return switch (outcome) {
      case CheckedValue.Missing() -> damaged(what + " is missing");
      case CheckedValue.Mismatch() -> damaged(what + " fails its checksum");
      case CheckedValue.Corrupt(String detail) -> damaged(what + " is corrupt (" + detail + ")");
      case CheckedValue.Gone() -> new XlacException(ExitCode.WORK_FAILED, "cannot export from cache " + store.directory() + ": "
          + what + " was removed or replaced by another xlac process during the export; export again");
      case CheckedValue.Ok ok -> throw new IllegalStateException("not a failure");
    };
  }

  private XlacException damaged(String what) {
    return new XlacException(ExitCode.WORK_FAILED, "cannot export from cache " + store.directory() + ": " + what
        + "; run 'xlac cache verify --repair' and export again");
  }

  private static void entry(TarArchiveOutputStream tar, String name, byte[] data, FileTime mtime) throws IOException {
    TarArchiveEntry e = new TarArchiveEntry(name);
    e.setSize(data.length);
    e.setMode(0644);
    e.setLastModifiedTime(mtime);
    tar.putArchiveEntry(e);
    tar.write(data);
    tar.closeArchiveEntry();
  }
}
