package dev.xlac.cache.remote;

import com.github.luben.zstd.Zstd;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.neuron.NeuronName;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.runtime.RequestKey;
import java.io.ByteArrayOutputStream;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The objects of the remote tier (docs/cache-remote.md): their keys under the prefix, and the one envelope
 * every object is written in. Keys are content addressed, so an object never changes once written:
 *
 * <pre>
 * v1/graphs/&lt;fingerprint hex&gt;                         a graph: its module, zstd-compressed
 * v1/artifacts/&lt;fingerprint hex&gt;/&lt;compiler id hex&gt;   a compiled artifact, as the compiler wrote it
 * v1/runtime/&lt;plugin sha256&gt;/&lt;request key hex&gt;     a runtime entry: the record file of runtime/README.md
 * v1/runtime/&lt;request key hex&gt;                       the same, as xlac wrote it before runtime entries were
 *                                                   filed by plugin: still read ({@code cache pull}), never written
 * </pre>
 *
 * <p>Runtime entries are filed under the SHA-256 of the real plugin they were compiled with, so that
 * {@code xlac run} lists only its plugin's entries (one listing request per 1,000 of them). The request key alone
 * does not name the plugin (it is a hash that covers the plugin identity).
 *
 * <p>The envelope: the magic {@code XLACOBJ1}, a big-endian {@code u32} header length, the header (UTF-8 lines
 * {@code name=value}, values URL-encoded; {@code key} names the object's own key, so an object copied under another
 * key is refused), the payload, and the SHA-256 of everything before it (32 bytes). A reader checks the magic, the
 * lengths, the SHA-256 and the key before it looks at the payload; the payload is then checked as its kind requires
 * (a graph's fingerprint recomputed from its module, a runtime record's key from its sections).
 *
 * <p>A signed object ({@code cache push --sign KEYFILE}) has a signature block after the SHA-256: the marker
 * {@code XLACSIG1}, the signer's Ed25519 public key (its 44-byte X.509 encoding, whose SHA-256 is the key id
 * {@code cache config trust} shows) and the Ed25519 signature (64 bytes) of {@code "xlac remote object v1\0"}
 * followed by that SHA-256, which covers the whole envelope, its key included.
 */
public final class RemoteObjects {
  /** The largest object this xlac writes or reads: it is held in memory whole (a Java array). */
  public static final long MAX_OBJECT_BYTES = Integer.MAX_VALUE - 1024;
  static final byte[] MAGIC = "XLACOBJ1".getBytes(StandardCharsets.US_ASCII);
  static final byte[] SIGNATURE_MARKER = "XLACSIG1".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] SIGNED_DOMAIN = "xlac remote object v1\0".getBytes(StandardCharsets.US_ASCII);
  /** The length of an Ed25519 public key's X.509 encoding. */
  private static final int ED25519_DER = 44;
  private static final int SIGNATURE_BLOCK = 8 + ED25519_DER + 64;
  /** The largest header a reader takes. */
  private static final int MAX_HEADER = 1 << 20;
  private static final String VERSION = "v1/";
  private static final Pattern HEX64 = Pattern.compile("[0-9a-f]{64}");

  private RemoteObjects() {}

  /** What an object holds. */
  public enum Kind {
    GRAPH("graphs"), ARTIFACT("artifacts"), RUNTIME("runtime");

    final String directory;

    Kind(String directory) {
      this.directory = directory;
    }

    /** The key prefix (below the tier's prefix) under which the objects of this kind are. */
    public String keyPrefix() {
      return VERSION + directory + "/";
    }
  }

  public static String graphKey(GraphFingerprint fp) {
    return Kind.GRAPH.keyPrefix() + hex(fp);
  }

  public static String artifactKey(ArtifactKey key) {
    return artifactPrefix(key.graph()) + key.compiler().digest();
  }

  /** The prefix of every artifact of one graph. */
  public static String artifactPrefix(GraphFingerprint fp) {
    return Kind.ARTIFACT.keyPrefix() + hex(fp) + "/";
  }

  /** A runtime entry's key: under its plugin's SHA-256 (64 lowercase hex digits). */
  public static String runtimeKey(String pluginSha256, RequestKey key) {
    return runtimePrefix(pluginSha256) + key.hex();
  }

  /** The prefix of every runtime entry of one plugin. */
  public static String runtimePrefix(String pluginSha256) {
    if (!HEX64.matcher(pluginSha256).matches()) {
      throw new IllegalArgumentException("not a plugin SHA-256: " + pluginSha256);
    }
    return Kind.RUNTIME.keyPrefix() + pluginSha256 + "/";
  }

  /** Whether {@code sha} can file a runtime entry: 64 lowercase hex digits. */
  public static boolean validPluginSha256(String sha) {
    return sha != null && HEX64.matcher(sha).matches();
  }

  /** The key an older xlac wrote a runtime entry under (no plugin in it): read, never written. */
  static String legacyRuntimeKey(RequestKey key) {
    return Kind.RUNTIME.keyPrefix() + key.hex();
  }

  static String hex(GraphFingerprint fp) {
    return fp.value().substring(GraphFingerprint.VERSION.length() + 1);
  }

  /** The fingerprint a graph object's key (below the prefix) names, or null when it is not one. */
  public static GraphFingerprint graphOf(String key) {
    String prefix = Kind.GRAPH.keyPrefix();
    if (!key.startsWith(prefix) || !HEX64.matcher(key.substring(prefix.length())).matches()) {
      return null;
    }
    return new GraphFingerprint(GraphFingerprint.VERSION + ":" + key.substring(prefix.length()));
  }

  /**
   * A runtime object's key read back: the plugin it is filed under (null: the older, flat key) and its request key.
   *
   * @param objectKey the object's key below the prefix
   */
  public record RuntimeObject(String objectKey, String pluginSha256, RequestKey request) {}

  /** The runtime object a key (below the prefix) names, or null when it is not one. */
  public static RuntimeObject runtimeOf(String key) {
    String prefix = Kind.RUNTIME.keyPrefix();
    if (!key.startsWith(prefix)) {
      return null;
    }
    String rest = key.substring(prefix.length());
    int slash = rest.indexOf('/');
    String plugin = slash < 0 ? null : rest.substring(0, slash);
    String hex = rest.substring(slash + 1);
    if (plugin != null && !HEX64.matcher(plugin).matches() || !HEX64.matcher(hex).matches()) {
      return null;
    }
    return new RuntimeObject(key, plugin, RequestKey.parse(RequestKey.VERSION + ":" + hex));
  }

  // ---------------------------------------------------------------- writing

  /** A graph object: its module (serialized HloModuleProto), compressed, with its name and Neuron names. */
  public static byte[] graph(GraphFingerprint fp, String moduleName, byte[] module, List<NeuronName> neuronNames) {
    Map<String, String> h = new LinkedHashMap<>();
    h.put("kind", "graph");
    h.put("key", graphKey(fp));
    h.put("module", moduleName);
    h.put("raw-bytes", Long.toString(module.length));
    for (int i = 0; i < neuronNames.size(); i++) {
      NeuronName n = neuronNames.get(i);
      h.put("neuron." + i, n.versionDirectory() + "\t" + n.moduleDirectory()
          + (n.compileFlagsJson() == null ? "" : "\t" + n.compileFlagsJson()));
    }
    return envelope(h, Zstd.compress(module, 3));
  }

  /** An artifact object: the compiler's output as stored, with the compiler identity and the compile time. */
  public static byte[] artifact(ArtifactKey key, byte[] bytes, long compileMillis) {
    Map<String, String> h = new LinkedHashMap<>();
    h.put("kind", "artifact");
    h.put("key", artifactKey(key));
    h.put("compiler", key.compiler().encode());
    h.put("compile-ms", Long.toString(compileMillis));
    return envelope(h, bytes);
  }

  /** A runtime object: the record file's bytes ({@code dev.xlac.runtime.RecordSpool.encode}). */
  public static byte[] runtime(String pluginSha256, RequestKey key, byte[] record) {
    Map<String, String> h = new LinkedHashMap<>();
    h.put("kind", "runtime");
    h.put("key", runtimeKey(pluginSha256, key));
    return envelope(h, record);
  }

  private static byte[] envelope(Map<String, String> header, byte[] payload) {
    StringBuilder text = new StringBuilder();
    header.forEach((k, v) -> text.append(k).append('=').append(URLEncoder.encode(v, StandardCharsets.UTF_8))
        .append('\n'));
    byte[] h = text.toString().getBytes(StandardCharsets.UTF_8);
    long total = MAGIC.length + 4L + h.length + payload.length + 32;
    if (total > MAX_OBJECT_BYTES) {
      throw new TooLargeException(total);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream((int) total);
    out.writeBytes(MAGIC);
    out.writeBytes(ByteBuffer.allocate(4).putInt(h.length).array());
    out.writeBytes(h);
    out.writeBytes(payload);
    out.writeBytes(sha256().digest(out.toByteArray()));
    return out.toByteArray();
  }

  /** An entry too large to be one object of this xlac. */
  public static final class TooLargeException extends RuntimeException {
    TooLargeException(long bytes) {
      super("it would be a " + bytes + "-byte object, over the " + MAX_OBJECT_BYTES + " bytes the remote tier takes");
    }
  }

  // ---------------------------------------------------------------- reading

  /** An object that is not what its key says: damaged, cut short, or written by something else. */
  public static final class BadObjectException extends Exception {
    BadObjectException(String message) {
      super(message);
    }
  }

  /** {@code envelope} signed by {@code key}: the signature block appended. */
  public static byte[] sign(byte[] envelope, dev.xlac.cache.BundleSigningKey key) {
    byte[] sha = Arrays.copyOfRange(envelope, envelope.length - 32, envelope.length);
    byte[] der = key.publicKey().encoded();
    byte[] sig = key.sign(signedMessage(sha));
    if (der.length != ED25519_DER || sig.length != 64) {
      throw new IllegalStateException("not an Ed25519 key: " + key.publicKey().id());
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(envelope.length + SIGNATURE_BLOCK);
    out.writeBytes(envelope);
    out.writeBytes(SIGNATURE_MARKER);
    out.writeBytes(der);
    out.writeBytes(sig);
    return out.toByteArray();
  }

  private static byte[] signedMessage(byte[] sha) {
    byte[] m = Arrays.copyOf(SIGNED_DOMAIN, SIGNED_DOMAIN.length + sha.length);
    System.arraycopy(sha, 0, m, SIGNED_DOMAIN.length, sha.length);
    return m;
  }

  /**
   * An object read back and checked: its header fields, its payload, and the key that signed it (null: not signed;
   * a signature that is there was checked against the key it names).
   */
  public record Envelope(Kind kind, Map<String, String> header, byte[] payload, dev.xlac.cache.BundleKey signer) {
    String field(String name) throws BadObjectException {
      String v = header.get(name);
      if (v == null) {
        throw new BadObjectException("its header has no " + name);
      }
      return v;
    }
  }

  /** Checks an object read under {@code key} (below the prefix): magic, lengths, SHA-256, and the key it names. */
  public static Envelope open(String key, byte[] body) throws BadObjectException {
    int n = body.length;
    if (n > SIGNATURE_BLOCK && Arrays.equals(body, n - SIGNATURE_BLOCK, n - SIGNATURE_BLOCK + 8, SIGNATURE_MARKER, 0, 8)) {
      byte[] inner = Arrays.copyOf(body, n - SIGNATURE_BLOCK);
      Envelope e;
      try {
        e = openUnsigned(key, inner);
      } catch (BadObjectException notSigned) { // payload bytes that happen to look like a block: read it whole
        return openUnsigned(key, body);
      }
      byte[] der = Arrays.copyOfRange(body, n - SIGNATURE_BLOCK + 8, n - 64);
      byte[] sig = Arrays.copyOfRange(body, n - 64, n);
      dev.xlac.cache.BundleKey signer;
      try {
        signer = dev.xlac.cache.BundleKey.fromEncoded(der);
      } catch (IllegalArgumentException x) {
        throw new BadObjectException("its signature block does not hold an Ed25519 public key");
      }
      boolean ok;
      try {
        java.security.Signature v = java.security.Signature.getInstance("Ed25519");
        v.initVerify(signer.publicKey());
        v.update(signedMessage(Arrays.copyOfRange(inner, inner.length - 32, inner.length)));
        ok = v.verify(sig);
      } catch (java.security.GeneralSecurityException x) {
        ok = false;
      }
      if (!ok) {
        throw new BadObjectException("its signature does not match: it was changed after key " + signer.id()
            + " signed it, or the signature is forged");
      }
      return new Envelope(e.kind(), e.header(), e.payload(), signer);
    }
    return openUnsigned(key, body);
  }

  private static Envelope openUnsigned(String key, byte[] body) throws BadObjectException {
    if (body.length < MAGIC.length + 4 + 32 || !Arrays.equals(body, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
      throw new BadObjectException("it is not an xlac object (no XLACOBJ1 magic)");
    }
    byte[] expected = sha256().digest(Arrays.copyOf(body, body.length - 32));
    if (!MessageDigest.isEqual(expected, Arrays.copyOfRange(body, body.length - 32, body.length))) {
      throw new BadObjectException("its SHA-256 does not match its bytes (damaged or cut short)");
    }
    int headerLength = ByteBuffer.wrap(body, MAGIC.length, 4).getInt();
    if (headerLength < 0 || headerLength > MAX_HEADER || MAGIC.length + 4L + headerLength > body.length - 32) {
      throw new BadObjectException("its header length is out of range");
    }
    Map<String, String> header = new LinkedHashMap<>();
    String text = new String(body, MAGIC.length + 4, headerLength, StandardCharsets.UTF_8);
    for (String line : text.split("\n")) {
      int eq = line.indexOf('=');
      if (eq <= 0) {
        throw new BadObjectException("its header has a malformed line");
      }
      try {
        header.put(line.substring(0, eq), URLDecoder.decode(line.substring(eq + 1), StandardCharsets.UTF_8));
      } catch (IllegalArgumentException e) {
        throw new BadObjectException("its header has a malformed value");
      }
    }
    if (!key.equals(header.get("key"))) {
      throw new BadObjectException("it holds the object " + header.get("key") + ", not the one it is stored as");
    }
    Kind kind = switch (String.valueOf(header.get("kind"))) {
      case "graph" -> Kind.GRAPH;
      case "artifact" -> Kind.ARTIFACT;
      case "runtime" -> Kind.RUNTIME;
      default -> throw new BadObjectException("its kind '" + header.get("kind") + "' is unknown");
    };
    int start = MAGIC.length + 4 + headerLength;
    return new Envelope(kind, header, Arrays.copyOfRange(body, start, body.length - 32), null);
  }

  /** A graph object's module, decompressed to exactly its recorded size. */
  static byte[] module(Envelope e) throws BadObjectException {
    long raw;
    try {
      raw = Long.parseLong(e.field("raw-bytes"));
    } catch (NumberFormatException x) {
      throw new BadObjectException("its raw-bytes field is not a number");
    }
    if (raw <= 0 || raw > MAX_OBJECT_BYTES) {
      throw new BadObjectException("its module size " + raw + " is out of range");
    }
    byte[] module = new byte[(int) raw];
    long n;
    try {
      n = Zstd.decompress(module, e.payload());
    } catch (RuntimeException x) {
      throw new BadObjectException("its module does not decompress: " + x.getMessage());
    }
    if (n != raw) {
      throw new BadObjectException("its module decompresses to " + n + " bytes, not " + raw);
    }
    return module;
  }

  /** A graph object's Neuron names. */
  static List<NeuronName> neuronNames(Envelope e) throws BadObjectException {
    List<NeuronName> names = new ArrayList<>();
    for (int i = 0; e.header().containsKey("neuron." + i); i++) {
      String[] parts = e.header().get("neuron." + i).split("\t", 3);
      if (parts.length < 2) {
        throw new BadObjectException("its Neuron name " + i + " is malformed");
      }
      try {
        names.add(new NeuronName(parts[0], parts[1], parts.length == 3 ? parts[2] : null));
      } catch (IllegalArgumentException x) {
        throw new BadObjectException(x.getMessage());
      }
    }
    return names;
  }

  /** An artifact object's compiler identity, which must be the one its key names. */
  static CompilerIdentity compiler(Envelope e, ArtifactKey expected) throws BadObjectException {
    CompilerIdentity id;
    try {
      id = CompilerIdentity.decode(e.field("compiler"));
    } catch (RuntimeException x) {
      throw new BadObjectException("its compiler identity cannot be read");
    }
    if (!id.digest().equals(expected.compiler().digest())) {
      throw new BadObjectException("it holds an artifact of another compiler (" + id.shortName() + ")");
    }
    return id;
  }

  static long compileMillis(Envelope e) throws BadObjectException {
    try {
      long ms = Long.parseLong(e.field("compile-ms"));
      if (ms < 0) {
        throw new BadObjectException("its compile time is negative");
      }
      return ms;
    } catch (NumberFormatException x) {
      throw new BadObjectException("its compile-ms field is not a number");
    }
  }

  static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  static String sha256Hex(byte[] bytes) {
    return HexFormat.of().formatHex(sha256().digest(bytes));
  }
}
