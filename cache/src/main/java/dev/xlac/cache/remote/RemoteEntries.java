package dev.xlac.cache.remote;

import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.GraphEntry;
import dev.xlac.cache.GraphInfo;
import dev.xlac.cache.RequestIngest;
import dev.xlac.core.neuron.NeuronName;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloFileKind;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.HloReadException;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.runtime.RecordSpool;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.SiblingTemporaries;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * One entry between the local cache and the remote tier, each way: the object an entry becomes
 * ({@link #graphObject}, {@link #artifactObject}, {@link #runtimeObject}) and the entry an object becomes, checked
 * before it goes into the cache ({@link #storeGraph}, {@link #storeArtifact}, {@link #storeRuntime}). An object that
 * fails a check is a {@link RemoteObjects.BadObjectException} and is never stored.
 */
final class RemoteEntries {
  private RemoteEntries() {}

  /** The object of a stored graph; empty when it is not stored or damaged (the store reported it). */
  static Optional<byte[]> graphObject(CacheStore store, GraphFingerprint fp) {
    Optional<GraphInfo> info = store.graph(fp);
    if (info.isEmpty()) {
      return Optional.empty();
    }
    return store.readGraph(fp).map(module -> RemoteObjects.graph(fp, info.get().moduleName(), module,
        info.get().neuronNames()));
  }

  /** The object of a compiled artifact; empty when it is not compiled or damaged (the store reported it). */
  static Optional<byte[]> artifactObject(CacheStore store, ArtifactInfo info) throws IOException {
    if (info.status() != EntryStatus.COMPILED) {
      return Optional.empty();
    }
    if (info.bytes() > RemoteObjects.MAX_OBJECT_BYTES) {
      throw new RemoteObjects.TooLargeException(info.bytes());
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream((int) Math.max(32, info.bytes()));
    if (!store.readArtifact(info.key(), out)) {
      return Optional.empty();
    }
    return Optional.of(RemoteObjects.artifact(info.key(), out.toByteArray(), info.compileTime().toMillis()));
  }

  /**
   * The object of a runtime entry, filed under {@code pluginSha256} (the entry's own, which a valid entry has);
   * empty when it is not stored or damaged (the store reported it).
   */
  static Optional<byte[]> runtimeObject(CacheStore store, String pluginSha256, RequestKey key) {
    return store.readRequest(key).map(r -> RemoteObjects.runtime(pluginSha256, key, RecordSpool.encode(r)));
  }

  /**
   * Stores a graph object read under its key: its module must decompress to its recorded size and be an HLO module
   * whose fingerprint is the one the key names. Its Neuron names come with it.
   */
  static void storeGraph(CacheStore store, GraphFingerprint fp, byte[] body, String source, RemoteTrust trust)
      throws RemoteObjects.BadObjectException {
    RemoteObjects.Envelope e = RemoteObjects.open(RemoteObjects.graphKey(fp), body);
    trust.check(e);
    if (e.kind() != RemoteObjects.Kind.GRAPH) {
      throw new RemoteObjects.BadObjectException("it is not a graph");
    }
    byte[] module = RemoteObjects.module(e);
    List<NeuronName> names = RemoteObjects.neuronNames(e);
    LoadedModule loaded;
    try {
      loaded = new HloModuleReader().parse(Path.of(source), HloFileKind.HLO_MODULE, module, module.length);
    } catch (HloReadException | IllegalArgumentException x) {
      throw new RemoteObjects.BadObjectException("its module is not a valid HLO module: " + XlacException.reason(x));
    }
    if (!loaded.fingerprint().equals(fp)) {
      throw new RemoteObjects.BadObjectException("its module's fingerprint is " + loaded.fingerprint()
          + ", not the one it is stored under");
    }
    store.putGraph(new GraphEntry(fp, loaded.moduleName(), () -> module, source,
        names.isEmpty() ? Optional.empty() : Optional.of(names.getFirst())));
    for (NeuronName n : names.subList(Math.min(1, names.size()), names.size())) {
      store.addNeuronName(fp, n);
    }
  }

  /** Checks an artifact object read under {@code key}'s key; the artifact, not yet stored. */
  static CacheStore.NewArtifact artifact(ArtifactKey key, byte[] body, RemoteTrust trust)
      throws RemoteObjects.BadObjectException {
    RemoteObjects.Envelope e = RemoteObjects.open(RemoteObjects.artifactKey(key), body);
    trust.check(e);
    if (e.kind() != RemoteObjects.Kind.ARTIFACT) {
      throw new RemoteObjects.BadObjectException("it is not an artifact");
    }
    RemoteObjects.compiler(e, key);
    long ms = RemoteObjects.compileMillis(e);
    if (e.payload().length == 0) {
      throw new RemoteObjects.BadObjectException("its artifact is empty");
    }
    return new CacheStore.NewArtifact(key, e.payload(), new CompileInfo(Duration.ofMillis(ms), ""));
  }

  /** The name the scratch files of {@link #storeRuntime} are sibling temporaries of, in the scratch directory. */
  static final String SCRATCH_NAME = "remote-runtime" + RecordSpool.SUFFIX;

  /**
   * Stores a runtime object read under {@code object}'s key: its payload is a record file, read back through
   * {@link RecordSpool#read} (magic, lengths, SHA-256, the key recomputed from its sections) from a temporary file
   * in {@code scratch}; filed under a plugin, it must be an entry of that plugin.
   */
  static RequestIngest storeRuntime(CacheStore store, RemoteObjects.RuntimeObject object, byte[] body, Path scratch,
      RemoteTrust trust) throws RemoteObjects.BadObjectException, IOException {
    RequestKey key = object.request();
    RemoteObjects.Envelope e = RemoteObjects.open(object.objectKey(), body);
    trust.check(e);
    if (e.kind() != RemoteObjects.Kind.RUNTIME) {
      throw new RemoteObjects.BadObjectException("it is not a runtime entry");
    }
    // A sibling temporary (.remote-runtime.xpr.tmp-PID.N): one a killed pull left is removed by the next one.
    Path target = scratch.resolve(SCRATCH_NAME);
    SiblingTemporaries.removeStale(target);
    Path file = SiblingTemporaries.unique(target);
    try {
      Files.write(file, e.payload());
      RecordedRequest r;
      try {
        r = RecordSpool.read(file);
      } catch (XlacException x) {
        throw new RemoteObjects.BadObjectException("its record is not whole: " + x.getMessage());
      }
      if (!r.key().equals(key)) {
        throw new RemoteObjects.BadObjectException("it holds the request " + r.key().text() + ", not the one it is"
            + " stored under");
      }
      if (object.pluginSha256() != null && !object.pluginSha256().equals(r.pluginSha256())) {
        throw new RemoteObjects.BadObjectException("it holds an entry of the plugin with SHA-256 " + r.pluginSha256()
            + ", not of the plugin it is filed under");
      }
      RequestIngest in = store.putRequests(List.of(r));
      if (!in.rejected().isEmpty()) {
        throw new RemoteObjects.BadObjectException(in.rejected().getFirst());
      }
      return in;
    } finally {
      Files.deleteIfExists(file);
    }
  }
}
