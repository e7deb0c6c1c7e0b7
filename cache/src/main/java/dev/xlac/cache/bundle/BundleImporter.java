package dev.xlac.cache.bundle;

import static dev.xlac.cache.bundle.BundleManifest.printable;

import com.github.luben.zstd.ZstdInputStream;
import dev.xlac.cache.Artifact;
import dev.xlac.cache.BundleKey;
import dev.xlac.cache.BundleLimits;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.ImportLimit;
import dev.xlac.cache.ImportRequest;
import dev.xlac.cache.ImportResult;
import dev.xlac.cache.TrustSettings;
import dev.xlac.cache.store.BulkWriter;
import dev.xlac.cache.store.Checksums;
import dev.xlac.cache.store.Records.ArtifactRecord;
import dev.xlac.cache.store.Records.GraphRecord;
import dev.xlac.cache.store.Store;
import dev.xlac.cache.store.StoredValues;
import dev.xlac.cache.store.Txn;
import dev.xlac.cache.store.ValueKind;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.Sizes;
import dev.xlac.core.XlacException;
import dev.xlac.core.neuron.NeuronName;
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
import java.util.zip.CRC32C;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;

/**
 * Merges a bundle into a cache in two passes over the file. The first validates all of it and
 * writes nothing: the format version, the signature ({@link BundleSignature}; checked whenever
 * there is one, and required by the cache's {@link TrustSettings} or the request's keys), every
 * entry's name (no absolute paths, no {@code ..}, only the names the format defines), type
 * (regular files only: no links, devices, directories or sparse files), size (against the
 * manifest and {@link BundleLimits}) and SHA-256, the Neuron names (see {@link BundleManifest}),
 * that the manifest and the entries match one to one, and what the bytes themselves say
 * ({@link BundleContent}: each graph's fingerprint and name, and the raw sizes of modules and
 * logs). The bundle is one zstd frame holding one tar archive: anything after either is refused.
 * Any fault refuses the whole bundle, and so does a bundle that unpacks to more than the
 * {@link ImportLimit} or whose new values would not fit into the free space of the cache's
 * filesystem: both are checked right after the manifest is read. The second pass reads it again
 * and writes it in atomic batches; an entry larger than a chunk is written a piece at a time through
 * a {@link StoredValues.ValueWriter}, so no entry is ever held whole, whatever its size.
 * It does not compute the SHA-256 digests again: the first pass also took each entry's CRC32C,
 * which the second checks (an order of magnitude cheaper), so a file that changed in between is
 * still caught before a changed entry is written. (A change forged to keep the CRC32C would still
 * not be served: every read checks the SHA-256 in the entry's record.)
 *
 * <p>Merging is idempotent: a graph already present keeps its data (its first/last seen times
 * widen, its count becomes the larger one, and it gains the bundle's Neuron names at locations it
 * has no name for); a compiled artifact already present is kept; a recorded failure is replaced by
 * a compiled artifact, never the other way round. Importing the same bundle twice changes nothing
 * the second time.
 */
public final class BundleImporter {
  /**
   * Which signers the import accepts: the cache's trusted keys and the request's; a signature is
   * required when the cache says so or the request names keys.
   */
  public record Trust(TrustSettings settings, ImportRequest request) {
    static final Trust NONE = new Trust(new TrustSettings(false, List.of()), ImportRequest.defaults());

    boolean required() {
      return settings.requireSigned() || !request.trust().isEmpty();
    }

    boolean trusts(BundleKey key) {
      return settings.find(key.id()) != null || request.trust().contains(key);
    }

    String whyRequired() {
      return settings.requireSigned() ? "this cache accepts only signed bundles ('xlac cache config require-signed' is on)"
          : "--trust asks for a bundle signed by a trusted key";
    }
  }

  private static final Pattern ENTRY_NAME = Pattern.compile("^(identities/[0-9a-f]{64}\\.txt"
      + "|graphs/[0-9a-f]{64}\\.hlo\\.zst|artifacts/[0-9a-f]{64}\\.[0-9a-f]{64}\\.bin"
      + "|logs/[0-9a-f]{64}\\.[0-9a-f]{64}\\.log\\.zst|requests/[0-9a-f]{64}\\.req\\.zst"
      + "|executables/[0-9a-f]{64}\\.bin|" + Pattern.quote(BundleSignature.NAME) + ")$");
  private static final int BATCH_ENTRIES = 1000;

  /** What the disk-space check adds per entry for its records (metadata, index) and once for RocksDB's own files. */
  private static final long RECORD_BYTES = 256;
  private static final long DATABASE_BYTES = 1 << 20;
  /** How much of large values the second pass writes between two flushes: half a blob family's memtable. */
  private static final long STREAM_FLUSH_BYTES = 2 * Store.bulkBatchBytes();
  /**
   * The heap a manifest needs, per byte of it: parsed, it takes about 3.6 times its size (measured),
   * the import's own maps of its entries more, and about twice that while it is parsed; the rest
   * of the heap is for the batches, the pending logs and the pieces of large values (a sixteenth,
   * a sixteenth and 24 MiB).
   */
  private static final long MANIFEST_HEAP_FACTOR = 10;

  /** A sixteenth of the heap, but at least {@code floor}: what the batches and the pending logs may each hold. */
  static long heapShare(long floor) {
    return Math.max(floor, Runtime.getRuntime().maxMemory() / 16);
  }

  private final Store store;
  private final BundleLimits limits;
  private final Trust trust;
  private final ImportLimit maxUnpacked;
  private final Runnable betweenPasses;

  BundleImporter(Store store, BundleLimits limits) {
    this(store, limits, Trust.NONE, () -> { });
  }

  /** {@code betweenPasses}: tests change the file there. */
  BundleImporter(Store store, BundleLimits limits, Trust trust, Runnable betweenPasses) {
    this(store, limits, trust, ImportLimit.request(java.util.OptionalLong.empty()), betweenPasses);
  }

  public BundleImporter(Store store, BundleLimits limits, Trust trust, ImportLimit maxUnpacked,
      Runnable betweenPasses) {
    this.store = store;
    this.limits = limits;
    this.trust = trust;
    this.maxUnpacked = maxUnpacked;
    this.betweenPasses = betweenPasses;
  }

  public ImportResult importBundle(Path file) {
    Validated v;
    try {
      v = validate(file);
    } catch (IllegalArgumentException e) {
      throw refuse(file, e.getMessage());
    } catch (NoSuchFileException e) {
      throw XlacException.badInput("cannot import " + file + ": no such file");
    } catch (IOException e) {
      String msg = XlacException.reason(e);
      throw refuse(file, "malformed bundle (" + msg + ")");
    }
    betweenPasses.run();
    try {
      return apply(file, v);
    } catch (IOException | IllegalArgumentException e) {
      throw new XlacException(ExitCode.WORK_FAILED, "cannot import " + file + ": it changed while being imported ("
          + XlacException.reason(e) + "); what was imported is consistent; import it again");
    }
  }

  private static XlacException refuse(Path file, String why) {
    return XlacException.badInput("cannot import " + file + ": " + why + "; nothing was imported");
  }

  /**
   * What the first pass established: the manifest (and its digest), the signature entry (null:
   * unsigned) and its verified signer, the identities, each entry's CRC32C.
   */
  private record Validated(BundleManifest manifest, byte[] manifestSha, byte[] signature, BundleKey signer,
      Map<String, byte[]> identityTexts, Map<String, Integer> crcs) {}

  /** Receives the manifest (parsed, its SHA-256 and exact bytes) and the signature entry (null: none). */
  private interface ManifestSink {
    void accept(BundleManifest m, byte[] sha, byte[] bytes, byte[] signature);
  }

  /**
   * Receives each entry after the manifest, with its data when the pass keeps it in memory (else
   * null), the value writer its bytes went to when the second pass streamed it (else null), and its
   * CRC32C, once the entry is read whole and checked.
   */
  private interface EntrySink {
    void accept(String name, byte[] data, StoredValues.ValueWriter streamed, int crc) throws IOException;

    /**
     * Second pass, for an entry larger than a chunk: the writer its bytes go to as they are read, or
     * null when the import will not write it (the cache holds it already): then they are only checked.
     */
    default StoredValues.ValueWriter stream(String name, long size) throws IOException {
      return null;
    }

    /** Second pass: sends a piece of a streamed entry to its writer; {@code piece} is not touched again until the next call. */
    default void write(StoredValues.ValueWriter w, byte[] piece, int length) throws IOException {
      w.write(piece, 0, length);
    }
  }

  private Validated validate(Path file) throws IOException {
    Map<String, byte[]> identityTexts = new HashMap<>();
    Map<String, Integer> crcs = new HashMap<>();
    BundleManifest[] manifest = new BundleManifest[1];
    byte[][] manifestSha = new byte[1][];
    byte[][] signature = new byte[1][];
    BundleKey[] signer = new BundleKey[1];
    read(file, null, (m, sha, bytes, sig) -> {
      manifest[0] = m;
      manifestSha[0] = sha;
      signature[0] = sig;
      signer[0] = checkSignature(bytes, sig);
      checkUnpacked(m, bytes.length, sig == null ? 0 : sig.length);
      checkSpace(file, m);
    }, (name, data, streamed, crc) -> {
      crcs.put(name, crc);
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
    return new Validated(manifest[0], manifestSha[0], signature[0], signer[0], identityTexts, crcs);
  }

  /** Refuses a bundle whose manifest says it unpacks to more than the limit, before any entry is read. */
  private void checkUnpacked(BundleManifest m, long manifestBytes, long signatureBytes) {
    long total = m.unpackedBytes(manifestBytes, signatureBytes);
    if (maxUnpacked.bytes().isPresent() && total > maxUnpacked.bytes().getAsLong()) {
      throw new IllegalArgumentException("it unpacks to " + Sizes.human(total) + " (" + total + " bytes: its entries,"
          + " and the modules and logs decompressed to check them), over the limit on unpacked bytes of "
          + Sizes.human(maxUnpacked.bytes().getAsLong()) + " (" + maxUnpacked.why() + ")");
    }
  }

  /**
   * Refuses, before anything is written, a bundle whose new values would not fit into the free space
   * of the cache's filesystem: the values of the graphs and artifacts (with their logs) the import
   * would write, their records, or the scratch file of the largest module checked on disk, whichever
   * is more (the scratch file is gone before the second pass writes).
   */
  private void checkSpace(Path file, BundleManifest m) {
    long values = DATABASE_BYTES;
    long scratch = 0;
    for (BundleManifest.Graph g : m.graphs.values()) {
      if (g.rawBytes() >= BundleContent.HEAP_MODULE_BYTES) {
        scratch = Math.max(scratch, g.rawBytes());
      }
      if (store.readGraphRecord(HexFormat.of().parseHex(g.fp())) == null) {
        values = Math.addExact(values, g.storedBytes() + RECORD_BYTES);
      }
    }
    for (BundleManifest.Artifact a : m.artifacts.values()) {
      ArtifactRecord old = store.readArtifactRecord(HexFormat.of().parseHex(a.fp() + a.digest()));
      if (old == null || old.status() == EntryStatus.FAILED && a.status() == EntryStatus.COMPILED) {
        values = Math.addExact(values, a.bytes() + a.logStoredBytes() + RECORD_BYTES);
      }
    }
    for (BundleManifest.Request q : m.requests.values()) {
      if (store.readRequestRecord(HexFormat.of().parseHex(q.key())) == null) {
        values = Math.addExact(values, q.storedBytes() + q.executableBytes() + RECORD_BYTES);
      }
    }
    long needed = Math.max(values, scratch);
    Path db = store.databaseDirectory();
    long free;
    try {
      free = Files.getFileStore(Files.isDirectory(db) ? db : store.directory()).getUsableSpace();
    } catch (IOException e) {
      return; // cannot tell: the writes will say when the disk is full
    }
    if (needed > free) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot import " + file + ": disk full: importing it needs "
          + Sizes.human(needed) + " (" + needed + " bytes) in " + store.directory() + ", and its filesystem has "
          + Sizes.human(free) + " free; nothing was imported");
    }
  }

  /** The signer of a signed bundle, once its signature is checked; null for an unsigned one. Refuses as {@link Trust} says. */
  private BundleKey checkSignature(byte[] manifest, byte[] signature) {
    if (signature == null) {
      if (trust.required()) {
        throw new IllegalArgumentException("the bundle is not signed, and " + trust.whyRequired());
      }
      return null;
    }
    BundleKey signer = BundleSignature.verify(signature, manifest);
    if (trust.required() && !trust.trusts(signer)) {
      throw new IllegalArgumentException("the bundle is signed by key " + signer.id() + ", which is not trusted (trust"
          + " its public key with 'xlac cache config trust add PUBKEY', or pass '--trust PUBKEY')");
    }
    return signer;
  }

  /**
   * Reads the bundle, checking everything. {@code first} null means the first pass: parse the
   * manifest, check the signature, every entry's SHA-256 against the manifest and what the bytes
   * say ({@link BundleContent}). Otherwise the second: the manifest and the signature entry must be
   * what the first pass read, and every entry must have the CRC32C it had then.
   */
  private void read(Path file, Validated first, ManifestSink onManifest, EntrySink sink) throws IOException {
    UnpackCounter unpacked = new UnpackCounter(maxUnpacked);
    try (InputStream raw = new BufferedInputStream(Files.newInputStream(file), 1 << 20)) {
      ZstdFrameStream frame = new ZstdFrameStream(raw);
      try (ZstdInputStream zstd = new ZstdInputStream(frame);
          BundleContent.TarStream archive = new BundleContent.TarStream(zstd);
          TarArchiveInputStream tar = new TarArchiveInputStream(archive);
          BundleContent content = first == null ? new BundleContent(store.directory(), unpacked) : null) {
        readArchive(file, tar, archive, first, onManifest, sink, content, unpacked);
        archive.checkEnd();
        if (!frame.ended()) {
          throw new IOException("the zstd stream ends inside its frame");
        }
        if (frame.trailingData()) {
          throw new IllegalArgumentException("it has trailing data after its zstd frame");
        }
      }
    }
  }

  private void readArchive(Path file, TarArchiveInputStream tar, BundleContent.TarStream archive, Validated first,
      ManifestSink onManifest, EntrySink sink, BundleContent content, UnpackCounter unpacked) throws IOException {
    InputStream in = new Counted(tar, unpacked); // the current entry's bytes, counted against the limit
    TarArchiveEntry head = manifestEntry(file, next(tar, archive), first);
    byte[] manifestBytes = readFully(in, head.getSize(), head.getName());
    byte[] sha = Checksums.sha256(manifestBytes);
    BundleManifest m = manifestOf(manifestBytes, sha, first);
    Signed signed = signature(tar, archive, in, m, first);
    onManifest.accept(m, sha, manifestBytes, signed.signature());
    ExpectedEntries expected = new ExpectedEntries(m);
    BundleManifest.PendingLogs pending = new BundleManifest.PendingLogs();
    byte[] buffer = new byte[1 << 16];
    CRC32C crc = new CRC32C();
    int index = signed.nextIndex();
    for (TarArchiveEntry e = signed.next(); e != null; e = next(tar, archive), index++) {
      String name = e.getName();
      BundleManifest.Expected x = expected.check(e, index);
      BundleManifest.Artifact logOf = expected.logOf(name);
      BundleManifest.Request requestOf = expected.requestOf(name);
      crc.reset();
      EntryBytes read = first == null
          ? checkEntry(in, name, x, m, logOf, requestOf, content, buffer, crc)
          : rereadEntry(in, name, x, first, sink, buffer, crc);
      notePending(pending, name, x, logOf, requestOf);
      sink.accept(name, read.data(), read.streamed(), (int) crc.getValue());
    }
    expected.checkNoneMissing();
  }

  /** The first entry, which must be the manifest, of a size the limits and (first pass) this JVM's heap allow. */
  private TarArchiveEntry manifestEntry(Path file, TarArchiveEntry head, Validated first) {
    if (head == null) {
      throw new IllegalArgumentException("the bundle is empty");
    }
    checkSafe(head, 1);
    if (!head.getName().equals(BundleManifest.NAME)) {
      throw new IllegalArgumentException("the first entry is '" + printable(head.getName()) + "', not the manifest "
          + BundleManifest.NAME + " (not an xlac bundle)");
    }
    if (head.getSize() > limits.maxManifestBytes()) {
      throw new IllegalArgumentException("the manifest is " + head.getSize() + " bytes, over the limit of "
          + limits.maxManifestBytes());
    }
    long heap = Runtime.getRuntime().maxMemory();
    if (first == null && heap != Long.MAX_VALUE && head.getSize() > heap / MANIFEST_HEAP_FACTOR) {
      // Parsed, a manifest takes about 4 times its size, and twice that while it is parsed.
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot import " + file + ": its manifest of "
          + Sizes.human(head.getSize()) + " needs about " + Sizes.human(head.getSize() * MANIFEST_HEAP_FACTOR)
          + " of memory to be checked, more than this JVM may use (" + Sizes.human(heap) + "); run xlac with a larger"
          + " heap (XLAC_JAVA_OPTS=-Xmx" + Math.max(1, head.getSize() * MANIFEST_HEAP_FACTOR * 2 >> 30) + "g)"
          + "; nothing was imported");
    }
    return head;
  }

  /** The manifest parsed (first pass), or the first pass's, when these are the bytes it read (second pass). */
  private BundleManifest manifestOf(byte[] manifestBytes, byte[] sha, Validated first) {
    if (first == null) {
      return BundleManifest.parse(manifestBytes, limits);
    }
    if (MessageDigest.isEqual(sha, first.manifestSha())) {
      return first.manifest();
    }
    throw new IllegalArgumentException("the manifest changed");
  }

  /** The signature entry's bytes (null: none), and the entry after it with its index. */
  private record Signed(byte[] signature, TarArchiveEntry next, int nextIndex) {}

  /**
   * The signature entry, which follows the manifest exactly when the manifest's format version is a signed one; on
   * the second pass it must be what the first pass read.
   */
  private static Signed signature(TarArchiveInputStream tar, BundleContent.TarStream archive, InputStream in,
      BundleManifest m, Validated first) throws IOException {
    int index = 2;
    TarArchiveEntry e = next(tar, archive);
    if (e != null && e.getName().equals(BundleSignature.NAME)) {
      checkSafe(e, index);
      if (!m.signed) {
        throw new IllegalArgumentException("it has a signature entry " + BundleSignature.NAME + ", but its manifest is"
            + " of an unsigned format version (only versions " + BundleManifest.SIGNED_VERSION + " and "
            + BundleManifest.SIGNED_REQUESTS_VERSION + " bundles are signed)");
      }
      if (e.getSize() > BundleSignature.MAX_BYTES) {
        throw new IllegalArgumentException("the signature entry is " + e.getSize() + " bytes, over the limit of "
            + BundleSignature.MAX_BYTES);
      }
      byte[] signature = readFully(in, e.getSize(), e.getName());
      if (first != null && !java.util.Arrays.equals(signature, first.signature())) {
        throw new IllegalArgumentException("the signature entry changed");
      }
      return new Signed(signature, next(tar, archive), index + 1);
    }
    if (m.signed) {
      throw new IllegalArgumentException("its manifest is of the signed format version "
          + m.formatVersion() + ", but the signature entry " + BundleSignature.NAME + " does not follow it");
    }
    return new Signed(null, e, index);
  }

  /** What the manifest expects of the entries after it, and which of them were seen. */
  private static final class ExpectedEntries {
    private final Map<String, BundleManifest.Expected> expected;
    private final Map<String, BundleManifest.Artifact> byLogName = new HashMap<>();
    private final Map<String, BundleManifest.Request> byRequestName = new HashMap<>();
    private final Set<String> seen = new HashSet<>();

    ExpectedEntries(BundleManifest m) {
      expected = m.expectedEntries();
      for (BundleManifest.Artifact a : m.artifacts.values()) {
        byLogName.put(a.logEntryName(), a);
      }
      for (BundleManifest.Request q : m.requests.values()) {
        byRequestName.put(q.entryName(), q);
      }
    }

    /** The artifact whose log the entry {@code name} is, or null. */
    BundleManifest.Artifact logOf(String name) {
      return byLogName.get(name);
    }

    /** The runtime entry whose request the entry {@code name} is, or null. */
    BundleManifest.Request requestOf(String name) {
      return byRequestName.get(name);
    }

    /**
     * Entry {@code index}: safe, in the manifest, seen once, of the manifest's size, and in order (a compiled
     * artifact's log before the artifact, a runtime entry's request before its executable); what the manifest says
     * of it.
     */
    BundleManifest.Expected check(TarArchiveEntry e, int index) {
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
      BundleManifest.Artifact logOf = byLogName.get(name);
      if (logOf != null && logOf.status() == EntryStatus.COMPILED && seen.contains(logOf.entryName())) {
        throw new IllegalArgumentException("entry " + index + " ('" + name + "') follows its artifact; a compiled"
            + " artifact's log comes before it");
      }
      BundleManifest.Request requestOf = byRequestName.get(name);
      if (requestOf != null && seen.contains(requestOf.executableEntryName())) {
        throw new IllegalArgumentException("entry " + index + " ('" + name + "') follows its executable; a runtime"
            + " entry's request comes before it");
      }
      return x;
    }

    /** After the last entry: every entry of the manifest was there. */
    void checkNoneMissing() {
      if (seen.size() != expected.size()) {
        List<String> missing = new ArrayList<>();
        for (String n : expected.keySet()) {
          if (!seen.contains(n)) {
            missing.add(n);
          }
        }
        throw new IllegalArgumentException(missing.size() + " entries of the manifest are missing (truncated bundle?),"
            + " e.g. " + missing.getFirst());
      }
    }
  }

  /** An entry's bytes as the sink receives them: whole ({@code data}), or streamed into a value writer, or neither. */
  private record EntryBytes(byte[] data, StoredValues.ValueWriter streamed) {}

  /**
   * First pass: the entry's SHA-256 is the manifest's, and its bytes are what the manifest says they are (a request,
   * a graph's module, a log); an identity's bytes are kept whole, the rest only checked.
   */
  private static EntryBytes checkEntry(InputStream in, String name, BundleManifest.Expected x, BundleManifest m,
      BundleManifest.Artifact logOf, BundleManifest.Request requestOf, BundleContent content, byte[] buffer,
      CRC32C crc) throws IOException {
    MessageDigest digest = Checksums.sha256();
    if (requestOf != null) {
      checkRequest(in, name, requestOf, x, digest, crc);
      return new EntryBytes(null, null);
    }
    if (name.startsWith("graphs/")) {
      content.checkGraph(in, name, m.graphs.get(name.substring(7, 7 + 64)), x, digest, crc);
      return new EntryBytes(null, null);
    }
    if (logOf != null) {
      content.checkLog(in, name, x, logOf.logRawBytes(), digest, crc);
      return new EntryBytes(null, null);
    }
    byte[] data = null;
    if (name.startsWith("identities/")) {
      data = readFully(in, x.size(), name);
      digest.update(data);
      crc.update(data);
    } else {
      digestStream(in, x.size(), name, buffer, digest, crc);
    }
    if (!HexFormat.of().formatHex(digest.digest()).equals(x.sha())) {
      throw new IllegalArgumentException("entry '" + name + "' fails its checksum");
    }
    return new EntryBytes(data, null);
  }

  /**
   * Second pass: the entry read again, a large value a piece at a time into its value writer, and it must have the
   * CRC32C the first pass saw.
   */
  private static EntryBytes rereadEntry(InputStream in, String name, BundleManifest.Expected x, Validated first,
      EntrySink sink, byte[] buffer, CRC32C crc) throws IOException {
    byte[] data = null;
    StoredValues.ValueWriter streamed = null;
    if (Store.chunked(x.size()) && !name.startsWith("identities/")) {
      // Never whole in memory: a piece at a time into its value writer, chunk by chunk into the cache.
      streamed = sink.stream(name, x.size());
      if (streamed == null) {
        digestStream(in, x.size(), name, buffer, null, crc);
      } else {
        streamInto(in, x.size(), name, crc, streamed, sink);
      }
    } else {
      data = readFully(in, x.size(), name);
      crc.update(data);
    }
    Integer before = first.crcs().get(name);
    if (before == null || before != (int) crc.getValue()) {
      // A streamed value's chunks are not committed: closing its writer (see apply) removes them.
      throw new IllegalArgumentException("entry '" + name + "' is not what was checked");
    }
    return new EntryBytes(data, streamed);
  }

  /**
   * Bounds what waits in memory for its entry: a compiled artifact's log and a runtime entry's request wait until
   * their artifact or executable arrives.
   */
  private void notePending(BundleManifest.PendingLogs pending, String name, BundleManifest.Expected x,
      BundleManifest.Artifact logOf, BundleManifest.Request requestOf) {
    if (logOf != null && logOf.status() == EntryStatus.COMPILED || requestOf != null) {
      pending.add(logOf != null ? logOf.key() : requestOf.key(), x.size(), Math.min(limits.maxPendingLogBytes(),
          heapShare(2L * Store.chunkBytes())));
    } else if (name.startsWith("executables/")) {
      pending.take(name.substring("executables/".length(), name.length() - ".bin".length()));
    } else if (name.startsWith("artifacts/")) {
      pending.take(name.substring("artifacts/".length(), name.length() - ".bin".length()));
    }
  }

  /**
   * First pass, a runtime entry's request: its SHA-256 is the manifest's, it is one zstd value that decompresses
   * to exactly the manifest's raw size, its four sections parse, and they are the request of the key it is filed
   * under (so a bundle cannot file one request's executable under another's key).
   */
  private static void checkRequest(InputStream in, String name, BundleManifest.Request q, BundleManifest.Expected x,
      MessageDigest digest, CRC32C crc) throws IOException {
    byte[] data = readFully(in, x.size(), name);
    digest.update(data);
    crc.update(data);
    if (!HexFormat.of().formatHex(digest.digest()).equals(x.sha())) {
      throw new IllegalArgumentException("entry '" + name + "' fails its checksum");
    }
    byte[][] sections;
    try {
      long frame = com.github.luben.zstd.Zstd.getFrameContentSize(data);
      if (frame != q.rawBytes()) {
        throw new IllegalArgumentException("its zstd frame says " + frame + " bytes, the manifest " + q.rawBytes());
      }
      byte[] raw = com.github.luben.zstd.Zstd.decompress(data, Math.toIntExact(q.rawBytes()));
      if (raw.length != q.rawBytes()) {
        throw new IllegalArgumentException("it decompresses to " + raw.length + " bytes, not " + q.rawBytes());
      }
      sections = dev.xlac.cache.store.RequestEntries.decodeRequest(raw);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("entry '" + name + "' is not a stored request (" + e.getMessage() + ")");
    }
    dev.xlac.runtime.RequestKey key = dev.xlac.runtime.RequestKey.of(sections[0], sections[1], sections[2],
        sections[3]);
    if (!key.hex().equals(q.key())) {
      // a bundle of an older xlac files its entries under their old keys: intact, imported, never served
      dev.xlac.runtime.RequestKey filed = new dev.xlac.runtime.RequestKey(HexFormat.of().parseHex(q.key()));
      if (filed.isVersion1KeyOf(sections[0], sections[1], sections[2], sections[3])) {
        key = filed;
      }
    }
    if (!key.hex().equals(q.key())) {
      throw new IllegalArgumentException("entry '" + name + "' holds the request " + key.text()
          + ", not the one it is filed under");
    }
    // what the manifest says of the request must be what the request says of itself
    dev.xlac.runtime.RecordedRequest decoded = new dev.xlac.runtime.RecordedRequest(key, sections[0], sections[1],
        sections[2], new String(sections[3], java.nio.charset.StandardCharsets.UTF_8), new byte[0], 0);
    String field = !decoded.formatName().equals(q.format()) ? "format"
        : !decoded.platformName().equals(q.platformName()) ? "platform name"
        : !decoded.pluginSha256().equals(q.pluginSha()) ? "plugin SHA-256"
        : decoded.program().length != q.programBytes() ? "program size" : null;
    if (field != null) {
      throw new IllegalArgumentException("entry '" + name + "': the manifest's " + field
          + " of runtime entry " + key.text() + " is not its request's");
    }
  }

  /** The next entry; what the tar reader reads to find it is watched for data after the archive's end. */
  private static TarArchiveEntry next(TarArchiveInputStream tar, BundleContent.TarStream archive) throws IOException {
    archive.arm();
    TarArchiveEntry e = tar.getNextEntry();
    if (e != null) {
      archive.disarm();
    }
    return e;
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

  private static byte[] readFully(InputStream in, long size, String name) throws IOException {
    byte[] data = new byte[Math.toIntExact(size)];
    int n = in.readNBytes(data, 0, data.length);
    if (n != data.length) {
      throw new IllegalArgumentException("entry '" + name + "' is truncated");
    }
    return data;
  }

  /** Reads {@code size} bytes into the digests ({@code sha} null: the CRC32C only). */
  private static void digestStream(InputStream in, long size, String name, byte[] buffer, MessageDigest sha, CRC32C crc)
      throws IOException {
    long left = size;
    while (left > 0) {
      int n = in.read(buffer, 0, (int) Math.min(buffer.length, left));
      if (n < 0) {
        throw new IllegalArgumentException("entry '" + name + "' is truncated");
      }
      if (sha != null) {
        sha.update(buffer, 0, n);
      }
      crc.update(buffer, 0, n);
      left -= n;
    }
  }

  /**
   * Reads {@code size} bytes into {@code w}, a chunk-sized piece at a time, through
   * {@link EntrySink#write} (which writes each piece while the next one is read), into the CRC32C.
   * Two pieces are used in turn: a piece goes out only once the one before it is written.
   */
  private static void streamInto(InputStream in, long size, String name, CRC32C crc, StoredValues.ValueWriter w,
      EntrySink sink) throws IOException {
    int pieceBytes = (int) Math.min(Store.chunkBytes(), size);
    byte[][] pieces = {new byte[pieceBytes], new byte[pieceBytes]};
    long left = size;
    for (int turn = 0; left > 0; turn ^= 1) {
      byte[] piece = pieces[turn];
      int n = (int) Math.min(piece.length, left);
      if (in.readNBytes(piece, 0, n) != n) {
        throw new IllegalArgumentException("entry '" + name + "' is truncated");
      }
      crc.update(piece, 0, n);
      sink.write(w, piece, n);
      left -= n;
    }
  }

  /** The current tar entry's bytes, counted against the limit on unpacked bytes as they are read. */
  private static final class Counted extends java.io.FilterInputStream {
    private final UnpackCounter unpacked;

    Counted(InputStream tar, UnpackCounter unpacked) {
      super(tar);
      this.unpacked = unpacked;
    }

    @Override
    public int read() throws IOException {
      int c = in.read();
      if (c >= 0) {
        unpacked.add(1);
      }
      return c;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      int n = in.read(b, off, len);
      if (n > 0) {
        unpacked.add(n);
      }
      return n;
    }

    @Override
    public long skip(long n) {
      return 0; // entries are read, never skipped
    }

    @Override
    public void close() {
      // the tar stream is closed by its owner
    }
  }

  // ---------------------------------------------------------------- second pass

  private ImportResult apply(Path file, Validated v) throws IOException {
    BundleManifest m = v.manifest();
    long now = store.clock().millis();
    Counts counts = new Counts();
    try (Pipeline out = new Pipeline()) {
      return apply(file, v, m, now, counts, out);
    }
  }

  /** A compiled artifact's log, read before its artifact: in memory, or streamed into a writer, or neither (not needed). */
  private record HeldLog(byte[] data, StoredValues.ValueWriter writer) {}

  private ImportResult apply(Path file, Validated v, BundleManifest m, long now, Counts counts, Pipeline out)
      throws IOException {
    Map<String, HeldLog> pendingLogs = new HashMap<>();
    Map<String, HeldLog> pendingRequests = new HashMap<>();
    Map<String, BundleManifest.Expected> expected = m.expectedEntries();
    read(file, v, (x, sha, bytes, sig) -> { }, new EntrySink() {
      @Override
      public StoredValues.ValueWriter stream(String name, long size) throws IOException {
        return openWriter(m, name, size, out);
      }

      @Override
      public void write(StoredValues.ValueWriter w, byte[] piece, int length) throws IOException {
        out.submit(() -> w.write(piece, 0, length));
        out.streamed(length);
      }

      @Override
      public void accept(String name, byte[] data, StoredValues.ValueWriter streamed, int crc) throws IOException {
        long size = data != null ? data.length : expected.get(name).size();
        counts.payloadBytes += size;
        // A batch is sent once its values (held, or written in pieces before it) reach the budget: that bounds
        // the memory it holds, and how much a crash before its record is written costs.
        if (name.startsWith("graphs/")) {
          BundleManifest.Graph g = m.graphs.get(name.substring(7, 7 + 64));
          List<NeuronName> names = m.neuronNames.getOrDefault(g.fp(), List.of());
          out.add(size, txn -> mergeGraph(txn, g, names, data, streamed, now, counts), streamed);
        } else if (name.startsWith("logs/")) {
          BundleManifest.Artifact a = m.artifacts.get(name.substring(5, name.length() - ".log.zst".length()));
          if (a.status() == EntryStatus.FAILED) {
            out.add(size, txn -> mergeArtifact(txn, a, null, null, data, streamed, v.identityTexts(), now, counts),
                streamed);
          } else {
            pendingLogs.put(a.key(), new HeldLog(data, streamed));
          }
        } else if (name.startsWith("requests/")) {
          pendingRequests.put(name.substring(9, 9 + 64), new HeldLog(data, streamed));
        } else if (name.startsWith("executables/")) {
          BundleManifest.Request q = m.requests.get(name.substring(12, 12 + 64));
          HeldLog request = pendingRequests.remove(q.key());
          byte[] requestData = request == null ? null : request.data();
          StoredValues.ValueWriter requestWriter = request == null ? null : request.writer();
          out.add(size + q.storedBytes(), txn -> mergeRequest(txn, q, requestData, requestWriter, data, streamed, now,
              counts), streamed, requestWriter);
        } else if (name.startsWith("artifacts/")) {
          BundleManifest.Artifact a = m.artifacts.get(name.substring(10, name.length() - ".bin".length()));
          HeldLog log = pendingLogs.remove(a.key());
          byte[] logData = log == null ? null : log.data();
          StoredValues.ValueWriter logWriter = log == null ? null : log.writer();
          out.add(size + a.logStoredBytes(), txn -> mergeArtifact(txn, a, data, streamed, logData,
              logWriter, v.identityTexts(), now, counts), streamed, logWriter);
        }
      }
    });
    for (BundleManifest.Artifact a : m.failedWithoutLog()) {
      out.add(0, txn -> mergeArtifact(txn, a, null, null, null, null, v.identityTexts(), now, counts));
    }
    out.flush();
    out.await();
    out.bulk.flush();
    return new ImportResult(file, counts.graphsAdded, counts.graphsPresent, counts.artifactsAdded, counts.artifactsPresent,
        counts.failuresAdded, counts.neuronNamesAdded, counts.payloadBytes, v.signer(),
        v.signer() != null && trust.trusts(v.signer()), counts.requestsAdded, counts.requestsPresent);
  }

  /**
   * A writer for a large entry's value, or null when the import keeps what the cache holds (the
   * graph is stored, the artifact compiled, the failure recorded): what {@link #mergeGraph} and
   * {@link #mergeArtifact} will decide. A writer is only opened for a key whose record references no
   * chunked value in that family (see {@link StoredValues#writer}): the one case where it could, a
   * recorded failure with a chunked log that a compiled artifact with a chunked log replaces, first
   * removes the failure.
   */
  private StoredValues.ValueWriter openWriter(BundleManifest m, String name, long size, Pipeline out)
      throws IOException {
    if (name.startsWith("graphs/")) {
      byte[] fp = HexFormat.of().parseHex(name.substring(7, 7 + 64));
      return store.readGraphRecord(fp) == null ? out.open(ValueKind.GRAPHS, fp, size) : null;
    }
    if (name.startsWith("requests/") || name.startsWith("executables/")) {
      boolean request = name.startsWith("requests/");
      byte[] digest = HexFormat.of().parseHex(name.substring(request ? 9 : 12, (request ? 9 : 12) + 64));
      return store.readRequestRecord(digest) == null
          ? out.open(request ? ValueKind.REQUESTS : ValueKind.EXECUTABLES, digest, size) : null;
    }
    boolean log = name.startsWith("logs/");
    String key = log ? name.substring(5, name.length() - ".log.zst".length())
        : name.substring(10, name.length() - ".bin".length());
    BundleManifest.Artifact a = m.artifacts.get(key);
    byte[] kb = HexFormat.of().parseHex(a.fp() + a.digest());
    ArtifactRecord old = store.readArtifactRecord(kb);
    if (old != null && (old.status() == EntryStatus.COMPILED || a.status() == EntryStatus.FAILED)) {
      return null;
    }
    if (log && old != null && Store.chunked(old.logStoredBytes())) {
      out.removeArtifact(kb); // the failure's chunked log would meet the new log's chunks
    }
    return out.open(log ? ValueKind.LOGS : ValueKind.ARTIFACTS, kb, size);
  }

  /**
   * What {@link #apply} has done so far. Merges run on the writer thread, one batch at a time, and
   * the totals are read after the last batch is awaited.
   */
  private static final class Counts {
    long graphsAdded;
    long graphsPresent;
    long artifactsAdded;
    long artifactsPresent;
    long failuresAdded;
    long neuronNamesAdded;
    long payloadBytes;
    long requestsAdded;
    long requestsPresent;
  }

  /**
   * A runtime entry: {@code stored} or {@code storedWriter} holds the compressed request, {@code executable} or
   * {@code executableWriter} the executable, when the cache does not hold it yet; one it holds is kept as it is.
   */
  private static void mergeRequest(Txn txn, BundleManifest.Request q, byte[] stored,
      StoredValues.ValueWriter storedWriter, byte[] executable, StoredValues.ValueWriter executableWriter, long now,
      Counts counts) {
    byte[] digest = HexFormat.of().parseHex(q.key());
    if (txn.request(digest) != null) {
      counts.requestsPresent++;
      return;
    }
    if (stored == null && storedWriter == null || executable == null && executableWriter == null) {
      throw new IllegalStateException("runtime entry " + q.key() + " was removed from the cache while the bundle was"
          + " imported");
    }
    txn.writeRequest(digest, new dev.xlac.cache.store.Records.RequestRecord(q.format(), q.platformName(),
        q.pluginSha(), q.programBytes(), q.rawBytes(), q.storedBytes(), HexFormat.of().parseHex(q.storedSha()),
        q.executableBytes(), HexFormat.of().parseHex(q.executableSha()), q.compileNanos(), q.created(), now, 0),
        stored, executable);
    if (storedWriter != null) {
      txn.commitValue(storedWriter);
    }
    if (executableWriter != null) {
      txn.commitValue(executableWriter);
    }
    counts.requestsAdded++;
  }

  /** {@code stored} or {@code streamed} (the value written in pieces) holds the module when the graph is new. */
  private static void mergeGraph(Txn txn, BundleManifest.Graph g, List<NeuronName> names, byte[] stored,
      StoredValues.ValueWriter streamed, long now, Counts counts) {
    byte[] fp = HexFormat.of().parseHex(g.fp());
    GraphRecord old = txn.graph(fp);
    if (old == null) {
      if (stored == null && streamed == null) {
        throw new IllegalStateException("graph " + g.fp() + " was removed from the cache while the bundle was imported");
      }
      txn.writeGraph(fp, new GraphRecord(g.module(), g.source(), g.firstSeen(), g.lastSeen(), g.seenCount(), g.rawBytes(),
          g.storedBytes(), HexFormat.of().parseHex(g.storedSha()), now, names), stored);
      if (streamed != null) {
        txn.commitValue(streamed);
      }
      counts.graphsAdded++;
      counts.neuronNamesAdded += names.size();
      return;
    }
    counts.graphsPresent++;
    GraphRecord merged = new GraphRecord(old.moduleName(), old.source(), Math.min(old.firstSeen(), g.firstSeen()),
        Math.max(old.lastSeen(), g.lastSeen()), Math.max(old.seenCount(), g.seenCount()), old.rawBytes(),
        old.storedBytes(), old.storedSha256(), old.lastAccess(), old.neuronNames());
    int added = 0;
    for (NeuronName n : names) {
      if (merged.neuronNames().stream().noneMatch(x -> x.sameLocation(n))) { // the cache's own name stays
        merged = merged.withNeuronName(n);
        added++;
      }
    }
    counts.neuronNamesAdded += added;
    if (added > 0 || merged.firstSeen() != old.firstSeen() || merged.lastSeen() != old.lastSeen()
        || merged.seenCount() != old.seenCount()) {
      txn.writeGraph(fp, merged, null);
    }
  }

  /**
   * {@code bytes} or {@code bytesWriter}, and {@code storedLog} or {@code logWriter}, hold the values
   * (in memory, or written in pieces) when the entry is written.
   */
  private static void mergeArtifact(Txn txn, BundleManifest.Artifact a, byte[] bytes,
      StoredValues.ValueWriter bytesWriter, byte[] storedLog, StoredValues.ValueWriter logWriter,
      Map<String, byte[]> identityTexts, long now, Counts counts) {
    byte[] key = HexFormat.of().parseHex(a.fp() + a.digest());
    ArtifactRecord old = txn.artifact(key);
    if (old != null && (old.status() == EntryStatus.COMPILED || a.status() == EntryStatus.FAILED)) {
      counts.artifactsPresent++;
      return;
    }
    if (a.status() == EntryStatus.COMPILED && bytes == null && bytesWriter == null
        || a.logStoredBytes() > 0 && storedLog == null && logWriter == null) {
      throw new IllegalStateException("artifact " + a.key() + " was removed from the cache while the bundle was imported");
    }
    txn.putIdentityText(a.digest(), identityTexts.get(a.digest()));
    ArtifactRecord rec = new ArtifactRecord(a.status(), a.bytes(), a.sha() == null ? null : HexFormat.of().parseHex(a.sha()),
        a.compileMillis(), a.created(), now, a.failureKind(), a.failureMessage(), a.logRawBytes(), a.logStoredBytes(),
        a.logSha() == null ? null : HexFormat.of().parseHex(a.logSha()));
    txn.writeArtifact(key, rec, bytes, storedLog);
    if (bytesWriter != null) {
      txn.commitValue(bytesWriter);
    }
    if (logWriter != null) {
      txn.commitValue(logWriter);
    }
    if (a.status() == EntryStatus.COMPILED) {
      counts.artifactsAdded++;
    } else {
      counts.failuresAdded++;
    }
  }

  /**
   * Where the second pass writes, on one writer thread, in order, while the next entry is read:
   * batches of small entries (each batch atomic, never splitting an entry, its records and values
   * together) and the pieces of large values, which their {@link StoredValues.ValueWriter}s write
   * chunk by chunk; a large value's record goes into a later batch, which commits it. At most one
   * task is in flight, and a batch holds at most {@link #budget} bytes of values, so memory stays
   * bounded by two batches and two pieces of a chunk each, whatever the bundle holds. Every writer
   * is closed once the batch with its record is written (or when the import ends): one whose value
   * was not committed removes its chunks.
   */
  private final class Pipeline implements AutoCloseable {
    /** A batch's values: a quarter of a memtable, and at most a sixteenth of the heap. */
    final long budget = Math.min(Store.bulkBatchBytes(), heapShare(4L << 20));
    private final java.util.concurrent.ExecutorService thread = java.util.concurrent.Executors.newSingleThreadExecutor(
        r -> {
          Thread t = new Thread(r, "xlac-import-writer");
          t.setDaemon(true);
          return t;
        });
    private final List<Consumer<Txn>> ops = new ArrayList<>();
    private final List<StoredValues.ValueWriter> opsWriters = new ArrayList<>();
    private long bytes;
    private long streamedSinceFlush;
    private java.util.concurrent.Future<?> inFlight;
    private List<StoredValues.ValueWriter> inFlightWriters = List.of();
    /** Writers opened and not closed yet. */
    private final Set<StoredValues.ValueWriter> open = new java.util.LinkedHashSet<>();
    /** One native batch for the whole import, reused: see {@link BulkWriter}. */
    final BulkWriter bulk = store.bulk(budget + (16 << 20));

    StoredValues.ValueWriter open(ValueKind cf, byte[] key, long size) {
      StoredValues.ValueWriter w = store.valueWriter(cf, key, size, false);
      open.add(w);
      return w;
    }

    /** Adds an entry's merge to the batch being built; {@code writers}: the values it commits (null: none). */
    void add(long size, Consumer<Txn> op, StoredValues.ValueWriter... writers) throws IOException {
      ops.add(op);
      for (StoredValues.ValueWriter w : writers) {
        if (w != null) {
          opsWriters.add(w);
        }
      }
      bytes += size;
      if (bytes >= budget || ops.size() >= BATCH_ENTRIES) {
        flush();
      }
    }

    /** Sends the batch being built to the writer thread. */
    void flush() throws IOException {
      if (ops.isEmpty()) {
        return;
      }
      List<Consumer<Txn>> run = List.copyOf(ops);
      List<StoredValues.ValueWriter> writers = List.copyOf(opsWriters);
      ops.clear();
      opsWriters.clear();
      bytes = 0;
      submit(() -> bulk.commit(txn -> {
        run.forEach(op -> op.accept(txn));
        return null;
      }));
      inFlightWriters = writers;
    }

    /**
     * Removes an artifact entry, in order with what was sent before and after (the batch being built
     * goes first).
     */
    void removeArtifact(byte[] key) throws IOException {
      flush();
      submit(() -> bulk.commit(txn -> txn.removeArtifact(key)));
    }

    /**
     * Counts the bytes of large values sent; every {@link #STREAM_FLUSH_BYTES} of them, the writer
     * thread flushes the memtables and waits: a large value arrives faster than RocksDB's
     * background flushes move it to blob files, and would otherwise fill every memtable it may have.
     */
    void streamed(long n) throws IOException {
      streamedSinceFlush += n;
      if (streamedSinceFlush >= STREAM_FLUSH_BYTES) {
        streamedSinceFlush = 0;
        submit(bulk::flush);
      }
    }

    /** Runs {@code task} on the writer thread once the task in flight is done. */
    void submit(Runnable task) throws IOException {
      await();
      inFlight = thread.submit(task);
    }

    /** Waits for the task in flight; its failure (disk full, ...) surfaces here. Closes the writers its batch committed. */
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
        List<StoredValues.ValueWriter> done = inFlightWriters;
        inFlightWriters = List.of();
        done.forEach(this::close);
      }
    }

    /** Never leaves a write running behind the caller's back; removes the chunks of values left uncommitted. */
    @Override
    public void close() {
      try {
        await();
      } catch (IOException | RuntimeException e) {
        // the first failure is already on its way out
      }
      thread.shutdown();
      List.copyOf(open).forEach(this::close);
      bulk.close();
    }

    /** Closes a writer: one whose value its batch did not commit removes its chunks. */
    private void close(StoredValues.ValueWriter w) {
      open.remove(w);
      try {
        w.close();
      } catch (RuntimeException e) {
        // disk full, say: the next writer's open removes the chunks (their pending marker is there)
      }
    }
  }
}
