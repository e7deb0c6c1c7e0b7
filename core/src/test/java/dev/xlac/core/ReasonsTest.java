package dev.xlac.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.ClosedChannelException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link XlacException#reason}: words for every failure, never a class name or a bare path. */
class ReasonsTest {
  @TempDir
  Path tmp;

  /** Issue #10: "cannot write bundle X: /nonexistent/dir/.out.tar.zst.tmp-N" gave a path as the reason. */
  @Test
  void noSuchFile_inAMissingDirectory_namesTheMissingDirectory_notJustThePath() {
    Path file = tmp.resolve("nonexistent/dir/.out.tar.zst.tmp-1");
    Throwable e = catchThrowable(() -> Files.newOutputStream(file));
    assertThat(XlacException.reason(e)).isEqualTo("directory " + tmp.resolve("nonexistent") + " does not exist");
  }

  @Test
  void noSuchFile_inAnExistingDirectory_isNoSuchFileOrDirectory() {
    Throwable e = catchThrowable(() -> Files.readAllBytes(tmp.resolve("absent")));
    assertThat(XlacException.reason(e)).isEqualTo("no such file or directory");
  }

  /** Issue #10: "cannot create the lock file .../regfile/lock: .../regfile" for a --cache that is a regular file. */
  @Test
  void createDirectories_ofARegularFile_saysItExistsAndIsNotADirectory() throws IOException {
    Path file = Files.writeString(tmp.resolve("regfile"), "x");
    Throwable e = catchThrowable(() -> Files.createDirectories(file));
    assertThat(XlacException.reason(e)).isEqualTo(file + " exists and is not a directory");
  }

  @Test
  void createDirectories_belowARegularFile_namesTheFileInTheWay() throws IOException {
    Path file = Files.writeString(tmp.resolve("regfile"), "x");
    Throwable e = catchThrowable(() -> Files.createDirectories(file.resolve("sub/deeper")));
    assertThat(XlacException.reason(e)).isEqualTo(file + " is not a directory");
  }

  @Test
  void openingAFileBelowARegularFile_namesTheFileInTheWay() throws IOException {
    Path file = Files.writeString(tmp.resolve("regfile"), "x");
    Throwable e = catchThrowable(() -> Files.newOutputStream(file.resolve("lock")));
    assertThat(XlacException.reason(e)).isEqualTo(file + " is not a directory");
  }

  @Test
  void fileSystemExceptions_areWordedByTypeOrSystemReason() {
    assertThat(XlacException.reason(new AccessDeniedException("/x/lock"))).isEqualTo("permission denied");
    assertThat(XlacException.reason(new FileSystemException("/x/lock", null, "Read-only file system")))
        .isEqualTo("read-only file system");
    assertThat(XlacException.reason(new FileSystemException("/x/lock", null, "No space left on device")))
        .isEqualTo("no space left on device");
    assertThat(XlacException.reason(new FileSystemException("/x/lock", null, "Some new failure")))
        .isEqualTo("some new failure");
    assertThat(XlacException.reason(new FileSystemException("/x/lock"))).isEqualTo("file system error");
  }

  @Test
  void plainIoExceptions_withTheSystemsText_areWordedInTheHouseStyle_othersKeepTheirMessage() {
    assertThat(XlacException.reason(new IOException("No space left on device"))).isEqualTo("no space left on device");
    assertThat(XlacException.reason(new IOException("Unknown frame descriptor"))).isEqualTo("Unknown frame descriptor");
  }

  @Test
  void noMessage_givesWords_neverAClassName() {
    assertThat(XlacException.reason(new EOFException())).isEqualTo("unexpected end of file");
    assertThat(XlacException.reason(new ClosedChannelException())).isEqualTo("the file was closed");
    assertThat(XlacException.reason(new IllegalStateException())).isEqualTo("illegal state");
    assertThat(XlacException.reason(new java.nio.BufferOverflowException())).isEqualTo("buffer overflow");
  }

  @Test
  void wrappers_areLookedThrough() {
    IOException cause = new AccessDeniedException("/x");
    assertThat(XlacException.reason(new UncheckedIOException(cause))).isEqualTo("permission denied");
    assertThat(XlacException.reason(new RuntimeException(cause))).isEqualTo("permission denied");
    assertThat(XlacException.reason(new ExecutionException(cause))).isEqualTo("permission denied");
    assertThat(XlacException.reason(new XlacException(ExitCode.ENVIRONMENT, "own words", cause))).isEqualTo("own words");
  }
}
