package dev.xlac.pipeline.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cache.CacheStore;
import dev.xlac.pipeline.TestPlugin;
import dev.xlac.pipeline.recording.RealPlugin;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launch plan a JVM run writes and the finish of a command the fast start ran ({@link FastStart}), in-process
 * with a shell command standing in for the framework, the C test plugin as the real plugin: what the plan records
 * of a plugin replaced during a run, and how the finish treats a plugin moved or replaced, or another cache.
 */
class FastStartFinishTest {
  private static final String HIT = "printf 'hit\\tpjrt1:" + "a".repeat(64) + "\\t1\\t2\\t3000000000\\n'"
      + " > $XLAC_PJRT_STATS/stats-1.tsv";

  @TempDir
  Path tmp;

  private Path plugin;
  private Path proxy;
  private final List<String> notices = new ArrayList<>();

  @BeforeEach
  void build() throws Exception {
    plugin = TestPlugin.build(Files.createDirectories(tmp.resolve("plugin")));
    proxy = Files.writeString(tmp.resolve("libxlac_pjrt.so"), "proxy");
  }

  private Path cacheDir() {
    return tmp.resolve("cache");
  }

  private CacheStore.WriterLock lock() throws InterruptedException {
    return CacheStore.lock(cacheDir(), Duration.ZERO, m -> {});
  }

  private RunSpec spec(String script) {
    return new RunSpec(List.of("sh", "-c", script), cacheDir(), plugin, null, false,
        Map.of("PATH", System.getenv("PATH")));
  }

  private FastStart.Key key() {
    return new FastStart.Key(tmp.resolve("plans"), tmp, List.of("--plugin", plugin.toString()), null);
  }

  private RunResult jvmRun(String script) throws Exception {
    return RuntimeRun.run(spec(script), this::lock, notices::add, () -> proxy, key());
  }

  /** A first run (materializes), then one with a hit: the stamp is current and a plan is written. */
  private RunResult planned() throws Exception {
    jvmRun("true");
    RunResult r = jvmRun(HIT);
    assertThat(key().file()).as("a plan after a run with a hit; notices %s", notices).exists();
    assertThat(RuntimeCache.layoutCurrent(cacheDir(), r.plugin().sha256())).isTrue();
    return r;
  }

  private FastStart.Adopted adopted(RealPlugin identified, Path db) throws Exception {
    Path stats = Files.createTempDirectory(tmp, "xlac-run-stats-");
    Files.writeString(stats.resolve("stats-1.tsv"), "hit\tpjrt1:" + "a".repeat(64) + "\t1\t2\t3000000000\n");
    return new FastStart.Adopted(stats, 5, Duration.ofMillis(3), null, identified.proxyValue(), db);
  }

  private Path db() {
    return cacheDir().toAbsolutePath().resolve("db");
  }

  /** The same plugin, another file: a byte appended (an ELF library still loads). */
  private void replacePlugin() throws Exception {
    Path next = plugin.resolveSibling("next.so");
    Files.write(next, Files.readAllBytes(plugin));
    Files.write(next, new byte[] {0}, java.nio.file.StandardOpenOption.APPEND);
    Files.move(next, plugin, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  @Test
  void finish_pluginMovedAwayDuringTheRun_givesTheCommandsExitAndSummary_notExit3() throws Exception {
    RealPlugin identified = planned().plugin();
    FastStart.Adopted a = adopted(identified, db());
    Files.move(plugin, plugin.resolveSibling("moved.so"));
    RunResult r = RuntimeRun.finishAdopted(spec("true"), this::lock, notices::add, a, key());
    assertThat(r.exitStatus()).isEqualTo(5);
    assertThat(r.stats().hits()).isEqualTo(1);
    assertThat(RuntimeCache.layoutCurrent(cacheDir(), identified.sha256())).as("the stamp is forgotten").isFalse();
    assertThat(key().file()).as("no plan").doesNotExist();
    assertThat(a.stats()).doesNotExist();
  }

  @Test
  void finish_pluginReplacedDuringTheRun_doesNotMarkTheLayoutCurrentForTheNewFile() throws Exception {
    RealPlugin identified = planned().plugin();
    FastStart.Adopted a = adopted(identified, db());
    replacePlugin();
    String newSha = RealPlugin.identify(plugin, null, null).sha256();
    assertThat(newSha).isNotEqualTo(identified.sha256());
    RunResult r = RuntimeRun.finishAdopted(spec("true"), this::lock, notices::add, a, key());
    assertThat(r.exitStatus()).isEqualTo(5);
    assertThat(RuntimeCache.layoutCurrent(cacheDir(), newSha)).as("never built for the new file").isFalse();
    assertThat(RuntimeCache.layoutCurrent(cacheDir(), identified.sha256())).isFalse();
    assertThat(key().file()).as("no plan").doesNotExist();
  }

  @Test
  void finish_unchangedPlugin_keepsTheStampCurrent_andWritesThePlan() throws Exception {
    RealPlugin identified = planned().plugin();
    RunResult r = RuntimeRun.finishAdopted(spec("true"), this::lock, notices::add, adopted(identified, db()), key());
    assertThat(r.exitStatus()).isEqualTo(5);
    assertThat(RuntimeCache.layoutCurrent(cacheDir(), identified.sha256())).isTrue();
    assertThat(key().file()).exists();
  }

  /**
   * Regression (missWithoutReason): the finish of a fast-started run reads the proxy's requests in the statistics
   * directory too, and explaining a miss of a run without hits opens the cache read-only: its database files stay
   * as the stamp and the plan saw them, so the next run still starts fast.
   */
  @Test
  void missWithoutReason_finishOfAFastStartedRun_saysWhy_andKeepsTheStampAndThePlan() throws Exception {
    RealPlugin identified = planned().plugin();
    FastStart.Adopted a = adopted(identified, db());
    byte[] format = "hlo".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    String identity = "xlac-pjrt-plugin/2\nplatform_name=cpu\nplugin_sha256=" + identified.sha256() + "\n";
    dev.xlac.runtime.RequestKey key = dev.xlac.runtime.RequestKey.of(format, new byte[] {1}, new byte[0],
        identity.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    dev.xlac.runtime.RecordSpool.write(a.stats(), new dev.xlac.runtime.RecordedRequest(key, format, new byte[] {1},
        new byte[0], identity, new byte[0], 5));
    Files.writeString(a.stats().resolve("stats-1.tsv"), "miss\t" + key.text() + "\t1\t500\n"); // no hit
    String database = RuntimeCache.databaseState(cacheDir());
    RunResult r = RuntimeRun.finishAdopted(spec("true"), this::lock, notices::add, a, key());
    assertThat(RuntimeCache.databaseState(cacheDir())).as("the cache was only read").isEqualTo(database);
    assertThat(r.stats().misses()).isEqualTo(1);
    assertThat(r.missLines()).containsExactly("xlac run:   1 not served: not recorded: " + key.text().substring(0, 14));
    assertThat(RuntimeCache.layoutCurrent(cacheDir(), identified.sha256())).isTrue();
    assertThat(key().file()).exists();
  }

  @Test
  void finish_ofAPlanForAnotherCache_doesNotMarkThisCacheCurrent() throws Exception {
    RealPlugin identified = planned().plugin();
    FastStart.Adopted a = adopted(identified, tmp.resolve("home-of-another-user/.cache/xlac/db").toAbsolutePath());
    RuntimeRun.finishAdopted(spec("true"), this::lock, notices::add, a, key());
    assertThat(RuntimeCache.layoutCurrent(cacheDir(), identified.sha256())).isFalse();
    assertThat(key().file()).doesNotExist();
  }

  @Test
  void plan_ofAPluginReplacedDuringTheRun_namesTheStatTheRunIdentified_notTheNewOne() throws Exception {
    jvmRun("true");
    Path next = plugin.resolveSibling("next.so");
    RunResult r = jvmRun(HIT + "; cat '" + plugin + "' > '" + next + "'; printf x >> '" + next + "'; mv '" + next
        + "' '" + plugin + "'");
    RealPlugin identified = r.plugin();
    var now = Files.readAttributes(plugin, "unix:ino,size", LinkOption.NOFOLLOW_LINKS);
    assertThat(now.get("size")).isNotEqualTo(identified.size());
    if (Files.exists(key().file())) {
      String line = Files.readAllLines(key().file()).stream()
          .filter(l -> l.startsWith("file " + FastStart.hex(identified.path().toString()) + " ")).findFirst()
          .orElseThrow();
      assertThat(line.split(" ")).containsExactly("file", FastStart.hex(identified.path().toString()),
          String.valueOf(identified.size()), String.valueOf(identified.mtimeNanos()),
          String.valueOf(identified.dev()), String.valueOf(identified.ino()));
    }
  }

  @Test
  void plan_stampRewrittenAfterItsCheck_isNotRecorded() throws Exception {
    RunResult r = planned();
    FastStart.Writer w = new FastStart.Writer(key(), () -> proxy);
    w.beforeStampRead = () -> RuntimeCache.markCurrent(cacheDir(), "f".repeat(64)); // another plugin's stamp
    w.afterRun(spec("true"), r.plugin(), true);
    assertThat(key().file()).as("a plan recording a stamp for another plugin").doesNotExist();
  }

  /** What launch_plan.c says of this test's plan, run in {@code env} (runtime's make tools builds the reader). */
  private String nativeCheck(Map<String, String> env) throws Exception {
    Path tool = Path.of("..", "runtime", "target", "native-test", "xlac-plan-check").toAbsolutePath();
    List<String> command = new ArrayList<>(List.of(tool.toString(), key().planDir().toString(), key().cwd().toString()));
    command.addAll(key().options());
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
    pb.environment().clear();
    pb.environment().putAll(env);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).strip();
    assertThat(p.waitFor()).as(out).isEqualTo(out.equals("holds") ? 0 : 1);
    return out;
  }

  /**
   * The plan format has a writer here and a reader in C (launch_plan.c): a plan written for a real run, cache and
   * plugin holds for the reader as the next run would meet it, and fails there when one condition it names changes.
   */
  @Test
  void plan_writtenForARealRun_holdsForTheNativeReader_andFailsThereWhenAConditionChanges() throws Exception {
    planned();
    Map<String, String> env = spec("true").env();
    assertThat(nativeCheck(env)).isEqualTo("holds");
    Map<String, String> more = new java.util.HashMap<>(env);
    more.put("JAX_PLATFORMS", "cpu");
    assertThat(nativeCheck(more)).isEqualTo("fails: environment variable JAX_PLATFORMS is new");
    Files.writeString(proxy, "another proxy");
    assertThat(nativeCheck(env)).isEqualTo("fails: " + proxy.toAbsolutePath() + " changed");
  }

  @Test
  void plan_isOnlyThisUsers_andNamesTheUserAndUserHome() throws Exception {
    planned();
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(key().file()))).isEqualTo("rw-------");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(key().planDir()))).isEqualTo("rwx------");
    List<String> lines = Files.readAllLines(key().file());
    assertThat(lines).contains("home " + FastStart.hex(System.getProperty("user.home")),
        "uid " + FastStart.hex(String.valueOf(Files.getAttribute(Path.of("/proc/self"), "unix:uid"))));
  }
}
