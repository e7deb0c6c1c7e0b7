package dev.xlac.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.runtime.PluginIdentityText.Attribute;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PluginIdentityTextTest {
  private static final String SHA = "ab".repeat(32);

  @Test
  void buildsTheTextWithSortedTypedEscapedAttributes() {
    String text = PluginIdentityText.of("cpu", "v\n1", 0, 115, SHA, List.of(
        Attribute.int64("xla_version", -2), Attribute.string("b\\n", "x\ny"),
        Attribute.int64List("list", 1, 20, 0), Attribute.float32("f", 0.25f), Attribute.bool("a", false)));
    assertThat(text).isEqualTo("xlac-pjrt-plugin/1\nplatform_name=cpu\nplatform_version=v\\n1\n"
        + "api_version=0.115\nplugin_sha256=" + SHA + "\n"
        + "attribute=a=b:false\nattribute=b\\\\n=s:x\\ny\nattribute=f=f:0.25\n"
        + "attribute=list=l:1,20,0\nattribute=xla_version=i:-2\n");
    assertThat(PluginIdentityText.field(text, "platform_version")).contains("v\n1");
    assertThat(PluginIdentityText.field(text, "plugin_sha256")).contains(SHA);
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
      String c = KeyTool.run("identity", "cpu", "cpu", "0", "115", SHA, "f", "x", Float.toString(f));
      String java = PluginIdentityText.of("cpu", "cpu", 0, 115, SHA, List.of(Attribute.float32("x", f)));
      assertThat(java).as("float %s", f).isEqualTo(c);
    }
    String c = KeyTool.run("identity", "cpu", "some\\version", "0", "94", SHA, "l", "stablehlo_current_version",
        "1,20,0", "i", "xla_version", "2", "s", "zeta", "a\nb", "b", "bool", "true", "s", "émoji", "ü");
    String java = PluginIdentityText.of("cpu", "some\\version", 0, 94, SHA, List.of(
        Attribute.int64List("stablehlo_current_version", 1, 20, 0), Attribute.int64("xla_version", 2),
        Attribute.string("zeta", "a\nb"), Attribute.bool("bool", true), Attribute.string("émoji", "ü")));
    assertThat(java).isEqualTo(c);
  }

  @Test
  void sha256EnvNamesTheFilesStat(@TempDir Path dir) throws Exception {
    Path f = Files.writeString(dir.resolve("plugin.so"), "plugin");
    String env = PluginIdentityText.sha256Env(f, SHA.toUpperCase());
    PosixFileAttributes a = Files.readAttributes(f, PosixFileAttributes.class);
    assertThat(env).isEqualTo(SHA + ":6:" + a.lastModifiedTime().to(TimeUnit.NANOSECONDS) + ":"
        + Files.getAttribute(f, "unix:dev") + ":" + Files.getAttribute(f, "unix:ino"));
  }
}
