package dev.xlac.compiler.pjrt;

import static dev.xlac.compiler.pjrt.PjrtStructs.CLIENT_ADDRESSABLE_DEVICES;
import static dev.xlac.compiler.pjrt.PjrtStructs.CLIENT_COMPILE;
import static dev.xlac.compiler.pjrt.PjrtStructs.CLIENT_DESTROY;
import static dev.xlac.compiler.pjrt.PjrtStructs.CLIENT_PLATFORM_NAME;
import static dev.xlac.compiler.pjrt.PjrtStructs.CLIENT_PLATFORM_VERSION;
import static dev.xlac.compiler.pjrt.PjrtStructs.DEVICE_DESCRIPTION_KIND;
import static dev.xlac.compiler.pjrt.PjrtStructs.DEVICE_GET_DESCRIPTION;
import static dev.xlac.compiler.pjrt.PjrtStructs.EXECUTABLE_DESERIALIZE_AND_LOAD;
import static dev.xlac.compiler.pjrt.PjrtStructs.PROGRAM;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.xlac.core.ExitCode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A {@code PJRT_Client}: compiles HLO modules and loads serialized executables. Owns the
 * executables it returns; {@link #close()} destroys those still open, then the client. Safe to use
 * from several threads; close waits for calls in flight.
 */
public final class PjrtClient implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(PjrtClient.class.getName());
  private static final byte[] FORMAT_HLO = "hlo".getBytes(StandardCharsets.US_ASCII);

  private final PjrtPlugin plugin;
  private final PjrtApi api;
  private final MemorySegment handle;
  private final Arena arena;
  private final Map<String, String> options;
  private final String platformName;
  private final String platformVersion;
  private final Lifecycle lifecycle;
  private final Set<PjrtLoadedExecutable> executables = ConcurrentHashMap.newKeySet();

  PjrtClient(PjrtPlugin plugin, PjrtApi api, MemorySegment handle, Arena arena, Map<String, String> options) {
    this.plugin = plugin;
    this.api = api;
    this.handle = handle;
    this.arena = arena;
    this.options = Collections.unmodifiableMap(options);
    try {
      this.platformName = readString(PjrtApi.Slot.CLIENT_PLATFORM_NAME, CLIENT_PLATFORM_NAME, "platform_name");
      this.platformVersion =
          readString(PjrtApi.Slot.CLIENT_PLATFORM_VERSION, CLIENT_PLATFORM_VERSION, "platform_version");
    } catch (RuntimeException e) {
      destroy();
      throw e;
    }
    this.lifecycle = new Lifecycle("PJRT client " + platformName + " of " + api.path.getFileName());
  }

  private String readString(PjrtApi.Slot slot, PjrtStructs.Struct struct, String field) {
    try (Arena call = Arena.ofConfined()) {
      MemorySegment args = struct.allocate(call);
      args.set(ADDRESS, struct.offset("client"), handle);
      api.check(slot, args, ExitCode.ENVIRONMENT);
      return PjrtApi.string(args.get(ADDRESS, struct.offset(field)), args.get(JAVA_LONG, struct.offset(field + "_size")));
    }
  }

  /** {@code PJRT_Client_PlatformName}, e.g. {@code cpu}. */
  public String platformName() {
    return platformName;
  }

  /** {@code PJRT_Client_PlatformVersion}: platform-specific version text. */
  public String platformVersion() {
    return platformVersion;
  }

  /** The create options this client was made with. */
  public Map<String, String> options() {
    return options;
  }

  public PjrtPlugin plugin() {
    return plugin;
  }

  /**
   * The {@code PJRT_DeviceDescription_Kind} of each of the client's addressable devices
   * ({@code PJRT_Client_AddressableDevices}), in the client's order: what the runtime proxy puts into the
   * plugin identity text. A plugin error is a {@link PjrtException} (ENVIRONMENT).
   */
  public List<String> deviceKinds() {
    return lifecycle.use(() -> {
      try (Arena call = Arena.ofConfined()) {
        MemorySegment args = CLIENT_ADDRESSABLE_DEVICES.allocate(call);
        args.set(ADDRESS, CLIENT_ADDRESSABLE_DEVICES.offset("client"), handle);
        api.check(PjrtApi.Slot.CLIENT_ADDRESSABLE_DEVICES, args, ExitCode.ENVIRONMENT);
        long n = args.get(JAVA_LONG, CLIENT_ADDRESSABLE_DEVICES.offset("num_addressable_devices"));
        MemorySegment devices = args.get(ADDRESS, CLIENT_ADDRESSABLE_DEVICES.offset("addressable_devices"));
        List<String> kinds = new ArrayList<>();
        if (n <= 0 || devices.address() == 0) {
          return kinds;
        }
        MemorySegment array = devices.reinterpret(n * ADDRESS.byteSize());
        for (long i = 0; i < n; i++) {
          MemorySegment d = DEVICE_GET_DESCRIPTION.allocate(call);
          d.set(ADDRESS, DEVICE_GET_DESCRIPTION.offset("device"), array.getAtIndex(ADDRESS, i));
          api.check(PjrtApi.Slot.DEVICE_GET_DESCRIPTION, d, ExitCode.ENVIRONMENT);
          MemorySegment k = DEVICE_DESCRIPTION_KIND.allocate(call);
          k.set(ADDRESS, DEVICE_DESCRIPTION_KIND.offset("device_description"),
              d.get(ADDRESS, DEVICE_GET_DESCRIPTION.offset("device_description")));
          api.check(PjrtApi.Slot.DEVICE_DESCRIPTION_KIND, k, ExitCode.ENVIRONMENT);
          kinds.add(PjrtApi.string(k.get(ADDRESS, DEVICE_DESCRIPTION_KIND.offset("device_kind")),
              k.get(JAVA_LONG, DEVICE_DESCRIPTION_KIND.offset("device_kind_size"))));
        }
        return kinds;
      }
    });
  }

  /**
   * {@code PJRT_Client_Compile} of a serialized {@code xla.HloModuleProto} (format {@code hlo}).
   * A rejected module is a {@link PjrtException} (exit code WORK_FAILED) with the plugin's code
   * and message; the client stays usable.
   */
  public PjrtLoadedExecutable compile(byte[] hloModule, PjrtCompileOptions compileOptions) {
    return compile(FORMAT_HLO, hloModule, compileOptions.toProto());
  }

  /**
   * {@code PJRT_Client_Compile} of a program as a framework passes it: its format ({@code mlir}, {@code hlo}),
   * its bytes and its serialized {@code CompileOptionsProto}, all unchanged. Errors as {@link #compile(byte[],
   * PjrtCompileOptions)}.
   */
  public PjrtLoadedExecutable compile(byte[] format, byte[] code, byte[] optionsProto) {
    return lifecycle.use(() -> {
      try (Arena call = Arena.ofConfined()) {
        MemorySegment program = PROGRAM.allocate(call);
        program.set(ADDRESS, PROGRAM.offset("code"), call.allocateFrom(JAVA_BYTE, code));
        program.set(JAVA_LONG, PROGRAM.offset("code_size"), code.length);
        program.set(ADDRESS, PROGRAM.offset("format"), call.allocateFrom(JAVA_BYTE, format));
        program.set(JAVA_LONG, PROGRAM.offset("format_size"), format.length);

        MemorySegment args = CLIENT_COMPILE.allocate(call);
        args.set(ADDRESS, CLIENT_COMPILE.offset("client"), handle);
        args.set(ADDRESS, CLIENT_COMPILE.offset("program"), program);
        args.set(ADDRESS, CLIENT_COMPILE.offset("compile_options"), call.allocateFrom(JAVA_BYTE, optionsProto));
        args.set(JAVA_LONG, CLIENT_COMPILE.offset("compile_options_size"), optionsProto.length);
        api.check(PjrtApi.Slot.CLIENT_COMPILE, args, ExitCode.WORK_FAILED);
        return adopt(args.get(ADDRESS, CLIENT_COMPILE.offset("executable")));
      }
    });
  }

  /**
   * {@code PJRT_Executable_DeserializeAndLoad}: loads bytes made by
   * {@link PjrtLoadedExecutable#serialize()} with the same plugin build, using the compile options
   * stored in them.
   */
  public PjrtLoadedExecutable deserializeAndLoad(byte[] serialized) {
    return lifecycle.use(() -> {
      try (Arena call = Arena.ofConfined()) {
        MemorySegment args = EXECUTABLE_DESERIALIZE_AND_LOAD.allocate(call);
        args.set(ADDRESS, EXECUTABLE_DESERIALIZE_AND_LOAD.offset("client"), handle);
        args.set(ADDRESS, EXECUTABLE_DESERIALIZE_AND_LOAD.offset("serialized_executable"),
            call.allocateFrom(JAVA_BYTE, serialized));
        args.set(JAVA_LONG, EXECUTABLE_DESERIALIZE_AND_LOAD.offset("serialized_executable_size"), serialized.length);
        api.check(PjrtApi.Slot.EXECUTABLE_DESERIALIZE_AND_LOAD, args, ExitCode.WORK_FAILED);
        return adopt(args.get(ADDRESS, EXECUTABLE_DESERIALIZE_AND_LOAD.offset("loaded_executable")));
      }
    });
  }

  private PjrtLoadedExecutable adopt(MemorySegment loaded) {
    if (loaded.address() == 0) {
      throw new IllegalStateException("the PJRT plugin " + api.path + " returned no executable and no error");
    }
    PjrtLoadedExecutable e = new PjrtLoadedExecutable(this, api, loaded);
    executables.add(e);
    return e;
  }

  void forget(PjrtLoadedExecutable executable) {
    executables.remove(executable);
  }

  public boolean isClosed() {
    return lifecycle.isClosed();
  }

  /** Destroys the executables still open, then the client, then frees the option memory. Safe twice. */
  @Override
  public void close() {
    lifecycle.close(() -> {
      List<PjrtLoadedExecutable> open = new ArrayList<>(executables);
      for (PjrtLoadedExecutable e : open) {
        e.close();
      }
      destroy();
      plugin.forget(this);
    });
  }

  private void destroy() {
    try (Arena call = Arena.ofConfined()) {
      MemorySegment args = CLIENT_DESTROY.allocate(call);
      args.set(ADDRESS, CLIENT_DESTROY.offset("client"), handle);
      api.check(PjrtApi.Slot.CLIENT_DESTROY, args, ExitCode.INTERNAL);
    } catch (PjrtException e) {
      LOG.log(System.Logger.Level.WARNING, e.getMessage());
    } finally {
      arena.close();
    }
  }

  @Override
  public String toString() {
    return "PjrtClient[" + platformName + " " + platformVersion + "]";
  }
}
