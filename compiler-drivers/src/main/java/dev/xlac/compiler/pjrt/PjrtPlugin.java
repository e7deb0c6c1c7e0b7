package dev.xlac.compiler.pjrt;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.xlac.core.ExitCode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A PJRT plugin ({@code GetPjrtApi} in a shared library), opened through {@code java.lang.foreign}.
 * Owns the clients it creates and destroys them on {@link #close()}.
 *
 * <p>The library itself stays loaded and initialized for the life of the JVM (see
 * {@link PjrtApi}): opening the same file again reuses it, so {@code PJRT_Plugin_Initialize} runs
 * once per process as the API requires.
 */
public final class PjrtPlugin implements AutoCloseable {
  private static final Map<Path, PjrtApi> LOADED = new HashMap<>();

  private final PjrtApi api;
  private final Lifecycle lifecycle;
  private final Set<PjrtClient> clients = ConcurrentHashMap.newKeySet();

  private PjrtPlugin(PjrtApi api) {
    this.api = api;
    this.lifecycle = new Lifecycle("PJRT plugin " + api.path);
  }

  /**
   * Opens a plugin file. Every problem (missing file, not a shared library, no
   * {@code GetPjrtApi}, unsupported API version, initialization error) is an
   * {@link dev.xlac.core.XlacException} with exit code ENVIRONMENT and a one-line message.
   */
  public static PjrtPlugin open(Path file) {
    Path key = file.toAbsolutePath().normalize();
    PjrtApi api;
    synchronized (LOADED) {
      api = LOADED.get(key);
      if (api == null) {
        api = PjrtApi.open(key);
        LOADED.put(key, api);
      }
    }
    return new PjrtPlugin(api);
  }

  public Path path() {
    return api.path;
  }

  /** {@code major.minor} of the PJRT C API the plugin was built with, e.g. {@code 0.115}. */
  public String apiVersion() {
    return api.versionString();
  }

  public int apiMajor() {
    return api.major;
  }

  public int apiMinor() {
    return api.minor;
  }

  /** The number of function slots in the plugin's PJRT_Api table. */
  public long apiSlots() {
    return (api.apiStructSize - PjrtStructs.API_FIRST_SLOT) / 8;
  }

  /**
   * Hex SHA-256 of the plugin file, computed on first use and kept. PJRT reports no build identity
   * (the CPU plugin's platform version is just {@code cpu}), yet a serialized executable only loads
   * into the build that made it; the digest tells builds apart.
   */
  public String fileSha256() {
    return api.fileSha256();
  }

  /**
   * {@code PJRT_Plugin_Attributes}, e.g. {@code xla_version}, {@code stablehlo_current_version}:
   * asked of the plugin on first use and kept. A plugin error is a {@link PjrtException} (ENVIRONMENT).
   */
  public Map<String, String> attributes() {
    return api.attributes();
  }

  /** The attributes with their PJRT types (asked of the plugin on each call). */
  public java.util.List<PjrtPluginFacts.Attribute> typedAttributes() {
    return PjrtNamedValues.readTypedAttributes(api);
  }

  /**
   * {@code PJRT_Client_Create} with {@code key=value} create options (typed as described in
   * {@link PjrtNamedValues}). A plugin error is a {@link PjrtException} with exit code ENVIRONMENT.
   */
  public PjrtClient createClient(Map<String, String> options) {
    Map<String, String> copy = new LinkedHashMap<>(options);
    return lifecycle.use(() -> {
      // The option strings live as long as the client, in case the plugin keeps pointers to them.
      Arena arena = Arena.ofShared();
      try {
        MemorySegment args = PjrtStructs.CLIENT_CREATE.allocate(arena);
        args.set(ADDRESS, PjrtStructs.CLIENT_CREATE.offset("create_options"), PjrtNamedValues.write(arena, copy));
        args.set(JAVA_LONG, PjrtStructs.CLIENT_CREATE.offset("num_options"), copy.size());
        api.check(PjrtApi.Slot.CLIENT_CREATE, args, ExitCode.ENVIRONMENT);
        MemorySegment handle = args.get(ADDRESS, PjrtStructs.CLIENT_CREATE.offset("client"));
        PjrtClient client = new PjrtClient(this, api, handle, arena, copy);
        clients.add(client);
        return client;
      } catch (RuntimeException e) {
        arena.close();
        throw e;
      }
    });
  }

  void forget(PjrtClient client) {
    clients.remove(client);
  }

  public boolean isClosed() {
    return lifecycle.isClosed();
  }

  /** Destroys every client still open (which destroys their executables first). Safe twice. */
  @Override
  public void close() {
    lifecycle.close(() -> {
      List<PjrtClient> open = new ArrayList<>(clients);
      for (PjrtClient c : open) {
        c.close();
      }
    });
  }

  @Override
  public String toString() {
    return "PjrtPlugin[" + api.path + ", api " + api.versionString() + "]";
  }
}
