package dev.xlac.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue #10: every one-line error says what went wrong in words, never a Java class name or a bare path. */
class ErrorWordingTest {
  @TempDir
  Path tmp;

  /** Every duration and size option of every command, with values that are not one or are too large for Java. */
  @Test
  void badDurationsAndSizes_ofEveryOption_areRefusedInWords_withoutJavaClassNames() {
    String c = tmp.resolve("cache").toString();
    List<String[]> runs = List.of(
        new String[] {"cache", "prune", "--cache", c, "--max-size", "lots"},
        new String[] {"cache", "prune", "--cache", c, "--max-size", "99999999999999999999999"},
        new String[] {"cache", "prune", "--cache", c, "--older-than", "soon"},
        new String[] {"cache", "prune", "--cache", c, "--older-than", "99999999999999999999s"},
        new String[] {"cache", "prune", "--cache", c, "--older-than", "999999999999999999w"},
        new String[] {"cache", "prune", "--cache", c, "--older-than", "P1Q"},
        new String[] {"cache", "export", "--cache", c, "--since", "soon", tmp.resolve("b.tar.zst").toString()},
        new String[] {"cache", "add", "--cache", c, "--wait=soon", tmp.toString()},
        new String[] {"cache", "config", "--cache", c, "max-size", "lots"},
        new String[] {"dump", "--cache", c, "--wait=99999999999999999999s", "--", "true"},
        new String[] {"parallel-compile", "--cache", c, "--memory-per-job", "lots", tmp.toString()},
        new String[] {"parallel-compile", "--cache", c, "--timeout", "soon", tmp.toString()},
        new String[] {"parallel-compile", "--cache", c, "--timeout", "9223372036854775807s", tmp.toString()});
    for (String[] args : runs) {
      CliRunner r = CliRunner.run(args);
      String what = String.join(" ", args);
      assertThat(r.exitCode()).as(what).isEqualTo(2);
      assertThat(r.err()).as(what).startsWith("xlac: ")
          .containsAnyOf("not a size: ", "size too large: ", "not a duration: ", "duration too long: ")
          .doesNotContain("java.", "Exception", "cannot convert", " to Long", " to Duration");
    }
  }

  /** Issue #10: "cannot write bundle X: /nonexistent/dir/.out.tar.zst.tmp-N". */
  @Test
  void export_intoAMissingDirectory_saysWhichDirectoryIsMissing() {
    assertThat(CliRunner.run("cache", "add", "--cache", tmp.resolve("cache").toString(), dumps()).exitCode()).isZero();
    Path bundle = tmp.resolve("nonexistent/dir/out.tar.zst");
    CliRunner r = CliRunner.run("cache", "export", "--cache", tmp.resolve("cache").toString(), bundle.toString());
    assertThat(r.exitCode()).isEqualTo(3);
    assertThat(r.err()).isEqualTo("xlac: cannot write bundle " + bundle + ": directory " + tmp.resolve("nonexistent")
        + " does not exist\n");
  }

  /** Issue #10: "cannot create the lock file .../regfile/lock: .../regfile" for a --cache that is a regular file. */
  @Test
  void cacheThatIsARegularFile_saysSo() throws Exception {
    Path file = Files.writeString(tmp.resolve("regfile"), "x");
    CliRunner r = CliRunner.run("cache", "config", "--cache", file.toString(), "max-size", "1G");
    assertThat(r.exitCode()).isEqualTo(3);
    assertThat(r.err().strip()).endsWith(": " + file + " exists and is not a directory").doesNotContain("\n");
    CliRunner below = CliRunner.run("cache", "config", "--cache", file.resolve("sub").toString(), "max-size", "1G");
    assertThat(below.err().strip()).endsWith(": " + file + " is not a directory");
  }

  @Test
  void internalError_namesNoJavaClass_unlessVerbose() {
    StringWriter quiet = new StringWriter();
    new Main(new PrintWriter(new StringWriter()), new PrintWriter(quiet)).report(new IllegalStateException(), false);
    assertThat(quiet.toString()).isEqualTo("xlac: internal error: illegal state (rerun with --verbose for details)\n");
    StringWriter withMessage = new StringWriter();
    new Main(new PrintWriter(new StringWriter()), new PrintWriter(withMessage))
        .report(new IllegalArgumentException("slot 7 is empty"), false);
    assertThat(withMessage.toString()).isEqualTo("xlac: internal error: slot 7 is empty (rerun with --verbose for details)\n");
    StringWriter verbose = new StringWriter();
    new Main(new PrintWriter(new StringWriter()), new PrintWriter(verbose)).report(new IllegalStateException("x"), true);
    assertThat(verbose.toString()).startsWith("xlac: internal error: java.lang.IllegalStateException: x\n")
        .contains("\tat ");
  }

  private static String dumps() {
    try {
      return Path.of(ErrorWordingTest.class.getResource("/dumps").toURI()).toString();
    } catch (java.net.URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }
}
