package dev.xlac.compiler.pjrt;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

class UserProbeDirTest {
  @Test
  void xdgCacheHome_winsOverHome() {
    assertThat(IsolatedPjrtDrivers.userProbeDir(Map.of("XDG_CACHE_HOME", "/x/cache", "HOME", "/home/u")))
        .contains(Path.of("/x/cache/xlac/probes"));
  }

  @Test
  void withoutXdg_orWithARelativeOne_homeDotCache() {
    assertThat(IsolatedPjrtDrivers.userProbeDir(Map.of("HOME", "/home/u")))
        .contains(Path.of("/home/u/.cache/xlac/probes"));
    assertThat(IsolatedPjrtDrivers.userProbeDir(Map.of("XDG_CACHE_HOME", "rel", "HOME", "/home/u")))
        .contains(Path.of("/home/u/.cache/xlac/probes"));
  }

  @Test
  void relativeHome_none() {
    assertThat(IsolatedPjrtDrivers.userProbeDir(Map.of("HOME", "rel"))).isEmpty();
  }
}
