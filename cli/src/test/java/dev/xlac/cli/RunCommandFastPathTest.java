package dev.xlac.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.cli.run.RunCommand;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

/**
 * {@code xlac run} with simple arguments is parsed without picocli ({@link RunCommand#parseSimple}): every vector it
 * takes must come out exactly as picocli parses it, and everything else must be left to picocli.
 */
class RunCommandFastPathTest {
  @TempDir
  Path tmp;

  private static final PrintWriter SINK = new PrintWriter(new StringWriter());

  private static Optional<RunCommand> fast(List<String> args) {
    return RunCommand.parseSimple(args.subList(1, args.size()), SINK, SINK);
  }

  /** The command as picocli parses {@code args}, with the same set-up as {@code Main} (whole tree or branch). */
  private static RunCommand picocli(List<String> args, boolean wholeTree) {
    XlacCommand root = new XlacCommand();
    String[] a = args.toArray(String[]::new);
    CommandLine cmd = new Main(SINK, SINK).configure(
        wholeTree ? CommandTree.whole(root) : CommandTree.forArgs(root, a), root);
    cmd.parseArgs(a);
    return cmd.getSubcommands().get("run").getCommand();
  }

  static Stream<List<String>> simpleVectors() {
    return Stream.of(
        List.of("run", "--", "true"),
        List.of("run", "--cache", "c", "--", "python", "train.py", "--steps", "2"),
        List.of("run", "--cache=c", "--plugin", "p.so", "--layout", "lay", "--record", "--report", "r.json", "--",
            "a", "b"),
        List.of("run", "--record", "--plugin=p.so", "--", "cmd", "--cache", "x", "--", "y"),
        List.of("run", "--report=/tmp/x/r.json", "--layout=/abs/l", "--", "-x", "--record"),
        List.of("run", "--cache", "dir with space", "--", "cmd", "", " "),
        List.of("run", "--plugin", "p.so", "--", "--"),
        List.of("run", "--cache", "a=b", "--plugin", "x=y=z", "--", "x"),
        List.of("run", "--cache", "c", "--", "x", "-h", "--help", "-V", "--version", "--verbose"),
        List.of("run", "--plugin", "é/ü.so", "--", "echo", "é"),
        List.of("run", "--require-hits", "--record", "--", "x", "--require-hits"),
        List.of("run", "-q", "--cache", "c", "--", "x", "-q"),
        List.of("run", "--record", "--quiet", "--", "x"));
  }

  @ParameterizedTest
  @MethodSource("simpleVectors")
  void simpleArguments_areParsedExactlyAsPicocliParsesThem(List<String> args) {
    Optional<RunCommand> fast = fast(args);
    assertThat(fast).as("taken by the fast path: %s", args).isPresent();
    assertThat(fast.get().toString()).isEqualTo(picocli(args, false).toString())
        .isEqualTo(picocli(args, true).toString());
  }

  static Stream<List<String>> vectorsLeftToPicocli() {
    return Stream.of(
        List.of("run"),
        List.of("run", "--"),
        List.of("run", "--cache", "c", "--"),
        List.of("run", "--help"),
        List.of("run", "-h"),
        List.of("run", "--version"),
        List.of("run", "python", "train.py"),
        List.of("run", "--cache", "c", "python", "train.py", "--", "x"),
        List.of("run", "--cache", "c", "--cache", "d", "--", "x"),
        List.of("run", "--cache=c", "--cache", "d", "--", "x"),
        List.of("run", "--record", "--record", "--", "x"),
        List.of("run", "--record=true", "--", "x"),
        List.of("run", "--require-hits", "--require-hits", "--", "x"),
        List.of("run", "-q", "--quiet", "--", "x"),
        List.of("run", "-qh", "--", "x"),
        List.of("run", "--cache", "--", "x"),
        List.of("run", "--cache", "--record", "--", "x"),
        List.of("run", "--cache"),
        List.of("run", "--cache="),
        List.of("run", "--cache=", "--", "x"),
        List.of("run", "--cache", "", "--", "x"),
        List.of("run", "--cache=-c", "--", "x"),
        List.of("run", "--wait", "--", "x"),
        List.of("run", "--wait=10s", "--", "x"),
        List.of("run", "--verbose", "--", "x"),
        List.of("run", "--cach", "c", "--", "x"),
        List.of("run", "--Cache", "c", "--", "x"),
        List.of("run", "-c", "c", "--", "x"),
        List.of("run", "@args.txt"),
        List.of("run", "--cache", "@c", "--", "x"),
        List.of("run", "--", "python", "@args.txt"),
        List.of("run", "--plugin", "p", "--", "x", "@"));
  }

  @ParameterizedTest
  @MethodSource("vectorsLeftToPicocli")
  void anythingElse_isLeftToPicocli(List<String> args) {
    assertThat(fast(args)).as("%s", args).isEmpty();
  }

  /** Same exit code and output, byte for byte, through the fast path as through picocli's whole tree. */
  @Test
  void failuresBeforeTheCommand_printTheSameThroughEitherParser() throws Exception {
    Path marker = tmp.resolve("ran");
    String cache = tmp.resolve("cache").toString();
    Files.createDirectories(tmp.resolve("plugin-dir"));
    List<List<String>> vectors = new ArrayList<>();
    vectors.add(List.of("run", "--cache", cache, "--plugin", tmp.resolve("absent.so").toString(), "--", "touch",
        marker.toString()));
    vectors.add(List.of("run", "--cache=" + cache, "--plugin", tmp.resolve("plugin-dir").toString(), "--record",
        "--", "touch", marker.toString()));
    vectors.add(List.of("run", "--cache", cache, "--plugin", tmp.resolve("absent.so").toString(), "--report",
        tmp.resolve("no-such-dir/r.json").toString(), "--", "touch", marker.toString()));
    vectors.add(List.of("run", "--cache", cache, "--plugin", tmp.resolve("absent.so").toString(), "--layout",
        tmp.resolve("no-layout").toString(), "--", "touch", marker.toString()));
    for (List<String> v : vectors) {
      String[] a = v.toArray(String[]::new);
      assertThat(fast(v)).as("%s", v).isPresent();
      CliRunner viaFastPath = CliRunner.run(a);
      assertThat(viaFastPath.exitCode()).as("%s", v).isIn(2, 3);
      assertThat(viaFastPath.err()).as("%s", v).startsWith("xlac: ").doesNotContain("Exception");
      assertThat(viaFastPath).as("%s", v).isEqualTo(CliRunner.runWithWholeTree(a));
    }
    assertThat(marker).doesNotExist();
  }
}
