package dev.xlac.cache;

import com.github.luben.zstd.ZstdInputStream;
import dev.xlac.cache.Records.ArtifactRecord;
import dev.xlac.cache.Records.GraphRecord;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;

/**
 * Merges a bundle into a cache in two passes over the file. The first validates all of it and
 * writes nothing: the format version, every entry's name (no absolute paths, no {@code ..}, only
 * the names the format defines), type (regular files only: no links, devices, directories or
 * sparse files), size (against the manifest and {@link BundleLimits}) and SHA-256, and that the
 * manifest and the entries match one to one. Any fault refuses the whole bundle. The second pass
 * reads it again, checks every checksum again as it goes (the file could change in between), and
 * writes in atomic batches.
 *
 * <p>Merging is idempotent: a graph already present keeps its data (its first/last seen times
 * widen, its count becomes the larger one); a compiled artifact already present is kept; a
 * recorded failure is replaced by a compiled artifact, never the other way round. Importing the
 * same bundle twice changes nothing the second time.
 */
public final class BundleImporter {
  /** What an import did. */
  public record Result(Path file, long graphsAdded, long graphsPresent, long artifactsAdded, long artifactsPresent,
      long failuresAdded, long payloadBytes) {}

  private static final Pattern ENTRY_NAME = Pattern.compile("^(identities/[0-9a-f]{64}\\.txt"
      + "|graphs/[0-9a-f]{64}\\.hlo\\.zst|artifacts/[0-9a-f]{64}\\.[0-9a-f]{64}\\.bin"
      + "|logs/[0-9a-f]{64}\\.[0-9a-f]{64}\\.log\\.zst)$");
  private static final int BATCH_ENTRIES = 1000;

  private final CacheStore store;
  private final BundleLimits limits;

  BundleImporter(CacheStore store, BundleLimits limits) {
    this.store = store;
    this.limits = limits;
  }

  Result importBundle(Path file) {
    Validated v;
    try {
      v = validate(file);
    } catch (IllegalArgumentException e) {
      throw refuse(file, e.getMessage());
    } catch (NoSuchFileException e) {
      throw XlacException.badInput("cannot import " + file + ": no such file");
    } catch (IOException e) {
      String msg = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
      throw refuse(file, "malformed bundle (" + msg + ")");
    }
    try {
      return apply(file, v);
    } catch (IOException | IllegalArgumentException e) {
      throw new XlacException(ExitCode.WORK_FAILED, "cannot import " + file + ": it changed while being imported ("
          + e.getMessage() + "); what was imported is consistent; import it again");
    }
  }

  private static XlacException refuse(Path file, String why) {
    return XlacException.badInput("cannot import " + file + ": " + why + "; nothing was imported");
  }

  private record Validated(BundleManifest manifest, byte[] manifestSha, Map<String, byte[]> identityTexts) {}

  /** Receives each entry after the manifest, with its data when the pass keeps it (else null). */
  private interface EntrySink {
    void accept(String name, byte[] data) throws IOException;
  }

  private Validated validate(Path file) throws IOException {
    Map<String, byte[]> identityTexts = new HashMap<>();
    BundleManifest[] manifest = new BundleManifest[1];
    byte[][] manifestSha = new byte[1][];
    read(file, null, m -> manifest[0] = m, sha -> manifestSha[0] = sha, (name, data) -> {
      if (name.startsWith("identities/")) {
        String digest = name.substring("identities/".length(), "identities/".length() + 64);
        try {
          CompilerIdentity id = CompilerIdentity.decode(new String(data, StandardCharsets.UTF_8));
          if (!id.digest().equals(digest)) {
            throw new IllegalArgumentException("entry " + name + " does not hash to its name");
          }
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException("entry " + name + " is not a valid compiler identity (" + e.getMessage() + ")");
        }
        identityTexts.put(digest, data);
      }
    });
    return new Validated(manifest[0], manifestSha[0], identityTexts);
  }

  /**
   * Reads the bundle, checking everything; {@code expectedSha} null means the first pass (parse the
   * manifest), else the manifest must hash to it.
   */
  private void read(Path file, byte[] expectedSha, Consumer<BundleManifest> onManifest, Consumer<byte[]> onManifestSha,
      EntrySink sink) throws IOException {
    try (InputStream raw = new BufferedInputStream(Files.newInputStream(file), 1 << 20);
        ZstdInputStream zstd = new ZstdInputStream(raw);
        TarArchiveInputStream tar = new TarArchiveInputStream(zstd)) {
      TarArchiveEntry first = tar.getNextEntry();
      if (first == null) {
        throw new IllegalArgumentException("the bundle is empty");
      }
      checkSafe(first, 1);
      if (!first.getName().equals(BundleManifest.NAME)) {
        throw new IllegalArgumentException("the first entry is '" + printable(first.getName()) + "', not the manifest "
            + BundleManifest.NAME + " (not an xlac bundle)");
      }
      if (first.getSize() > limits.maxManifestBytes()) {
        throw new IllegalArgumentException("the manifest is " + first.getSize() + " bytes, over the limit of "
            + limits.maxManifestBytes());
      }
      byte[] manifestBytes = readFully(tar, first.getSize(), first.getName());
      byte[] sha = Checksums.sha256(manifestBytes);
      if (expectedSha != null && !MessageDigest.isEqual(sha, expectedSha)) {
        throw new IllegalArgumentException("the manifest changed");
      }
      BundleManifest m = BundleManifest.parse(manifestBytes, limits);
      onManifest.accept(m);
      onManifestSha.accept(sha);
      Map<String, BundleManifest.Expected> expected = m.expectedEntries();
      Map<String, BundleManifest.Artifact> byLogName = new HashMap<>();
      for (BundleManifest.Artifact a : m.artifacts.values()) {
        byLogName.put(a.logEntryName(), a);
      }
      BundleManifest.PendingLogs pending = new BundleManifest.PendingLogs();
      Set<String> seen = new HashSet<>();
      int index = 1;
      byte[] buffer = new byte[1 << 16];
      for (TarArchiveEntry e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
        index++;
        checkSafe(e, index);
        String name = e.getName();
        BundleManifest.Expected x = expected.get(name);
        if (x == null) {
          throw new IllegalArgumentException("entry " + index + " ('" + name + "') is not in the manifest");
        }
        if (!seen.add(name)) {
          throw new IllegalArgumentException("entry " + index + " ('" + name + "') appears twice");
        }
        if (e.getSize() != x.size()) {
          throw new IllegalArgumentException("entry '" + name + "' is " + e.getSize() + " bytes; the manifest says "
              + x.size());
        }
        boolean keep = expectedSha != null || name.startsWith("identities/");
        byte[] data = null;
        byte[] digest;
        if (keep) {
          data = readFully(tar, x.size(), name);
          digest = Checksums.sha256(data);
        } else {
          digest = digestStream(tar, x.size(), name, buffer);
        }
        if (!HexFormat.of().formatHex(digest).equals(x.sha())) {
          throw new IllegalArgumentException("entry '" + name + "' fails its checksum");
        }
        BundleManifest.Artifact logOf = byLogName.get(name);
        if (logOf != null && logOf.status() == EntryStatus.COMPILED) {
          pending.add(logOf.key(), x.size(), limits.maxPendingLogBytes());
        } else if (name.startsWith("artifacts/")) {
          pending.take(name.substring("artifacts/".length(), name.length() - ".bin".length()));
        }
        sink.accept(name, data);
      }
      if (seen.size() != expected.size()) {
        List<String> missing = new ArrayList<>();
        for (String n : expected.keySet()) {
          if (!seen.contains(n)) {
            missing.add(n);
          }
        }
        throw new IllegalArgumentException(missing.size() + " entries of the manifest are missing (truncated bundle?), e.g. "
            + missing.getFirst());
      }
    }
  }

  /** Refuses anything but a regular file with a name the format defines. */
  private static void checkSafe(TarArchiveEntry e, int index) {
    String name = e.getName();
    String shown = "entry " + index + " ('" + printable(name) + "')";
    if (name.startsWith("/") || name.contains("\\") || name.indexOf('\0') >= 0 || (name.length() > 1 && name.charAt(1) == ':')) {
      throw new IllegalArgumentException(shown + " has an absolute or unsafe path");
    }
    for (String part : name.split("/", -1)) {
      if (part.equals("..")) {
        throw new IllegalArgumentException(shown + " has a path that leaves the bundle (path traversal)");
      }
    }
    if (e.isSymbolicLink()) {
      throw new IllegalArgumentException(shown + " is a symbolic link (to '" + printable(e.getLinkName()) + "')");
    }
    if (e.isLink()) {
      throw new IllegalArgumentException(shown + " is a hard link (to '" + printable(e.getLinkName()) + "')");
    }
    if (e.isCharacterDevice() || e.isBlockDevice()) {
      throw new IllegalArgumentException(shown + " is a device file");
    }
    if (e.isFIFO()) {
      throw new IllegalArgumentException(shown + " is a named pipe");
    }
    if (e.isDirectory()) {
      throw new IllegalArgumentException(shown + " is a directory");
    }
    byte flag = e.getLinkFlag();
    if ((flag != TarConstants.LF_NORMAL && flag != TarConstants.LF_OLDNORM) || e.isSparse()) {
      throw new IllegalArgumentException(shown + " is not a regular file (type '" + (char) flag + "')");
    }
    if (!name.equals(BundleManifest.NAME) && !ENTRY_NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(shown + " is not an entry an xlac bundle holds");
    }
  }

  private static String printable(String s) {
    if (s == null) {
      return "";
    }
    String p = s.replaceAll("\\p{Cntrl}", "?");
    return p.length() > 120 ? p.substring(0, 120) + "..." : p;
  }

  private static byte[] readFully(InputStream in, long size, String name) throws IOException {
    byte[] data = new byte[Math.toIntExact(size)];
    int n = in.readNBytes(data, 0, data.length);
    if (n != data.length) {
      throw new IllegalArgumentException("entry '" + name + "' is truncated");
    }
    return data;
  }

  private static byte[] digestStream(InputStream in, long size, String name, byte[] buffer) throws IOException {
    MessageDigest sha = Checksums.sha256();
    long left = size;
    while (left > 0) {
      int n = in.read(buffer, 0, (int) Math.min(buffer.length, left));
      if (n < 0) {
        throw new IllegalArgumentException("entry '" + name + "' is truncated");
      }
      sha.update(buffer, 0, n);
      left -= n;
    }
    return sha.digest();
  }

  // ---------------------------------------------------------------- second pass

  private Result apply(Path file, Validated v) throws IOException {
    BundleManifest m = v.manifest();
    long now = store.clock.millis();
    long[] counts = new long[6]; // graphs added, present, artifacts added, present, failures added, bytes
    java.util.concurrent.ExecutorService writer = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "xlac-import-writer");
      t.setDaemon(true);
      return t;
    });
    Batcher batch = new Batcher(writer);
    try {
      return apply(file, v, m, now, counts, batch);
    } finally {
      try {
        batch.await(); // never leave a write running behind the caller's back
      } catch (IOException | RuntimeException e) {
        // the first failure is already on its way out
      }
      writer.shutdown();
    }
  }

  private Result apply(Path file, Validated v, BundleManifest m, long now, long[] counts, Batcher batch)
      throws IOException {
    Map<String, byte[]> pendingLogs = new HashMap<>();
    read(file, v.manifestSha(), x -> { }, x -> { }, (name, data) -> {
      counts[5] += data.length;
      if (name.startsWith("graphs/")) {
        BundleManifest.Graph g = m.graphs.get(name.substring(7, 7 + 64));
        batch.add(data.length, txn -> mergeGraph(txn, g, data, now, counts));
      } else if (name.startsWith("logs/")) {
        BundleManifest.Artifact a = m.artifacts.get(name.substring(5, name.length() - ".log.zst".length()));
        if (a.status() == EntryStatus.FAILED) {
          batch.add(data.length, txn -> mergeArtifact(txn, a, null, data, v.identityTexts(), now, counts));
        } else {
          pendingLogs.put(a.key(), data);
        }
      } else if (name.startsWith("artifacts/")) {
        BundleManifest.Artifact a = m.artifacts.get(name.substring(10, name.length() - ".bin".length()));
        byte[] log = pendingLogs.remove(a.key());
        batch.add(data.length, txn -> mergeArtifact(txn, a, data, log, v.identityTexts(), now, counts));
      }
    });
    for (BundleManifest.Artifact a : m.failedWithoutLog()) {
      batch.add(0, txn -> mergeArtifact(txn, a, null, null, v.identityTexts(), now, counts));
    }
    batch.flush();
    batch.await();
    store.flushUnlogged();
    return new Result(file, counts[0], counts[1], counts[2], counts[3], counts[4], counts[5]);
  }

  private static void mergeGraph(CacheStore.Txn txn, BundleManifest.Graph g, byte[] stored, long now, long[] counts) {
    byte[] fp = HexFormat.of().parseHex(g.fp());
    GraphRecord old = txn.graph(fp);
    if (old == null) {
      txn.writeGraph(fp, new GraphRecord(g.module(), g.source(), g.firstSeen(), g.lastSeen(), g.seenCount(), g.rawBytes(),
          g.storedBytes(), HexFormat.of().parseHex(g.storedSha()), now, java.util.List.of()), stored);
      counts[0]++;
      return;
    }
    counts[1]++;
    GraphRecord merged = new GraphRecord(old.moduleName(), old.source(), Math.min(old.firstSeen(), g.firstSeen()),
        Math.max(old.lastSeen(), g.lastSeen()), Math.max(old.seenCount(), g.seenCount()), old.rawBytes(),
        old.storedBytes(), old.storedSha256(), old.lastAccess(), old.neuronNames());
    if (merged.firstSeen() != old.firstSeen() || merged.lastSeen() != old.lastSeen()
        || merged.seenCount() != old.seenCount()) {
      txn.writeGraph(fp, merged, null);
    }
  }

  private static void mergeArtifact(CacheStore.Txn txn, BundleManifest.Artifact a, byte[] bytes, byte[] storedLog,
      Map<String, byte[]> identityTexts, long now, long[] counts) {
    byte[] key = HexFormat.of().parseHex(a.fp() + a.digest());
    ArtifactRecord old = txn.artifact(key);
    if (old != null && (old.status() == EntryStatus.COMPILED || a.status() == EntryStatus.FAILED)) {
      counts[3]++;
      return;
    }
    txn.putIdentityText(a.digest(), identityTexts.get(a.digest()));
    ArtifactRecord rec = new ArtifactRecord(a.status(), a.bytes(), a.sha() == null ? null : HexFormat.of().parseHex(a.sha()),
        a.compileMillis(), a.created(), now, a.failureKind(), a.failureMessage(), a.logRawBytes(), a.logStoredBytes(),
        a.logSha() == null ? null : HexFormat.of().parseHex(a.logSha()));
    txn.writeArtifact(key, rec, bytes, storedLog);
    counts[a.status() == EntryStatus.COMPILED ? 2 : 4]++;
  }

  /**
   * Groups small entries into one batch; each batch is atomic and never splits an entry. A batch
   * is written on the importer's writer thread while the next one is read and verified, with at
   * most one batch in flight, so memory stays bounded by two batches.
   */
  private final class Batcher {
    private final List<Consumer<CacheStore.Txn>> ops = new ArrayList<>();
    private long bytes;
    private final java.util.concurrent.ExecutorService writer;
    private java.util.concurrent.Future<?> inFlight;

    Batcher(java.util.concurrent.ExecutorService writer) {
      this.writer = writer;
    }

    /** Waits for the batch being written; its failure (disk full, ...) surfaces here. */
    void await() throws IOException {
      if (inFlight == null) {
        return;
      }
      try {
        inFlight.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted", e);
      } catch (java.util.concurrent.ExecutionException e) {
        if (e.getCause() instanceof RuntimeException r) {
          throw r;
        }
        throw new IllegalStateException(e.getCause());
      } finally {
        inFlight = null;
      }
    }

    void add(long size, Consumer<CacheStore.Txn> op) throws IOException {
      ops.add(op);
      bytes += size;
      if (bytes >= RocksDbStore.bulkBatchBytes() || ops.size() >= BATCH_ENTRIES) {
        flush();
      }
    }

    void flush() throws IOException {
      if (ops.isEmpty()) {
        return;
      }
      List<Consumer<CacheStore.Txn>> run = List.copyOf(ops);
      ops.clear();
      bytes = 0;
      await();
      inFlight = writer.submit(() -> store.commitUnlogged(txn -> {
        run.forEach(op -> op.accept(txn));
        return null;
      }));
    }
  }
}
