package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code xlac dump} through the real launcher against the real frameworks: JAX, each PyTorch/XLA
 * sample, torchrun with two workers, a failing script, forwarded signals, and a fake Neuron
 * training command (the Neuron SDK cannot be installed here) that writes Neuron's cache layout.
 */
class DumpE2ETest {
  private static final String NL = System.lineSeparator();

  @TempDir
  Path work;

  private static Map<String, String> cpu() {
    return Map.of("JAX_PLATFORMS", "cpu", "PJRT_DEVICE", "CPU");
  }

  private Launcher.Result dump(Map<String, String> env, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Launcher.root().resolve("xlac").toString(), "dump",
        "--cache", work.resolve("cache").toString()));
    cmd.addAll(List.of(args));
    return Launcher.run(cmd, env, 300);
  }

  private static String sample(String path) {
    return Launcher.root().resolve("samples").resolve(path).toString();
  }

  private static List<Path> files(Path dir, String suffix) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(p -> p.getFileName().toString().endsWith(suffix)).toList();
    }
  }

  @Test
  void jaxSample_userFlagsKept_dumpDirReplaced_thenFilteredRerunFindsItCached() throws Exception {
    Path userDumps = work.resolve("user-dumps");
    Path kept = work.resolve("kept");
    Map<String, String> env = new java.util.HashMap<>(cpu());
    env.put("XLA_FLAGS", "--xla_dump_to=" + userDumps + " --xla_dump_hlo_as_text");
    Launcher.Result r = dump(env, "--keep-dumps", kept.toString(), "--", Launcher.python(), sample("jax/mlp.py"), "--steps", "2");
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).contains("done: mlp steps=2")
        .contains("dumped 25 modules from 1 process: 24 unique graphs, 24 new, 0 already in the cache" + NL);
    assertThat(r.err()).contains("xlac: XLA_FLAGS sets --xla_dump_to=" + userDumps + "; xlac dumps to its own directory"
        + " instead (use --keep-dumps " + userDumps + " to keep the dumps there)");
    assertThat(userDumps).doesNotExist();
    // The user's own flag reached XLA: text dumps beside the protos, in one directory per process.
    assertThat(files(kept, ".before_optimizations.txt")).hasSize(25);
    assertThat(files(kept, ".before_optimizations.hlo.pb")).hasSize(25)
        .allSatisfy(p -> assertThat(kept.relativize(p).getName(0).toString()).matches("pid-\\d+"));

    Launcher.Result again = dump(cpu(), "--module-filter", "train_step", "--", Launcher.python(), sample("jax/mlp.py"),
        "--steps", "2");
    assertThat(again.exitCode()).as(again.err()).isZero();
    assertThat(again.out()).contains("dumped 1 module from 1 process: 1 unique graph, 0 new, 1 already in the cache" + NL);
  }

  private void torchSample(String script, String... extra) throws Exception {
    List<String> args = new ArrayList<>(List.of("--frontend", "torch-xla", "--", Launcher.python(), sample("torch_xla/" + script)));
    args.addAll(List.of(extra));
    Launcher.Result r = dump(cpu(), args.toArray(String[]::new));
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).containsPattern("done: \\d+ steps")
        .containsPattern("dumped \\d+ modules? from 1 process: [1-9]\\d* unique graphs?, [1-9]\\d* new, 0 already in the cache");
    Launcher.Result ls = Launcher.xlac("cache", "ls", "--cache", work.resolve("cache").toString());
    assertThat(ls.out()).contains("SyncTensorsGraph.");
  }

  @Test
  void torchXla_lazyMarkStepWithMpDeviceLoader() throws Exception {
    torchSample("lazy_mark_step.py", "--steps", "2");
  }

  @Test
  void torchXla_eagerModeWithTorchXlaCompile() throws Exception {
    torchSample("eager_compile.py", "--steps", "2");
  }

  @Test
  void torchXla_torchCompileOpenXlaBackend() throws Exception {
    torchSample("dynamo_openxla.py", "--steps", "2");
  }

  @Test
  void torchrun_twoWorkers_dumpToTheirOwnDirectories_andDeduplicate() throws Exception {
    Path kept = work.resolve("kept");
    String torchrun = Path.of(Launcher.python()).resolveSibling("torchrun").toString();
    Launcher.Result r = dump(cpu(), "--keep-dumps", kept.toString(), "--", torchrun, "--standalone", "--nproc_per_node=2",
        sample("torch_xla/torchrun_ddp.py"), "--steps", "2");
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).contains("rank 0 done").contains("rank 1 done");
    List<Path> dumps = files(kept, ".before_optimizations.hlo.pb");
    List<String> processes = dumps.stream().map(p -> kept.relativize(p).getName(0).toString()).distinct().toList();
    assertThat(processes).hasSize(2);
    int unique = dumps.size() / 2;
    assertThat(unique).isPositive();
    // Both workers compile the same graphs: every graph is dumped twice and stored once.
    assertThat(r.out()).contains("dumped " + dumps.size() + " modules from 2 processes: " + unique + " unique graphs, "
        + unique + " new, 0 already in the cache");
  }

  private Path script(String name, String text) throws IOException {
    Path p = work.resolve(name);
    Files.writeString(p, text);
    p.toFile().setExecutable(true);
    return p;
  }

  private static final String JIT_ONE = "import jax, jax.numpy as jnp\n"
      + "jax.jit(lambda x: jnp.tanh(x) * 2 + 1)(jnp.ones(8)).block_until_ready()\n";

  @Test
  void failingScript_exitStatusPassesThrough_andWhatItCompiledIsIngested() throws Exception {
    Path fail = script("fail.py", JIT_ONE + "import sys\nprint('failing now', flush=True)\nsys.exit(3)\n");
    Launcher.Result r = dump(cpu(), "--", Launcher.python(), fail.toString());
    assertThat(r.exitCode()).isEqualTo(3);
    assertThat(r.out()).contains("failing now").containsPattern("unique graphs?, [1-9]\\d* new");
    assertThat(r.err()).contains("exited with status 3; the graphs it dumped before are in the cache");

    Launcher.Result ignored = dump(cpu(), "--ignore-script-errors", "--", Launcher.python(), fail.toString());
    assertThat(ignored.exitCode()).as(ignored.err()).isZero();
    assertThat(ignored.out()).containsPattern(", 0 new, [1-9]\\d* already in the cache");
    assertThat(ignored.err()).contains("(ignored: --ignore-script-errors)");
  }

  @Test
  void sigterm_isForwardedToTheWholeProcessGroup_andCapturesAreKept() throws Exception {
    signalForwarded("TERM", 143);
  }

  @Test
  void sigint_isForwardedToo() throws Exception {
    signalForwarded("INT", 130);
  }

  /**
   * A script compiles a graph, starts a grandchild ({@code sleep}), then waits. While it waits, the
   * graph must already be in the cache (ingested as it was dumped); then xlac gets the signal.
   */
  private void signalForwarded(String signal, int status) throws Exception {
    Path pidFile = work.resolve("grandchild.pid");
    Path waiter = script("wait.py", JIT_ONE + "import subprocess, time\n"
        + "p = subprocess.Popen(['sleep', '600'])\n"
        + "open(r'" + pidFile + "', 'w').write(str(p.pid))\n"
        + "print('ready', flush=True)\n"
        + "time.sleep(600)\n");
    Path out = work.resolve("dump.out");
    Path err = work.resolve("dump.err");
    ProcessBuilder pb = new ProcessBuilder(Launcher.root().resolve("xlac").toString(), "dump", "--cache",
        work.resolve("cache").toString(), "--", Launcher.python(), waiter.toString())
        .redirectOutput(out.toFile()).redirectError(err.toFile());
    pb.environment().putAll(cpu());
    Process xlac = pb.start();
    try {
      for (int i = 0; i < 600 && !(Files.exists(out) && Files.readString(out).contains("ready")); i++) {
        assertThat(xlac.isAlive()).as("xlac ended early: %s", Files.readString(err)).isTrue();
        Thread.sleep(200);
      }
      boolean listed = false;
      for (int i = 0; i < 60 && !listed; i++) {
        Launcher.Result ls = Launcher.xlac("cache", "ls", "--cache", work.resolve("cache").toString());
        listed = ls.out().contains("jit__lambda");
      }
      assertThat(listed).as("the graph reached the cache while the command still ran").isTrue();
      long grandchild = Long.parseLong(Files.readString(pidFile).trim());
      assertThat(ProcessHandle.of(grandchild)).isPresent();
      new ProcessBuilder("kill", "-" + signal, Long.toString(xlac.pid())).start().waitFor();
      assertThat(xlac.waitFor(120, TimeUnit.SECONDS)).isTrue();
      assertThat(xlac.exitValue()).as(Files.readString(err)).isEqualTo(status);
      assertThat(Files.readString(err)).contains("exited with status " + status + " after xlac forwarded SIG" + signal);
      assertThat(Files.readString(out)).containsPattern("dumped [1-9]\\d* modules? from 1 process: ");
      // The grandchild shared the command's process group, so it got the signal as well.
      for (int i = 0; i < 100 && ProcessHandle.of(grandchild).map(ProcessHandle::isAlive).orElse(false); i++) {
        Thread.sleep(100);
      }
      assertThat(ProcessHandle.of(grandchild).map(ProcessHandle::isAlive)).isNotEqualTo(java.util.Optional.of(true));
    } finally {
      xlac.destroyForcibly();
    }
  }

  @Test
  void neuronFrontend_harvestsModuleEntriesFromTheStagingCache() throws Exception {
    // A fake training command: writes what Neuron's graph extraction writes, half a file at a time.
    Path module = work.resolve("module.pb");
    Files.write(module, dev.xlac.hlo.TestModules.mulAdd(2f).toBuilder().setName("SyncTensorsGraph.9").build().toByteArray());
    Path train = script("train.sh", """
        #!/bin/sh
        set -e
        [ "$NEURON_EXTRACT_GRAPHS_ONLY" = 1 ] || { echo "not in graph extraction mode" >&2; exit 9; }
        for rank in 0 1; do
          d="$NEURON_COMPILE_CACHE_URL/neuronxcc-2.21.0/MODULE_1234567890123456789+abcdef01"
          mkdir -p "$d"
          printf '["--model-type=transformer", "-O1"]' > "$d/compile_flags.json"
          head -c 20 "$1" > "$d/model.hlo_module.pb"
          sleep 1
          cat "$1" > "$d/model.hlo_module.pb"
        done
        echo extracted
        """);
    Launcher.Result r = dump(Map.of("NEURON_COMPILE_CACHE_URL", "/var/tmp/neuron-compile-cache"),
        "--frontend", "neuron", "--", train.toString(), module.toString());
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.out()).contains("extracted" + NL)
        .contains("dumped 1 module from 1 process: 1 unique graph, 1 new, 0 already in the cache" + NL);
    assertThat(r.err()).contains("NEURON_COMPILE_CACHE_URL is /var/tmp/neuron-compile-cache");
    assertThat(Launcher.xlac("cache", "ls", "--cache", work.resolve("cache").toString()).out()).contains("SyncTensorsGraph.9");

    // The MODULE name and flags were kept beside the fingerprint: materializing writes the entry
    // back where a Neuron run looks for it, with the same names and the flags file byte for byte.
    Path neuronCache = work.resolve("neuron-cache");
    Launcher.Result m = Launcher.xlac("cache", "materialize", "--cache", work.resolve("cache").toString(),
        "--layout", "neuron", neuronCache.toString());
    assertThat(m.exitCode()).as(m.err()).isZero();
    Path entry = neuronCache.resolve("neuronxcc-2.21.0/MODULE_1234567890123456789+abcdef01");
    assertThat(entry.resolve("model.hlo_module.pb")).hasBinaryContent(Files.readAllBytes(module));
    assertThat(entry.resolve("compile_flags.json")).hasContent("[\"--model-type=transformer\", \"-O1\"]");
  }
}
