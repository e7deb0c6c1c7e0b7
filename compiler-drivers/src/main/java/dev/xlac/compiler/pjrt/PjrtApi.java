package dev.xlac.compiler.pjrt;

import static dev.xlac.compiler.pjrt.PjrtStructs.ERROR_DESTROY;
import static dev.xlac.compiler.pjrt.PjrtStructs.ERROR_GET_CODE;
import static dev.xlac.compiler.pjrt.PjrtStructs.ERROR_MESSAGE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.xlac.core.ExitCode;
import dev.xlac.core.XlacException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;

/**
 * One loaded PJRT plugin library: its {@code PJRT_Api} table, the method handles for the slots
 * xlac calls (looked up once, here), and the error protocol. Package-private: users hold
 * {@link PjrtPlugin}, {@link PjrtClient} and {@link PjrtLoadedExecutable}.
 *
 * <p>The library is loaded into the global arena and never unloaded: XLA plugins start thread
 * pools and register static state that do not survive {@code dlclose}, and
 * {@code PJRT_Plugin_Initialize} is a once-per-process call. {@link PjrtPlugin} keeps one
 * {@code PjrtApi} per plugin file for the life of the JVM.
 */
@SuppressWarnings("restricted") // the FFM layer: dlopen, downcalls, pointers from the plugin
final class PjrtApi {
  /** Oldest API minor accepted: 0.57 rearranged the PJRT_Api table; everything before it is older than 2025. */
  static final int MIN_MINOR = 57;
  static final int MAJOR = 0;

  /** The PJRT_Api slots xlac calls, with their index after the version struct (from the header). */
  enum Slot {
    ERROR_DESTROY(0, "PJRT_Error_Destroy", false),
    ERROR_MESSAGE(1, "PJRT_Error_Message", false),
    ERROR_GET_CODE(2, "PJRT_Error_GetCode", true),
    PLUGIN_INITIALIZE(3, "PJRT_Plugin_Initialize", true),
    PLUGIN_ATTRIBUTES(4, "PJRT_Plugin_Attributes", true),
    CLIENT_CREATE(10, "PJRT_Client_Create", true),
    CLIENT_DESTROY(11, "PJRT_Client_Destroy", true),
    CLIENT_PLATFORM_NAME(12, "PJRT_Client_PlatformName", true),
    CLIENT_PLATFORM_VERSION(14, "PJRT_Client_PlatformVersion", true),
    CLIENT_ADDRESSABLE_DEVICES(16, "PJRT_Client_AddressableDevices", true),
    CLIENT_COMPILE(20, "PJRT_Client_Compile", true),
    DEVICE_DESCRIPTION_KIND(26, "PJRT_DeviceDescription_Kind", true),
    DEVICE_GET_DESCRIPTION(29, "PJRT_Device_GetDescription", true),
    EXECUTABLE_DESTROY(40, "PJRT_Executable_Destroy", true),
    EXECUTABLE_NAME(41, "PJRT_Executable_Name", true),
    EXECUTABLE_NUM_OUTPUTS(44, "PJRT_Executable_NumOutputs", true),
    EXECUTABLE_SERIALIZE(49, "PJRT_Executable_Serialize", true),
    LOADED_EXECUTABLE_DESTROY(50, "PJRT_LoadedExecutable_Destroy", true),
    LOADED_EXECUTABLE_GET_EXECUTABLE(51, "PJRT_LoadedExecutable_GetExecutable", true),
    EXECUTABLE_DESERIALIZE_AND_LOAD(56, "PJRT_Executable_DeserializeAndLoad", true);

    final int index;
    final String function;
    /** True when the C function returns {@code PJRT_Error*}; false for the two void error helpers. */
    final boolean returnsError;

    Slot(int index, String function, boolean returnsError) {
      this.index = index;
      this.function = function;
      this.returnsError = returnsError;
    }

    long offset() {
      return PjrtStructs.API_FIRST_SLOT + 8L * index;
    }
  }

  private static final Linker LINKER = Linker.nativeLinker();
  /** {@code PJRT_Error* fn(Args*)}, with the function pointer as the leading argument. */
  private static final MethodHandle CALL_RETURNING_ERROR =
      LINKER.downcallHandle(FunctionDescriptor.of(ADDRESS, ADDRESS));
  /** {@code void fn(void*)}: the void error helpers, and the deleters the plugin hands out. */
  private static final MethodHandle CALL_VOID = LINKER.downcallHandle(FunctionDescriptor.ofVoid(ADDRESS));
  private static final MethodHandle GET_PJRT_API = LINKER.downcallHandle(FunctionDescriptor.of(ADDRESS));

  final Path path;
  final int major;
  final int minor;
  final long apiStructSize;
  private final Map<Slot, MethodHandle> handles = new EnumMap<>(Slot.class);
  private Map<String, String> attributes;
  private String fileSha256;

  private PjrtApi(Path path, MemorySegment api) {
    this.path = path;
    this.apiStructSize = api.get(JAVA_LONG, PjrtStructs.API_STRUCT_SIZE);
    if (apiStructSize < PjrtStructs.API_FIRST_SLOT) {
      throw environment(path, "its PJRT_Api table is too small to be real (struct_size " + apiStructSize + ")");
    }
    MemorySegment table = api.reinterpret(apiStructSize);
    long versionSize = table.get(JAVA_LONG, PjrtStructs.API_VERSION_STRUCT_SIZE);
    this.major = table.get(JAVA_INT, PjrtStructs.API_VERSION_MAJOR);
    this.minor = table.get(JAVA_INT, PjrtStructs.API_VERSION_MINOR);
    if (versionSize < PjrtStructs.PJRT_API_VERSION_STRUCT_SIZE || major != MAJOR || minor < MIN_MINOR) {
      throw environment(path, "it implements PJRT C API " + major + "." + minor + "; xlac supports "
          + MAJOR + "." + MIN_MINOR + " and later 0.x versions");
    }
    for (Slot slot : Slot.values()) {
      // A plugin built from an older header has a shorter table: never read past its struct_size.
      if (slot.offset() + 8 > apiStructSize) {
        throw environment(path, "its PJRT C API " + versionString() + " table has no " + slot.function);
      }
      MemorySegment fn = table.get(ADDRESS, slot.offset());
      if (fn.address() == 0) {
        throw environment(path, "it does not implement " + slot.function);
      }
      MethodHandle generic = slot.returnsError ? CALL_RETURNING_ERROR : CALL_VOID;
      handles.put(slot, MethodHandles.insertArguments(generic, 0, fn));
    }
  }

  /** dlopens the plugin, finds {@code GetPjrtApi}, checks the table, and runs {@code PJRT_Plugin_Initialize}. */
  static PjrtApi open(Path path) {
    PjrtApi pjrt = load(path);
    try (Arena arena = Arena.ofConfined()) {
      pjrt.check(Slot.PLUGIN_INITIALIZE, PjrtStructs.PLUGIN_INITIALIZE.allocate(arena), ExitCode.ENVIRONMENT);
    }
    return pjrt;
  }

  /**
   * dlopens the plugin, finds {@code GetPjrtApi} and checks its table (version, and every slot xlac
   * calls is set), without {@code PJRT_Plugin_Initialize}: what {@link PjrtPluginCheck} needs.
   */
  static PjrtApi load(Path path) {
    if (!Files.exists(path)) {
      throw environment(path, "no such file");
    }
    if (!Files.isRegularFile(path)) {
      throw environment(path, "not a regular file");
    }
    requireElf(path);
    SymbolLookup library;
    try {
      library = SymbolLookup.libraryLookup(path, Arena.global());
    } catch (IllegalArgumentException e) {
      throw environment(path, "not a loadable shared library for this machine (" + e.getMessage() + ")");
    }
    Optional<MemorySegment> entry = library.find("GetPjrtApi");
    if (entry.isEmpty()) {
      throw environment(path, "it has no GetPjrtApi symbol, so it is not a PJRT plugin");
    }
    MemorySegment api;
    try {
      api = (MemorySegment) GET_PJRT_API.invokeExact(entry.get());
    } catch (Throwable t) {
      throw new IllegalStateException("GetPjrtApi failed in " + path, t);
    }
    if (api.address() == 0) {
      throw environment(path, "GetPjrtApi returned NULL");
    }
    return new PjrtApi(path, api.reinterpret(PjrtStructs.API_FIRST_SLOT));
  }

  /**
   * On Linux, refuses a file that is not ELF before dlopen sees it: dlopen's own message is vaguer,
   * and the JVM prints a stack-guard warning for files it fails to load.
   */
  private static void requireElf(Path path) {
    if (!System.getProperty("os.name", "").startsWith("Linux")) {
      return;
    }
    byte[] magic = new byte[4];
    try (InputStream in = Files.newInputStream(path)) {
      if (in.readNBytes(magic, 0, 4) < 4 || magic[0] != 0x7F || magic[1] != 'E' || magic[2] != 'L' || magic[3] != 'F') {
        throw environment(path, "not a loadable shared library (no ELF header)");
      }
    } catch (IOException e) {
      throw environment(path, "cannot read it (" + XlacException.reason(e) + ")");
    }
  }

  /** Hex SHA-256 of the plugin file, computed once: the build identity PJRT itself does not report. */
  synchronized String fileSha256() {
    if (fileSha256 == null) {
      fileSha256 = PluginFileDigest.sha256(path);
    }
    return fileSha256;
  }

  String versionString() {
    return major + "." + minor;
  }

  /** The plugin's attributes, read on first use and kept: nothing on a worker's start-up path needs them. */
  synchronized Map<String, String> attributes() {
    if (attributes == null) {
      attributes = PjrtNamedValues.readAttributes(this);
    }
    return attributes;
  }

  /** Calls a slot that returns {@code PJRT_Error*} and returns that pointer (NULL on success). */
  MemorySegment call(Slot slot, MemorySegment args) {
    try {
      return (MemorySegment) handles.get(slot).invokeExact(args);
    } catch (Throwable t) {
      throw new IllegalStateException("calling " + slot.function + " failed", t);
    }
  }

  /** Calls a slot and turns a returned error into a {@link PjrtException} with the given exit code. */
  void check(Slot slot, MemorySegment args, ExitCode onError) {
    MemorySegment error = call(slot, args);
    if (error.address() != 0) {
      throw toException(slot.function, error, onError);
    }
  }

  /** Calls {@code void deleter(void*)} on a pointer the plugin handed out with it. */
  static void callDeleter(MemorySegment deleter, MemorySegment object) {
    if (deleter.address() == 0) {
      return;
    }
    try {
      CALL_VOID.invokeExact(deleter, object);
    } catch (Throwable t) {
      throw new IllegalStateException("a PJRT deleter failed", t);
    }
  }

  /** Reads the code and message of {@code error}, destroys it, and returns the exception. */
  PjrtException toException(String function, MemorySegment error, ExitCode exitCode) {
    String message = "";
    PjrtErrorCode code = PjrtErrorCode.UNKNOWN;
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment m = ERROR_MESSAGE.allocate(arena);
      m.set(ADDRESS, ERROR_MESSAGE.offset("error"), error);
      callVoid(Slot.ERROR_MESSAGE, m);
      message = string(m.get(ADDRESS, ERROR_MESSAGE.offset("message")),
          m.get(JAVA_LONG, ERROR_MESSAGE.offset("message_size")));

      MemorySegment c = ERROR_GET_CODE.allocate(arena);
      c.set(ADDRESS, ERROR_GET_CODE.offset("error"), error);
      MemorySegment codeError = call(Slot.ERROR_GET_CODE, c);
      if (codeError.address() == 0) {
        code = PjrtErrorCode.of(c.get(JAVA_INT, ERROR_GET_CODE.offset("code")));
      } else {
        destroyError(codeError); // the code stays UNKNOWN; the message is what matters
      }
    } finally {
      destroyError(error);
    }
    return new PjrtException(exitCode, function, code, message);
  }

  private void destroyError(MemorySegment error) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment d = ERROR_DESTROY.allocate(arena);
      d.set(ADDRESS, ERROR_DESTROY.offset("error"), error);
      callVoid(Slot.ERROR_DESTROY, d);
    }
  }

  private void callVoid(Slot slot, MemorySegment args) {
    try {
      handles.get(slot).invokeExact(args);
    } catch (Throwable t) {
      throw new IllegalStateException("calling " + slot.function + " failed", t);
    }
  }

  /** Copies {@code size} bytes of UTF-8 at {@code pointer} into a Java string. */
  static String string(MemorySegment pointer, long size) {
    if (pointer.address() == 0 || size <= 0) {
      return "";
    }
    return new String(bytes(pointer, size), StandardCharsets.UTF_8);
  }

  /** Copies {@code size} bytes at {@code pointer} to the Java heap. */
  static byte[] bytes(MemorySegment pointer, long size) {
    if (size > Integer.MAX_VALUE - 8) {
      throw new XlacException(ExitCode.WORK_FAILED, "PJRT returned " + size + " bytes; xlac handles up to 2 GiB");
    }
    return pointer.reinterpret(size).toArray(JAVA_BYTE);
  }

  static XlacException environment(Path path, String reason) {
    return new XlacException(ExitCode.ENVIRONMENT, "cannot use PJRT plugin " + path + ": " + reason);
  }
}
