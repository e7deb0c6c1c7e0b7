package dev.xlac.cli;

import dev.xlac.cli.run.RunCommand;
import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import dev.xlac.core.os.ProcessBytes;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import picocli.CommandLine;

/** Entry point. The whole CLI runs in-process against the given writers, so tests need no subprocess. */
public final class Main {
  private final PrintWriter out;
  private final PrintWriter err;

  public Main(PrintWriter out, PrintWriter err) {
    this.out = out;
    this.err = err;
  }

  public static void main(String[] args) {
    PrintWriter out = new PrintWriter(new java.io.OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
    PrintWriter err = new PrintWriter(new java.io.OutputStreamWriter(System.err, StandardCharsets.UTF_8), true);
    int code = new Main(out, err).run(ProcessBytes.lastArguments(args.length).orElse(null), args);
    out.flush();
    err.flush();
    System.exit(code);
  }

  /**
   * As {@link #run(String...)}, but first refuses (exit 2) an argument whose string is not what the process got:
   * {@code raw} holds the bytes of each argument as the kernel passed them (null: not known).
   */
  public int run(List<byte[]> raw, String... args) {
    if (raw != null) {
      Optional<String> refusal = ArgumentCheck.refusal(args, raw);
      if (refusal.isPresent()) {
        err.println("xlac: " + refusal.get());
        err.flush();
        return ExitCode.BAD_INPUT.code();
      }
    }
    return run(args);
  }

  public int run(String... args) {
    if (args.length == 1 && (args[0].equals("--version") || args[0].equals("-V"))) {
      return printVersion();
    }
    if (args.length > 0 && args[0].equals("run")) { // xlac run: the training command starts as early as it can
      Optional<RunCommand> simple = RunCommand.parseSimple(List.of(args).subList(1, args.length), out, err);
      if (simple.isPresent()) {
        return call(simple.get());
      }
    }
    XlacCommand root = new XlacCommand();
    return execute(CommandTree.forArgs(root, args), root, args);
  }

  /**
   * {@code xlac --version}, what picocli prints for it, without picocli: building even the root's model reads its
   * annotations, which costs a cold JVM about half of this command's time (bench/README.md, "Start-up").
   */
  private int printVersion() {
    try {
      for (String line : new XlacCommand.Version().getVersion()) {
        out.println(line);
      }
      out.flush();
      return ExitCode.OK.code();
    } catch (Exception e) {
      report(e, false);
      return exitCodeOf(e);
    }
  }

  /** A command parsed without picocli, run as picocli's {@code execute} would run it (no --verbose). */
  private int call(RunCommand command) {
    try {
      return command.call();
    } catch (Exception e) {
      report(e, false);
      return exitCodeOf(e);
    }
  }

  /** As {@link #run}, with the whole command tree built whatever the arguments: what {@code run} must match. */
  int runWithWholeTree(String... args) {
    XlacCommand root = new XlacCommand();
    return execute(CommandTree.whole(root), root, args);
  }

  private int execute(CommandLine cmd, XlacCommand root, String... args) {
    configure(cmd, root);
    return cmd.execute(args);
  }

  /** The settings and handlers of every command line this class runs. */
  CommandLine configure(CommandLine cmd, XlacCommand root) {
    cmd.setOut(out);
    cmd.setErr(err);
    cmd.setCaseInsensitiveEnumValuesAllowed(true);
    // `xlac dump python train.py --steps 2`: everything from the command on is the command's.
    for (String name : new String[] {"dump", "run"}) { // `xlac run python train.py --steps 2` too
      CommandLine sub = cmd.getSubcommands().get(name);
      if (sub != null) {
        sub.setStopAtPositional(true);
      }
    }
    cmd.setExitCodeExceptionMapper(Main::exitCodeOf);
    cmd.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
      report(e, root.verbose());
      return exitCodeOf(e);
    });
    cmd.setParameterExceptionHandler((e, args1) -> {
      CommandLine c = e.getCommandLine();
      err.println("xlac: " + e.getMessage());
      err.println("Try '" + c.getCommandSpec().qualifiedName() + " --help' for more information.");
      return ExitCode.BAD_INPUT.code();
    });
    return cmd;
  }

  void report(Throwable e, boolean verbose) {
    if (e instanceof XlacException x) {
      err.println("xlac: " + x.getMessage());
    } else {
      // The exception's class is for --verbose, which also prints the stack trace.
      err.println("xlac: internal error: "
          + (verbose ? e : XlacException.reason(e) + " (rerun with --verbose for details)"));
    }
    if (verbose) {
      e.printStackTrace(err);
    }
    err.flush();
  }

  static int exitCodeOf(Throwable e) {
    if (e instanceof XlacException x) {
      return x.exitCode().code();
    }
    if (e instanceof InterruptedException) {
      return 130;
    }
    return ExitCode.INTERNAL.code();
  }
}
