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

/**
 * The runtime's recorded requests as work for {@code parallel-compile} with a PJRT plugin: each recorded request
 * (a runtime entry, whatever plugin it was recorded with) becomes the request a training run would send this
 * plugin, under the key the proxy computes for it ({@code RequestKey} over the format, the program as this plugin
 * gets it ({@link StablehloTarget}), the options as recorded and this plugin's identity text).
 */
final class RecordedRequests {
  private RecordedRequests() {}

  /**
   * One {@link CompileWork.Request} per distinct key for the plugin of {@code identityText}, in key order. A
   * request whose key is its recorded key (recorded with this plugin) is included too: {@link CacheResults}
   * settles it as cached. A request that cannot be read (pruned meanwhile, damaged: the store reported it) is left
   * out.
   */
  static List<CompileWork> plan(CacheStore store, List<RequestInfo> recorded, String identityText) {
    byte[] identity = identityText.getBytes(StandardCharsets.UTF_8);
    Map<RequestKey, CompileWork> work = new TreeMap<>();
    for (RequestInfo info : recorded) {
      Optional<RecordedRequest> r = store.readRequestWithoutExecutable(info.key());
      if (r.isEmpty()) {
        continue;
      }
      RecordedRequest q = r.get();
      String format = q.formatName();
      byte[] program = StablehloTarget.forPlugin(format, q.program(), q.identityText(), identityText);
      RequestKey key = RequestKey.of(q.format(), program, q.options(), identity);
      work.putIfAbsent(key, new CompileWork.Request(key, q.key(), format + " request", format, q.options(),
          identityText, null));
    }
    return new ArrayList<>(work.values());
  }

  /**
   * The program {@code r} sends the run's plugin: the one it carries, else its recorded program from {@code store}
   * as this plugin gets it ({@link StablehloTarget}); an IllegalStateException when the recorded request is missing
   * or damaged.
   */
  static byte[] program(CacheStore store, CompileWork.Request r) {
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
        f.deviceKinds(), PluginIdentityText.keyedXlaFlags(env.get("XLA_FLAGS")),
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
