package dev.xlac.compiler.neuron;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.compiler.CompilerDriver;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.FailureKind;
import dev.xlac.core.XlacException;
import dev.xlac.core.io.FileTrees;
import dev.xlac.core.neuron.NeuronFiles;
import dev.xlac.core.neuron.NeuronLogs;
import dev.xlac.core.neuron.NeuronxCcIdentity;
import dev.xlac.core.os.Executables;
import dev.xlac.core.os.ExitStatus;
import dev.xlac.core.os.OutputTail;
import dev.xlac.core.os.ProcessGroups;
import dev.xlac.core.os.Signals;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Compiles graphs with AWS Neuron's {@code neuronx-cc}, one child process per graph:
 * {@code neuronx-cc compile --framework=XLA model.hlo_module.pb --target=T --output=model.neff FLAGS}
 * in a private work directory under the work root (the file names of a Neuron cache, {@link NeuronFiles}).
 *
 * <p>Outcomes: exit 0 with a non-empty {@code model.neff} is a success; exit 70 is
 * {@link FailureKind#COMPILE_ERROR} with the first error line of the log ({@link NeuronLogs}); death by SIGKILL that
 * xlac did not send (exit status 137), or a log reporting {@code [F137]}, is
 * {@link FailureKind#OUT_OF_MEMORY}; no exit within the timeout is {@link FailureKind#TIMEOUT} and
 * the compiler's whole process group is killed; anything else (another exit code or signal, exit 0
 * without a NEFF) is {@link FailureKind#CRASH}.
 *
 * <p>{@code compile} is thread-safe and holds no lock while a compiler runs: each call has its own
 * process and directory, so a scheduler runs N compiles by calling it from N threads. Work
 * directories are removed when the compile ends, whatever its outcome: the log (the only thing a
 * failed compile leaves that matters) is in the outcome, and the graph is in the cache.
 */
public final class NeuronxCcDriver implements CompilerDriver {
  /** neuronx-cc's log file in its working directory when no {@code --logfile} is given. */
  public static final String DEFAULT_LOGFILE = "log-neuron-cc.txt";
  /** neuronx-cc's exit code for a compile error. */
  public static final int EXIT_COMPILE_ERROR = 70;
  /** How much of the compiler's output and of its log file is kept, from the end. */
  static final int LOG_TAIL_BYTES = 64 * 1024;
  private static final Duration VERSION_TIMEOUT = Duration.ofSeconds(60);
  /** How long the output is read after the compiler exited: a stray grandchild could hold the pipe open. */
  private static final Duration DRAIN_WAIT = Duration.ofSeconds(5);

  private final Path compiler;
  private final Optional<Path> setsid;
  private final CompilerIdentity identity;
  private final List<String> flags;
  private final String logFileName;
  private final Duration timeout;
  private final Path workRoot;
  private final Set<Process> running = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  private NeuronxCcDriver(Path compiler, CompilerIdentity identity, Duration timeout, Path workRoot) {
    this.compiler = compiler;
    this.setsid = ProcessGroups.setsid();
    this.identity = identity;
    this.flags = identity.flags();
    this.logFileName = logFileName(flags);
    this.timeout = timeout;
    this.workRoot = workRoot;
  }

  /**
   * Finds the compiler, asks it for its version and fixes the identity.
   *
   * @param compilerExecutable the {@code neuronx-cc} to run; null: the first on {@code PATH}
   * @param target {@code trn1}, {@code trn1n}, {@code trn2} or {@code inf2}; null: the flags'
   *     {@code --target}, else {@code trn1}. A {@code --target} in the flags that names another
   *     target is a usage error.
   * @param flags the flags as split words, not yet normalised (see {@link NeuronxCcIdentity}); use
   *     {@link NeuronxCcIdentity#chooseFlags} for {@code --compiler-flags} / {@code NEURON_CC_FLAGS}
   * @param timeout per compile; {@link Duration#ZERO} for none
   * @param workRoot where the per-compile directories are made (created if missing)
   * @throws XlacException ENVIRONMENT when the compiler is missing, not executable, or reports no
   *     version; BAD_INPUT for bad flags or target
   */
  public static NeuronxCcDriver open(Path compilerExecutable, String target, List<String> flags, Duration timeout,
      Path workRoot) {
    NeuronxCcIdentity.Flags normal = NeuronxCcIdentity.normalise(flags);
    if (target != null && normal.target().isPresent() && !normal.target().get().equals(target)) {
      throw XlacException.badInput("the neuronx-cc flags say --target=" + normal.target().get()
          + " but the target is " + target);
    }
    String chosenTarget = target != null ? target : normal.target().orElse(NeuronxCcIdentity.DEFAULT_TARGET);
    Path exe = compilerExecutable != null ? compilerExecutable : Executables.onPath("neuronx-cc").orElseThrow(
        () -> XlacException.environment("neuronx-cc was not found on PATH (install the Neuron SDK's neuronx-cc, "
            + "or name the compiler's path)"));
    if (!Files.isRegularFile(exe)) {
      throw XlacException.environment("cannot use neuronx-cc " + exe + ": no such file");
    }
    if (!Files.isExecutable(exe)) {
      throw XlacException.environment("cannot use neuronx-cc " + exe + ": it is not executable");
    }
    String version = queryVersion(exe);
    CompilerIdentity identity = NeuronxCcIdentity.identity(version, chosenTarget, normal.kept());
    try {
      Files.createDirectories(workRoot);
    } catch (IOException e) {
      throw XlacException.environment("cannot create the neuronx-cc work directory " + workRoot + ": "
          + XlacException.reason(e));
    }
    return new NeuronxCcDriver(exe.toAbsolutePath(), identity, timeout, workRoot.toAbsolutePath());
  }

  @Override
  public CompilerIdentity identity() {
    return identity;
  }

  /** The command line of one compile, run in its work directory. */
  public List<String> commandLine() {
    List<String> cmd = new ArrayList<>();
    cmd.add(compiler.toString());
    cmd.add("compile");
    cmd.add("--framework=XLA");
    cmd.add(NeuronFiles.HLO);
    cmd.add("--target=" + identity.target());
    cmd.add("--output=" + NeuronFiles.NEFF);
    cmd.addAll(flags);
    return cmd;
  }

  @Override
  public CompileOutcome compile(CompileRequest request) {
    if (closed) {
      throw new IllegalStateException("the neuronx-cc driver is closed");
    }
    long start = System.nanoTime();
    if (request.isRecorded()) {
      return new CompileOutcome.Failure(FailureKind.COMPILE_ERROR, request.describe()
          + ": neuronx-cc compiles HLO graphs, not recorded PJRT requests", "", Duration.ZERO);
    }
    Path work;
    try {
      work = Files.createTempDirectory(workRoot, "neuronx-cc-" + request.fingerprint().shortForm()
          .replaceAll("[^A-Za-z0-9]", "") + "-");
    } catch (IOException e) {
      return failure(FailureKind.ENVIRONMENT, request, "cannot create a work directory under " + workRoot + ": "
          + XlacException.reason(e), "", start);
    }
    try {
      return compileIn(work, request, start);
    } finally {
      deleteTree(work);
    }
  }

  private CompileOutcome compileIn(Path work, CompileRequest request, long start) {
    Map<String, Duration> phases = new LinkedHashMap<>();
    try {
      Files.write(work.resolve(NeuronFiles.HLO), request.hloModule());
    } catch (IOException e) {
      return failure(FailureKind.ENVIRONMENT, request,
          "cannot write " + work.resolve(NeuronFiles.HLO) + ": " + XlacException.reason(e), "", start);
    }
    phases.put("write", since(start));
    List<String> cmd = new ArrayList<>();
    setsid.ifPresent(s -> cmd.add(s.toString()));
    cmd.addAll(commandLine());
    long compileStart = System.nanoTime();
    Process process;
    try {
      process = new ProcessBuilder(cmd).directory(work.toFile()).redirectErrorStream(true)
          .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
    } catch (IOException e) {
      return failure(FailureKind.ENVIRONMENT, request, "cannot start " + compiler + ": " + XlacException.reason(e), "",
          start);
    }
    running.add(process);
    OutputTail output = OutputTail.drain(process.getInputStream(), LOG_TAIL_BYTES,
        "neuronx-cc-output-" + process.pid());
    boolean timedOut = false;
    boolean interrupted = false;
    try {
      if (timeout.isZero()) {
        process.waitFor();
      } else if (!process.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
        timedOut = true;
      }
    } catch (InterruptedException e) {
      interrupted = true;
    } finally {
      if (timedOut || interrupted || closed) {
        ProcessGroups.killTree(process, setsid.isPresent());
      }
      running.remove(process);
    }
    try {
      output.join(DRAIN_WAIT);
    } catch (InterruptedException e) {
      interrupted = true;
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    phases.put("compile", since(compileStart));
    String log = output.text() + logFile(work);
    if (timedOut || interrupted) {
      String why = interrupted ? "interrupted" : "no result after " + timeout.toSeconds() + " s";
      return failure(FailureKind.TIMEOUT, request, "neuronx-cc " + why + "; its process group was killed", log, start);
    }
    int exit = process.exitValue();
    if (exit != 0 && closed) {
      return failure(FailureKind.CRASH, request, "the driver was closed during the compile", log, start);
    }
    if (exit == 0) {
      Path neff = work.resolve(NeuronFiles.NEFF);
      try {
        byte[] bytes = Files.isRegularFile(neff) ? Files.readAllBytes(neff) : null;
        if (bytes == null || bytes.length == 0) {
          return failure(FailureKind.CRASH, request, "neuronx-cc exited with 0 but wrote " + (bytes == null ? "no "
              : "an empty ") + NeuronFiles.NEFF + lastLine(log), log, start);
        }
        phases.put("read", since(compileStart).minus(phases.get("compile")));
        return new CompileOutcome.Success(bytes, log, since(start), phases);
      } catch (IOException e) {
        return failure(FailureKind.ENVIRONMENT, request, "cannot read " + neff + ": " + XlacException.reason(e), log,
            start);
      }
    }
    if (exit == EXIT_COMPILE_ERROR) {
      return failure(FailureKind.COMPILE_ERROR, request, "neuronx-cc exit code 70 (compile error): "
          + NeuronLogs.firstErrorLine(log).orElse("no error line in its log"), log, start);
    }
    if (exit == 128 + Signals.SIGKILL || log.contains("[F137]")) {
      return failure(FailureKind.OUT_OF_MEMORY, request, "neuronx-cc was killed by SIGKILL (exit status " + exit
          + "), most likely by the kernel's OOM killer; retry with fewer parallel compiles", log, start);
    }
    return failure(FailureKind.CRASH, request, "neuronx-cc " + ExitStatus.describe(exit) + lastLine(log), log, start);
  }

  /** Kills the compilers still running (their compiles end as failures). Safe to call twice. */
  @Override
  public void close() {
    closed = true;
    for (Process p : List.copyOf(running)) {
      ProcessGroups.killTree(p, setsid.isPresent());
    }
  }


  private static String queryVersion(Path exe) {
    Process p;
    try {
      p = new ProcessBuilder(exe.toString(), "--version").redirectErrorStream(true)
          .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
    } catch (IOException e) {
      throw XlacException.environment("cannot run " + exe + " --version: " + XlacException.reason(e));
    }
    OutputTail out = OutputTail.drain(p.getInputStream(), LOG_TAIL_BYTES, "neuronx-cc-version-" + p.pid());
    try {
      if (!p.waitFor(VERSION_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
        ProcessGroups.killTree(p, false);
        throw XlacException.environment(exe + " --version did not answer within " + VERSION_TIMEOUT.toSeconds() + " s");
      }
      out.join(DRAIN_WAIT);
    } catch (InterruptedException e) {
      ProcessGroups.killTree(p, false);
      Thread.currentThread().interrupt();
      throw XlacException.environment("interrupted while asking " + exe + " for its version");
    }
    String text = out.text();
    if (p.exitValue() != 0) {
      throw XlacException.environment(exe + " --version failed with exit code " + p.exitValue() + lastLine(text));
    }
    if (text.isBlank()) {
      throw XlacException.environment(exe + " --version printed nothing, so the compiler version is unknown");
    }
    return NeuronxCcIdentity.parseVersionOutput(text).orElseThrow(() -> XlacException.environment(
        exe + " --version printed no version number: " + text.lines().filter(l -> !l.isBlank()).findFirst()
            .orElse("").strip()));
  }

  /** The log file named by {@code --logfile} (relative to the work directory), else {@code log-neuron-cc.txt}. */
  private static String logFileName(List<String> flags) {
    String name = DEFAULT_LOGFILE;
    for (int i = 0; i < flags.size(); i++) {
      if (flags.get(i).startsWith("--logfile=")) {
        name = flags.get(i).substring("--logfile=".length());
      } else if (flags.get(i).equals("--logfile") && i + 1 < flags.size()) {
        name = flags.get(i + 1);
      }
    }
    return name;
  }

  /** The tail of the compiler's log file in {@code work}, headed by its name; empty when there is none. */
  private String logFile(Path work) {
    String name = logFileName;
    Path f = work.resolve(name);
    try {
      if (!Files.isRegularFile(f)) {
        return "";
      }
      long size = Files.size(f);
      try (var ch = java.nio.channels.FileChannel.open(f)) {
        long from = Math.max(0, size - LOG_TAIL_BYTES);
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate((int) (size - from));
        while (b.hasRemaining() && ch.read(b, from + b.position()) > 0) {
          // read to the end
        }
        String text = new String(b.array(), 0, b.position(), StandardCharsets.UTF_8);
        return "\n--- " + name + (from > 0 ? " (last " + LOG_TAIL_BYTES / 1024 + " KiB)" : "") + " ---\n" + text;
      }
    } catch (IOException e) {
      return "\n--- " + name + ": unreadable (" + XlacException.reason(e) + ") ---\n";
    }
  }

  private static String lastLine(String log) {
    List<String> lines = log.lines().filter(l -> !l.isBlank() && !l.startsWith("--- ")).toList();
    return lines.isEmpty() ? "" : ": " + NeuronLogs.cap(lines.getLast().strip());
  }

  private static CompileOutcome.Failure failure(FailureKind kind, CompileRequest request, String message, String log,
      long start) {
    return new CompileOutcome.Failure(kind, request.describe() + ": " + message.replace('\n', ' '), log, since(start));
  }

  private static Duration since(long start) {
    return Duration.ofNanos(System.nanoTime() - start);
  }

  private static void deleteTree(Path dir) {
    try {
      FileTrees.deleteTree(dir);
    } catch (IOException e) {
      // best effort: a leftover directory under the work root costs disk, not correctness
    }
  }
}
