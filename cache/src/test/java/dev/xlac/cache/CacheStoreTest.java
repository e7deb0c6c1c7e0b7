package dev.xlac.cache;

import dev.xlac.cache.store.StoreInternals;
import static dev.xlac.cache.Fixtures.CPU;
import static dev.xlac.cache.Fixtures.TRN1;
import static dev.xlac.cache.Fixtures.bytes;
import static dev.xlac.cache.Fixtures.fp;
import static dev.xlac.cache.Fixtures.graph;
import static dev.xlac.cache.Fixtures.key;
import static dev.xlac.cache.Fixtures.module;
import static dev.xlac.cache.Fixtures.open;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import dev.xlac.cache.store.RocksDbStore.Cf;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.neuron.NeuronName;
import dev.xlac.hlo.HloModuleReader;
import dev.xlac.hlo.LoadedModule;
import dev.xlac.hlo.proto.HloProtos.HloComputationProto;
import dev.xlac.hlo.proto.HloProtos.HloInstructionProto;
import dev.xlac.hlo.proto.HloProtos.HloModuleProto;
import dev.xlac.hlo.proto.HloProtos.HloProto;
import dev.xlac.hlo.proto.XlaDataProtos.LiteralProto;
import dev.xlac.hlo.proto.XlaDataProtos.PrimitiveType;
import dev.xlac.hlo.proto.XlaDataProtos.ShapeProto;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.WriteBatch;

class CacheStoreTest {
  @TempDir
  Path dir;

  static Path dump(String name) throws Exception {
    return Path.of(CacheStoreTest.class.getResource("/dumps/" + name).toURI());
  }

  @Test
  void putGraph_dedupesByFingerprint_andKeepsTheModuleBytes() throws Exception {
    LoadedModule m = new HloModuleReader().read(dump("module_0044.jit_matmul.before_optimizations.hlo.pb"));
    try (CacheStore s = open(dir)) {
      assertThat(s.putGraph(m)).isEqualTo(PutOutcome.ADDED);
      assertThat(s.putGraph(m)).isEqualTo(PutOutcome.ALREADY_PRESENT);
      GraphInfo g = s.graph(m.fingerprint()).orElseThrow();
      assertThat(g.moduleName()).isEqualTo("jit_matmul");
      assertThat(g.seenCount()).isEqualTo(2);
      assertThat(s.readGraph(m.fingerprint())).hasValueSatisfying(b -> assertThat(b).isEqualTo(m.module().toByteArray()));
      assertThat(s.statistics().graphs()).isEqualTo(1);
    }
  }

  /**
   * A large dump is fingerprinted from a mapping and holds no bytes; putting it again when its
   * graph is stored must not read the file a second time (here: the file is gone by then).
   */
  @Test
  void putGraph_ofAMappedModuleAlreadyStored_doesNotReadItsBytesAgain() throws Exception {
    ShapeProto vec = ShapeProto.newBuilder().setElementType(PrimitiveType.F32).addDimensions(512 * 1024)
        .addIsDynamicDimension(false).build();
    byte[] weights = new byte[512 * 1024 * 4];
    new Random(7).nextBytes(weights);
    HloComputationProto main = HloComputationProto.newBuilder().setId(1).setName("main").setRootId(2)
        .addInstructions(HloInstructionProto.newBuilder().setId(0).setName("p").setOpcode("parameter").setShape(vec))
        .addInstructions(HloInstructionProto.newBuilder().setId(1).setName("w").setOpcode("constant").setShape(vec)
            .setLiteral(LiteralProto.newBuilder().setShape(vec).setF32S(ByteString.copyFrom(weights))))
        .addInstructions(HloInstructionProto.newBuilder().setId(2).setName("add").setOpcode("add").setShape(vec)
            .addOperandIds(0).addOperandIds(1))
        .build();
    HloModuleProto module = HloModuleProto.newBuilder().setName("jit_large").setEntryComputationId(1)
        .addComputations(main).build();
    Path file = dir.resolve("module_0001.jit_large.before_optimizations.hlo.pb");
    Files.write(file, HloProto.newBuilder().setHloModule(module).build().toByteArray());
    assertThat(Files.size(file)).isGreaterThan(1 << 20); // HloModuleReader maps files from 1 MiB on

    try (CacheStore s = open(dir.resolve("cache"))) {
      assertThat(s.putGraph(new HloModuleReader().read(file))).isEqualTo(PutOutcome.ADDED);
      LoadedModule again = new HloModuleReader().read(file); // a fresh read: mapped, no bytes kept
      Files.delete(file);
      assertThat(s.putGraph(again)).isEqualTo(PutOutcome.ALREADY_PRESENT);
      assertThat(s.graph(again.fingerprint()).orElseThrow().seenCount()).isEqualTo(2);
      assertThat(s.readGraph(again.fingerprint())).hasValueSatisfying(b -> assertThat(b).isEqualTo(module.toByteArray()));
    }
  }

  @Test
  void artifacts_areKeyedByGraphAndCompiler_andSurviveReopening() throws Exception {
    try (CacheStore s = open(dir)) {
      graph(s, 1);
      s.putArtifact(key(1, CPU), bytes(1, 1000), CompileInfo.of(2.5, "ok"));
      s.putArtifact(key(1, TRN1), bytes(2, 100_000), CompileInfo.of(60, ""));
    }
    try (CacheStore s = open(dir)) {
      assertThat(s.getArtifact(key(1, CPU)).orElseThrow().bytes()).isEqualTo(bytes(1, 1000));
      assertThat(s.getArtifact(key(1, TRN1)).orElseThrow().bytes()).isEqualTo(bytes(2, 100_000));
      assertThat(s.getArtifact(key(2, CPU))).isEmpty();
      CacheStatistics st = s.statistics();
      assertThat(st.compiled()).isEqualTo(2);
      assertThat(st.hits()).isEqualTo(2);
      assertThat(st.misses()).isEqualTo(1);
      assertThat(st.timeSaved()).isEqualTo(Duration.ofMillis(62_500));
      assertThat(s.list(ListQuery.all())).extracting(ListRow::compilerName).containsExactlyInAnyOrder("pjrt:cpu",
          "neuronx-cc:trn1");
      assertThat(s.verify(false).clean()).isTrue();
    }
  }

  @Test
  void putArtifact_withoutItsGraph_isRefused() throws Exception {
    try (CacheStore s = open(dir)) {
      assertThatThrownBy(() -> s.putArtifact(key(9, CPU), bytes(1, 10), CompileInfo.of(1, "")))
          .isInstanceOf(XlacException.class).hasMessageContaining("store the graph before its artifacts");
    }
  }

  @Test
  void getArtifact_withDamagedBytes_isAMissAndIsReported() throws Exception {
    List<String> notices = new ArrayList<>();
    try (CacheStore s = CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO, notices::add)) {
      graph(s, 1);
      s.putArtifact(key(1, CPU), bytes(1, 5000), CompileInfo.of(1, ""));
      byte[] bad = bytes(1, 5000);
      bad[4000] ^= 1;
      try (WriteBatch b = new WriteBatch()) {
        StoreInternals.db(Internals.store(s)).put(b, Cf.ARTIFACTS, key(1, CPU).bytes(), bad);
        StoreInternals.db(Internals.store(s)).write(b, true);
      }
      Internals.store(s).invalidateMemory();
      assertThat(s.getArtifact(key(1, CPU))).isEmpty();
      assertThat(notices).singleElement().asString().contains("is damaged: its bytes fail their checksum");
      assertThat(s.statistics().damagedReads()).isEqualTo(1);
      VerifyReport r = s.verify(false);
      assertThat(r.damagedEntries()).isEqualTo(1);
      assertThat(s.verify(true).repaired()).isTrue();
      assertThat(s.verify(false).clean()).isTrue();
      assertThat(s.graph(fp(1))).isPresent();
      assertThat(s.artifactInfo(key(1, CPU))).isEmpty();
    }
  }

  @Test
  void verify_ofAnArtifactWhoseBytesAreGone_saysTheyAreMissing() throws Exception {
    try (CacheStore s = open(dir); WriteBatch b = new WriteBatch()) {
      graph(s, 1);
      s.putArtifact(key(1, CPU), bytes(1, 500), CompileInfo.of(1, ""));
      StoreInternals.db(Internals.store(s)).delete(b, Cf.ARTIFACTS, key(1, CPU).bytes());
      StoreInternals.db(Internals.store(s)).write(b, true);
      assertThat(s.verify(false).problems()).singleElement()
          .satisfies(p -> assertThat(p.description()).isEqualTo("its bytes are missing"));
    }
  }

  @Test
  void getArtifact_whenItsBlobFileIsCorruptOnDisk_isAMiss() throws Exception {
    byte[] big = bytes(7, 400_000); // above the blob threshold: stored in a blob file
    try (CacheStore s = open(dir)) {
      graph(s, 1);
      s.putArtifact(key(1, CPU), big, CompileInfo.of(1, ""));
      StoreInternals.db(Internals.store(s)).compactAll(); // flush to a blob file
    }
    List<Path> blobs;
    try (Stream<Path> files = Files.list(dir.resolve("db"))) {
      blobs = files.filter(p -> p.toString().endsWith(".blob")).toList();
    }
    assertThat(blobs).isNotEmpty();
    for (Path blob : blobs) {
      try (RandomAccessFile f = new RandomAccessFile(blob.toFile(), "rw")) {
        f.seek(f.length() / 2);
        int b = f.read();
        f.seek(f.length() / 2);
        f.write(b ^ 0xff);
      }
    }
    List<String> notices = new ArrayList<>();
    try (CacheStore s = CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO, notices::add)) {
      assertThat(s.getArtifact(key(1, CPU))).isEmpty();
      assertThat(notices).singleElement().asString().contains("damaged");
      assertThat(s.verify(false).damagedEntries()).isEqualTo(1);
    }
  }

  @Test
  void recordFailure_neverReplacesACompiledArtifact_andLookupsTellFailedFromAbsent() throws Exception {
    try (CacheStore s = open(dir)) {
      graph(s, 1);
      graph(s, 2);
      graph(s, 3);
      s.putArtifact(key(1, CPU), bytes(1, 10), CompileInfo.of(1, ""));
      assertThat(s.recordFailure(key(1, CPU), "compile-error", "boom", "log")).isFalse();
      assertThat(s.recordFailure(key(2, CPU), "oom-killed", "killed by signal 9", "the log\nline 2")).isTrue();
      // per entry: 1 compiled, 2 failed (compiled again only when a run retries failures), 3 still to compile
      assertThat(s.artifactInfo(key(1, CPU)).orElseThrow().status()).isEqualTo(EntryStatus.COMPILED);
      assertThat(s.lookup(key(1, CPU))).isPresent();
      assertThat(s.artifactInfo(key(2, CPU)).orElseThrow().status()).isEqualTo(EntryStatus.FAILED);
      assertThat(s.lookup(key(2, CPU))).hasValueSatisfying(i -> assertThat(i.status()).isEqualTo(EntryStatus.FAILED));
      assertThat(s.artifactInfo(key(3, CPU))).isEmpty();
      assertThat(s.lookup(key(3, CPU))).isEmpty();
      for (int n = 1; n <= 3; n++) { // nothing for TRN1: all three still to compile for it
        assertThat(s.artifactInfo(key(n, TRN1))).isEmpty();
      }
      GraphLog log = s.log(fp(2)).orElseThrow();
      assertThat(log.artifacts()).singleElement().satisfies(e -> {
        assertThat(e.info().status()).isEqualTo(EntryStatus.FAILED);
        assertThat(e.info().failureKind()).isEqualTo("oom-killed");
        assertThat(e.log()).isEqualTo("the log\nline 2");
      });
      assertThat(s.getArtifact(key(2, CPU))).isEmpty();
      s.putArtifact(key(2, TRN1), bytes(3, 10), CompileInfo.of(7, "neff log"));
      // entries(): the same entries as log(), metadata only, in key order
      assertThat(s.entries(fp(2))).extracting(ArtifactInfo::status)
          .containsExactlyElementsOf(s.log(fp(2)).orElseThrow().artifacts().stream().map(e -> e.info().status()).toList())
          .containsExactlyInAnyOrder(EntryStatus.FAILED, EntryStatus.COMPILED);
      assertThat(s.entries(fp(3))).isEmpty();
      assertThat(s.entries(fp(99))).isEmpty();
      s.putArtifact(key(2, CPU), bytes(2, 10), CompileInfo.of(1, ""));
      assertThat(s.artifactInfo(key(2, CPU)).orElseThrow().status()).isEqualTo(EntryStatus.COMPILED);
      assertThat(s.verify(false).problems()).isEmpty();
    }
  }

  @Test
  void aNewerSchemaVersion_isRefusedWithAClearMessage() throws Exception {
    try (CacheStore s = open(dir); WriteBatch b = new WriteBatch()) {
      StoreInternals.db(Internals.store(s)).put(b, Cf.META, StoreInternals.schemaKey(), "7".getBytes(StandardCharsets.US_ASCII));
      StoreInternals.db(Internals.store(s)).write(b, true);
    }
    assertThatThrownBy(() -> open(dir)).isInstanceOf(XlacException.class)
        .hasMessageContaining("schema version 7, written by a newer xlac")
        .extracting(e -> ((XlacException) e).exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
    assertThatThrownBy(() -> CacheStore.open(dir, CacheStore.Mode.READ_ONLY, Duration.ZERO))
        .hasMessageContaining("schema version 7");
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(strings = {"1", "2", "3"})
  void anOlderVersionCache_isReadAsItIs_andUpgradedWhenOpenedForWriting(String version) throws Exception {
    try (CacheStore s = open(dir); WriteBatch b = new WriteBatch()) {
      graph(s, 1);
      s.putArtifact(key(1, CPU), bytes(1, 100), CompileInfo.of(1, ""));
      StoreInternals.db(Internals.store(s)).put(b, Cf.META, StoreInternals.schemaKey(), version.getBytes(StandardCharsets.US_ASCII));
      StoreInternals.db(Internals.store(s)).write(b, true);
    }
    try (CacheStore s = CacheStore.open(dir, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
      assertThat(s.graph(fp(1)).orElseThrow().neuronNames()).isEmpty();
      assertThat(new String(StoreInternals.db(Internals.store(s)).get(Cf.META, StoreInternals.schemaKey()), StandardCharsets.US_ASCII)).isEqualTo(version);
      assertThat(s.statistics().schemaVersion()).isEqualTo(Integer.parseInt(version));
    }
    try (CacheStore s = open(dir)) {
      assertThat(new String(StoreInternals.db(Internals.store(s)).get(Cf.META, StoreInternals.schemaKey()), StandardCharsets.US_ASCII))
          .isEqualTo(Integer.toString(CacheStore.SCHEMA_VERSION));
      assertThat(s.getArtifact(key(1, CPU))).isPresent();
      assertThat(s.verify(false).problems()).isEmpty();
    }
  }

  @Test
  void neuronNames_areKeptThroughReopenAndTouches_andGoWithTheirGraph() throws Exception {
    NeuronName a = new NeuronName("neuronxcc-2.15.1.0", "MODULE_1+abcdef01", "[\"-O1\"]");
    NeuronName b = new NeuronName("neuronxcc-2.16.0.0", "MODULE_1+abcdef01", null);
    try (CacheStore s = open(dir)) {
      graph(s, 1);
      graph(s, 2);
      assertThat(s.addNeuronName(fp(1), a)).isTrue();
      assertThat(s.addNeuronName(fp(1), a)).isFalse();
      assertThat(s.addNeuronName(fp(1), b)).isTrue();
      graph(s, 1); // seen again
      s.putArtifact(key(1, TRN1), bytes(1, 10), CompileInfo.of(1, "")); // touches the graph record
      assertThatThrownBy(() -> s.addNeuronName(fp(9), a)).hasMessageContaining("is not in cache");
    }
    try (CacheStore s = open(dir)) {
      assertThat(s.graph(fp(1)).orElseThrow().neuronNames()).containsExactly(a, b);
      assertThat(s.graph(fp(2)).orElseThrow().neuronNames()).isEmpty();
      assertThat(s.verify(false).problems()).isEmpty();
      s.remove(List.of(fp(1)));
      graph(s, 1);
      assertThat(s.graph(fp(1)).orElseThrow().neuronNames()).isEmpty();
    }
  }

  @Test
  void aSecondWriter_isToldWhoHoldsTheLock_andCanWaitForIt() throws Exception {
    CacheStore first = open(dir);
    long started = System.nanoTime();
    assertThatThrownBy(() -> open(dir)).isInstanceOf(XlacException.class)
        .hasMessageContaining("is locked by another xlac process (pid " + ProcessHandle.current().pid())
        .hasMessageContaining("--wait");
    assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(1));
    Thread closer = Thread.ofVirtual().start(() -> {
      try {
        Thread.sleep(300);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      first.close();
    });
    List<String> notices = new ArrayList<>();
    try (CacheStore second = CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ofSeconds(20), notices::add)) {
      graph(second, 1);
    }
    closer.join();
    assertThat(notices).singleElement().asString().startsWith("waiting for cache");
  }

  @Test
  void aReader_worksWhileAWriterHoldsTheCache_andCannotWrite() throws Exception {
    try (CacheStore writer = open(dir)) {
      graph(writer, 1);
      writer.putArtifact(key(1, CPU), bytes(1, 50_000), CompileInfo.of(3, ""));
      try (CacheStore reader = CacheStore.open(dir, CacheStore.Mode.READ_ONLY, Duration.ZERO)) {
        assertThat(reader.getArtifact(key(1, CPU)).orElseThrow().bytes()).isEqualTo(bytes(1, 50_000));
        assertThat(reader.list(ListQuery.all())).hasSize(1);
        assertThat(reader.statistics().compiled()).isEqualTo(1);
        assertThat(reader.verify(false).clean()).isTrue();
        assertThatThrownBy(() -> graph(reader, 2)).isInstanceOf(IllegalStateException.class);
      }
    }
  }

  @Test
  void listing_showsPendingGraphsAndOneRowPerCompiler_withFilters() throws Exception {
    try (CacheStore s = open(dir)) {
      graph(s, 1);
      graph(s, 2);
      s.putArtifact(key(1, CPU), bytes(1, 10), CompileInfo.of(1, ""));
      s.putArtifact(key(1, TRN1), bytes(1, 30), CompileInfo.of(1, ""));
      s.recordFailure(key(2, TRN1), "compile-error", "no", "");
      graph(s, 3);
      assertThat(s.list(ListQuery.all())).hasSize(4);
      assertThat(s.list(new ListQuery(EntryStatus.PENDING, null, null))).extracting(ListRow::fingerprint)
          .containsExactly(fp(3));
      assertThat(s.list(new ListQuery(null, CompilerFilter.parse("neuronx-cc:trn1"), null))).hasSize(2);
      assertThat(s.list(new ListQuery(null, CompilerFilter.parse(TRN1.digest().substring(0, 8)), null))).hasSize(2);
      assertThat(s.list(new ListQuery(EntryStatus.FAILED, null, null))).singleElement()
          .extracting(ListRow::fingerprint).isEqualTo(fp(2));
      assertThat(s.list(new ListQuery(null, null, ListQuery.Sort.SIZE)).getFirst().artifactBytes()).isEqualTo(30);
      CacheStatistics st = s.statistics();
      assertThat(st.pendingGraphs()).isEqualTo(1);
      assertThat(st.failed()).isEqualTo(1);
      assertThat(s.resolve(fp(2).shortForm())).isEqualTo(fp(2));
      assertThat(s.remove(List.of(fp(1)))).isGreaterThan(40);
      assertThat(s.list(ListQuery.all())).hasSize(2);
      s.clear();
      assertThat(s.list(ListQuery.all())).isEmpty();
      assertThat(s.statistics().storedBytes()).isZero();
      assertThat(s.verify(false).clean()).isTrue();
    }
  }

  @Test
  void putGraph_graphEntry_storesTheGraphAndItsNeuronNameTogether_andAsksForBytesOnlyWhenNew() throws Exception {
    NeuronName a = new NeuronName("neuronxcc-2.15.1.0", "MODULE_1+abcdef01", "[\"-O1\"]");
    NeuronName b = new NeuronName("neuronxcc-2.16.0.0", "MODULE_1+abcdef01", null);
    java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
    GraphEntry entry = new GraphEntry(fp(1), "m1", () -> {
      asked.incrementAndGet();
      return module(1);
    }, "src", java.util.Optional.of(a));
    try (CacheStore s = open(dir)) {
      assertThat(s.putGraph(entry)).isEqualTo(PutOutcome.ADDED);
      assertThat(s.putGraph(entry)).isEqualTo(PutOutcome.ALREADY_PRESENT);
      assertThat(s.putGraph(entry.withNeuronName(b))).isEqualTo(PutOutcome.ALREADY_PRESENT);
      assertThat(asked).hasValue(1);
      GraphInfo g = s.graph(fp(1)).orElseThrow();
      assertThat(g.neuronNames()).containsExactly(a, b);
      assertThat(g.seenCount()).isEqualTo(3);
      assertThat(s.readGraph(fp(1))).hasValue(module(1));
      assertThat(s.verify(false).problems()).isEmpty();
    }
  }

  @Test
  void recordFailures_storesABatch_butNeverOverACompiledArtifact() throws Exception {
    try (CacheStore s = open(dir)) {
      graph(s, 1);
      graph(s, 2);
      s.putArtifact(key(1, CPU), bytes(1, 10), CompileInfo.of(1, ""));
      assertThat(s.recordFailures(List.of(new NewFailure(key(1, CPU), "compile-error", "boom", "log"),
          new NewFailure(key(2, CPU), "compile-error", "bang", "the log"),
          new NewFailure(key(2, TRN1), null, null, null)))).isEqualTo(2);
      assertThat(s.artifactInfo(key(1, CPU)).orElseThrow().status()).isEqualTo(EntryStatus.COMPILED);
      assertThat(s.artifactInfo(key(2, CPU)).orElseThrow().failureMessage()).isEqualTo("bang");
      assertThat(s.log(key(2, CPU))).isEqualTo("the log");
      assertThat(s.artifactInfo(key(2, TRN1)).orElseThrow().failureKind()).isEqualTo("error");
      assertThatThrownBy(() -> s.recordFailures(List.of(new NewFailure(key(9, CPU), "k", "m", "l"))))
          .hasMessageContaining("is not in cache");
      assertThat(s.verify(false).problems()).isEmpty();
    }
  }
}
