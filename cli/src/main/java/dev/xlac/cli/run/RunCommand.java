package dev.xlac.cli.run;

import dev.xlac.cache.RemotePolicy;
import dev.xlac.cli.cache.CacheOptions;
import dev.xlac.core.ExitCode;
import dev.xlac.core.Json;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.pipeline.run.FastStart;
import dev.xlac.pipeline.run.RunResult;
import dev.xlac.pipeline.run.RunSpec;
import dev.xlac.pipeline.run.RuntimeRun;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.function.Consumer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "run", mixinStandardHelpOptions = true,
    description = {"Run a training command unchanged, with xlac's runtime proxy in front of its PJRT plugin: every"
        + " compile whose executable is in the cache is served from it instead of compiled.",
        "JAX loads the proxy wherever it would load the plugin (a jax_plugins package, PJRT_NAMES_AND_LIBRARY_PATHS,"
            + " TPU_LIBRARY_PATH), under the plugin's own name, and in place of its own CPU client when nothing loads the"
            + " plugin; JAX_PLATFORMS is left as you set it. PyTorch/XLA through the device plugin registered for its"
            + " PJRT_DEVICE, which keeps its device type (unset or CPU, the built-in client: PJRT_DEVICE=LIBRARY, with"
            + " a CPU-like device plugin). The"
            + " executables come from 'xlac run --record', 'xlac dump --plugin' or a one-shot"
            + " 'xlac parallel-compile -- COMMAND', on this machine or imported from a bundle."},
    footer = {"%nBefore the command starts, the plugin is checked (a memo makes this free for an unchanged plugin)"
        + " and the cache's runtime layout (CACHE/runtime/pjrt) is brought up to date for this plugin (nothing to do"
        + " while it is current); the cache is not held while the command runs. With a remote tier set (xlac cache"
        + " config remote), the runtime entries it holds for this plugin and the cache lacks are fetched first, and a"
        + " recording is written through at the end; a remote that fails is one warning. When the last identical run"
        + " (same directory, same options) had nothing to do before its command, the launcher starts the command"
        + " without a JVM and xlac finishes the run after it (a launch plan; runtime/README.md, \"The fast start\")."
        + " Ctrl-C, SIGTERM and SIGHUP are forwarded to the command's whole process group. Its standard output is"
        + " its own, byte for byte: every line of xlac's goes to stderr (as time or strace do), and --report is"
        + " the machine-readable channel. At the end xlac prints one line: compiles, served from the cache,"
        + " compiled, compile seconds saved (and the remote's counts when one was used), then why the compiles that"
        + " were not served were not, one line per kind of reason: not recorded, recorded for another plugin or"
        + " machine, with other compile options, or a program that changed (of a request recorded with --record,"
        + " xlac cache why KEY says the same).",
        "%nExit codes: the command's own (128+N if signal N ended it); 127 the command was not found, 126 it cannot"
            + " be run; 2 bad options; 3 before the command starts: the plugin is missing, not a PJRT plugin (or"
            + " xlac's own runtime proxy: an xlac run inside another),"
            + " lacks PJRT_Executable_Serialize or PJRT_Executable_DeserializeAndLoad, or --layout was"
            + " materialized for another plugin, or --require-remote and the remote cannot be used (after the"
            + " command, when it succeeded: its recording was not written through); 1 with --require-hits: the"
            + " command succeeded but not every compile was served from the cache."})
public final class RunCommand implements Callable<Integer> {
  @Option(names = "--plugin", paramLabel = "PATH",
      description = "The real PJRT plugin the command would load (default: $XLAC_PJRT_PLUGIN, else the library"
          + " variable of torch_xla's PJRT_DEVICE, e.g. TPU_LIBRARY_PATH).")
  Path plugin;

  @Option(names = "--layout", paramLabel = "DIR",
      description = "Serve from this runtime layout as it is (written by 'xlac cache materialize --layout pjrt"
          + " DIR'), instead of the cache's own.")
  Path layout;

  @Option(names = "--record",
      description = "Also record every compile that was not served, and put it into the cache when the command"
          + " ends, so that the next run serves it.")
  boolean record;

  @Option(names = "--require-hits",
      description = "Fail (exit 1, one line saying how many compiles were not served) unless every compile was"
          + " served from the cache, and at least one went through xlac: for a training job that must not compile"
          + " (CI pre-compiled everything). The command's own failure comes first.")
  boolean requireHits;

  @Option(names = "--require-remote", description = "Fail (exit 3, before the command starts) when the cache's remote"
      + " tier is not set, cannot be reached or refuses access, rather than warning once and running on the local"
      + " cache; exit 3 after a command that succeeded when its recording could not be written through.")
  boolean requireRemote;

  @Option(names = "--no-remote", description = "Neither fetch runtime entries from the cache's remote tier nor write"
      + " a recording through to it.")
  boolean noRemote;

  @Option(names = {"-q", "--quiet"}, description = "Print none of xlac's own lines (the summary, why compiles were"
      + " not served, notices and warnings); errors, and --require-hits' and --require-remote's one-line failures,"
      + " are still printed.")
  boolean quiet;

  @Option(names = "--report", paramLabel = "FILE.json",
      description = "Write a JSON report: compiles, hits, misses, fallbacks, compile_seconds, saved_seconds, ...,"
          + " miss_reasons")
  Path report;

  @Parameters(arity = "0..*", paramLabel = "COMMAND", description = "The command and its arguments, after '--'.")
  List<String> command = List.of();

  @Mixin
  CacheOptions.Writer cache;

  /** The words between {@code run} and {@code --} when {@link #parseSimple} parsed them: the launch plan's key. */
  List<String> simpleOptions;

  /**
   * The arguments after {@code run}, parsed without picocli when they are simple: only {@code --cache},
   * {@code --plugin}, {@code --layout}, {@code --report} (each at most once, {@code --opt VALUE} or
   * {@code --opt=VALUE}) and {@code --record}, {@code --require-hits} and {@code --quiet} (or {@code -q}) before
   * {@code --} and a command after it, no value empty or
   * starting with {@code -} or {@code @}, no command word starting with {@code @}. Empty for anything else
   * (help, --wait, --verbose, a command without {@code --}, a repeated option, an error): picocli parses
   * those. Building picocli's model of the command costs a cold JVM about 0.1 s, all of it before the training
   * command can start; the result is the command as picocli would set it up ({@code RunCommandFastPathTest}).
   */
  public static Optional<RunCommand> parseSimple(List<String> args, PrintWriter out, PrintWriter err) {
    RunCommand r = new RunCommand();
    Path[] values = new Path[4]; // cache, plugin, layout, report
    int i = 0;
    for (; i < args.size(); i++) {
      String a = args.get(i);
      if (a.equals("--")) {
        break;
      }
      if (a.equals("--record")) {
        if (r.record) {
          return Optional.empty();
        }
        r.record = true;
        continue;
      }
      if (a.equals("--require-hits")) {
        if (r.requireHits) {
          return Optional.empty();
        }
        r.requireHits = true;
        continue;
      }
      if (a.equals("--quiet") || a.equals("-q")) {
        if (r.quiet) {
          return Optional.empty();
        }
        r.quiet = true;
        continue;
      }
      int eq = a.indexOf('=');
      int slot = VALUED.indexOf(eq < 0 ? a : a.substring(0, eq));
      if (slot < 0 || values[slot] != null) {
        return Optional.empty();
      }
      String value;
      if (eq >= 0) {
        value = a.substring(eq + 1);
      } else if (++i < args.size()) {
        value = args.get(i);
      } else {
        return Optional.empty();
      }
      if (!plainWord(value)) {
        return Optional.empty();
      }
      try {
        values[slot] = Path.of(value);
      } catch (RuntimeException e) { // not a path here: picocli says so
        return Optional.empty();
      }
    }
    List<String> command = i < args.size() ? args.subList(i + 1, args.size()) : List.of();
    if (command.isEmpty() || command.stream().anyMatch(w -> w.startsWith("@"))) {
      return Optional.empty();
    }
    r.command = new ArrayList<>(command);
    r.simpleOptions = List.copyOf(args.subList(0, i));
    r.plugin = values[1];
    r.layout = values[2];
    r.report = values[3];
    r.cache = CacheOptions.Writer.of(values[0], out, err);
    return Optional.of(r);
  }

  private static final List<String> VALUED = List.of("--cache", "--plugin", "--layout", "--report");

  private static boolean plainWord(String value) {
    return !value.isEmpty() && !value.startsWith("-") && !value.startsWith("@");
  }

  /** The parsed options, for comparing two ways of parsing them. */
  @Override
  public String toString() {
    return "run cache=" + cache.directory() + " wait=" + cache.waitDuration() + " plugin=" + plugin + " layout="
        + layout + " record=" + record + " requireHits=" + requireHits + " quiet=" + quiet + " report=" + report
        + " command=" + command;
  }

  @Override
  public Integer call() throws InterruptedException {
    PrintWriter err = cache.err();
    if (command.isEmpty()) {
      throw XlacException.badInput("no command given: write it after '--', e.g. xlac run -- python train.py");
    }
    if (requireRemote && noRemote) {
      throw XlacException.badInput("--require-remote and --no-remote do not go together");
    }
    // Launch plans (FastStart) only for simply parsed runs, the ones xlac-fast-start takes.
    FastStart.Key plan = simpleOptions == null ? null : FastStart.Key.of(simpleOptions, report).orElse(null);
    Optional<FastStart.Adopted> adopted = FastStart.Adopted.fromProperties();
    RunSpec spec = new RunSpec(command, cache.directory(), plugin, layout, record, System.getenv(),
        requireRemote ? RemotePolicy.REQUIRE : noRemote ? RemotePolicy.OFF : RemotePolicy.USE);
    // Every line of xlac's own goes to stderr: the command's stdout is the command's (`> metrics.json`).
    Consumer<String> notices = quiet ? m -> {} : m -> {
      err.println("xlac: " + m);
      err.flush();
    };
    RunResult r;
    if (adopted.isPresent()) { // the command ran already, started by xlac-fast-start: its run is finished here
      r = RuntimeRun.finishAdopted(spec, cache::lockWritable, notices, adopted.get(), plan);
    } else {
      requireWritableParent(report);
      r = RuntimeRun.run(spec, cache::lockWritable, notices, plan);
    }
    if (r.notRunnable() != null) {
      err.println("xlac: " + r.notRunnable().message());
      err.flush();
      return r.notRunnable().status();
    }
    if (!quiet) {
      err.println(r.line());
      r.missLines().forEach(err::println); // why the misses were not served, after the line
      err.flush();
    }
    if (report != null) {
      try {
        AtomicFiles.writeString(report, Json.write(r.toJson()) + "\n");
      } catch (IOException e) {
        err.println("xlac: cannot write " + report + ": " + XlacException.reason(e));
        err.flush();
        return r.exitStatus() == 0 ? ExitCode.ENVIRONMENT.code() : r.exitStatus();
      }
    }
    String remoteFailed = requireRemote && r.exitStatus() == 0 ? r.remoteFailure() : null;
    if (remoteFailed != null) {
      err.println(remoteFailed);
      err.flush();
      return ExitCode.ENVIRONMENT.code();
    }
    String notAllHits = requireHits && r.exitStatus() == 0 ? r.requireHitsFailure() : null;
    if (notAllHits != null) {
      err.println(notAllHits);
      err.flush();
      return ExitCode.WORK_FAILED.code();
    }
    return r.exitStatus();
  }

  private static void requireWritableParent(Path file) {
    if (file == null) {
      return;
    }
    Path parent = file.toAbsolutePath().getParent();
    if (!Files.isDirectory(parent) || !Files.isWritable(parent)) {
      throw XlacException.badInput("--report " + file + ": the directory " + parent
          + " does not exist or is not writable");
    }
    if (Files.isDirectory(file, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      throw XlacException.badInput("--report " + file + ": is a directory; name the report's file, e.g. "
          + file.resolve("report.json"));
    }
  }
}
