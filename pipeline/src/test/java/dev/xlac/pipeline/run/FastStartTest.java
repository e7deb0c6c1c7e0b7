package dev.xlac.pipeline.run;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.capture.CommandRunner;
import dev.xlac.capture.ProxyEnvironment;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The launch plan's environment: the fast start applies the JVM's change of the environment to an environment that
 * matches the plan only in its watched variables, so that change must not depend on any other variable.
 */
class FastStartTest {
  private static final Path PLACEHOLDER = Path.of("/stats-placeholder");

  /** The change xlac run's set-up makes to {@code user} (as {@link FastStart.Writer} computes it). */
  private static List<String> delta(Map<String, String> user) {
    ProxyEnvironment env = ProxyEnvironment.of(CommandRunner.userEnvironment(user), new ProxyEnvironment.Settings(
        Path.of("/opt/xlac/libxlac_pjrt.so"), Path.of("/opt/plugin.so"), "ab:1:2:3:4", Path.of("/c/runtime/pjrt"),
        PLACEHOLDER, null));
    return FastStart.delta(user, env.variables(), PLACEHOLDER.toString());
  }

  /** Environments with the variables the set-up reads set in the ways that change what it does. */
  private static List<Map<String, String>> userEnvironments() {
    return List.of(
        Map.of("PATH", "/usr/bin", "HOME", "/root"),
        Map.of("PATH", "/usr/bin", "PJRT_DEVICE", "TPU", "TPU_LIBRARY_PATH", "/opt/libtpu.so", "JAX_PLATFORMS", "cpu"),
        Map.of("PJRT_DEVICE", "CUDA", "PJRT_NAMES_AND_LIBRARY_PATHS", "mine:/opt/mine.so", "XLAC_PJRT_LAYOUT", "/x"),
        Map.of("XLAC_LAUNCHER_LC_ALL", "C.UTF-8", "LC_ALL", "C.UTF-8", "XLAC_USER_LC_ALL", "de_DE.UTF-8"),
        Map.of("XLAC_LAUNCHER_LC_ALL", "C.UTF-8", "LC_ALL", "C.UTF-8", "PJRT_DEVICE", "cpu"));
  }

  @Test
  void delta_doesNotChange_whenAnUnwatchedVariableDoes() {
    Map<String, String> unwatched = Map.of("SLURM_JOB_ID", "17", "TERM", "xterm", "SHLVL", "2", "OLDPWD", "/tmp",
        "CUDA_VISIBLE_DEVICES", "0", "PWD", "/elsewhere", "_", "/usr/bin/env", "XLAC_FAST_START_DEBUG", "1");
    for (Map<String, String> user : userEnvironments()) {
      assertThat(user.keySet()).allMatch(FastStart::watched);
      Map<String, String> more = new HashMap<>(user);
      more.putAll(unwatched);
      assertThat(delta(more)).as("%s", user).isEqualTo(delta(user));
      assertThat(unwatched.keySet()).noneMatch(FastStart::watched);
    }
  }

  @Test
  void delta_changes_whenAWatchedVariableDoes() {
    Map<String, String> user = new HashMap<>(Map.of("PATH", "/usr/bin"));
    List<String> plain = delta(user);
    user.put("PJRT_DEVICE", "TPU");
    user.put("TPU_LIBRARY_PATH", "/opt/libtpu.so");
    assertThat(delta(user)).isNotEqualTo(plain);
    assertThat(plain).anyMatch(l -> l.startsWith("set-stats " + FastStart.hex(ProxyEnvironment.STATS) + "\n"));
  }

  @Test
  void watched_coversEveryVariableTheRunsSetUpReads() {
    // ProxyEnvironment, TraceEnvironment.withoutLauncherLocale, RuntimeRun.pluginPath, RuntimeLibrary (the proxy's
    // directory: XDG_CACHE_HOME, HOME), CacheLocation (XLAC_CACHE_DIR), the launcher's JVM options and
    // java.io.tmpdir's sources. The cache's default directory is not among them: it is under the JVM's user.home
    // (the password entry), which the plan holds in its uid and home lines (FastStartFinishTest), not under HOME.
    assertThat(List.of("PJRT_NAMES_AND_LIBRARY_PATHS", "JAX_PLATFORMS", "PJRT_DEVICE", "TPU_LIBRARY_PATH",
        "NEURON_LIBRARY_PATH", "XPU_LIBRARY_PATH", "PJRT_LIBRARY_PATH", "XLAC_PJRT_PLUGIN", "XLAC_PJRT_LAYOUT",
        "XLAC_PJRT_STATS", "XLAC_PJRT_RECORD", "XLAC_PJRT_REAL_PLUGIN", "XLAC_PJRT_PLUGIN_SHA256",
        "XLAC_LAUNCHER_LC_ALL", "XLAC_USER_LC_ALL", "LC_ALL", "XDG_CACHE_HOME", "HOME", "XLAC_CACHE_DIR",
        "XLAC_JAVA_OPTS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS", "JAVA_HOME", "PATH",
        "JAX_COMPILER_DETAILED_LOGGING_MIN_OPS", "TMPDIR")).allMatch(FastStart::watched);
  }

  /** A map that notes every name looked up in it. */
  private static final class Recording extends HashMap<String, String> {
    final Set<String> read;

    Recording(Map<String, String> values, Set<String> read) {
      super(values);
      this.read = read;
    }

    @Override
    public String get(Object key) {
      read.add((String) key);
      return super.get(key);
    }

    @Override
    public boolean containsKey(Object key) {
      read.add((String) key);
      return super.containsKey(key);
    }

    @Override
    public String getOrDefault(Object key, String fallback) {
      read.add((String) key);
      return super.getOrDefault(key, fallback);
    }

    @Override
    public String remove(Object key) {
      read.add((String) key);
      return super.remove(key);
    }
  }

  @Test
  void watched_coversEveryNameTheSetUpLooksUp_inEachEnvironmentItBranchesOn() {
    // The names the set-up itself looks up (ProxyEnvironment, TraceEnvironment.withoutLauncherLocale,
    // RuntimeRun.pluginPath), recorded while it runs on environments that take each of its branches; the set-up
    // reads nothing else of the user's environment (it copies it whole).
    Set<String> read = new TreeSet<>();
    for (Map<String, String> user : userEnvironments()) {
      Recording env = new Recording(user, read);
      ProxyEnvironment.of(CommandRunner.userEnvironment(env), new ProxyEnvironment.Settings(
          Path.of("/opt/xlac/libxlac_pjrt.so"), Path.of("/opt/plugin.so"), "ab:1:2:3:4", Path.of("/c/runtime/pjrt"),
          PLACEHOLDER, null));
      try {
        ServedCommand.pluginPath(null, new Recording(user, read));
      } catch (dev.xlac.core.XlacException e) {
        // no plugin named in this environment: a usage error, after the names were looked up
      }
    }
    assertThat(read).as("names the set-up looked up").contains("PJRT_DEVICE", "PYTHONPATH", "XDG_CACHE_HOME", "XLAC_PJRT_PLUGIN",
        "XLAC_LAUNCHER_LC_ALL");
    assertThat(read).allMatch(FastStart::watched);
  }
}
