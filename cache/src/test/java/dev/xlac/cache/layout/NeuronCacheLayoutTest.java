package dev.xlac.cache.layout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.ArtifactInfo;
import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.CompileInfo;
import dev.xlac.cache.EntryStatus;
import dev.xlac.cache.GraphInfo;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.neuron.NeuronName;
import dev.xlac.core.neuron.NeuronxCcIdentity;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.TestModules;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Neuron cache layout, built by the tests from real JAX graphs (the hlo test-jar's golden dumps). */
class NeuronCacheLayoutTest {
  static final String VERSION_DIR = "neuronxcc-2.15.128.0+56dc5a86";
  static final String FLAGS = "[\"--model-type=transformer\", \"--target=trn2\", \"--cache_dir=/var/tmp/neuron-compile-cache\"]";
  static List<byte[]> modules;

  @TempDir Path tmp;

  @BeforeAll
  static void realGraphs() throws IOException {
    Map<GraphFingerprint, byte[]> distinct = new TreeMap<>();
    try (Stream<Path> s = Files.list(TestModules.golden("mlp_run1"))) {
      for (Path p : (Iterable<Path>) s.filter(f -> f.toString().endsWith(".before_optimizations.hlo.pb")).sorted()::iterator) {
        LoadedModule m = new HloModuleReader().read(p);
        distinct.putIfAbsent(m.fingerprint(), m.module().toByteArray());
      }
    }
    modules = new ArrayList<>(distinct.values());
    assertThat(modules).hasSizeGreaterThan(5);
  }

  static GraphFingerprint fingerprint(byte[] module) {
    return new HloModuleReader().parse(Path.of("m"), dev.xlac.hlo.HloFileKind.HLO_MODULE, module, module.length)
        .fingerprint();
  }

  /** One entry directory written the way Neuron writes it. */
  static Path entry(Path root, String versionDir, String module, byte[] hlo, String flagsJson, Map<String, byte[]> more)
      throws IOException {
    Path e = Files.createDirectories(root.resolve(versionDir).resolve(module));
    Files.write(e.resolve("model.hlo_module.pb"), hlo);
    if (flagsJson != null) {
      Files.writeString(e.resolve("compile_flags.json"), flagsJson);
    }
    for (Map.Entry<String, byte[]> f : more.entrySet()) {
      Files.write(e.resolve(f.getKey()), f.getValue());
    }
    return e;
  }

  static byte[] neff(int n) {
    byte[] b = new byte[3000 + n];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) (i * 31 + n);
    }
    return b;
  }

  static final byte[] NOTHING = new byte[0];

  /** Three good entries: compiled, failed, pending. */
  Path goodCache() throws IOException {
    Path root = tmp.resolve("neuron");
    entry(root, VERSION_DIR, "MODULE_1111+aaaaaaaa", modules.get(0), FLAGS, Map.of("model.neff", neff(1), "model.done",
        NOTHING));
    entry(root, VERSION_DIR, "MODULE_2222+aaaaaaaa", modules.get(1), FLAGS, Map.of("model.log",
        "INFO: start\n[ERROR] [NCC_EXXX001] unsupported op\n".getBytes(StandardCharsets.UTF_8)));
    entry(root, VERSION_DIR, "MODULE_3333+aaaaaaaa", modules.get(2), FLAGS, Map.of());
    Files.writeString(root.resolve("README.txt"), "not part of the layout");
    return root;
  }

  CacheStore open(String name) throws InterruptedException {
    return CacheStore.open(tmp.resolve(name), CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
  }

  @Test
  void ingest_storesEachStateUnderTheIdentityTheDriverWouldReport() throws Exception {
    Path root = goodCache();
    List<String> problems = new ArrayList<>();
    CompilerIdentity id = NeuronxCcIdentity.identity("2.15.128.0+56dc5a86", "trn2", List.of("--model-type=transformer"));
    try (CacheStore store = open("c")) {
      NeuronCacheLayout.IngestResult r = NeuronCacheLayout.ingest(root, store, problems::add);
      assertThat(problems).isEmpty();
      assertThat(r).isEqualTo(new NeuronCacheLayout.IngestResult(1, 1, 1, 0, 0, 3));

      GraphFingerprint compiled = fingerprint(modules.get(0));
      java.io.ByteArrayOutputStream streamed = new java.io.ByteArrayOutputStream();
      assertThat(store.readArtifact(new ArtifactKey(compiled, id), streamed)).isTrue();
      assertThat(streamed.toByteArray()).isEqualTo(neff(1));
      assertThat(store.graph(compiled).orElseThrow().neuronNames()).containsExactly(
          new NeuronName(VERSION_DIR, "MODULE_1111+aaaaaaaa", FLAGS));

      ArtifactInfo failed = store.artifactInfo(new ArtifactKey(fingerprint(modules.get(1)), id)).orElseThrow();
      assertThat(failed.status()).isEqualTo(EntryStatus.FAILED);
      // The first error line by the one rule for neuronx-cc logs (core.neuron.NeuronLogs), as the driver reports it.
      assertThat(failed.failureMessage())
          .isEqualTo("failed in the Neuron cache (MODULE_2222+aaaaaaaa): [ERROR] [NCC_EXXX001] unsupported op");
      assertThat(store.log(fingerprint(modules.get(1))).orElseThrow().artifacts().getFirst().log())
          .contains("INFO: start");

      GraphFingerprint pending = fingerprint(modules.get(2));
      // the graphs with no entry for this identity: only the pending one (the other two have theirs)
      assertThat(store.graphs()).extracting(GraphInfo::fingerprint)
          .filteredOn(g -> store.artifactInfo(new ArtifactKey(g, id)).isEmpty()).containsExactly(pending);
      assertThat(store.readGraph(pending)).hasValueSatisfying(b -> assertThat(b).isEqualTo(modules.get(2)));

      // Again: nothing new, nothing lost.
      NeuronCacheLayout.IngestResult again = NeuronCacheLayout.ingest(root, store, problems::add);
      assertThat(again).isEqualTo(new NeuronCacheLayout.IngestResult(1, 1, 1, 0, 0, 0));
      assertThat(store.statistics().graphs()).isEqualTo(3);
    }
  }

  @Test
  void ingest_badEntries_eachGiveOneLineAndAreCounted_andTheGoodOnesStillCome() throws Exception {
    Path root = goodCache();
    entry(root, VERSION_DIR, "MODULE_9001+bbbbbbbb", "not a protobuf at all \u00ff".getBytes(StandardCharsets.UTF_8), FLAGS,
        Map.of());
    entry(root, VERSION_DIR, "MODULE_9002+bbbbbbbb", modules.get(3), "[\"--unterminated", Map.of());
    entry(root, VERSION_DIR, "MODULE_9003+bbbbbbbb", modules.get(3), FLAGS, Map.of("model.hlo_module.pb.lock", NOTHING));
    entry(root, VERSION_DIR, "MODULE_9004+bbbbbbbb", modules.get(3), FLAGS, Map.of("model.neff", NOTHING, "model.done",
        NOTHING));
    entry(root, VERSION_DIR, "MODULE_9005+bbbbbbbb", modules.get(3), FLAGS, Map.of("model.neff", neff(5)));
    entry(root, VERSION_DIR, "MODULE_9006+bbbbbbbb", modules.get(4), FLAGS, Map.of("model.neff", neff(6), "model.done",
        NOTHING, "model.hlo_module.pb.lock", NOTHING));
    entry(root, VERSION_DIR, "MODULE_9007+bbbbbbbb", modules.get(3), "[\"--target=trn9\"]", Map.of());
    Files.createDirectories(root.resolve("neuronxcc-garbage/MODULE_1+2"));
    List<String> problems = new ArrayList<>();
    try (CacheStore store = open("c")) {
      NeuronCacheLayout.IngestResult r = NeuronCacheLayout.ingest(root, store, problems::add);
      assertThat(r).isEqualTo(new NeuronCacheLayout.IngestResult(2, 1, 1, 7, 1, 4));
    }
    assertThat(problems).hasSize(8).allSatisfy(p -> assertThat(p).doesNotContain("\n"));
    assertThat(String.join("\n", problems)).contains(
        "MODULE_9001+bbbbbbbb: model.hlo_module.pb is not an HLO module",
        "MODULE_9002+bbbbbbbb: unreadable compile_flags.json (not a JSON list of strings",
        "MODULE_9003+bbbbbbbb: is locked (model.hlo_module.pb.lock) and unfinished",
        "MODULE_9004+bbbbbbbb: model.neff is empty (0 bytes)",
        "MODULE_9005+bbbbbbbb: has model.neff but no model.done",
        "MODULE_9006+bbbbbbbb: stale lock model.hlo_module.pb.lock beside a finished compile ignored",
        "MODULE_9007+bbbbbbbb: neuronx-cc target 'trn9' is not one of",
        "neuronxcc-garbage: is not a neuronxcc-<version> directory");
  }

  @Test
  void roundTrip_importThenMaterialize_givesByteIdenticalFilesUnderTheSameNames() throws Exception {
    Path root = goodCache();
    // The same graph under a second compiler version and flag set: one graph, two names.
    entry(root, "neuronxcc-2.16.1.0+deadbeef", "MODULE_1111+cccccccc", modules.get(0), "[\"-O1\"]",
        Map.of("model.neff", neff(7), "model.done", NOTHING));
    Path out = tmp.resolve("materialized");
    List<String> problems = new ArrayList<>();
    try (CacheStore store = open("c")) {
      NeuronCacheLayout.ingest(root, store, problems::add);
      NeuronCacheLayout.MaterializeResult r = NeuronCacheLayout.materialize(store, out, problems::add);
      assertThat(r).isEqualTo(new NeuronCacheLayout.MaterializeResult(2, 1, 1, 13, 0, 0, 0));
      assertThat(problems).isEmpty();
    }
    assertThat(tree(out)).isEqualTo(withoutTopLevelFiles(tree(root)));
    try (Stream<Path> s = Files.walk(out)) {
      assertThat(s.map(p -> p.getFileName().toString())).noneMatch(n -> n.endsWith(".lock") || n.contains("xlac-tmp") || n.contains(".tmp-"));
    }
    // Each file gets the mode any new file gets here (the umask's), not a temporary's private 0600: the training
    // run that reads the layout may run as another user.
    Path probe = Files.createFile(tmp.resolve("mode-probe"));
    String expected = java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(probe));
    try (Stream<Path> s = Files.walk(out)) {
      for (Path f : s.filter(Files::isRegularFile).toList()) {
        assertThat(java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(f)))
            .as(f.toString()).isEqualTo(expected);
      }
    }
    // Idempotent: a second run rewrites nothing.
    try (CacheStore store = open("c")) {
      NeuronCacheLayout.MaterializeResult again = NeuronCacheLayout.materialize(store, out, problems::add);
      assertThat(again.filesWritten()).isZero();
      assertThat(again.filesUnchanged()).isEqualTo(13);
    }
    // And a fresh cache imported from the materialized tree holds the same thing.
    try (CacheStore store = open("c2")) {
      assertThat(NeuronCacheLayout.ingest(out, store, problems::add))
          .isEqualTo(new NeuronCacheLayout.IngestResult(2, 1, 1, 0, 0, 3));
    }
  }

  /** Issue #5: CI imports the Neuron cache and exports a bundle; a training machine imports it and materializes it. */
  @Test
  void bundle_carriesTheNeuronNames_soTheImportingMachineMaterializesTheSameTree() throws Exception {
    Path root = goodCache();
    entry(root, "neuronxcc-2.16.1.0+deadbeef", "MODULE_1111+cccccccc", modules.get(0), "[\"-O1\"]",
        Map.of("model.neff", neff(7), "model.done", NOTHING));
    entry(root, VERSION_DIR, "MODULE_4444+dddddddd", modules.get(3), null, Map.of()); // no compile_flags.json
    Path bundle = tmp.resolve("warm.tar.zst");
    List<String> problems = new ArrayList<>();
    try (CacheStore ci = open("ci")) {
      NeuronCacheLayout.ingest(root, ci, problems::add);
      ci.exportBundle(bundle, dev.xlac.cache.ExportRequest.all());
    }
    Path out = tmp.resolve("trainer-neuron-cache");
    try (CacheStore trainer = open("trainer")) {
      var imported = trainer.importBundle(bundle);
      assertThat(imported.neuronNamesAdded()).isEqualTo(5);
      NeuronCacheLayout.MaterializeResult r = NeuronCacheLayout.materialize(trainer, out, problems::add);
      assertThat(r).isEqualTo(new NeuronCacheLayout.MaterializeResult(2, 1, 2, 14, 0, 0, 0));
      // Importing the bundle again adds no name and changes nothing.
      assertThat(trainer.importBundle(bundle).neuronNamesAdded()).isZero();
      assertThat(trainer.graph(fingerprint(modules.get(0))).orElseThrow().neuronNames()).hasSize(2);
    }
    assertThat(problems).isEmpty();
    // Same version and MODULE directories, same compile_flags.json bytes, same NEFFs, same graphs.
    assertThat(tree(out)).isEqualTo(withoutTopLevelFiles(tree(root)));
  }

  @Test
  void materialize_skipsGraphsWithoutANeuronName_andWritesWhatWasCompiledLater() throws Exception {
    Path root = goodCache();
    Path out = tmp.resolve("materialized");
    try (CacheStore store = open("c")) {
      NeuronCacheLayout.ingest(root, store, m -> {});
      // A graph from an XLA dump has no MODULE name; one is never invented.
      LoadedModule m = new HloModuleReader().parse(Path.of("x"), dev.xlac.hlo.HloFileKind.HLO_MODULE, modules.get(5),
          modules.get(5).length);
      store.putGraph(m.fingerprint(), m.moduleName(), modules.get(5), "dump");
      // The pending one gets compiled by the driver for the same version and flags.
      CompilerIdentity id = NeuronxCcIdentity.forCacheEntry(VERSION_DIR, List.of("--target", "trn2",
          "--model-type=transformer"));
      store.putArtifact(new ArtifactKey(fingerprint(modules.get(2)), id), neff(3), CompileInfo.of(1, ""));
      NeuronCacheLayout.MaterializeResult r = NeuronCacheLayout.materialize(store, out, s -> {});
      assertThat(r.withoutName()).isEqualTo(1);
      assertThat(r.compiled()).isEqualTo(2);
    }
    assertThat(Files.readAllBytes(out.resolve(VERSION_DIR).resolve("MODULE_3333+aaaaaaaa/model.neff"))).isEqualTo(neff(3));
    assertThat(out.resolve(VERSION_DIR).resolve("MODULE_3333+aaaaaaaa/model.done")).exists();
  }

  @Test
  void ingest_notADirectory_isBadInput() {
    assertThatThrownBy(() -> {
      try (CacheStore store = open("c")) {
        NeuronCacheLayout.ingest(tmp.resolve("missing"), store, m -> {});
      }
    }).hasMessageContaining("cannot read Neuron cache").hasMessageContaining("not a directory");
  }

  /** Relative path → contents of every file. */
  static Map<String, String> tree(Path root) throws IOException {
    Map<String, String> out = new TreeMap<>();
    try (Stream<Path> s = Files.walk(root)) {
      for (Path p : (Iterable<Path>) s.filter(Files::isRegularFile)::iterator) {
        out.put(root.relativize(p).toString(), java.util.HexFormat.of().formatHex(
            java.security.MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p))));
      }
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    return out;
  }

  static Map<String, String> withoutTopLevelFiles(Map<String, String> tree) {
    Map<String, String> out = new TreeMap<>(tree);
    out.keySet().removeIf(k -> !k.contains("/"));
    return out;
  }
}
