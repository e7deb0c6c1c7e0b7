package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runtime proof on real PyTorch/XLA 2.9, through the real launcher, on all four samples of
 * {@code samples/torch_xla}: an unmodified script runs under {@code xlac run --record}, which records every
 * compile, then under {@code xlac run}, where every compile is served from the cache; the losses of both are
 * those, bit for bit ({@code --loss-bits}), of the same script on torch_xla's own built-in CPU client, without
 * xlac. The plugin is {@code xla-cpu-pjrt} 0.0.1 ({@code $XLAC_PJRT_PLUGIN_2}, PJRT 0.81): torch_xla 2.9 cannot
 * execute on it alone, nor on the 0.115 plugin ("PJRT_ExecuteOptions size: expected 112, got 80"); the proxy
 * bridges that struct (runtime/README.md, "Bridging struct sizes"), so a run without the proxy on the same plugin
 * does not exist, and the built-in client is the reference.
 */
class RuntimeTorchXlaE2ETest {

  /** Losses of each sample command on torch_xla's built-in CPU client, computed once per command. */
  private static final Map<List<String>, List<String>> REFERENCE = new ConcurrentHashMap<>();
  /** The whole stdout of those runs. */
  private static final Map<List<String>, String> REFERENCE_OUT = new ConcurrentHashMap<>();

  @TempDir
  Path work;

  @BeforeAll
  static void needsTheSecondPlugin() {
    String p = System.getenv("XLAC_PJRT_PLUGIN_2");
    assumeTrue(p != null && !p.isBlank(), "XLAC_PJRT_PLUGIN_2 is unset (xla-cpu-pjrt 0.0.1, the PJRT 0.81 CPU plugin"
        + " torch_xla 2.9 runs on; scripts/test sets it)");
  }

  private static String plugin() {
    return System.getenv("XLAC_PJRT_PLUGIN_2");
  }

  private static List<String> sample(String script, String... args) {
    List<String> cmd = new ArrayList<>(List.of(Launcher.python(),
        Launcher.root().resolve("samples/torch_xla").resolve(script).toString()));
    cmd.addAll(List.of(args));
    cmd.add("--loss-bits");
    return cmd;
  }

  private static List<String> torchrun() {
    List<String> cmd = new ArrayList<>(List.of(Path.of(Launcher.python()).resolveSibling("torchrun").toString(),
        "--standalone", "--nproc_per_node=2"));
    List<String> script = sample("torchrun_ddp.py", "--steps", "2");
    cmd.addAll(script.subList(1, script.size())); // torchrun starts the interpreter itself
    return cmd;
  }

  /** Nothing of the user's shell that would change where torch_xla (or JAX) runs. */
  private static Map<String, String> env() {
    Map<String, String> env = new HashMap<>();
    env.put("PJRT_DEVICE", "");
    env.put("XLAC_PJRT_PLUGIN", "");
    env.put("XLA_STABLEHLO_COMPILE", "");
    return env;
  }

  /** The lines with losses, in a stable order (torchrun's two ranks interleave). */
  private static List<String> losses(String out) {
    return out.lines().filter(l -> l.contains(" loss ") && l.contains(" bits 0x")).sorted().toList();
  }

  private static List<String> reference(List<String> command) throws Exception {
    List<String> known = REFERENCE.get(command);
    if (known != null) {
      return known;
    }
    Map<String, String> env = env();
    env.put("PJRT_DEVICE", "CPU");
    Launcher.Result r = Launcher.run(command, env, 300);
    assertThat(r.exitCode()).as(r.err()).isZero();
    List<String> losses = losses(r.out());
    assertThat(losses).as(r.out()).hasSizeGreaterThanOrEqualTo(3);
    REFERENCE.put(command, losses);
    REFERENCE_OUT.put(command, r.out());
    return losses;
  }

  private Launcher.Result xlacRun(Path cache, List<String> command, Map<String, String> extraEnv, Path report,
      String... options) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Launcher.root().resolve("xlac").toString(), "run", "--cache",
        cache.toString(), "--plugin", plugin(), "--report", report.toString()));
    cmd.addAll(List.of(options));
    cmd.add("--");
    cmd.addAll(command);
    Map<String, String> env = env();
    env.putAll(extraEnv);
    Launcher.Result r = Launcher.run(cmd, env, 300);
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).as("nothing fell back").doesNotContain("xlac runtime: ");
    if ("CPU".equals(extraEnv.get("PJRT_DEVICE"))) {
      assertThat(r.err()).as("torch_xla's built-in CPU client is replaced visibly")
          .contains("xlac: PJRT_DEVICE is CPU, torch_xla's built-in CPU client, which loads no PJRT plugin; xlac runs"
              + " the command with PJRT_DEVICE=LIBRARY");
    }
    assertThat(losses(r.out())).as("the losses, bit for bit, of torch_xla's own CPU client")
        .isEqualTo(reference(command));
    assertThat(r.out()).as("the command's stdout, nothing of xlac's").doesNotContain("xlac run: ");
    assertThat(r.runSummary()).startsWith("xlac run: ");
    return r;
  }

  private static Map<String, Double> report(Path file) throws Exception {
    return Launcher.reportNumbers(file);
  }

  /**
   * Records {@code command} into an empty cache, then serves it: every compile of the second run a hit. Returns
   * the two reports.
   */
  private List<Map<String, Double>> recordThenServe(List<String> command, Map<String, String> extraEnv)
      throws Exception {
    Path cache = work.resolve("cache");
    Path first = work.resolve("first.json");
    xlacRun(cache, command, extraEnv, first, "--record");
    Map<String, Double> r1 = report(first);
    assertThat(r1.get("compiles")).as("%s", r1).isPositive();
    assertThat(r1.get("misses")).as("%s", r1).isEqualTo(r1.get("compiles"));
    assertThat(r1.get("recorded")).as("%s", r1).isEqualTo(r1.get("compiles"));
    assertThat(r1.get("fallbacks")).isZero();

    Path second = work.resolve("second.json");
    Launcher.Result served = xlacRun(cache, command, extraEnv, second);
    Map<String, Double> r2 = report(second);
    assertThat(r2.get("compiles")).isEqualTo(r1.get("compiles"));
    assertThat(r2.get("hits")).as("%s", r2).isEqualTo(r2.get("compiles"));
    assertThat(r2.get("misses")).isZero();
    assertThat(r2.get("fallbacks")).isZero();
    assertThat(r2.get("saved_seconds")).isPositive();
    assertThat(served.runSummary()).matches(
        "xlac run: (\\d+) compiles: \\1 served from the cache, 0 compiled; \\d+\\.\\d\\d s of compiling saved.*");
    return List.of(r1, r2);
  }

  private List<String> runtimeEntries() throws Exception {
    Launcher.Result ls = Launcher.xlac("cache", "ls", "--runtime", "--cache", work.resolve("cache").toString());
    assertThat(ls.exitCode()).as(ls.err()).isZero();
    return ls.out().lines().filter(l -> l.startsWith("pjrt1:")).toList();
  }

  /** MpDeviceLoader marks a step after each batch, then one explicit mark_step; PJRT_DEVICE=CPU is moved, with a note. */
  @Test
  void lazyMarkStep_withMpDeviceLoader_recordsThenServesEveryCompile_hloFormat() throws Exception {
    List<Map<String, Double>> r = recordThenServe(sample("lazy_mark_step.py", "--steps", "2"),
        Map.of("PJRT_DEVICE", "CPU"));
    List<String> entries = runtimeEntries();
    assertThat(entries).as("one entry per recorded compile").hasSize(r.get(0).get("added").intValue())
        .allMatch(l -> l.split("\\s+")[2].equals("hlo"), "torch_xla passes serialized HloModuleProtos: format hlo");
    assertThat(r.get(0).get("added")).isEqualTo(r.get(0).get("compiles"));
  }

  @Test
  void lazyMarkStep_withStableHloCompile_recordsThenServesEveryCompile_mlirFormat() throws Exception {
    List<Map<String, Double>> r = recordThenServe(sample("lazy_mark_step.py", "--steps", "2"),
        Map.of("XLA_STABLEHLO_COMPILE", "1"));
    assertThat(runtimeEntries()).hasSize(r.get(0).get("added").intValue())
        .allMatch(l -> l.split("\\s+")[2].equals("mlir"), "XLA_STABLEHLO_COMPILE=1: format mlir");
  }

  /**
   * The step's einsum dots carry frontend attributes (grad_x, grad_y), whose map entries torch_xla serialises in
   * another order in each process: the second process still gets the first one's keys (all hits) because the key
   * hashes the canonical program (issue #22: every run compiled the step again).
   */
  @Test
  void eagerModeWithTorchXlaCompile_recordsThenServesEveryCompile_frontendAttributeOrderKeepsTheKey()
      throws Exception {
    recordThenServe(sample("eager_compile.py", "--steps", "2"), Map.of());
    int withAttributes = 0;
    try (dev.xlac.cache.CacheStore s = dev.xlac.cache.CacheStore.open(work.resolve("cache"),
        dev.xlac.cache.CacheStore.Mode.READ_ONLY, java.time.Duration.ZERO)) {
      for (dev.xlac.cache.RequestInfo info : s.requests()) {
        byte[] program = s.readRequestWithoutExecutable(info.key()).orElseThrow().program();
        String text = new String(program, java.nio.charset.StandardCharsets.ISO_8859_1);
        if (text.contains("grad_x") && text.contains("grad_y")) {
          withAttributes++;
          assertThat(dev.xlac.runtime.CanonicalProgram.canonicalHlo(program)).as("parses as an HloModuleProto")
              .isNotNull();
        }
      }
    }
    assertThat(withAttributes).as("recorded programs with frontend attributes").isPositive();
  }

  @Test
  void torchCompileOpenXla_recordsThenServesEveryCompile() throws Exception {
    recordThenServe(sample("dynamo_openxla.py", "--steps", "2"), Map.of());
  }

  /**
   * torchrun's two ranks compile the same graphs at once: each records each request (two whole records under one
   * name, the last rename wins), the cache takes each once, and the second run's ranks both serve from the one
   * layout.
   */
  @Test
  void torchrunTwoWorkers_recordEachRequestOnce_andBothServeFromOneLayout() throws Exception {
    List<Map<String, Double>> r = recordThenServe(torchrun(), Map.of());
    Map<String, Double> first = r.get(0);
    assertThat(first.get("compiles").intValue() % 2).as("both ranks compile the same graphs").isZero();
    int distinct = first.get("compiles").intValue() / 2;
    assertThat(first.get("added")).as("%s", first).isEqualTo(distinct);
    assertThat(runtimeEntries()).as("one runtime entry per key").hasSize(distinct);
    Path spool = work.resolve("cache/runtime/spool");
    try (Stream<Path> left = Files.exists(spool) ? Files.list(spool) : Stream.empty()) {
      assertThat(left).as("the spool is emptied by the ingest").isEmpty();
    }
    assertThat(r.get(1).get("hits")).isEqualTo(first.get("compiles"));
  }

  /**
   * A DevicePlugin installed the way real ones are (a distribution with a {@code torch_xla.plugins} entry point, as
   * torch_xla's CUDA plugin or a vendor's arrive), for the device type {@code E2EDEV}. Its own
   * {@code configure_multiprocess} says on stderr that it ran, and on which device type.
   */
  private static Path installDevicePlugin(Path site) throws Exception {
    Path module = Files.createDirectories(site.resolve("xlac_e2e_device"));
    Files.writeString(module.resolve("__init__.py"), """
        import os
        import sys
        from torch_xla.experimental import plugins


        class E2eDevicePlugin(plugins.DevicePlugin):
            def library_path(self):
                return os.environ["E2E_DEVICE_LIBRARY"]

            def configure_single_process(self):
                pass

            def configure_multiprocess(self, local_rank, local_world_size):
                print("e2e device plugin: configure_multiprocess %d/%d on %s"
                      % (local_rank, local_world_size, os.environ["PJRT_DEVICE"]), file=sys.stderr)

            def client_create_options(self):
                return {"cpu_device_count": 1}
        """);
    Path info = Files.createDirectories(site.resolve("xlac_e2e_device-1.0.dist-info"));
    Files.writeString(info.resolve("METADATA"), "Metadata-Version: 2.1\nName: xlac-e2e-device\nVersion: 1.0\n");
    Files.writeString(info.resolve("entry_points.txt"), "[torch_xla.plugins]\ne2edev = xlac_e2e_device:E2eDevicePlugin\n");
    return site;
  }

  /**
   * pytorch/xla's MNIST trainer under xlac run died with KeyError: 'LIBRARY': torch_xla.launch asks the device-plugin
   * registry for PJRT_DEVICE's plugin, and xlac had moved the built-in CPU client to LIBRARY, which the registry
   * did not know. Run 1 (PJRT_DEVICE unset: the CPU stand-in) records; run 2 serves every compile to the same
   * script on an installed DevicePlugin's device type, which the proxy fronts through the registry: that
   * plugin's own set-up runs under its own device type. Both runs' stdout is, byte for byte, that of the script
   * on torch_xla's CPU client without xlac.
   */
  @Test
  void torchXlaLaunch_underXlacRun_findsItsDevicePlugin_insteadOfKeyErrorLibrary() throws Exception {
    List<String> command = sample("launch_spawn.py", "--steps", "3");
    Path cache = work.resolve("cache");
    Path first = work.resolve("first.json");
    Launcher.Result recorded = xlacRun(cache, command, Map.of(), first, "--record");
    assertThat(recorded.out()).isEqualTo(REFERENCE_OUT.get(command));
    Map<String, Double> r1 = report(first);
    assertThat(r1.get("compiles")).as("%s", r1).isPositive();
    assertThat(r1.get("recorded")).as("%s", r1).isEqualTo(r1.get("compiles"));

    Path site = installDevicePlugin(work.resolve("site"));
    String pythonPath = System.getenv("PYTHONPATH");
    Path second = work.resolve("second.json");
    Launcher.Result served = xlacRun(cache, command, Map.of("PJRT_DEVICE", "E2EDEV", "E2E_DEVICE_LIBRARY", plugin(),
        "PYTHONPATH", pythonPath == null || pythonPath.isBlank() ? site.toString() : site + ":" + pythonPath),
        second);
    assertThat(served.out()).isEqualTo(REFERENCE_OUT.get(command));
    assertThat(served.err()).as("the plugin's own multiprocess set-up, on its own device type")
        .contains("e2e device plugin: configure_multiprocess 0/1 on E2EDEV");
    Map<String, Double> r2 = report(second);
    assertThat(r2.get("hits")).as("served by the proxy in the plugin's place: %s", r2).isEqualTo(r1.get("compiles"));
    assertThat(r2.get("compiles")).isEqualTo(r1.get("compiles"));
  }
}
