package dev.xlac.compiler.pjrt;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The identity-text records of {@link IsolatedPjrtDrivers}: the text a driver's facts gave, kept per plugin file,
 * caller's context, machine and boot, and the devices' environment, and read without loading the plugin.
 */
class IdentityTextRecordTest {
  @TempDir
  Path temp;

  private static final String TEXT = "xlac-pjrt-plugin/2\nplatform_name=cpu\nplatform_version=0.0.1\n"
      + "host_cpu=GenuineIntel 6/85\nattribute=name=s:tab\there\n";

  private IsolatedPjrtDrivers drivers(Path plugin, Path... probeDirs) {
    return new IsolatedPjrtDrivers(plugin, Map.of(), PjrtCompileOptions.DEFAULT, Duration.ofMinutes(1),
        List.of(probeDirs));
  }

  private static Path onlyRecord(Path dir) throws Exception {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().endsWith(".identity-text")).findFirst().orElseThrow();
    }
  }

  @Test
  void aRememberedText_isReadForTheSameContext_inEveryProbeDirectory_withoutLoadingThePlugin() throws Exception {
    Path plugin = Files.writeString(temp.resolve("plugin.so"), "not a shared library: loading it would fail\n");
    Path cacheProbes = temp.resolve("cache/probes");
    Path userProbes = temp.resolve("user/probes");
    try (IsolatedPjrtDrivers d = drivers(plugin, cacheProbes, userProbes)) {
      assertThat(d.rememberedIdentityText("flags A")).isEmpty();
      d.rememberIdentityText("flags A", TEXT);
    }
    try (IsolatedPjrtDrivers d = drivers(plugin, cacheProbes, userProbes)) {
      assertThat(d.rememberedIdentityText("flags A")).contains(TEXT);
      assertThat(d.rememberedIdentityText("flags B")).as("another context").isEmpty();
    }
    // A new cache learns it from the user's directory.
    try (IsolatedPjrtDrivers d = drivers(plugin, temp.resolve("new/probes"), userProbes)) {
      assertThat(d.rememberedIdentityText("flags A")).contains(TEXT);
    }
    // The plugin file replaced: another key, so the text is asked again.
    Files.writeString(plugin, "another build of the plugin\n");
    try (IsolatedPjrtDrivers d = drivers(plugin, cacheProbes, userProbes)) {
      assertThat(d.rememberedIdentityText("flags A")).isEmpty();
    }
  }

  @Test
  void aDamagedTruncatedLinkedOrHugeRecord_isNoRecord() throws Exception {
    Path plugin = Files.writeString(temp.resolve("plugin.so"), "x\n");
    Path probes = temp.resolve("probes");
    drivers(plugin, probes).rememberIdentityText("", TEXT);
    Path record = onlyRecord(probes);
    byte[] good = Files.readAllBytes(record);

    byte[] flipped = good.clone();
    flipped[flipped.length - 3] ^= 0x01; // a payload byte: its SHA-256 no longer matches
    Files.write(record, flipped);
    assertThat(drivers(plugin, probes).rememberedIdentityText("")).isEmpty();

    Files.write(record, java.util.Arrays.copyOf(good, good.length - 5));
    assertThat(drivers(plugin, probes).rememberedIdentityText("")).isEmpty();

    Path elsewhere = Files.write(temp.resolve("elsewhere"), good);
    Files.delete(record);
    Files.createSymbolicLink(record, elsewhere);
    assertThat(drivers(plugin, probes).rememberedIdentityText("")).isEmpty();

    Files.delete(record);
    try (var f = new java.io.RandomAccessFile(record.toFile(), "rw")) {
      f.setLength(2L << 20);
    }
    assertThat(drivers(plugin, probes).rememberedIdentityText("")).isEmpty();

    Files.write(record, good);
    assertThat(drivers(plugin, probes).rememberedIdentityText("")).contains(TEXT);
  }

  @Test
  void theKey_changesWithTheDevicesEnvironmentAndTheMachine_notWithTheRestOfTheEnvironment() {
    Map<String, String> env = new HashMap<>(Map.of("PATH", "/usr/bin", "PWD", "/a", "CUDA_VISIBLE_DEVICES", "0,1"));
    List<String> machine = List.of("machine-id=m", "boot-id=b", "host=h");
    String key = IsolatedPjrtDrivers.textKey("probe", env, machine);

    Map<String, String> moved = new HashMap<>(env);
    moved.put("PWD", "/b");
    moved.put("GITHUB_RUN_ID", "42");
    moved.put("XLAC_JAVA_OPTS", "-Xlog:class+load"); // xlac's own settings hold "XLA" too
    assertThat(IsolatedPjrtDrivers.textKey("probe", moved, machine)).isEqualTo(key);

    for (var change : List.of(Map.entry("CUDA_VISIBLE_DEVICES", "0"), Map.entry("TPU_VISIBLE_CHIPS", "0"),
        Map.entry("NEURON_RT_VISIBLE_CORES", "0-1"), Map.entry("LD_LIBRARY_PATH", "/opt/lib"),
        Map.entry("XLA_FLAGS", "--xla_force_host_platform_device_count=8"), Map.entry("PJRT_DEVICE", "CPU"),
        Map.entry("ZE_AFFINITY_MASK", "0"), Map.entry("HSA_OVERRIDE_GFX_VERSION", "11.0.0"),
        Map.entry("XLAC_RUNTIME_LIBRARY", "/opt/libxlac_pjrt.so"))) {
      Map<String, String> other = new HashMap<>(env);
      other.put(change.getKey(), change.getValue());
      assertThat(IsolatedPjrtDrivers.textKey("probe", other, machine)).as(change.getKey()).isNotEqualTo(key);
    }
    assertThat(IsolatedPjrtDrivers.textKey("probe", env, List.of("machine-id=m", "boot-id=c", "host=h")))
        .as("another boot").isNotEqualTo(key);
    assertThat(IsolatedPjrtDrivers.textKey("other plugin", env, machine)).isNotEqualTo(key);
    assertThat(IsolatedPjrtDrivers.machine()).hasSize(3);
    assertThat(IsolatedPjrtDrivers.machine().get(1)).startsWith("boot-id=");
    if (Files.isReadable(Path.of("/proc/sys/kernel/random/boot_id"))) {
      assertThat(IsolatedPjrtDrivers.machine().get(1)).isNotEqualTo("boot-id=");
    }
  }
}
