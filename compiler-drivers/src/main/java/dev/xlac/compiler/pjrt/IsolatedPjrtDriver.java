package dev.xlac.compiler.pjrt;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.compiler.CompilerDriver;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.ExitCode;
import dev.xlac.core.FailureKind;
import dev.xlac.core.XlacException;
import dev.xlac.core.os.ExitStatus;
import dev.xlac.core.os.OutputTail;
import dev.xlac.core.os.ProcessGroups;
import dev.xlac.core.os.Signals;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The PJRT driver in a child JVM ({@link PjrtWorkerProcess}), so that a plugin that aborts,
 * segfaults or hangs costs one compile, not the caller's process. One worker, one request at a
 * time ({@code compile} is synchronized); run several drivers for parallel compiles.
 *
 * <p>A worker that dies is reported as {@link FailureKind#CRASH} with its signal (SIGKILL, which
 * the kernel's OOM killer sends, is {@link FailureKind#OUT_OF_MEMORY}); a compile that outlives the
 * timeout is {@link FailureKind#TIMEOUT} and its worker is killed. Either way the next compile
 * starts a fresh worker, which must report the same compiler identity as the first.
 */
public final class IsolatedPjrtDriver implements CompilerDriver {
  private static final Duration STARTUP_TIMEOUT = Duration.ofMinutes(2);
  private static final int LOG_LIMIT = 64 * 1024;
  /** How long a dead worker's stderr is read after its exit. */
  private static final Duration DRAIN_WAIT = Duration.ofSeconds(2);

  private static final Optional<Path> SETSID = ProcessGroups.setsid();

  private final List<String> command;
  private final Duration timeout;
  private final ExecutorService reader;
  private final CompilerIdentity identity;
  private final PjrtPluginFacts pluginFacts;
  private Worker worker;
  private int started;
  private boolean closed;

  private IsolatedPjrtDriver(List<String> command, Duration timeout) {
    this.command = List.copyOf(command);
    this.timeout = timeout;
    this.reader = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "xlac-pjrt-worker-reader");
      t.setDaemon(true);
      return t;
    });
    try {
      this.worker = spawn();
    } catch (RuntimeException e) {
      reader.shutdownNow();
      throw e;
    }
    this.identity = worker.identity;
    this.pluginFacts = worker.pluginFacts;
  }

  /**
   * Starts a worker running this JVM's Java with this JVM's class path, loads the plugin there, and
   * returns once it reported its identity. Plugin problems are {@link XlacException}s (ENVIRONMENT)
   * carrying the worker's one-line message.
   *
   * @param timeout per compile; {@link Duration#ZERO} for none
   */
  public static IsolatedPjrtDriver start(Path plugin, Map<String, String> clientOptions,
      PjrtCompileOptions compileOptions, Duration timeout) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("--enable-native-access=ALL-UNNAMED");
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-XX:-CreateCoredumpOnCrash");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(PjrtWorkerProcess.class.getName());
    cmd.add("--plugin");
    cmd.add(plugin.toAbsolutePath().toString());
    clientOptions.forEach((k, v) -> {
      cmd.add("--client");
      cmd.add(k + "=" + v);
    });
    compileOptions.asMap().forEach((k, v) -> {
      cmd.add("--compile");
      cmd.add(k + "=" + v);
    });
    return new IsolatedPjrtDriver(cmd, timeout);
  }

  @Override
  public CompilerIdentity identity() {
    return identity;
  }

  /** {@link PjrtDriver#pluginFacts()}, as the first worker reported them. */
  @Override
  public Optional<PjrtPluginFacts> pluginFacts() {
    return Optional.of(pluginFacts);
  }

  /** The running worker's process id, or -1 if none runs (for tests). */
  synchronized long workerPid() {
    return worker != null ? worker.process.pid() : -1;
  }

  /** How many workers this driver has started (1 + restarts). */
  public synchronized int workersStarted() {
    return started;
  }

  @Override
  public synchronized CompileOutcome compile(CompileRequest request) {
    if (closed) {
      throw new IllegalStateException("the isolated PJRT driver is closed");
    }
    long start = System.nanoTime();
    Worker w;
    try {
      w = worker != null ? worker : (worker = spawn());
    } catch (XlacException e) {
      return new CompileOutcome.Failure(FailureKind.ENVIRONMENT, request.describe() + ": " + e.getMessage(), "",
          since(start));
    }
    w.log.clear();
    Future<CompileOutcome> answer = reader.submit(() -> {
      WorkerProtocol.writeRequest(w.toWorker, request);
      return WorkerProtocol.readOutcome(w.fromWorker, WorkerProtocol.readType(w.fromWorker));
    });
    try {
      CompileOutcome outcome = timeout.isZero() ? answer.get() : answer.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
      return withWorkerLog(outcome, w.log.text());
    } catch (TimeoutException e) {
      worker = null;
      w.kill();
      return new CompileOutcome.Failure(FailureKind.TIMEOUT, request.describe() + ": no result after "
          + timeout.toSeconds() + " s; the PJRT worker was killed", w.log.text(), since(start));
    } catch (ExecutionException e) {
      worker = null;
      Death death = w.death();
      return new CompileOutcome.Failure(death.kind, request.describe() + ": " + death.message,
          w.log.text() + death.report, since(start));
    } catch (InterruptedException e) {
      worker = null;
      w.kill();
      Thread.currentThread().interrupt();
      return new CompileOutcome.Failure(FailureKind.TIMEOUT, request.describe() + ": interrupted", w.log.text(),
          since(start));
    }
  }

  private static CompileOutcome withWorkerLog(CompileOutcome outcome, String workerLog) {
    if (workerLog.isEmpty()) {
      return outcome;
    }
    return switch (outcome) {
      case CompileOutcome.Success s -> new CompileOutcome.Success(s.artifact(), s.log() + workerLog, s.elapsed(),
          s.phases());
      case CompileOutcome.Failure f -> new CompileOutcome.Failure(f.kind(), f.message(),
          f.log() + (f.log().isEmpty() ? "" : "\n") + workerLog, f.elapsed());
    };
  }

  /** Ends the worker (closing its stdin, then killing it if it lingers). Safe twice. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (worker != null) {
      worker.stop();
      worker = null;
    }
    reader.shutdownNow();
  }

  private Worker spawn() {
    // A name of this worker's own: a report another process with the same pid left in the temporary
    // directory (pids are reused) must never be taken for this worker's.
    String reportPattern = crashReportPattern();
    Process process;
    try {
      List<String> cmd = new ArrayList<>();
      SETSID.ifPresent(x -> cmd.add(x.toString())); // its own group: a terminal's Ctrl-C is xlac's to handle
      cmd.add(command.getFirst());
      cmd.add("-XX:ErrorFile=" + reportPattern);
      cmd.addAll(command.subList(1, command.size()));
      process = new ProcessBuilder(cmd).redirectInput(ProcessBuilder.Redirect.PIPE).start();
    } catch (IOException e) {
      throw new XlacException(ExitCode.ENVIRONMENT, "cannot start the PJRT worker (" + XlacException.reason(e) + ")",
          e);
    }
    started++;
    Worker w = new Worker(process, reportPattern);
    Future<CompilerIdentity> hello = reader.submit(w::readHello);
    try {
      w.identity = hello.get(STARTUP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      w.kill();
      if (e.getCause() instanceof XlacException x) {
        throw x;
      }
      Death death = w.death();
      throw new XlacException(ExitCode.ENVIRONMENT, "the PJRT worker failed to start: " + death.message
          + lastLine(w.log.text()));
    } catch (TimeoutException e) {
      w.kill();
      throw new XlacException(ExitCode.ENVIRONMENT, "the PJRT worker did not start within "
          + STARTUP_TIMEOUT.toSeconds() + " s");
    } catch (InterruptedException e) {
      w.kill(); // e.g. a pre-started worker nobody needs any more: no waiting for its start
      Thread.currentThread().interrupt();
      throw new XlacException(ExitCode.ENVIRONMENT, "interrupted while the PJRT worker was starting");
    }
    if (identity != null && !identity.equals(w.identity)) {
      w.kill();
      throw new XlacException(ExitCode.ENVIRONMENT, "the restarted PJRT worker reports a different compiler ("
          + w.identity.describe() + " instead of " + identity.describe() + ")");
    }
    return w;
  }

  private static String lastLine(String log) {
    List<String> lines = log.lines().filter(l -> !l.isBlank()).toList();
    return lines.isEmpty() ? "" : " (" + lines.getLast().strip() + ")";
  }

  private static Duration since(long start) {
    return Duration.ofNanos(System.nanoTime() - start);
  }

  private static String crashReportPattern() {
    String nonce = HexFormat.of().toHexDigits(NONCES.nextLong()).substring(0, 8);
    return Path.of(System.getProperty("java.io.tmpdir"), "xlac-pjrt-worker-hs_err_%p_" + nonce + ".log").toString();
  }

  private static final SecureRandom NONCES = new SecureRandom();

  /** Why a worker died: the failure kind, a one-line message, and any crash report to append to the log. */
  private record Death(FailureKind kind, String message, String report) {}

  private static final Pattern JVM_SIGNAL = Pattern.compile("#\\s+(SIG[A-Z]+) \\(0x[0-9a-f]+\\)");

  /** One child process and its pipes. */
  private static final class Worker {
    final Process process;
    final DataOutputStream toWorker;
    final DataInputStream fromWorker;
    final OutputTail log;
    final String reportPattern;
    CompilerIdentity identity;
    PjrtPluginFacts pluginFacts;
    private boolean killedByUs;

    Worker(Process process, String reportPattern) {
      this.process = process;
      this.reportPattern = reportPattern;
      this.toWorker = new DataOutputStream(new BufferedOutputStream(process.getOutputStream(), 1 << 16));
      this.fromWorker = new DataInputStream(new BufferedInputStream(process.getInputStream(), 1 << 16));
      this.log = OutputTail.drain(process.getErrorStream(), LOG_LIMIT, "xlac-pjrt-worker-stderr-" + process.pid());
    }

    CompilerIdentity readHello() throws IOException {
      byte type = WorkerProtocol.readType(fromWorker);
      if (type == WorkerProtocol.HELLO_OK) {
        CompilerIdentity id = CompilerIdentity.decode(WorkerProtocol.readString(fromWorker));
        pluginFacts = WorkerProtocol.readFacts(fromWorker);
        return id;
      }
      if (type == WorkerProtocol.HELLO_ERROR) {
        ExitCode code = ExitCode.valueOf(WorkerProtocol.readString(fromWorker));
        throw new XlacException(code, WorkerProtocol.readString(fromWorker));
      }
      throw new IOException("unexpected frame type " + type + " from the worker");
    }

    /** Waits for the worker's exit (it already closed its output) and explains it. */
    Death death() {
      int exit;
      try {
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
          kill();
          return new Death(FailureKind.CRASH, "the PJRT worker stopped answering and was killed", "");
        }
        exit = process.exitValue();
        log.join(DRAIN_WAIT);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        kill();
        return new Death(FailureKind.CRASH, "interrupted while the PJRT worker was dying", "");
      }
      Optional<String> report = crashReport(process.pid());
      if (report.isPresent()) {
        // The JVM caught a fatal signal in native code, wrote a report and exited.
        String text = report.get();
        Matcher m = JVM_SIGNAL.matcher(text);
        String signal = m.find() ? m.group(1) : "a fatal error";
        String frame = problematicFrame(text);
        return new Death(FailureKind.CRASH, "the PJRT worker crashed with " + signal + frame + " (report: "
            + reportPath(process.pid()) + ")", "\n" + text.lines().limit(40).reduce((a, b) -> a + "\n" + b).orElse(""));
      }
      OptionalInt signal = ExitStatus.signal(exit);
      if (signal.isPresent() && signal.getAsInt() == Signals.SIGKILL && !killedByUs) {
        return new Death(FailureKind.OUT_OF_MEMORY,
            "the PJRT worker was killed by SIGKILL, most likely by the kernel's OOM killer", "");
      }
      return new Death(FailureKind.CRASH, "the PJRT worker " + ExitStatus.describe(exit)
          + (signal.isPresent() ? "" : " without an answer"), "");
    }

    void kill() {
      killedByUs = true;
      ProcessGroups.killTree(process, SETSID.isPresent());
    }

    void stop() {
      try {
        toWorker.close(); // EOF on the worker's stdin: it closes its driver and exits
        if (process.waitFor(10, TimeUnit.SECONDS)) {
          return;
        }
      } catch (IOException e) {
        // already gone
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      kill();
    }

    private Path reportPath(long pid) {
      return Path.of(reportPattern.replace("%p", Long.toString(pid)));
    }

    private Optional<String> crashReport(long pid) {
      try {
        Path p = reportPath(pid);
        return Files.isRegularFile(p) ? Optional.of(Files.readString(p, StandardCharsets.UTF_8)) : Optional.empty();
      } catch (IOException e) {
        return Optional.empty();
      }
    }

    private static String problematicFrame(String report) {
      List<String> lines = report.lines().toList();
      for (int i = 0; i + 1 < lines.size(); i++) {
        if (lines.get(i).startsWith("# Problematic frame:")) {
          return " in " + lines.get(i + 1).replaceFirst("^#\\s*", "").replaceAll("\\s+", " ").strip();
        }
      }
      return "";
    }
  }
}
