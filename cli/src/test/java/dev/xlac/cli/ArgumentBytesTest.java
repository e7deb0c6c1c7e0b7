package dev.xlac.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.xlac.core.os.ProcessBytes;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #10: an argument that Java's string does not stand for faithfully (not valid UTF-8) is refused by its
 * position, with its bytes escaped, never used as another name. The CLI runs in-process with the bytes the
 * kernel would have passed and the strings the JVM would have made of them.
 */
class ArgumentBytesTest {
  @TempDir
  Path tmp;

  /** Issue #10: a non-UTF-8 --cache path silently became a different directory. */
  @Test
  void nonUtf8CachePath_isRefusedByPosition_withItsBytesEscaped_andNothingIsCreated() {
    byte[] dir = concat(tmp.toString().getBytes(StandardCharsets.UTF_8), new byte[] {'/', 'c', (byte) 0xff});
    Run r = runRaw(bytes("cache"), bytes("stat"), bytes("--cache"), dir);
    assertThat(r.code).isEqualTo(2);
    assertThat(r.err).isEqualTo("xlac: argument 4 ('" + tmp + "/c\\xff') is not valid UTF-8; xlac refuses it rather"
        + " than use a different name (rename it, or link to it from a valid UTF-8 name)\n");
    assertThat(tmp.resolve("c\uFFFD")).doesNotExist();
  }

  /** Issue #10: a non-UTF-8 file named on the command line read as "no such file". */
  @Test
  void nonUtf8FileArgument_isRefused_notReportedMissing() {
    Run r = runRaw(bytes("hash"), new byte[] {'m', (byte) 0xe9, '.', 'p', 'b'});
    assertThat(r.code).isEqualTo(2);
    assertThat(r.err).startsWith("xlac: argument 2 ('m\\xe9.pb') is not valid UTF-8;").doesNotContain("no such file");
  }

  @Test
  void nonUtf8ArgumentOfTheCommandToRun_isRefused_becauseItCouldNotBePassedOnUnchanged() {
    byte[] bad = {'c', 'a', 'f', (byte) 0xe9};
    String c = tmp.resolve("cache").toString();
    for (Run r : List.of(runRaw(bytes("dump"), bytes("--cache"), bytes(c), bytes("--"), bytes("echo"), bad),
        runRaw(bytes("dump"), bytes("--cache"), bytes(c), bytes("echo"), bad),
        runRaw(bytes("parallel-compile"), bytes("--cache"), bytes(c), bytes("--"), bytes("echo"), bad))) {
      assertThat(r.code).isEqualTo(2);
      assertThat(r.err).contains("('caf\\xe9'), part of the command to run, is not valid UTF-8; xlac could not pass it"
          + " on to the command unchanged");
    }
    assertThat(tmp.resolve("cache")).doesNotExist();
    // Before the command, it is an argument of xlac's own.
    Run option = runRaw(bytes("dump"), bytes("--keep-dumps"), bad, bytes("--"), bytes("echo"));
    assertThat(option.err).contains("('caf\\xe9') is not valid UTF-8; xlac refuses it");
  }

  @Test
  void validUtf8Arguments_andReplacementCharactersThatWereReallyThere_areUsedAsGiven() {
    Path dir = tmp.resolve("caché \uFFFD");
    Run r = runRaw(bytes("cache"), bytes("config"), bytes("--cache"), bytes(dir.toString()), bytes("max-size"), bytes("1G"));
    assertThat(r.code).as(r.err).isZero();
    assertThat(dir).isDirectory();
  }

  @Test
  void escaping_showsValidUtf8AsText_andEveryOtherByteAsHex() {
    byte[] raw = {'a', (byte) 0xc3, (byte) 0xa9, '\\', '\n', (byte) 0xed, (byte) 0xa0, (byte) 0x80, (byte) 0xc3};
    assertThat(ProcessBytes.escaped(raw)).isEqualTo("aé\\\\\\x0a\\xed\\xa0\\x80\\xc3");
  }

  private record Run(int code, String err) {}

  /** Runs the CLI as the JVM would start it with these argument bytes: decoded as UTF-8, bad bytes as U+FFFD. */
  private static Run runRaw(byte[]... raw) {
    assumeTrue(ProcessBytes.charset().equals(StandardCharsets.UTF_8),
        "the JVM reads arguments and file names as UTF-8 (a UTF-8 locale, as ./xlac sets up); here it uses "
            + ProcessBytes.charset());
    String[] args = Arrays.stream(raw).map(b -> new String(b, StandardCharsets.UTF_8)).toArray(String[]::new);
    StringWriter err = new StringWriter();
    int code = new Main(new PrintWriter(new StringWriter()), new PrintWriter(err)).run(new ArrayList<>(List.of(raw)), args);
    return new Run(code, err.toString());
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] all = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, all, a.length, b.length);
    return all;
  }

}
