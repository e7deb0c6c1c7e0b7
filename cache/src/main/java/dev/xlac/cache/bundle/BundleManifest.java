package dev.xlac.cache.bundle;

import dev.xlac.cache.Artifact;
import dev.xlac.cache.BundleLimits;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.ImportLimit;
import dev.xlac.cache.store.Store;
import dev.xlac.core.XlacException;
import dev.xlac.core.neuron.NeuronName;
import dev.xlac.core.neuron.NeuronxCcIdentity;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The first entry of a bundle, {@value #NAME}: the format version and one line per entry with
 * its sizes and SHA-256 checksums, plus the graphs' and artifacts' metadata. A line-based text
 * format with tab-separated fields; text fields are percent-escaped (tab, newline, carriage
 * return, percent). The full grammar is in cache/README.md. Parsing validates every field: a
 * manifest that parses is internally consistent (every artifact's graph and compiler, and every
 * Neuron name's graph, are listed).
 *
 * <p>Version 2 added {@code neuron} records: the graphs' Neuron cache names. Version 3 is a signed
 * bundle: the same records, and a {@link BundleSignature} entry right after the manifest. A bundle
 * is written in the lowest version that holds its content (version 1 when no graph has a Neuron
 * name and it is not signed), so an older xlac still reads every bundle it could understand, and
 * refuses, naming both versions, one that would lose names or a signature. Versions 4 (unsigned) and 5 (signed)
 * add {@code request} records: the runtime's recorded PJRT requests with their executables, each two entries. All
 * five are read.
 */
public final class BundleManifest {
  static final String NAME = "xlac-bundle.manifest";
  static final String MAGIC = "xlac-bundle";
  /** The newest version this xlac reads and writes. */
  static final int FORMAT_VERSION = 5;
  /** The first version with {@code request} records (runtime entries): 4 unsigned, 5 signed. */
  static final int REQUESTS_VERSION = 4;
  /** The version of signed bundles with runtime entries. */
  static final int SIGNED_REQUESTS_VERSION = 5;
  /** A runtime entry's plugin SHA-256: 64 lowercase hex digits (or empty: the proxy named no plugin file). */
  private static final Pattern PLUGIN_SHA = Pattern.compile("[0-9a-f]{64}");
  /** The first version with {@code neuron} records. */
  static final int NEURON_NAMES_VERSION = 2;
  /** The version of signed bundles: the manifest is followed by {@link BundleSignature#NAME}. */
  static final int SIGNED_VERSION = 3;
  /** A file name on Linux (NAME_MAX): longer version or MODULE directory names are refused. */
  static final int MAX_NEURON_DIRECTORY_BYTES = 255;
  /** Neuron names of one graph (one per compiler version and flag set in practice: a handful). */
  static final int MAX_NEURON_NAMES_PER_GRAPH = 1024;
  private static final Pattern HEX64 = Pattern.compile("^[0-9a-f]{64}$");

  record Identity(String digest, long bytes, String sha) {
    String entryName() {
      return "identities/" + digest + ".txt";
    }
  }

  record Graph(String fp, long storedBytes, String storedSha, long rawBytes, long firstSeen, long lastSeen,
      long seenCount, String module, String source) {
    String entryName() {
      return "graphs/" + fp + ".hlo.zst";
    }
  }

  record Artifact(String fp, String digest, EntryStatus status, long bytes, String sha, long compileMillis, long created,
      long logStoredBytes, String logSha, long logRawBytes, String failureKind, String failureMessage) {
    String key() {
      return fp + "." + digest;
    }

    String entryName() {
      return "artifacts/" + key() + ".bin";
    }

    String logEntryName() {
      return "logs/" + key() + ".log.zst";
    }
  }

  /** One runtime entry: a recorded PJRT compile request (stored zstd-compressed) and its executable. */
  record Request(String key, long storedBytes, String storedSha, long rawBytes, long executableBytes,
      String executableSha, long compileNanos, long created, String format, String platformName, String pluginSha,
      long programBytes) {
    String entryName() {
      return "requests/" + key + ".req.zst";
    }

    String executableEntryName() {
      return "executables/" + key + ".bin";
    }
  }

  final long created;
  /** Written by {@link #format()} as version 3 ({@link #SIGNED_VERSION}); read: the version was 3. */
  boolean signed;
  final Map<String, Identity> identities = new LinkedHashMap<>();
  final Map<String, Graph> graphs = new LinkedHashMap<>();
  final Map<String, Artifact> artifacts = new LinkedHashMap<>();
  /** Graph fingerprint (hex) to its Neuron names, for graphs that have some. */
  final Map<String, List<NeuronName>> neuronNames = new LinkedHashMap<>();
  /** Request key (hex) to its runtime entry (version 4 and later). */
  final Map<String, Request> requests = new LinkedHashMap<>();

  BundleManifest(long created) {
    this.created = created;
  }

  /** Expected tar entries after the manifest: name to (size, sha256 hex), in the order export writes them. */
  Map<String, Expected> expectedEntries() {
    Map<String, Expected> out = new LinkedHashMap<>();
    for (Identity i : identities.values()) {
      out.put(i.entryName(), new Expected(i.bytes(), i.sha()));
    }
    for (Graph g : graphs.values()) {
      out.put(g.entryName(), new Expected(g.storedBytes(), g.storedSha()));
    }
    for (Artifact a : artifacts.values()) {
      if (a.logStoredBytes() > 0) {
        out.put(a.logEntryName(), new Expected(a.logStoredBytes(), a.logSha()));
      }
      if (a.status() == EntryStatus.COMPILED) {
        out.put(a.entryName(), new Expected(a.bytes(), a.sha()));
      }
    }
    for (Request q : requests.values()) {
      out.put(q.entryName(), new Expected(q.storedBytes(), q.storedSha()));
      out.put(q.executableEntryName(), new Expected(q.executableBytes(), q.executableSha()));
    }
    return out;
  }

  record Expected(long size, String sha) {}

  /** The version {@link #format()} writes: the lowest that holds this manifest's content. */
  int formatVersion() {
    if (!requests.isEmpty()) {
      return signed ? SIGNED_REQUESTS_VERSION : REQUESTS_VERSION;
    }
    return signed ? SIGNED_VERSION : neuronNames.isEmpty() ? 1 : NEURON_NAMES_VERSION;
  }

  private int neuronNameCount() {
    return neuronNames.values().stream().mapToInt(List::size).sum();
  }

  byte[] format() {
    StringBuilder b = new StringBuilder();
    line(b, MAGIC, Integer.toString(formatVersion()));
    line(b, "created", Long.toString(created));
    for (Identity i : identities.values()) {
      line(b, "identity", i.digest(), Long.toString(i.bytes()), i.sha());
    }
    for (Graph g : graphs.values()) {
      line(b, "graph", g.fp(), Long.toString(g.storedBytes()), g.storedSha(), Long.toString(g.rawBytes()),
          Long.toString(g.firstSeen()), Long.toString(g.lastSeen()), Long.toString(g.seenCount()), esc(g.module()),
          esc(g.source()));
    }
    for (Map.Entry<String, List<NeuronName>> e : neuronNames.entrySet()) {
      for (NeuronName n : e.getValue()) {
        line(b, "neuron", e.getKey(), esc(n.versionDirectory()), esc(n.moduleDirectory()),
            n.compileFlagsJson() == null ? "-" : esc(n.compileFlagsJson()));
      }
    }
    for (Artifact a : artifacts.values()) {
      line(b, "artifact", a.fp(), a.digest(), a.status().jsonName(), Long.toString(a.bytes()), orDash(a.sha()),
          Long.toString(a.compileMillis()), Long.toString(a.created()), Long.toString(a.logStoredBytes()),
          orDash(a.logSha()), Long.toString(a.logRawBytes()), esc(a.failureKind()), esc(a.failureMessage()));
    }
    for (Request q : requests.values()) {
      line(b, "request", q.key(), Long.toString(q.storedBytes()), q.storedSha(), Long.toString(q.rawBytes()),
          Long.toString(q.executableBytes()), q.executableSha(), Long.toString(q.compileNanos()),
          Long.toString(q.created()), esc(q.format()), esc(q.platformName()), esc(q.pluginSha()),
          Long.toString(q.programBytes()));
    }
    line(b, "end", Long.toString(identities.size() + graphs.size() + artifacts.size() + neuronNameCount()
        + requests.size()));
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }

  private static void line(StringBuilder b, String... fields) {
    b.append(String.join("\t", fields)).append('\n');
  }

  private static String orDash(String s) {
    return s == null ? "-" : s;
  }

  public static String esc(String s) {
    if (s == null) {
      return "";
    }
    return s.replace("%", "%25").replace("\t", "%09").replace("\n", "%0A").replace("\r", "%0D");
  }

  public static String unesc(String s) {
    if (s.indexOf('%') < 0) {
      return s;
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%') {
        if (i + 2 >= s.length()) {
          throw new IllegalArgumentException("bad escape in '" + s + "'");
        }
        b.append((char) Integer.parseInt(s.substring(i + 1, i + 3), 16));
        i += 2;
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }

  /** Parses and validates; an {@link IllegalArgumentException} says what is wrong. */
  static BundleManifest parse(byte[] bytes, BundleLimits limits) {
    String text = new String(bytes, StandardCharsets.UTF_8);
    String[] lines = text.split("\n", -1);
    if (lines.length < 3 || !lines[lines.length - 1].isEmpty()) {
      throw new IllegalArgumentException("the manifest is truncated");
    }
    String[] head = lines[0].split("\t", -1);
    if (head.length != 2 || !head[0].equals(MAGIC)) {
      throw new IllegalArgumentException("not an xlac bundle manifest");
    }
    int version;
    try {
      version = Integer.parseInt(head[1]);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("unreadable bundle format version '" + head[1] + "'");
    }
    if (version < 1 || version > FORMAT_VERSION) {
      throw new IllegalArgumentException("bundle format version " + version + " is not supported (this xlac reads versions"
          + " 1 to " + FORMAT_VERSION + (version > FORMAT_VERSION ? "; it was written by a newer xlac)" : ")"));
    }
    String[] created = fields(lines[1], "created", 2);
    BundleManifest m = new BundleManifest(num(created[1], "created"));
    m.signed = version == SIGNED_VERSION || version == SIGNED_REQUESTS_VERSION;
    boolean ended = false;
    long neuronRecords = 0;
    Set<String> seenNames = new HashSet<>();
    for (int n = 2; n < lines.length - 1; n++) {
      if (ended) {
        throw new IllegalArgumentException("manifest line " + (n + 1) + " follows its end");
      }
      String l = lines[n];
      String kind = l.substring(0, Math.max(0, l.indexOf('\t')));
      switch (kind) {
        case "identity" -> {
          String[] f = fields(l, kind, 4);
          Identity i = new Identity(hex(f[1]), size(f[2], limits.maxIdentityBytes(), "identity"), hex(f[3]));
          unique(seenNames, i.entryName());
          m.identities.put(i.digest(), i);
        }
        case "graph" -> {
          String[] f = fields(l, kind, 10);
          Graph g = new Graph(hex(f[1]), size(f[2], limits.maxEntryBytes(), "graph"), hex(f[3]),
              size(f[4], limits.maxModuleBytes(), "module"), num(f[5], "first seen"), num(f[6], "last seen"),
              num(f[7], "seen count"), unesc(f[8]), unesc(f[9]));
          unique(seenNames, g.entryName());
          m.graphs.put(g.fp(), g);
        }
        case "artifact" -> {
          String[] f = fields(l, kind, 13);
          EntryStatus status = switch (f[3]) {
            case "compiled" -> EntryStatus.COMPILED;
            case "failed" -> EntryStatus.FAILED;
            default -> throw new IllegalArgumentException("unknown artifact status '" + f[3] + "'");
          };
          long bytesField = size(f[4], limits.maxEntryBytes(), "artifact");
          String sha = f[5].equals("-") ? null : hex(f[5]);
          if (status == EntryStatus.COMPILED && sha == null || status == EntryStatus.FAILED && (sha != null || bytesField != 0)) {
            throw new IllegalArgumentException("artifact line " + (n + 1) + " has bytes that do not fit its status");
          }
          long logStored = size(f[8], limits.maxLogBytes(), "log");
          String logSha = f[9].equals("-") ? null : hex(f[9]);
          if ((logStored > 0) != (logSha != null)) {
            throw new IllegalArgumentException("artifact line " + (n + 1) + " has a log size without checksum or back");
          }
          Artifact a = new Artifact(hex(f[1]), hex(f[2]), status, bytesField, sha, num(f[6], "compile time"),
              num(f[7], "created"), logStored, logSha, size(f[10], limits.maxLogBytes() * 64, "log"),
              status == EntryStatus.FAILED ? unesc(f[11]) : null, status == EntryStatus.FAILED ? unesc(f[12]) : null);
          if (logStored == 0 && a.logRawBytes() != 0) {
            throw new IllegalArgumentException("artifact " + a.key() + " has a log of " + a.logRawBytes()
                + " bytes but no log entry");
          }
          unique(seenNames, a.entryName());
          if (!m.graphs.containsKey(a.fp())) {
            throw new IllegalArgumentException("artifact " + a.key() + " names a graph the bundle does not hold");
          }
          if (!m.identities.containsKey(a.digest())) {
            throw new IllegalArgumentException("artifact " + a.key() + " names a compiler the bundle does not hold");
          }
          m.artifacts.put(a.key(), a);
        }
        case "neuron" -> {
          if (version < NEURON_NAMES_VERSION) {
            throw new IllegalArgumentException("manifest line " + (n + 1) + ": a 'neuron' record in a version " + version
                + " bundle");
          }
          String[] f = fields(l, kind, 5);
          String fp = hex(f[1]);
          if (!m.graphs.containsKey(fp)) {
            throw new IllegalArgumentException("manifest line " + (n + 1) + ": a Neuron name for graph " + fp
                + ", which the bundle does not hold (or lists later)");
          }
          NeuronName name = neuronName(unesc(f[2]), unesc(f[3]), f[4].equals("-") ? null : unesc(f[4]), limits, n + 1);
          List<NeuronName> names = m.neuronNames.computeIfAbsent(fp, k -> new ArrayList<>());
          if (names.stream().anyMatch(x -> x.sameLocation(name))) {
            throw new IllegalArgumentException("the manifest lists Neuron name " + name.path() + " of graph " + fp
                + " twice");
          }
          if (names.size() >= MAX_NEURON_NAMES_PER_GRAPH) {
            throw new IllegalArgumentException("graph " + fp + " has more than " + MAX_NEURON_NAMES_PER_GRAPH
                + " Neuron names");
          }
          names.add(name);
          if (++neuronRecords > limits.maxEntries()) {
            throw new IllegalArgumentException("the bundle lists more than " + limits.maxEntries() + " Neuron names");
          }
        }
        case "request" -> {
          if (version < REQUESTS_VERSION) {
            throw new IllegalArgumentException("manifest line " + (n + 1) + ": a 'request' record in a version "
                + version + " bundle");
          }
          String[] f = fields(l, kind, 13);
          Request q = new Request(hex(f[1]), size(f[2], Math.min(limits.maxEntryBytes(), Store.MAX_ARRAY_BYTES),
              "request"), hex(f[3]), size(f[4], limits.maxModuleBytes(), "request"),
              size(f[5], limits.maxEntryBytes(), "executable"), hex(f[6]), num(f[7], "compile time"),
              num(f[8], "created"), unesc(f[9]), unesc(f[10]), unesc(f[11]), num(f[12], "program size"));
          if (!q.pluginSha().isEmpty() && !PLUGIN_SHA.matcher(q.pluginSha()).matches()) {
            throw new IllegalArgumentException("manifest line " + (n + 1) + ": the plugin SHA-256 of runtime entry "
                + q.key() + " is not 64 lowercase hex digits");
          }
          unique(seenNames, q.entryName());
          unique(seenNames, q.executableEntryName());
          m.requests.put(q.key(), q);
        }
        case "end" -> {
          String[] f = fields(l, kind, 2);
          if (num(f[1], "count") != m.identities.size() + m.graphs.size() + m.artifacts.size() + neuronRecords
              + m.requests.size()) {
            throw new IllegalArgumentException("the manifest's record count does not match its end line");
          }
          ended = true;
        }
        default -> throw new IllegalArgumentException("unknown manifest record on line " + (n + 1));
      }
      if (seenNames.size() > limits.maxEntries()) {
        throw new IllegalArgumentException("the bundle lists more than " + limits.maxEntries() + " entries");
      }
    }
    if (!ended) {
      throw new IllegalArgumentException("the manifest has no end line (truncated)");
    }
    return m;
  }

  /**
   * A Neuron name from a bundle, which is hostile input: each directory must be a single path
   * element of at most {@value #MAX_NEURON_DIRECTORY_BYTES} bytes with the prefix Neuron gives it
   * ({@code neuronxcc-<version>}, {@code MODULE_}), and the flags a JSON list of strings within the
   * limit, naming a known target, so that materializing it later cannot fail or leave the directory.
   */
  private static NeuronName neuronName(String versionDir, String moduleDir, String flagsJson, BundleLimits limits,
      int line) {
    String where = "manifest line " + line + ": ";
    NeuronName name;
    try {
      name = new NeuronName(versionDir, moduleDir, flagsJson);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(where + e.getMessage());
    }
    for (String dir : List.of(versionDir, moduleDir)) {
      if (dir.getBytes(StandardCharsets.UTF_8).length > MAX_NEURON_DIRECTORY_BYTES) {
        throw new IllegalArgumentException(where + "a Neuron cache directory name longer than "
            + MAX_NEURON_DIRECTORY_BYTES + " bytes");
      }
    }
    if (NeuronxCcIdentity.versionOfDirectory(versionDir).isEmpty()) {
      throw new IllegalArgumentException(where + "'" + printable(versionDir) + "' is not a Neuron cache version directory"
          + " (neuronxcc-<version>)");
    }
    if (!moduleDir.startsWith(dev.xlac.core.neuron.NeuronFiles.MODULE_PREFIX)) {
      throw new IllegalArgumentException(where + "'" + printable(moduleDir) + "' is not a Neuron cache MODULE directory");
    }
    if (flagsJson != null) {
      long size = flagsJson.getBytes(StandardCharsets.UTF_8).length;
      if (size > limits.maxNeuronFlagsBytes()) {
        throw new IllegalArgumentException(where + "compile_flags.json of " + size + " bytes exceeds the limit of "
            + limits.maxNeuronFlagsBytes());
      }
    }
    try {
      NeuronxCcIdentity.forCacheEntry(versionDir, name.compileFlags());
    } catch (IllegalArgumentException | XlacException e) {
      throw new IllegalArgumentException(where + "compile_flags.json of " + printable(name.path()) + " is unusable ("
          + e.getMessage() + ")");
    }
    return name;
  }

  /** A name from a bundle as it can be shown in a one-line message: control characters replaced, at most 120 characters. */
  public static String printable(String s) {
    if (s == null) {
      return "";
    }
    String p = s.replaceAll("\\p{Cntrl}", "?");
    return p.length() > 120 ? p.substring(0, 120) + "..." : p;
  }

  private static String[] fields(String line, String kind, int count) {
    String[] f = line.split("\t", -1);
    if (f.length != count || !f[0].equals(kind)) {
      throw new IllegalArgumentException("malformed '" + kind + "' record in the manifest");
    }
    return f;
  }

  private static void unique(Set<String> names, String name) {
    if (!names.add(name)) {
      throw new IllegalArgumentException("the manifest lists " + name + " twice");
    }
  }

  private static String hex(String s) {
    if (!HEX64.matcher(s).matches()) {
      throw new IllegalArgumentException("'" + (s.length() > 80 ? s.substring(0, 80) + "..." : s)
          + "' is not 64 hex digits");
    }
    return s;
  }

  private static long num(String s, String what) {
    try {
      long v = Long.parseLong(s);
      if (v < 0) {
        throw new IllegalArgumentException("negative " + what);
      }
      return v;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("unreadable " + what + " '" + s + "'");
    }
  }

  private static long size(String s, long limit, String what) {
    long v = num(s, what + " size");
    if (v > limit) {
      throw new IllegalArgumentException("a " + what + " entry of " + v + " bytes exceeds the limit of " + limit);
    }
    return v;
  }

  /**
   * What the bundle unpacks to by the manifest's figures ({@link ImportLimit}): the entries' sizes
   * (the manifest's own {@code manifestBytes} and the signature's {@code signatureBytes} included)
   * and the decompressed sizes of the modules and logs.
   */
  long unpackedBytes(long manifestBytes, long signatureBytes) {
    try {
      long total = Math.addExact(manifestBytes, signatureBytes);
      for (Identity i : identities.values()) {
        total = Math.addExact(total, i.bytes());
      }
      for (Graph g : graphs.values()) {
        total = Math.addExact(total, g.storedBytes() + g.rawBytes());
      }
      for (Artifact a : artifacts.values()) {
        total = Math.addExact(total, a.bytes() + a.logStoredBytes() + a.logRawBytes());
      }
      for (Request q : requests.values()) {
        total = Math.addExact(total, q.storedBytes() + q.rawBytes() + q.executableBytes());
      }
      return total;
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE; // the limits keep it far below; over every limit regardless
    }
  }

  /**
   * Pending-log accounting shared by both import passes: a compiled artifact's log waits for its
   * artifact entry, in memory when it is stored whole (at most a chunk); a larger one is written to
   * the cache as it is read and does not count.
   */
  static final class PendingLogs {
    private final Map<String, Long> sizes = new HashMap<>();
    private long total;

    void add(String key, long size, long limit) {
      long held = Store.chunked(size) ? 0 : size;
      sizes.put(key, held);
      total += held;
      if (total > limit) {
        throw new IllegalArgumentException("logs waiting for their artifacts (which follow them) take more than "
            + limit + " bytes");
      }
    }

    void take(String key) {
      Long s = sizes.remove(key);
      if (s != null) {
        total -= s;
      }
    }
  }

  List<Artifact> failedWithoutLog() {
    List<Artifact> out = new ArrayList<>();
    for (Artifact a : artifacts.values()) {
      if (a.status() == EntryStatus.FAILED && a.logStoredBytes() == 0) {
        out.add(a);
      }
    }
    return out;
  }
}
