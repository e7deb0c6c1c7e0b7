package dev.xlac.cli.compile;

import dev.xlac.cli.Main;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** What the parallel-compile tests share: running {@code xlac parallel-compile --cache DIR ...} in-process. */
final class CompileFixture {
  /** The exit code and what was printed. */
  record Run(int code, String out, String err) {}

  private CompileFixture() {}

  /** Runs {@code parallel-compile --cache cache args...}, its stderr into {@code err} (which may be read meanwhile). */
  static Run parallelCompile(Path cache, StringWriter err, String... args) {
    StringWriter out = new StringWriter();
    List<String> all = new ArrayList<>(List.of("parallel-compile", "--cache", cache.toString()));
    all.addAll(List.of(args));
    int code = new Main(new PrintWriter(out, true), new PrintWriter(err, true)).run(all.toArray(String[]::new));
    return new Run(code, out.toString(), err.toString());
  }
}
