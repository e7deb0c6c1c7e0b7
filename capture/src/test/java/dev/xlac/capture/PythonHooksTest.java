package dev.xlac.capture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Python hooks' directory: stable, private, and holding exactly the packed files whatever was there. */
class PythonHooksTest {
  @TempDir
  Path tmp;

  @Test
  void theHooks_areUnpackedOnce_private_andTheSameDirectoryEachTime() throws Exception {
    Path dir = PythonHooks.directory(Map.of("XDG_CACHE_HOME", tmp.toString()));
    assertThat(dir.getParent()).isEqualTo(tmp.resolve("xlac/python"));
    assertThat(dir.getFileName().toString()).matches("[0-9a-f]{64}");
    assertThat(Files.readString(dir.resolve("sitecustomize.py"))).contains("_xlac_jax");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir))).isEqualTo("rwx------");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("_xlac_jax.py"))))
        .isEqualTo("rw-------");
    long modified = Files.getLastModifiedTime(dir.resolve("_xlac_jax.py")).toMillis();
    Thread.sleep(20);
    assertThat(PythonHooks.directory(Map.of("XDG_CACHE_HOME", tmp.toString()))).isEqualTo(dir);
    assertThat(Files.getLastModifiedTime(dir.resolve("_xlac_jax.py")).toMillis()).as("not rewritten")
        .isEqualTo(modified);
  }

  @Test
  void aChangedFile_orALinkInItsPlace_isReplacedByThePackedOne() throws Exception {
    Path dir = PythonHooks.directory(Map.of("XDG_CACHE_HOME", tmp.toString()));
    String jax = Files.readString(dir.resolve("_xlac_jax.py"));
    Files.writeString(dir.resolve("_xlac_jax.py"), "import os; os.system('echo owned')\n");
    Path elsewhere = Files.writeString(tmp.resolve("elsewhere.py"), "print('not xlac')\n");
    Files.delete(dir.resolve("sitecustomize.py"));
    Files.createSymbolicLink(dir.resolve("sitecustomize.py"), elsewhere);

    PythonHooks.directory(Map.of("XDG_CACHE_HOME", tmp.toString()));

    assertThat(Files.readString(dir.resolve("_xlac_jax.py"))).isEqualTo(jax);
    assertThat(dir.resolve("sitecustomize.py")).isRegularFile().isNotEqualTo(elsewhere);
    assertThat(Files.isSymbolicLink(dir.resolve("sitecustomize.py"))).isFalse();
    assertThat(Files.readString(elsewhere)).as("the link's target is left alone").isEqualTo("print('not xlac')\n");
  }

  /**
   * xlac dump wrote its sitecustomize into a temporary directory of its own, so a read-only home was no obstacle;
   * the shared hooks then go under the temporary directory, in this user's own directory there.
   */
  @Test
  void noWritableUserCacheDirectory_theHooksGoUnderTheTemporaryDirectory_thisUsersOwn() throws Exception {
    // A cache root that cannot be made (a file is in its way): unwritable even for root, as a read-only home is.
    Path readOnly = Files.writeString(tmp.resolve("ro"), "a file");
    String temp = System.getProperty("java.io.tmpdir");
    try {
      System.setProperty("java.io.tmpdir", Files.createDirectories(tmp.resolve("t")).toString());
      Path dir = PythonHooks.directory(Map.of("XDG_CACHE_HOME", readOnly.toString()));
      assertThat(dir.getParent().getParent()).isEqualTo(tmp.resolve("t"));
      assertThat(dir.getParent().getFileName().toString()).startsWith("xlac-python-");
      assertThat(dir.resolve("sitecustomize.py")).isRegularFile();
      Path other = dir.getParent();
      Files.setPosixFilePermissions(other, PosixFilePermissions.fromString("rwxrwxrwx"));
      assertThatThrownBy(() -> PythonHooks.directory(Map.of("XDG_CACHE_HOME", readOnly.toString())))
          .isInstanceOfSatisfying(XlacException.class, x -> assertThat(x.exitCode()).isEqualTo(ExitCode.ENVIRONMENT))
          .hasMessageContaining("can be written by other users").hasMessageContaining("set XDG_CACHE_HOME");
    } finally {
      System.setProperty("java.io.tmpdir", temp);
    }
  }

  @Test
  void aHooksPathWithThePathSeparator_isAnEnvironmentError_inWords() {
    assertThatThrownBy(() -> PythonHooks.firstOn("/src", Map.of("XDG_CACHE_HOME", tmp.resolve("a:b").toString())))
        .isInstanceOfSatisfying(XlacException.class, x -> assertThat(x.exitCode()).isEqualTo(ExitCode.ENVIRONMENT))
        .hasMessageContaining("holds ':'");
  }

  /** A traced command that records gets the hooks from the trace and again from the proxy: once on the path. */
  @Test
  void firstOn_putsTheHooksFirst_once() {
    Map<String, String> env = Map.of("XDG_CACHE_HOME", tmp.toString());
    String hooks = PythonHooks.directory(env).toString();
    assertThat(PythonHooks.firstOn(null, env)).isEqualTo(hooks);
    assertThat(PythonHooks.firstOn("", env)).isEqualTo(hooks);
    assertThat(PythonHooks.firstOn("/src", env)).isEqualTo(hooks + ":/src");
    assertThat(PythonHooks.firstOn(PythonHooks.firstOn("/src", env), env)).isEqualTo(hooks + ":/src");
    assertThat(PythonHooks.firstOn(hooks + "-not:/src", env)).isEqualTo(hooks + ":" + hooks + "-not:/src");
  }
}
