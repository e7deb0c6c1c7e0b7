package dev.xlac.compiler.pjrt;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.compiler.CompilerDriver;
import dev.xlac.core.CompilerIdentity;
import dev.xlac.core.FailureKind;
import dev.xlac.core.XlacException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Compiles in this process through a PJRT plugin: one plugin, one client, many compiles (from any
 * number of threads; PJRT clients are thread-safe). A plugin that crashes takes the JVM with it;
 * isolation is the worker process's job, not this class's.
 *
 * <p>The identity is {@code pjrt / "<platform> <platform version>; plugin api <major>.<minor>" /
 * <platform, lowercased>} with options {@code client.<key>}, {@code compile.<key>} and
 * {@code plugin.sha256}: the platform version may not change between plugin builds (the CPU
 * plugin's is just {@code cpu}), and an artifact only loads into the build that made it.
 */
public final class PjrtDriver implements CompilerDriver {
  private final PjrtPlugin plugin;
  private final PjrtClient client;
  private final PjrtCompileOptions compileOptions;
  private final CompilerIdentity identity;
  private final PjrtPluginFacts pluginFacts;

  private PjrtDriver(PjrtPlugin plugin, PjrtClient client, PjrtCompileOptions compileOptions) {
    this.plugin = plugin;
    this.client = client;
    this.compileOptions = compileOptions;
    Map<String, String> options = new TreeMap<>();
    client.options().forEach((k, v) -> options.put("client." + k, v));
    compileOptions.asMap().forEach((k, v) -> options.put("compile." + k, v));
    options.put("plugin.sha256", plugin.fileSha256());
    this.identity = new CompilerIdentity("pjrt",
        CompileOutcome.oneLine(client.platformName() + " " + client.platformVersion() + "; plugin api " + plugin.apiVersion()),
        client.platformName().toLowerCase(Locale.ROOT), List.of(), options);
    this.pluginFacts = new PjrtPluginFacts(client.platformName(), client.platformVersion(), plugin.apiMajor(),
        plugin.apiMinor(), plugin.fileSha256(), client.deviceKinds(), plugin.typedAttributes());
  }

  /**
   * Opens the plugin and creates its client. Failures are {@link XlacException}s with exit code
   * ENVIRONMENT and a one-line message.
   */
  public static PjrtDriver open(Path pluginFile, Map<String, String> clientOptions, PjrtCompileOptions compileOptions) {
    PjrtPlugin plugin = PjrtPlugin.open(pluginFile);
    try {
      return new PjrtDriver(plugin, plugin.createClient(clientOptions), compileOptions);
    } catch (RuntimeException e) {
      plugin.close();
      throw e;
    }
  }

  @Override
  public CompilerIdentity identity() {
    return identity;
  }

  /** What the runtime proxy's plugin identity text says of this plugin and its client. */
  @Override
  public Optional<PjrtPluginFacts> pluginFacts() {
    return Optional.of(pluginFacts);
  }

  /** The client, for loading artifacts back ({@link PjrtClient#deserializeAndLoad}). */
  public PjrtClient client() {
    return client;
  }

  public PjrtPlugin plugin() {
    return plugin;
  }

  /**
   * Compile and serialize. Plugin errors become failures: RESOURCE_EXHAUSTED is
   * {@link FailureKind#OUT_OF_MEMORY}, DEADLINE_EXCEEDED is {@link FailureKind#TIMEOUT}, every
   * other code is {@link FailureKind#COMPILE_ERROR}; the plugin's full message is the log.
   */
  @Override
  public CompileOutcome compile(CompileRequest request) {
    long start = System.nanoTime();
    Map<String, Duration> phases = new LinkedHashMap<>();
    try (PjrtLoadedExecutable executable = request.isRecorded()
        ? client.compile(request.formatBytes(), request.hloModule(), request.compileOptions())
        : client.compile(request.hloModule(), compileOptions)) {
      long compiled = System.nanoTime();
      phases.put("compile", Duration.ofNanos(compiled - start));
      byte[] artifact = executable.serialize();
      long serialized = System.nanoTime();
      phases.put("serialize", Duration.ofNanos(serialized - compiled));
      return new CompileOutcome.Success(artifact, "", Duration.ofNanos(System.nanoTime() - start), phases);
    } catch (PjrtException e) {
      FailureKind kind = switch (e.code()) {
        case RESOURCE_EXHAUSTED -> FailureKind.OUT_OF_MEMORY;
        case DEADLINE_EXCEEDED -> FailureKind.TIMEOUT;
        default -> FailureKind.COMPILE_ERROR;
      };
      return new CompileOutcome.Failure(kind, request.describe() + ": " + e.getMessage(), e.pluginMessage(),
          Duration.ofNanos(System.nanoTime() - start));
    } catch (OutOfMemoryError e) {
      return new CompileOutcome.Failure(FailureKind.OUT_OF_MEMORY,
          request.describe() + ": the JVM ran out of memory copying the module or artifact", "",
          Duration.ofNanos(System.nanoTime() - start));
    }
  }

  /** Destroys the client (and any executables), then releases the plugin. Safe twice. */
  @Override
  public void close() {
    try {
      client.close();
    } finally {
      plugin.close();
    }
  }

  @Override
  public String toString() {
    return "PjrtDriver[" + identity.describe() + "]";
  }
}
