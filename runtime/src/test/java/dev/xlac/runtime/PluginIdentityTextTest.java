package dev.xlac.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.runtime.PluginIdentityText.Attribute;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PluginIdentityTextTest {
  private static final String SHA = "ab".repeat(32);

  @Test
  void buildsTheTextWithSortedTypedEscapedAttributes() {
    String text = PluginIdentityText.of("c\0pu", "v\n1", 0, 115, SHA, List.of("b", "a\0z", "b"),
        "host_cpu=x\ncpu_features=y\n", "--xla_cpu_enable_fast_math=true", "", List.of(
        Attribute.int64("xla_version", -2), Attribute.string("b\\n", "x\ny"),
        Attribute.int64List("list", 1, 20, 0), Attribute.float32("f", 0.25f), Attribute.bool("a", false)));
    assertThat(text).isEqualTo("xlac-pjrt-plugin/3\nplatform_name=c\\0pu\nplatform_version=v\\n1\n"
        + "api_version=0.115\nplugin_sha256=" + SHA + "\n"
        + "device_kind=a\\0z\ndevice_kind=b\nhost_cpu=x\ncpu_features=y\n"
        + "xla_flags=--xla_cpu_enable_fast_math=true\nlibtpu_init_args=\n"
        + "attribute=a=b:false\nattribute=b\\\\n=s:x\\ny\nattribute=f=f:0.25\n"
        + "attribute=list=l:1,20,0\nattribute=xla_version=i:-2\n");
    assertThat(PluginIdentityText.field(text, "platform_name")).contains("c\0pu");
    assertThat(PluginIdentityText.field(text, "platform_version")).contains("v\n1");
    assertThat(PluginIdentityText.field(text, "plugin_sha256")).contains(SHA);
    assertThat(PluginIdentityText.field(text, "xla_flags")).contains("--xla_cpu_enable_fast_math=true");
    assertThat(PluginIdentityText.field(text, "nothing")).isEmpty();
  }

  @Test
  void floatsAreWrittenAsCsPercentPoint9g() {
    assertThat(PluginIdentityText.formatFloat(0.1f)).isEqualTo("0.100000001");
    assertThat(PluginIdentityText.formatFloat(1.5f)).isEqualTo("1.5");
    assertThat(PluginIdentityText.formatFloat(1e10f)).isEqualTo("1e+10");
    assertThat(PluginIdentityText.formatFloat(1.5e-5f)).isEqualTo("1.49999996e-05");
    assertThat(PluginIdentityText.formatFloat(123456789f)).isEqualTo("123456792");
    assertThat(PluginIdentityText.formatFloat(-0f)).isEqualTo("-0");
    assertThat(PluginIdentityText.formatFloat(Float.POSITIVE_INFINITY)).isEqualTo("inf");
  }

  @Test
  void javaTextEqualsTheProxys(@TempDir Path dir) throws Exception {
    float[] floats = {0.1f, 1.5f, 1e10f, 1.5e-5f, 123456789f, 0.0001f, 1e9f, 999999999f, 3.4028235e38f,
        1.4e-45f, -2.5f, 0f};
    for (float f : floats) {
      String c = KeyTool.run("identity", "cpu", "cpu", "0", "115", SHA, "", "", "1", "cpu", "f", "x",
          Float.toString(f));
      String java = PluginIdentityText.of("cpu", "cpu", 0, 115, SHA, List.of("cpu"),
          PluginIdentityText.hostCpuLines("cpu"), "", "", List.of(Attribute.float32("x", f)));
      assertThat(java).as("float %s", f).isEqualTo(c);
    }
    // a NUL (passed to the tool as hex:), device kinds in any order, both environment lines
    String c = KeyTool.run("identity", "hex:63007075", "some\\version", "0", "94", SHA,
        "--xla_force_host_platform_device_count=4 --a=\"b c\"", "--tpu\\x", "4", "gpu b", "gpu a", "gpu b", "gpu a",
        "l", "stablehlo_current_version",
        "1,20,0", "i", "xla_version", "2", "s", "zeta", "a\nb", "b", "bool", "true", "s", "émoji", "ü");
    String java = PluginIdentityText.of("c\0pu", "some\\version", 0, 94, SHA,
        List.of("gpu a", "gpu b", "gpu a", "gpu b"), "", "--xla_force_host_platform_device_count=4 --a=\"b c\"",
        "--tpu\\x", List.of(
        Attribute.int64List("stablehlo_current_version", 1, 20, 0), Attribute.int64("xla_version", 2),
        Attribute.string("zeta", "a\nb"), Attribute.bool("bool", true), Attribute.string("émoji", "ü")));
    assertThat(java).isEqualTo(c);
  }

  @Test
  void sha256EnvIsWhatTheProxyTrustsAndOnlyForThatFile(@TempDir Path dir) throws Exception {
    Path f = Files.writeString(dir.resolve("plugin.so"), "plugin");
    String env = PluginIdentityText.sha256Env(f, SHA.toUpperCase());
    assertThat(env).startsWith(SHA + ":");
    // the C side's own stat of the file, and its own check of the value
    String[] c = KeyTool.run("stat", f.toString(), env).split("\n");
    assertThat(env).isEqualTo(SHA + ":" + c[0]);
    assertThat(c[1]).isEqualTo("match");
    Files.setLastModifiedTime(f, FileTime.fromMillis(Files.getLastModifiedTime(f).toMillis() - 5000));
    assertThat(KeyTool.run("stat", f.toString(), env).split("\n")[1]).as("a changed file").isEqualTo("mismatch");
    Path other = Files.writeString(dir.resolve("other.so"), "plugin");
    assertThat(KeyTool.run("stat", other.toString(), PluginIdentityText.sha256Env(f, SHA)).split("\n")[1])
        .as("another file (another inode)").isEqualTo("mismatch");
  }

  @Test
  void hostCpuLines_areTheProxysForACpuPlugin_andNoneForAnother() throws Exception {
    String lines = PluginIdentityText.hostCpuLines("cpu");
    assertThat(lines).isEqualTo(KeyTool.run("host-cpu")).matches("host_cpu=[^\n]+\ncpu_features=[^\n]+\n");
    assertThat(PluginIdentityText.hostCpuLines("cuda")).isEmpty();
  }

  @Test
  void keyedXlaFlags_leaveOutDumpOnlyFlags_keepTheRestInOrder() {
    assertThat(PluginIdentityText.keyedXlaFlags(
        " --xla_dump_to=/tmp/d\t--xla_cpu_enable_fast_math=false --xla_dump_hlo_as_proto\n-xla_backend_optimization_level=1 "))
        .isEqualTo("--xla_cpu_enable_fast_math=false -xla_backend_optimization_level=1");
    assertThat(PluginIdentityText.keyedXlaFlags("--xla_dump_to=/x --xla_force_host_platform_device_count=8")).isEmpty();
    assertThat(PluginIdentityText.keyedXlaFlags(null)).isEmpty();
    assertThat(PluginIdentityText.keyedXlaFlags("")).isEmpty();
    // a flag that merely starts like a dropped one is kept
    assertThat(PluginIdentityText.keyedXlaFlags("--xla_dumpling=1 --xla_gpu_cuda_data_dir_extra=2"))
        .isEqualTo("--xla_dumpling=1 --xla_gpu_cuda_data_dir_extra=2");
  }

  @Test
  void quotedXlaFlagsValues_keepTheirSpaces_soOtherValuesGetOtherKeys() {
    assertThat(PluginIdentityText.keyedXlaFlags("--f=\"a  b\"")).isEqualTo("--f=a\\s\\sb")
        .isNotEqualTo(PluginIdentityText.keyedXlaFlags("--f=\"a b\""));
    // the quotes are XLA's syntax, not the value: quoted or not, one flag
    assertThat(PluginIdentityText.keyedXlaFlags("--f='ab'")).isEqualTo(PluginIdentityText.keyedXlaFlags("--f=ab"));
    // one word with a space is not two words
    assertThat(PluginIdentityText.keyedXlaFlags("--f=\"a --g=1\"")).isNotEqualTo(
        PluginIdentityText.keyedXlaFlags("--f=a --g=1"));
  }

  @Test
  void droppedDumpWord_isNeverFoundInsideAQuotedValue() {
    assertThat(PluginIdentityText.keyedXlaFlags("--f=\"x --xla_dump_to=y\" --xla_dump_to=/d"))
        .isEqualTo("--f=x\\s--xla_dump_to=y")
        .isNotEqualTo(PluginIdentityText.keyedXlaFlags("--f=\"x --xla_dump_to=z\""));
  }

  @Test
  void xlaFlagsNamingAFile_keyTheFlagsInTheFile(@TempDir Path dir) throws Exception {
    Path file = Files.writeString(dir.resolve("flags"), "--xla_backend_optimization_level=2\n--xla_dump_to=/d\n");
    String keyed = PluginIdentityText.keyedXlaFlags(file.toString());
    assertThat(keyed).isEqualTo(PluginIdentityText.keyedXlaFlags("--xla_backend_optimization_level=2"));
    Files.writeString(file, "--xla_backend_optimization_level=1\n");
    assertThat(PluginIdentityText.keyedXlaFlags(file.toString())).as("an edited file").isNotEqualTo(keyed);
    assertThat(PluginIdentityText.keyedXlaFlags(dir.resolve("missing").toString()))
        .startsWith("?unreadable flags file ");
  }

  @Test
  void xlaFlagsNamingAPipe_isNotRead_andKeysForThisProcessOnly(@TempDir Path dir) throws Exception {
    Path fifo = dir.resolve("fifo");
    assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();
    String keyed = PluginIdentityText.keyedXlaFlags(fifo.toString()); // returns: nothing opened it to read
    assertThat(keyed).startsWith("?flags file that is not a regular file " + fifo + " not read, keyed for process ")
        .isNotEqualTo(PluginIdentityText.keyedXlaFlags(fifo.toString()));
    assertThat(KeyTool.run("xla-flags", fifo.toString())).startsWith("?flags file that is not a regular file "
        + fifo + " not read, keyed for process ").isNotEqualTo(KeyTool.run("xla-flags", fifo.toString()));
  }

  @Test
  void keyedXlaFlags_areTheProxys(@TempDir Path dir) throws Exception {
    Path file = Files.writeString(dir.resolve("flags"), "  --a=\"x\\\"y\"\t--b='p\\ q'\r\n--c=1 stop --d=2\n");
    Path nul = Files.write(dir.resolve("nul"), "--n=a\0b --m=\0q r\0 --o=1".getBytes(StandardCharsets.UTF_8));
    for (String value : List.of(nul.toString(), " --xla_dump_to=/tmp/d\t--a=1 --b=\"c  d\" -e='f --xla_dump_to=g' --h=\"i\\\"j\\\\k\" word --l=1",
        "--f=\"unterminated value", "--f=\"a\"b --g=1", "--f=é\\ü", "-", "  \n", file.toString(),
        dir.resolve("missing").toString())) {
      assertThat(PluginIdentityText.keyedXlaFlags(value) + "\n").as(value).isEqualTo(KeyTool.run("xla-flags", value));
    }
  }

  @Test
  void differingLines_nameEachLineByItsName_attributesByTheirs() {
    String a = PluginIdentityText.of("cpu", "cpu", 0, 81, "a".repeat(64), java.util.List.of("cpu"), "", "--xla_a=1", "",
        java.util.List.of(Attribute.int64("xla_version", 2), Attribute.string("stablehlo_current_version", "1")));
    String b = PluginIdentityText.of("cpu", "cpu", 0, 81, "b".repeat(64), java.util.List.of("cpu"), "", "--xla_a=2", "",
        java.util.List.of(Attribute.int64("xla_version", 3), Attribute.string("stablehlo_current_version", "1")));
    assertThat(PluginIdentityText.differingLines(a, a)).isEmpty();
    assertThat(PluginIdentityText.differingLines(a, b)).containsExactly("plugin_sha256", "xla_flags",
        "attribute xla_version");
    assertThat(PluginIdentityText.differingLines(a, a + "cpu_features=avx512f\n")).containsExactly("cpu_features");
    assertThat(PluginIdentityText.differingLines(a, a.replace("xlac-pjrt-plugin/3", "xlac-pjrt-plugin/4")))
        .containsExactly("version");
  }
}
