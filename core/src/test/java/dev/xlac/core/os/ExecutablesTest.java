package dev.xlac.core.os;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ExecutablesTest {
  @TempDir Path tmp;

  /** A file in the JVM's working directory, the directory an empty PATH entry names; removed after each test. */
  private Path inWorkingDirectory;

  @AfterEach
  void removeFromWorkingDirectory() throws IOException {
    if (inWorkingDirectory != null) {
      Files.deleteIfExists(inWorkingDirectory);
    }
  }

  private static Path executable(Path dir, String name) throws IOException {
    Path f = Files.createDirectories(dir).resolve(name);
    Files.writeString(f, "#!/bin/sh\n");
    Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rwx------"));
    return f;
  }

  /** An executable in the working directory, with a name no other directory has. */
  private String executableInWorkingDirectory() throws IOException {
    String name = ".xlac-executables-test-" + ProcessHandle.current().pid();
    inWorkingDirectory = executable(Path.of("").toAbsolutePath(), name);
    return name;
  }

  @Test
  void onPath_findsTheFirstExecutableInPathOrder() throws IOException {
    Path a = tmp.resolve("a");
    Path b = tmp.resolve("b");
    executable(a, "tool");
    executable(b, "tool");
    assertThat(Executables.onPath("tool", a + ":" + b)).contains(a.resolve("tool"));
    assertThat(Executables.onPath("tool", b + ":" + a)).contains(b.resolve("tool"));
    assertThat(Executables.onPath("other", a + ":" + b)).isEmpty();
  }

  @Test
  void onPath_passesOverDirectoriesAndFilesThatCannotBeExecuted() throws IOException {
    Path plain = Files.createDirectories(tmp.resolve("plain"));
    Files.writeString(plain.resolve("tool"), "not executable\n");
    Path dirs = Files.createDirectories(tmp.resolve("dirs").resolve("tool")).getParent();
    Path good = executable(tmp.resolve("good"), "tool");
    assertThat(Executables.onPath("tool", plain + ":" + dirs + ":" + good.getParent())).contains(good);
    assertThat(Executables.onPath("tool", plain + ":" + dirs)).isEmpty();
  }

  @Test
  void onPath_emptyEntryIsTheCurrentDirectory() throws IOException {
    String name = executableInWorkingDirectory();
    Path elsewhere = Files.createDirectories(tmp.resolve("elsewhere"));
    Path here = Path.of(".", name);
    assertThat(Executables.onPath(name, ":" + elsewhere)).as("leading").contains(here);
    assertThat(Executables.onPath(name, elsewhere + "::/nonexistent")).as("doubled").contains(here);
    assertThat(Executables.onPath(name, elsewhere + ":")).as("trailing").contains(here);
    assertThat(Executables.onPath(name, "")).as("an empty PATH").contains(here);
    assertThat(Executables.onPath(name, elsewhere.toString())).as("no empty entry").isEmpty();
  }

  @Test
  void onPath_anEarlierDirectoryWinsOverTheCurrentOne() throws IOException {
    String name = executableInWorkingDirectory();
    Path first = executable(tmp.resolve("first"), name);
    assertThat(Executables.onPath(name, first.getParent() + "::")).contains(first);
  }

  @Test
  void onPath_withoutPath_findsNothing() {
    assertThat(Executables.onPath("sh", null)).isEmpty();
    assertThat(Executables.onPath("", "/bin:/usr/bin")).isEmpty();
  }

  @Test
  void onPath_refusesAPath() {
    assertThatThrownBy(() -> Executables.onPath("bin/sh", "/")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void onPath_ofThisProcess_findsSh() {
    assertThat(Executables.onPath("sh")).hasValueSatisfying(p -> assertThat(Files.isExecutable(p)).isTrue());
  }
}
