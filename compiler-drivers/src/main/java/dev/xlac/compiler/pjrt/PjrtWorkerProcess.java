package dev.xlac.compiler.pjrt;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.core.XlacException;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The worker process of {@link IsolatedPjrtDriver}: loads one PJRT plugin, then answers compile
 * requests from stdin on stdout (framing in {@link WorkerProtocol}) until stdin closes. A plugin
 * that aborts or segfaults kills only this process.
 *
 * <pre>
 *   java --enable-native-access=ALL-UNNAMED -cp ... dev.xlac.compiler.pjrt.PjrtWorkerProcess \
 *       --plugin PATH [--client KEY=VALUE]... [--compile KEY=VALUE]...
 * </pre>
 *
 * <p>Native code may print to file descriptor 1, which would corrupt the frames, so the worker
 * first moves its frame channel to a duplicate of fd 1 and points fd 1 at stderr.
 */
public final class PjrtWorkerProcess {
  private PjrtWorkerProcess() {}

  public static void main(String[] args) throws IOException {
    OutputStream frames = claimStdout();
    DataOutputStream out = new DataOutputStream(new BufferedOutputStream(frames, 1 << 16));
    DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));

    PjrtDriver driver;
    try {
      driver = open(args);
    } catch (XlacException e) {
      WorkerProtocol.writeHeader(out, WorkerProtocol.HELLO_ERROR);
      WorkerProtocol.writeString(out, e.exitCode().name());
      WorkerProtocol.writeString(out, e.getMessage());
      out.flush();
      System.exit(e.exitCode().code());
      return;
    }
    try (driver) {
      WorkerProtocol.writeHeader(out, WorkerProtocol.HELLO_OK);
      WorkerProtocol.writeString(out, driver.identity().encode());
      WorkerProtocol.writeFacts(out, driver.pluginFacts().orElseThrow());
      out.flush();
      while (true) {
        byte type;
        try {
          type = WorkerProtocol.readType(in);
        } catch (EOFException e) {
          return; // the parent closed our stdin: done
        }
        if (type != WorkerProtocol.REQUEST) {
          throw new IOException("unexpected frame type " + type + " from the parent");
        }
        CompileRequest request = WorkerProtocol.readRequest(in);
        CompileOutcome outcome = driver.compile(request);
        WorkerProtocol.writeOutcome(out, outcome);
      }
    }
  }

  private static PjrtDriver open(String[] args) {
    Path plugin = null;
    Map<String, String> client = new LinkedHashMap<>();
    Map<String, String> compile = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      String value = i + 1 < args.length ? args[i + 1] : null;
      switch (args[i]) {
        case "--plugin" -> plugin = Path.of(require(args[i], value));
        case "--client" -> put(client, require(args[i], value));
        case "--compile" -> put(compile, require(args[i], value));
        default -> throw XlacException.badInput("pjrt worker: unknown argument " + args[i]);
      }
      i++;
    }
    if (plugin == null) {
      throw XlacException.badInput("pjrt worker: --plugin is required");
    }
    return PjrtDriver.open(plugin, client, PjrtCompileOptions.DEFAULT.with(compile));
  }

  private static String require(String option, String value) {
    if (value == null) {
      throw XlacException.badInput("pjrt worker: " + option + " needs a value");
    }
    return value;
  }

  private static void put(Map<String, String> map, String keyValue) {
    int eq = keyValue.indexOf('=');
    if (eq <= 0) {
      throw XlacException.badInput("pjrt worker: expected KEY=VALUE, got " + keyValue);
    }
    map.put(keyValue.substring(0, eq), keyValue.substring(eq + 1));
  }

  /**
   * Returns a stream to the parent's pipe that nothing else writes to: {@code dup(1)}, then
   * {@code dup2(2, 1)} so native prints land on stderr. Java's own System.out goes to stderr too.
   */
  @SuppressWarnings("restricted") // dup/dup2 from libc
  private static OutputStream claimStdout() {
    System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true));
    try {
      Linker linker = Linker.nativeLinker();
      var libc = linker.defaultLookup();
      MethodHandle dup = linker.downcallHandle(libc.find("dup").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT));
      MethodHandle dup2 = linker.downcallHandle(libc.find("dup2").orElseThrow(),
          FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
      int frames = (int) dup.invokeExact(1);
      if (frames >= 0) {
        FileOutputStream channel = new FileOutputStream("/proc/self/fd/" + frames);
        if ((int) dup2.invokeExact(2, 1) != 1) {
          System.err.println("pjrt worker: dup2 failed; native prints may corrupt frames");
        }
        return channel;
      }
    } catch (Throwable t) {
      System.err.println("pjrt worker: cannot protect stdout (" + XlacException.reason(t)
          + "); native prints may corrupt frames");
    }
    return new FileOutputStream(FileDescriptor.out);
  }
}
