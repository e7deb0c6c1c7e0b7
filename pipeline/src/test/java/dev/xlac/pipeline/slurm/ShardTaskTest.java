package dev.xlac.pipeline.slurm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.cache.ArtifactKey;
import dev.xlac.cache.BundleSigningKey;
import dev.xlac.cache.CacheStore;
import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.compiler.schedule.SchedulerSettings;
import dev.xlac.core.ExitCode;
import dev.xlac.core.FailureKind;
import dev.xlac.core.XlacException;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.pipeline.CompileSetup;
import dev.xlac.pipeline.DriverSource;
import dev.xlac.pipeline.FakeCompiler;
import dev.xlac.pipeline.RunListener;
import dev.xlac.pipeline.RunReport;
import dev.xlac.pipeline.shard.ResultLines;
import dev.xlac.pipeline.shard.ShardFixtures;
import dev.xlac.pipeline.shard.ShardPlan;
import dev.xlac.pipeline.shard.ShardRun;
import dev.xlac.pipeline.shard.ShardTask;
import dev.xlac.pipeline.shard.ShardTransport;
import dev.xlac.pipeline.shard.SharedDirectoryTransport;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A shard's way there and back through a shared directory, in-process, with a compiler that needs no process. */
class ShardTaskTest {
  @TempDir
  Path tmp;

  private static CacheStore open(Path dir) throws InterruptedException {
    return CacheStore.open(dir, CacheStore.Mode.READ_WRITE, Duration.ZERO, m -> {});
  }

  private CompileSetup nodeSetup(Path cache, FakeCompiler compiler) {
    return new CompileSetup(() -> open(cache), new DriverSource.Given(compiler.factory()),
        new SchedulerSettings(2, 0, 0), false, RunListener.NONE, () -> Long.MAX_VALUE);
  }

  /** Five graphs in the submitter's cache, planned over two shards and sent. */
  private ShardPlan sent(SharedDirectoryTransport transport) throws Exception {
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      return ShardFixtures.sendGraphs(store, tmp.resolve("dumps"), transport, 5, 1.5f, 2);
    }
  }

  @Test
  void eachShardCompilesItsGraphsOnItsNode_andTheBundleCarriesTheArtifactsBack() throws Exception {
    SharedDirectoryTransport transport = new SharedDirectoryTransport(tmp.resolve("shared/run-1"));
    ShardPlan plan = sent(transport);
    FakeCompiler compiler = new FakeCompiler(false);
    for (ShardPlan.Shard s : plan.nonEmpty()) {
      assertThat(transport.receiveResults(s.index(), "7")).isEmpty();
      RunReport r = ShardTask.run(nodeSetup(tmp.resolve("node-" + s.index()), compiler), transport, s.index(), "7",
          tmp.resolve("node-" + s.index() + ".bundle"));
      assertThat(r.compiled()).isEqualTo(s.items().size());
    }
    assertThat(compiler.compiles).as("each graph once").hasValue(5);
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      for (ShardPlan.Shard s : plan.nonEmpty()) {
        ShardTransport.Results back = transport.receiveResults(s.index(), "7").orElseThrow();
        store.importBundle(back.bundle());
        List<GraphResult> lines = back.lines().stream().map(ResultLines::parse).toList();
        assertThat(lines).extracting(GraphResult::fingerprint)
            .containsExactlyInAnyOrderElementsOf(s.items().stream().map(ShardPlan.Item::graph).toList());
        assertThat(lines).allSatisfy(g -> assertThat(g.status()).isEqualTo(GraphResult.Status.COMPILED));
        for (ShardPlan.Item item : s.items()) {
          assertThat(store.getArtifact(new ArtifactKey(item.graph(), FakeCompiler.IDENTITY))).isPresent();
        }
        transport.done(s.index());
        assertThat(transport.receiveResults(s.index(), "7")).as("the bundle is gone once imported").isEmpty();
      }
    }
  }

  @Test
  void aGraphDamagedOnTheWay_isNotCompiled_andSaysSo_theOthersAre() throws Exception {
    SharedDirectoryTransport transport = new SharedDirectoryTransport(tmp.resolve("shared/run-1"));
    ShardPlan plan = sent(transport);
    ShardPlan.Shard shard = plan.nonEmpty().getFirst();
    ShardTransport.Input victim = transport.receiveInputs(shard.index()).getFirst();
    try (RandomAccessFile f = new RandomAccessFile(victim.module().toFile(), "rw")) {
      f.setLength(f.length() / 2);
    }
    FakeCompiler compiler = new FakeCompiler(false);
    ShardTask.run(nodeSetup(tmp.resolve("node"), compiler), transport, shard.index(), "7",
        tmp.resolve("node.bundle"));
    List<GraphResult> lines = transport.receiveResults(shard.index(), "7").orElseThrow().lines().stream()
        .map(ResultLines::parse).toList();
    GraphResult damaged = lines.stream().filter(g -> g.fingerprint().equals(victim.fingerprint())).findFirst()
        .orElseThrow();
    assertThat(damaged.status()).isEqualTo(GraphResult.Status.NOT_RUN);
    assertThat(damaged.error()).startsWith("not compiled: ").contains("on this node");
    assertThat(lines).filteredOn(g -> g.status() == GraphResult.Status.COMPILED).hasSize(shard.items().size() - 1);
  }

  @Test
  void aDamagedResultBundle_isRefused_soTheShardCountsAsFailed_andItsGoodCopyImportsLater() throws Exception {
    SharedDirectoryTransport transport = new SharedDirectoryTransport(tmp.resolve("shared/run-1"));
    ShardPlan plan = sent(transport);
    ShardPlan.Shard shard = plan.nonEmpty().getFirst();
    BundleSigningKey key = runKey(tmp.resolve("shared/run-1"));
    ShardTask.run(nodeSetup(tmp.resolve("node"), new FakeCompiler(false)), task(transport, key), shard.index(), "7",
        tmp.resolve("node.bundle"));
    SharedDirectoryTransport submitter = submitter(transport, key);
    ShardTransport.Results back = submitter.receiveResults(shard.index(), "7").orElseThrow();
    Path good = Files.copy(back.bundle(), tmp.resolve("good.bundle"));
    byte[] bytes = Files.readAllBytes(back.bundle());
    for (int i = bytes.length / 3; i < bytes.length * 2 / 3; i += 97) {
      bytes[i] ^= 0x5a;
    }
    Files.write(back.bundle(), bytes);
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      assertThatThrownBy(() -> ShardRun.importResults(store, submitter, back, shard, FakeCompiler.IDENTITY))
          .isInstanceOf(XlacException.class);
      assertThatThrownBy(() -> ShardRun.importResults(store, submitter, new ShardTransport.Results(good,
          List.of("hlo1:00\tCOMPILED")), shard, FakeCompiler.IDENTITY)).isInstanceOf(IllegalArgumentException.class);
      List<GraphResult> results = ShardRun.importResults(store, submitter,
          new ShardTransport.Results(good, back.lines()), shard, FakeCompiler.IDENTITY);
      assertThat(results).hasSize(shard.items().size())
          .allSatisfy(g -> assertThat(g.status()).isEqualTo(GraphResult.Status.COMPILED));
      for (ShardPlan.Item item : shard.items()) {
        assertThat(store.getArtifact(new ArtifactKey(item.graph(), FakeCompiler.IDENTITY))).isPresent();
      }
    }
  }

  /**
   * A bundle that does not hold what its lines say compiled (a task Slurm requeued under the same job id replaced it
   * after a first run wrote the lines; or any bundle that lost an artifact on the way) was imported as good: the run
   * reported the graphs compiled while the cache had no artifact for them. Now the results are refused (the shard
   * is then submitted again).
   */
  @Test
  void resultLinesSayingCompiled_whoseBundleLacksTheArtifacts_areRefused_notReportedAsCompiled() throws Exception {
    SharedDirectoryTransport transport = new SharedDirectoryTransport(tmp.resolve("shared/run-1"));
    ShardPlan.Shard shard = sent(transport).nonEmpty().getFirst();
    BundleSigningKey key = runKey(tmp.resolve("shared/run-1"));
    ShardTask.run(nodeSetup(tmp.resolve("node"), new FakeCompiler(false)), task(transport, key), shard.index(), "7",
        tmp.resolve("node.bundle"));
    SharedDirectoryTransport submitter = submitter(transport, key);
    ShardTransport.Results back = submitter.receiveResults(shard.index(), "7").orElseThrow();
    try (CacheStore empty = open(tmp.resolve("requeued-node"))) { // its second run: nothing compiled yet
      empty.exportBundle(back.bundle(), dev.xlac.cache.ExportRequest.all().signedBy(key));
    }
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      assertThatThrownBy(() -> ShardRun.importResults(store, submitter, back, shard, FakeCompiler.IDENTITY))
          .isInstanceOfSatisfying(XlacException.class, e -> assertThat(e.getMessage()).startsWith("shard "
              + shard.index() + "'s results say ").contains(" compiled, but what came with them (")
              .endsWith(") does not hold it"));
    }
  }

  /**
   * Regression: results that could not be imported stayed in the shared directory, so the next poll read them again
   * and spent the shard's retries on the same damaged bundle before its resubmitted task could write new ones.
   */
  @Test
  void resultsThatCouldNotBeImported_onceDiscarded_areNotReadAgain() throws Exception {
    SharedDirectoryTransport transport = new SharedDirectoryTransport(tmp.resolve("shared/run-1"));
    ShardPlan plan = sent(transport);
    ShardPlan.Shard shard = plan.nonEmpty().getFirst();
    ShardTask.run(nodeSetup(tmp.resolve("node"), new FakeCompiler(false)), transport, shard.index(), "7",
        tmp.resolve("node.bundle"));
    ShardTransport.Results back = transport.receiveResults(shard.index(), "7").orElseThrow();
    Files.write(back.bundle(), new byte[] {1, 2, 3});
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      assertThatThrownBy(() -> ShardRun.importResults(store, transport, back, shard, FakeCompiler.IDENTITY))
          .isInstanceOf(XlacException.class);
    }
    transport.discard(shard.index(), back);
    assertThat(transport.receiveResults(shard.index(), "7")).isEmpty();
    assertThat(tmp.resolve("shared/run-1/results/shard-" + shard.index() + ".7.tsv")).doesNotExist();
    ShardTask.run(nodeSetup(tmp.resolve("node-2"), new FakeCompiler(false)), transport, shard.index(), "8",
        tmp.resolve("node-2.bundle"));
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      assertThat(ShardRun.importResults(store, transport, transport.receiveResults(shard.index(), "8").orElseThrow(),
          shard, FakeCompiler.IDENTITY)).allSatisfy(g -> assertThat(g.status()).isEqualTo(GraphResult.Status.COMPILED));
    }
  }

  /** The task's side of {@code t}: its bundles signed by {@code key}. */
  private static SharedDirectoryTransport task(SharedDirectoryTransport t, BundleSigningKey key) {
    return new SharedDirectoryTransport(t.runDirectory(), key, null);
  }

  /** The submitter's side of {@code t}: it imports only bundles {@code key} signed. */
  private static SharedDirectoryTransport submitter(SharedDirectoryTransport t, BundleSigningKey key) {
    return new SharedDirectoryTransport(t.runDirectory(), null, key.publicKey());
  }

  /** The run's throwaway key, as the submitter makes it in the run directory, read back as a task reads it. */
  static BundleSigningKey runKey(Path run) throws Exception {
    Files.createDirectories(run);
    BundleSigningKey.generate(run.resolve(ShardTask.RUN_KEY), false);
    return ShardTask.runKey(run).orElseThrow();
  }

  @Test
  void slurmRun_onARequireSignedCache_importsItsOwnShards() throws Exception {
    Path run = tmp.resolve("shared/run-1");
    SharedDirectoryTransport transport = new SharedDirectoryTransport(run);
    ShardPlan plan = sent(transport);
    BundleSigningKey key = runKey(run);
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      store.setRequireSigned(true);
    }
    ShardPlan.Shard shard = plan.nonEmpty().getFirst();
    ShardTask.run(nodeSetup(tmp.resolve("node"), new FakeCompiler(false)), task(transport, key), shard.index(), "7",
        tmp.resolve("node.bundle"));
    SharedDirectoryTransport submitter = submitter(transport, key);
    ShardTransport.Results back = submitter.receiveResults(shard.index(), "7").orElseThrow();
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      assertThat(ShardRun.importResults(store, submitter, back, shard, FakeCompiler.IDENTITY)).hasSize(shard.items().size())
          .allSatisfy(g -> assertThat(g.status()).isEqualTo(GraphResult.Status.COMPILED));
      for (ShardPlan.Item item : shard.items()) {
        assertThat(store.getArtifact(new ArtifactKey(item.graph(), FakeCompiler.IDENTITY))).isPresent();
      }
    }
    // Only this run's key is trusted: an unsigned bundle, or one another key signed, is refused.
    ShardPlan.Shard other = plan.nonEmpty().getLast();
    ShardTask.run(nodeSetup(tmp.resolve("node2"), new FakeCompiler(false)), transport, other.index(), "8",
        tmp.resolve("node2.bundle"));
    ShardTask.run(nodeSetup(tmp.resolve("node3"), new FakeCompiler(false)), task(transport,
        runKey(tmp.resolve("elsewhere"))), other.index(), "9", tmp.resolve("node3.bundle"));
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      for (String attempt : List.of("8", "9")) {
        ShardTransport.Results foreign = submitter.receiveResults(other.index(), attempt).orElseThrow();
        assertThatThrownBy(() -> ShardRun.importResults(store, submitter, foreign, other, FakeCompiler.IDENTITY))
            .as(attempt).isInstanceOf(XlacException.class);
      }
    }
  }

  @Test
  void aDamagedResultLine_isOneLineInWords_namingTheLine() throws Exception {
    GraphFingerprint fp = new GraphFingerprint("hlo1:" + "ab".repeat(32));
    String good = ResultLines.of(new GraphResult(fp, "m", GraphResult.Status.COMPILED, Duration.ofMillis(5), 1,
        null, null));
    ShardPlan.Shard shard = new ShardPlan.Shard(0, List.of(new ShardPlan.Item(fp, "m", 1)), 1);
    for (var bad : List.of(
        List.of(good.replace("COMPILED", "EXPLODED"), "shard result line 1: unknown status 'EXPLODED'"),
        List.of(good.replace("\t-\t", "\tMELTDOWN\t"), "unknown failure kind 'MELTDOWN'"),
        List.of(good.replace("\t5\t", "\tfive\t"), "compile milliseconds 'five' is not a number"),
        List.of(good.replace("\t1\t", "\t\t"), "attempts '' is not a number"))) {
      ShardTransport.Results back = new ShardTransport.Results(tmp.resolve("none.bundle"), List.of(bad.get(0)));
      try (CacheStore store = open(tmp.resolve("submitter"))) {
        SharedDirectoryTransport submitter = new SharedDirectoryTransport(tmp.resolve("run"), null,
            runKey(tmp.resolve("k" + bad.hashCode())).publicKey());
        assertThatThrownBy(() -> ShardRun.importResults(store, submitter, back, shard, FakeCompiler.IDENTITY))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining(bad.get(1)).hasMessageStartingWith("shard result line 1: ")
            .satisfies(e -> assertThat(e.getMessage()).doesNotContain("java.", "Exception", "\n"));
      }
    }
  }

  @Test
  void aGraphsListLineWithoutATab_isOneLineInWords_andTheTaskFailsWithExit3() throws Exception {
    SharedDirectoryTransport transport = new SharedDirectoryTransport(tmp.resolve("shared/run-1"));
    ShardPlan plan = sent(transport);
    ShardPlan.Shard shard = plan.nonEmpty().getFirst();
    Path list = tmp.resolve("shared/run-1/inputs/shard-" + shard.index() + "/graphs.tsv");
    Files.writeString(list, Files.readString(list) + "no tab here\n");
    assertThatThrownBy(() -> transport.receiveInputs(shard.index())).isInstanceOf(IllegalArgumentException.class)
        .hasMessageEndingWith("graphs.tsv line " + (shard.items().size() + 1) + ": no tab between fingerprint and"
            + " module name");
    assertThatThrownBy(() -> ShardTask.run(nodeSetup(tmp.resolve("node"), new FakeCompiler(false)), transport,
        shard.index(), "7", tmp.resolve("node.bundle"))).isInstanceOfSatisfying(XlacException.class, e -> {
          assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
          assertThat(e.getMessage()).contains("no tab between").doesNotContain("Exception", "\n");
        });
  }

  @Test
  void aRunPathWithANewline_staysInTheScriptsCommentLine() throws Exception {
    Path run = tmp.resolve("run\necho INJECTED\r");
    Path script = Files.writeString(tmp.resolve("task.sh"), SlurmExecutor.script(List.of("true"), run));
    Process p = new ProcessBuilder("sh", script.toString()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor()).isZero();
    assertThat(out).as("nothing of the path runs as a command").isEmpty();
  }

  @Test
  void inputs_keepThePlansOrder_longestFirst() throws Exception {
    SharedDirectoryTransport transport = new SharedDirectoryTransport(tmp.resolve("shared/run-1"));
    ShardPlan plan = sent(transport);
    for (ShardPlan.Shard s : plan.nonEmpty()) {
      assertThat(transport.receiveInputs(s.index())).extracting(ShardTransport.Input::fingerprint)
          .containsExactlyElementsOf(s.items().stream().map(ShardPlan.Item::graph).toList());
    }
  }

  @Test
  void resultLine_roundTrips_withTabsAndNewlinesInTheErrorFlattened() {
    GraphFingerprint fp = new GraphFingerprint("hlo1:" + "ab".repeat(32));
    GraphResult failed = new GraphResult(fp, "jit_step", GraphResult.Status.FAILED, Duration.ofMillis(1234), 2,
        FailureKind.COMPILE_ERROR, "bad\tshape f32[3]");
    GraphResult back = ResultLines.parse(ResultLines.of(failed));
    assertThat(back).isEqualTo(new GraphResult(fp, "jit_step", GraphResult.Status.FAILED, Duration.ofMillis(1234), 2,
        FailureKind.COMPILE_ERROR, "bad shape f32[3]"));
    GraphResult ok = new GraphResult(fp, "jit_step", GraphResult.Status.COMPILED, Duration.ofMillis(5), 1, null, null);
    assertThat(ResultLines.parse(ResultLines.of(ok))).isEqualTo(ok);
    assertThatThrownBy(() -> ResultLines.parse("hlo1:00\tCOMPILED")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void script_passesEveryArgumentAsItIs_quotesIncluded() throws Exception {
    Path run = tmp.resolve("it's a run");
    Path script = Files.writeString(tmp.resolve("task.sh"), SlurmExecutor.script(List.of("printf", "%s\\n", "a b",
        "--compiler-flags=-O2 'x'"), run));
    Process p = new ProcessBuilder("sh", script.toString()).redirectErrorStream(true).start();
    List<String> out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines().toList();
    assertThat(p.waitFor()).isZero();
    assertThat(out).containsExactly("a b", "--compiler-flags=-O2 'x'", "--run-dir", run.toString());
  }

  @Test
  void noSbatchOnPath_isAnEnvironmentError_inOneLine() throws Exception {
    Path empty = Files.createDirectories(tmp.resolve("bin"));
    assertThatThrownBy(() -> SlurmClient.requireSbatch(empty.toString())).isInstanceOfSatisfying(XlacException.class,
        e -> {
          assertThat(e.exitCode()).isEqualTo(ExitCode.ENVIRONMENT);
          assertThat(e.getMessage()).startsWith("sbatch not found on PATH: ").doesNotContain("\n");
        });
    Path bin = Files.createDirectories(tmp.resolve("bin2"));
    Path sbatch = Files.writeString(bin.resolve("sbatch"), "#!/bin/sh\n");
    sbatch.toFile().setExecutable(true);
    SlurmClient.requireSbatch(new ArrayList<>(List.of(empty.toString(), bin.toString())).stream()
        .reduce((a, b) -> a + ":" + b).orElseThrow());
  }

  private static ShardTransport.RequestInput request(String program, String identityText) {
    byte[] format = "mlir".getBytes(StandardCharsets.UTF_8);
    byte[] code = program.getBytes(StandardCharsets.UTF_8);
    byte[] options = {0x1a, 0x02, 0x20, 0x01};
    return new ShardTransport.RequestInput(dev.xlac.runtime.RequestKey.of(format, code, options,
        identityText.getBytes(StandardCharsets.UTF_8)), "mlir request", "mlir", code, options, identityText);
  }

  @Test
  void recordedRequests_travelWithTheirProgram_aDamagedOneOrOneKeyedForAnotherPlugin_isNotCompiled_theRestAre()
      throws Exception {
    ShardTransport.RequestInput good = request("module good", FakeCompiler.IDENTITY_TEXT);
    ShardTransport.RequestInput damaged = request("module damaged", FakeCompiler.IDENTITY_TEXT);
    ShardTransport.RequestInput foreign = request("module foreign", "xlac-pjrt-plugin/2\nplatform_name=other\n");
    List<ShardTransport.RequestInput> all = List.of(good, damaged, foreign);
    ShardPlan plan = ShardPlan.plan(all.stream().map(r -> new ShardPlan.Item(r.key(), r.name(), 1)).toList(), 1);
    Path run = tmp.resolve("shared/run-r");
    SharedDirectoryTransport transport = new SharedDirectoryTransport(run);
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      transport.sendInputs(plan, store, key -> all.stream().filter(r -> r.key().equals(key)).findFirst()
          .orElseThrow());
    }
    Path file = run.resolve("inputs/shard-0/" + damaged.key().hex() + ".request");
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length - 40] ^= 0x20; // within its program
    Files.write(file, bytes);
    assertThat(transport.receiveRequests(0)).extracting(ShardTransport.RequestInput::intact)
        .containsExactlyInAnyOrder(true, false, true);

    FakeCompiler compiler = new FakeCompiler(false, FakeCompiler.PJRT_IDENTITY);
    RunReport r = ShardTask.run(nodeSetup(tmp.resolve("node"), compiler), transport, 0, "7",
        tmp.resolve("node.bundle"));
    assertThat(compiler.compiles).hasValue(1);
    java.util.Map<dev.xlac.core.ProgramKey, GraphResult> byKey = new java.util.HashMap<>();
    r.graphs().forEach(g -> byKey.put(g.fingerprint(), g));
    assertThat(byKey.get(good.key()).status()).isEqualTo(GraphResult.Status.COMPILED);
    assertThat(byKey.get(damaged.key()).error()).isEqualTo("not compiled: its sections on this node do not have its"
        + " key (damaged on the way)");
    assertThat(byKey.get(foreign.key()).error()).startsWith("not compiled: it is keyed for a plugin identity other"
        + " than this node's");
    List<String> lines = Files.readAllLines(run.resolve("results/shard-0.7.tsv"));
    assertThat(lines).hasSize(3).allSatisfy(l -> assertThat(ResultLines.parse(l).fingerprint())
        .isInstanceOf(dev.xlac.runtime.RequestKey.class));
    try (CacheStore store = open(tmp.resolve("submitter"))) {
      store.importBundle(run.resolve("results/shard-0.7.bundle"));
      assertThat(store.readRequest(good.key()).orElseThrow().executable())
          .isEqualTo("mlir request".getBytes(StandardCharsets.UTF_8));
      assertThat(store.requests()).as("only the compiled request's entry came back").hasSize(1);
    }
  }
}
