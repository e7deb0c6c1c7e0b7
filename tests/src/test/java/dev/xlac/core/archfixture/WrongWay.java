package dev.xlac.core.archfixture;

import dev.xlac.cli.Main;
import java.io.PrintWriter;

/**
 * A deliberate wrong-way dependency for {@code LayerTest.wrongWayImport_isReported}: a class in the
 * core layer that uses the CLI. Maven's module edges cannot stop it here (the tests module sees every
 * module), so only the architecture rules can, and that test shows they do. Never imported by the
 * rules' own scan of main classes.
 */
public final class WrongWay {
  private WrongWay() {}

  public static Main cli(PrintWriter out) {
    return new Main(out, out);
  }
}
