package dev.xlac.capture;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The traced command gets the user's own locale, whatever the ./xlac launcher set for the JVM. */
class TraceEnvironmentTest {
  @TempDir
  Path tmp;

  @Test
  void launcherLocale_isUndone_userHadNoLcAll() {
    Map<String, String> jvm = Map.of("LANG", "C", "LC_ALL", "C.UTF-8", "XLAC_LAUNCHER_LC_ALL", "C.UTF-8", "PATH", "/bin");
    assertThat(TraceEnvironment.withoutLauncherLocale(jvm)).isEqualTo(Map.of("LANG", "C", "PATH", "/bin"));
  }

  @Test
  void launcherLocale_isUndone_userHadLcAll() {
    Map<String, String> jvm = Map.of("LC_ALL", "C.UTF-8", "XLAC_LAUNCHER_LC_ALL", "C.UTF-8", "XLAC_USER_LC_ALL", "POSIX");
    assertThat(TraceEnvironment.withoutLauncherLocale(jvm)).isEqualTo(Map.of("LC_ALL", "POSIX"));
    Map<String, String> empty = Map.of("LC_ALL", "C.UTF-8", "XLAC_LAUNCHER_LC_ALL", "C.UTF-8", "XLAC_USER_LC_ALL", "");
    assertThat(TraceEnvironment.withoutLauncherLocale(empty)).isEqualTo(Map.of("LC_ALL", ""));
  }

  @Test
  void withoutTheLaunchersMarker_theEnvironmentIsTheUsers() {
    Map<String, String> user = Map.of("LC_ALL", "C.UTF-8", "XLAC_USER_LC_ALL", "kept: not the launcher's");
    assertThat(TraceEnvironment.withoutLauncherLocale(user)).isSameAs(user);
  }

  @Test
  void theTracedCommandsEnvironment_hasTheUsersLocale() {
    Map<String, String> jvm = Map.of("LC_ALL", "C.UTF-8", "XLAC_LAUNCHER_LC_ALL", "C.UTF-8", "XLAC_USER_LC_ALL", "C");
    TraceEnvironment env = TraceEnvironment.of(Frontend.JAX, jvm, tmp.resolve("staging"));
    assertThat(env.variables()).containsEntry("LC_ALL", "C").doesNotContainKeys("XLAC_LAUNCHER_LC_ALL", "XLAC_USER_LC_ALL");
  }
}
