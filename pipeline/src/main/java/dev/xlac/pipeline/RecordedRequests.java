package dev.xlac.pipeline;

import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RequestInfo;
import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.compiler.CompilerDriver;
import dev.xlac.compiler.pjrt.PjrtPluginFacts;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.io.AtomicFiles;
import dev.xlac.pipeline.explain.StablehloTarget;
import dev.xlac.runtime.PluginIdentityText;
import dev.xlac.runtime.RecordedRequest;
import dev.xlac.runtime.RequestKey;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Consumer;

/**
 * The runtime's recorded requests as work for {@code parallel-compile} with a PJRT plugin: each recorded request
 * (a runtime entry, whatever plugin it was recorded with) becomes the request a training run would send this
 * plugin, under the key the proxy computes for it ({@code RequestKey} over the format, the program as this plugin
 * gets it ({@link StablehloTarget}), the options as recorded and this plugin's identity text).
 */
public final class RecordedRequests {
  private RecordedRequests() {}

  /**
   * One {@link CompileWork.Request} per distinct key for the plugin of {@code identityText}, in key order. A
   * request whose key is its recorded key (recorded with this plugin) is included too: {@link CacheResults}
   * settles it as cached. A request that cannot be read (pruned meanwhile, damaged: the store reported it) is left
   * out.
   */
  static List<CompileWork> plan(CacheStore store, List<RequestInfo> recorded, String identityText) {
    return plan(store, recorded, identityText, line -> {});
  }

  /**
   * {@link #plan(CacheStore, List, String)}, and one line to {@code notice} when requests were recorded on a machine
   * whose CPU (the identity's {@code host_cpu} or {@code cpu_features} line) is not this one's: XLA:CPU compiles for
   * the host's instruction set, so their entries, keyed with this machine's identity, serve only machines with this
   * machine's CPU, never the one they were recorded on.
   */
  static List<CompileWork> plan(CacheStore store, List<RequestInfo> recorded, String identityText,
      Consumer<String> notice) {
    return plan(store, recorded, identityText, notice, info -> { });
  }

  /** {@link #plan(CacheStore, List, String, Consumer)}, telling {@code read} each recorded request it could read. */
  static List<CompileWork> plan(CacheStore store, List<RequestInfo> recorded, String identityText,
      Consumer<String> notice, Consumer<RequestInfo> read) {
    byte[] identity = identityText.getBytes(StandardCharsets.UTF_8);
    Map<RequestKey, CompileWork> work = new TreeMap<>();
    Map<String, Integer> otherCpu = new TreeMap<>();
    int readCount = 0;
    for (RequestInfo info : recorded) {
      Optional<RecordedRequest> r = store.readRequestWithoutExecutable(info.key());
      if (r.isEmpty()) {
        continue;
      }
      RecordedRequest q = r.get();
      read.accept(info);
      readCount++;
      otherCpuLine(q.identityText(), identityText).ifPresent(line -> otherCpu.merge(line, 1, Integer::sum));
      String format = q.formatName();
      byte[] program = StablehloTarget.forPlugin(format, q.program(), q.identityText(), identityText);
      RequestKey key = RequestKey.of(q.format(), program, q.options(), identity);
      work.putIfAbsent(key, new CompileWork.Request(key, q.key(), format + " request", format, q.options(),
          identityText, null));
    }
    if (!otherCpu.isEmpty()) {
      int n = otherCpu.values().stream().mapToInt(Integer::intValue).sum();
      notice.accept(n + " of " + readCount + " recorded requests were recorded on another CPU (their identity's "
          + String.join(" and ", otherCpu.keySet()) + " line differs from this machine's): their entries are keyed"
          + " for this machine's CPU and serve only machines with the same CPU; compile on a machine like the ones"
          + " that will run them");
    }
    return new ArrayList<>(work.values());
  }

  /**
   * The first of the identity's host CPU lines ({@code host_cpu}, {@code cpu_features}) in which {@code recorded}
   * differs from {@code here}; empty when they agree, or when either has none (another platform than CPU, or a
   * recording from before the lines existed).
   */
  static Optional<String> otherCpuLine(String recorded, String here) {
    for (String line : List.of("host_cpu", "cpu_features")) {
      Optional<String> a = PluginIdentityText.field(recorded, line);
      Optional<String> b = PluginIdentityText.field(here, line);
      if (a.isPresent() && b.isPresent() && !a.equals(b)) {
        return Optional.of(line);
      }
    }
    return Optional.empty();
  }

  /**
   * The program {@code r} sends the run's plugin: the one it carries, else its recorded program from {@code store}
   * as this plugin gets it ({@link StablehloTarget}); an IllegalStateException when the recorded request is missing
   * or damaged.
   */
  public static byte[] program(CacheStore store, CompileWork.Request r) {
    if (r.program() != null) {
      return r.program();
    }
    RecordedRequest recorded = store.readRequestWithoutExecutable(r.recorded()).orElseThrow(
        () -> new IllegalStateException("its recorded request " + r.recorded().text()
            + " is missing or damaged in the cache; run 'xlac cache verify'"));
    return StablehloTarget.forPlugin(r.format(), recorded.program(), recorded.identityText(), r.identityText());
  }

  /**
   * The plugin identity text the proxy computes in a process with this plugin and {@code env}'s {@code XLA_FLAGS}
   * and {@code LIBTPU_INIT_ARGS} (runtime/README.md), from what a worker with the plugin loaded reported. The
   * worker inherits this process's environment, so its plugin compiles with the same flags the text names.
   */
  static String identityText(PjrtPluginFacts f, Map<String, String> env) {
    List<PluginIdentityText.Attribute> attributes = f.attributes().stream().map(a -> switch (a.value()) {
      case String v -> PluginIdentityText.Attribute.string(a.name(), v);
      case Long v -> PluginIdentityText.Attribute.int64(a.name(), v);
      case long[] v -> PluginIdentityText.Attribute.int64List(a.name(), v);
      case Float v -> PluginIdentityText.Attribute.float32(a.name(), v);
      case Boolean v -> PluginIdentityText.Attribute.bool(a.name(), v);
      case null, default -> new PluginIdentityText.Attribute(a.name(), "?" + a.type() + ":");
    }).toList();
    return PluginIdentityText.of(f.platformName(), f.platformVersion(), f.apiMajor(), f.apiMinor(), f.fileSha256(),
        f.deviceKinds(), PluginIdentityText.hostCpuLines(f.platformName()),
        PluginIdentityText.keyedXlaFlags(env.get("XLA_FLAGS")),
        Objects.requireNonNullElse(env.get("LIBTPU_INIT_ARGS"), ""), attributes);
  }

  /** Where the log of a recorded request whose compile failed is written: the cache keeps none for them. */
  static Path logFile(Path cacheDir, RequestKey key) {
    return cacheDir.resolve("runtime").resolve("failed-compiles").resolve(key.hex() + ".log");
  }

  /**
   * {@code base} with {@code first} (opened to learn the plugin identity text) handed to the first
   * {@link DriverFactory#open()}, its identity answered from {@code first}, and every driver writing the log of a
   * recorded request's failed compile to {@link #logFile} and naming it in the failure's line.
   */
  static DriverFactory withFirst(DriverFactory base, CompilerDriver first, Path cacheDir) {
    return new DriverFactory() {
      private CompilerDriver spare = first;

      @Override
      public CompilerIdentity identity() {
        return first.identity();
      }

      @Override
      public CompilerDriver open() {
        CompilerDriver d;
        synchronized (this) {
          d = spare;
          spare = null;
        }
        return new LoggingDriver(d != null ? d : base.open(), cacheDir);
      }

      @Override
      public void prestart() {
        base.prestart();
      }

      @Override
      public void close() {
        CompilerDriver d;
        synchronized (this) {
          d = spare;
          spare = null;
        }
        try {
          if (d != null) {
            d.close();
          }
        } finally {
          base.close();
        }
      }
    };
  }

  /** A driver whose failed compiles of recorded requests leave their log in a file named in the failure. */
  private record LoggingDriver(CompilerDriver inner, Path cacheDir) implements CompilerDriver {
    @Override
    public CompilerIdentity identity() {
      return inner.identity();
    }

    @Override
    public Optional<PjrtPluginFacts> pluginFacts() {
      return inner.pluginFacts();
    }

    @Override
    public CompileOutcome compile(CompileRequest request) {
      CompileOutcome outcome = inner.compile(request);
      if (!(outcome instanceof CompileOutcome.Failure f) || !(request.fingerprint() instanceof RequestKey key)) {
        return outcome;
      }
      Path log = logFile(cacheDir, key);
      try {
        Files.createDirectories(log.getParent());
        AtomicFiles.writeString(log, f.log());
      } catch (IOException | RuntimeException e) {
        return outcome; // the line still says what failed; only the log file is missing
      }
      return new CompileOutcome.Failure(f.kind(), f.message() + "; log: " + log, f.log(), f.elapsed());
    }

    @Override
    public void close() {
      inner.close();
    }
  }
}
