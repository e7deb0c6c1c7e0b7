package dev.xlac.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RuntimeLibraryTest {
  private static final String ARCH = System.getProperty("os.arch");

  private static byte[] packed() throws Exception {
    try (InputStream in = RuntimeLibrary.class.getResourceAsStream("/" + RuntimeLibrary.resource("Linux", ARCH))) {
      assertThat(in).as("the build packs the proxy .so (make all, in the compile phase)").isNotNull();
      return in.readAllBytes();
    }
  }

  @Test
  void unpacksThePackedLibraryOnceIntoAContentAddressedDirectory(@TempDir Path home) throws Exception {
    Map<String, String> env = Map.of("HOME", home.toString());
    Path p = RuntimeLibrary.path(env, "Linux", ARCH, null);
    assertThat(p.getFileName().toString()).isEqualTo("libxlac_pjrt.so");
    assertThat(p.getParent().getParent()).isEqualTo(home.resolve(".cache/xlac/runtime"));
    // named by the library's SHA-256, which the build writes beside it so that a start need not hash it
    assertThat(p.getParent().getFileName().toString())
        .isEqualTo(java.util.HexFormat.of().formatHex(RequestKey.sha256().digest(packed())));
    assertThat(RuntimeLibrary.class.getResource("/" + RuntimeLibrary.resource("Linux", ARCH) + ".sha256")).isNotNull();
    assertThat(Files.readAllBytes(p)).isEqualTo(packed());
    assertThat(Files.getPosixFilePermissions(p)).contains(PosixFilePermission.OWNER_EXECUTE);
    long modified = Files.getLastModifiedTime(p).toMillis();
    Files.setLastModifiedTime(p, java.nio.file.attribute.FileTime.fromMillis(modified - 10_000));
    assertThat(RuntimeLibrary.path(env, "Linux", ARCH, null)).isEqualTo(p);
    assertThat(Files.getLastModifiedTime(p).toMillis()).as("not written again").isEqualTo(modified - 10_000);
    try (var files = Files.list(p.getParent())) {
      assertThat(files).containsExactly(p); // no temporaries left
    }
  }

  /** A nested xlac run finds the outer run's proxy where the real plugin should be (issue 22). */
  @Test
  void isProxy_knowsTheProxyLibrary_andNothingElse(@TempDir Path dir) throws Exception {
    Path proxy = Files.write(dir.resolve("libxlac_pjrt.so"), packed());
    assertThat(RuntimeLibrary.isProxy(proxy)).isTrue();
    byte[] other = packed().clone();
    for (String marker : List.of("XlacPjrt_ThisIsTheProxy", "XlacPjrt_Counters")) { // the bytes without the names
      for (int i = 0; i + marker.length() <= other.length; i++) {
        if (new String(other, i, marker.length(), java.nio.charset.StandardCharsets.ISO_8859_1).equals(marker)) {
          other[i] = 'Y';
        }
      }
    }
    assertThat(RuntimeLibrary.isProxy(Files.write(dir.resolve("plugin.so"), other))).isFalse();
    assertThat(RuntimeLibrary.isProxy(dir.resolve("absent.so"))).isFalse();
    assertThat(RuntimeLibrary.isProxy(dir)).isFalse();
  }

  @Test
  void unpackedDirectories_areTheUsersOnly_whateverTheUmask(@TempDir Path home) throws Exception {
    Path p = RuntimeLibrary.path(Map.of("HOME", home.toString()), "Linux", ARCH, null);
    assertThat(Files.getPosixFilePermissions(p.getParent())).containsExactlyInAnyOrder(PosixFilePermission.OWNER_READ,
        PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE);
  }

  @Test
  void aDamagedCopyIsReplaced(@TempDir Path home) throws Exception {
    Map<String, String> env = Map.of("XDG_CACHE_HOME", home.toString());
    Path p = RuntimeLibrary.path(env, "Linux", ARCH, null);
    assertThat(p).startsWith(home.resolve("xlac/runtime"));
    byte[] bytes = Files.readAllBytes(p);
    bytes[bytes.length / 2] ^= 1;
    Files.write(p, bytes);
    assertThat(RuntimeLibrary.path(env, "Linux", ARCH, null)).isEqualTo(p);
    assertThat(Files.readAllBytes(p)).isEqualTo(packed());
    Files.write(p, new byte[10]); // truncated
    RuntimeLibrary.path(env, "Linux", ARCH, null);
    assertThat(Files.readAllBytes(p)).isEqualTo(packed());
  }

  @Test
  void concurrentUnpacksLeaveOneWholeCopy(@TempDir Path home) throws Exception {
    Map<String, String> env = Map.of("HOME", home.toString());
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<Path>> all = new ArrayList<>();
      for (int i = 0; i < 16; i++) {
        all.add(pool.submit((Callable<Path>) () -> RuntimeLibrary.path(env, "Linux", ARCH, null)));
      }
      Path first = all.get(0).get();
      for (Future<Path> f : all) {
        assertThat(f.get()).isEqualTo(first);
      }
      assertThat(Files.readAllBytes(first)).isEqualTo(packed());
      try (var files = Files.list(first.getParent())) {
        assertThat(files).containsExactly(first);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void theEnvironmentVariableOverridesThePackedLibrary(@TempDir Path dir) throws Exception {
    Path own = Files.writeString(dir.resolve("own.so"), "x");
    assertThat(RuntimeLibrary.path(Map.of(RuntimeLibrary.ENV, own.toString()), "Linux", ARCH, null)).isEqualTo(own);
    assertThatThrownBy(() -> RuntimeLibrary.path(Map.of(RuntimeLibrary.ENV, dir.resolve("nope.so").toString()),
        "Linux", ARCH, null)).isInstanceOf(XlacException.class).hasMessageContaining("XLAC_RUNTIME_LIBRARY names")
        .satisfies(e -> assertThat(((XlacException) e).exitCode()).isEqualTo(ExitCode.ENVIRONMENT));
  }

  @Test
  void aMachineWithoutALibraryIsAnEnvironmentError(@TempDir Path home) {
    assertThatThrownBy(() -> RuntimeLibrary.path(Map.of("HOME", home.toString()), "Linux", "riscv64", null))
        .isInstanceOf(XlacException.class)
        .hasMessage("this xlac build has no PJRT runtime library for Linux on riscv64 "
            + "(dev/xlac/runtime/native/linux-riscv64/libxlac_pjrt.so is not in the runtime jar)");
    assertThat(RuntimeLibrary.resource("Linux", "amd64")).isEqualTo("dev/xlac/runtime/native/linux-x86_64/libxlac_pjrt.so");
  }
}
