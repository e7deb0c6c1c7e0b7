package dev.xlac.cli;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import picocli.CommandLine.Command;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

/** The root command. Its subcommands are listed in {@link CommandTree}, which adds all of them or the one a run names. */
@Command(
    name = "xlac",
    mixinStandardHelpOptions = true,
    versionProvider = XlacCommand.Version.class,
    description = "Ahead-of-time graph compilation for XLA users: trace, fingerprint, cache and compile HLO graphs.",
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
        "0:success",
        "1:the work failed (a graph did not compile, a check failed)",
        "2:usage error or bad input (unreadable, corrupt or unsupported file)",
        "3:environment problem (plugin or compiler missing, cache locked, disk full)",
        "4:internal error (a bug in xlac; rerun with --verbose and report it)"})
public final class XlacCommand implements Runnable {

  @Option(names = "--verbose", scope = ScopeType.INHERIT, description = "Print stack traces and details on errors.")
  boolean verbose;

  @picocli.CommandLine.Spec
  picocli.CommandLine.Model.CommandSpec spec;

  boolean verbose() {
    return verbose;
  }

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /**
   * What this xlac is: the version and commit Maven filtered into the jar, the Java runtime it runs on, and the
   * PJRT C API header its proxy was checked against.
   */
  static final class Version implements IVersionProvider {
    @Override
    public String[] getVersion() throws IOException {
      Properties p = new Properties();
      try (InputStream in = XlacCommand.class.getResourceAsStream("version.properties")) {
        if (in != null) {
          p.load(in);
        }
      }
      String commit = p.getProperty("commit", "");
      return new String[] {
          "xlac " + p.getProperty("version", "unknown")
              + " (commit " + (commit.isEmpty() || commit.startsWith("${") ? "unknown" : commit) + ")",
          "java: " + System.getProperty("java.runtime.version") + " (" + System.getProperty("java.vendor") + ") at "
              + System.getProperty("java.home"),
          "pjrt proxy: PJRT C API header " + p.getProperty("pjrt.header", "unknown")};
    }
  }

}
