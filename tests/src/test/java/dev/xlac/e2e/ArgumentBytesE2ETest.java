package dev.xlac.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.xlac.hlo.TestModules;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #10: arguments as the kernel hands them to the real launcher. Java cannot hand over bytes that are not
 * valid in its character set, so bash makes them ({@code \377} is the byte 0xff). A non-UTF-8 path used to
 * become another path silently; in the C locale no non-ASCII path worked at all.
 */
class ArgumentBytesE2ETest {
  /** For env(1): no locale variable from the test's own environment. */
  private static final String NO_LOCALE = "-u LC_ALL -u LANG -u LC_CTYPE -u LANGUAGE ";

  @TempDir
  Path dir;

  /** Runs {@code ./xlac ARGS} from bash, where {@code ARGS} is bash text (it may use $'\377'), in environment {@code env}. */
  private static Launcher.Result xlacFromBash(String env, String args) throws Exception {
    String script = "exec env " + env + " \"$0\" " + args;
    return Launcher.run(List.of("bash", "-c", script, Launcher.root().resolve("xlac").toString()), Map.of(), 300);
  }

  private List<String> namesIn(Path d) throws Exception {
    try (Stream<Path> s = Files.list(d)) {
      return s.map(p -> p.getFileName().toString()).toList();
    }
  }

  @Test
  void nonUtf8CachePath_isRefusedByPosition_andNoOtherDirectoryAppears() throws Exception {
    Launcher.Result r = xlacFromBash("", "cache stat --cache '" + dir + "/c'$'\\377'");
    assertThat(r.exitCode()).as(r.err()).isEqualTo(2);
    assertThat(r.err()).isEqualTo("xlac: argument 4 ('" + dir + "/c\\xff') is not valid UTF-8; xlac refuses it rather"
        + " than use a different name (rename it, or link to it from a valid UTF-8 name)\n");
    assertThat(namesIn(dir)).isEmpty();
  }

  @Test
  void nonUtf8FileArgument_isRefused_notReportedMissing() throws Exception {
    Launcher.Result r = xlacFromBash("", "hash '" + dir + "/m'$'\\351''.pb'");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith("xlac: argument 2 ('" + dir + "/m\\xe9.pb') is not valid UTF-8;")
        .doesNotContain("no such file");
  }

  @Test
  void nonUtf8ArgumentOfTheCommandToRun_isRefused_andTheCommandDoesNotRun() throws Exception {
    Path marker = dir.resolve("ran");
    Launcher.Result r = xlacFromBash("", "dump --cache '" + dir + "/cache' -- sh -c 'touch \"$0\"' '" + marker
        + "' $'caf\\351'");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).isEqualTo("xlac: argument 9 ('caf\\xe9'), part of the command to run, is not valid UTF-8; xlac"
        + " could not pass it on to the command unchanged\n");
    assertThat(marker).doesNotExist();
  }

  /** In the C locale the JVM decodes every non-ASCII byte as '?': the launcher runs it in C.UTF-8. */
  @Test
  void cLocale_validUtf8Path_worksEndToEnd() throws Exception {
    assumeTrue(utf8Jvm(), "this test JVM must name files in UTF-8 to look for the directory");
    Path dumps = dir.resolve("dumps");
    TestModules.writeDump(dumps, "module_0001.jit_step.before_optimizations.hlo.pb", TestModules.mulAdd(1f, 1, "", 1));
    Path cache = dir.resolve("caché ü");
    for (String locale : new String[] {"LANG=C", "LC_ALL=C", "LANG=POSIX LC_CTYPE=en_US.UTF-8", ""}) {
      String env = NO_LOCALE + locale;
      Launcher.Result add = xlacFromBash(env, "cache add --cache '" + cache + "' '" + dumps + "'");
      assertThat(add.exitCode()).as(env + ": " + add.err()).isZero();
      Launcher.Result ls = xlacFromBash(env, "cache ls --cache '" + cache + "'");
      assertThat(ls.exitCode()).as(env + ": " + ls.err()).isZero();
      assertThat(ls.out()).as(env).contains("jit_step");
    }
    assertThat(namesIn(dir)).containsExactlyInAnyOrder("dumps", "caché ü");
  }

  /** The command xlac runs gets the user's own locale and the environment's bytes as they were. */
  @Test
  void cLocale_theCommandToRun_keepsTheUsersLocale_andItsEnvironmentsBytes() throws Exception {
    String child = "sh -c 'echo \"LC_ALL=${LC_ALL-unset} LANG=${LANG-unset} markers=$(env | grep -c ^XLAC_.*LC_ALL)\";"
        + " printf %s \"$X\" | od -An -tx1'";
    List<String> seen = new ArrayList<>();
    for (String locale : new String[] {"LANG=C", "LC_ALL=C", "LC_ALL=C.UTF-8"}) {
      Launcher.Result r = xlacFromBash(NO_LOCALE + locale + " X=$'a\\377b'", "dump --cache '" + dir + "/cache' -- " + child);
      assertThat(r.exitCode()).as(r.err()).isEqualTo(1); // it dumped no graph
      seen.add(r.out().lines().limit(2).map(String::strip).reduce((a, b) -> a + " | " + b).orElse(""));
    }
    assertThat(seen).containsExactly(
        "LC_ALL=unset LANG=C markers=0 | 61 ff 62",
        "LC_ALL=C LANG=unset markers=0 | 61 ff 62",
        "LC_ALL=C.UTF-8 LANG=unset markers=0 | 61 ff 62");
  }

  private static boolean utf8Jvm() {
    return StandardCharsets.UTF_8.name().equals(System.getProperty("sun.jnu.encoding"));
  }
}
