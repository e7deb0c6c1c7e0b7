package dev.xlac.compiler.pjrt;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * The argument structs of the PJRT C API that xlac uses, transcribed from
 * {@code xla/pjrt/c/pjrt_c_api.h} (openxla/xla at API 0.94; the changelog shows none of these
 * changed up to 0.105, and the 0.115 CPU plugin accepts them). Every struct starts with
 * {@code size_t struct_size; PJRT_Extension_Base* extension_start;}. Its {@code struct_size} is the
 * header's {@code *_STRUCT_SIZE}: {@code offsetof(last field) + sizeof(last field)}, which is
 * exactly the {@link StructLayout#byteSize()} of these layouts because none has trailing padding.
 *
 * <p>LP64 only (size_t and pointers are 8 bytes, enums are 4), which is every platform PJRT
 * plugins ship for.
 */
final class PjrtStructs {
  private PjrtStructs() {}

  /** A struct layout with the PJRT header in front and its field offsets precomputed by name. */
  record Struct(String name, StructLayout layout) {
    long size() {
      return layout.byteSize();
    }

    long offset(String field) {
      return layout.byteOffset(PathElement.groupElement(field));
    }

    /** Allocates a zeroed struct in {@code arena} with {@code struct_size} filled in. */
    MemorySegment allocate(Arena arena) {
      MemorySegment s = arena.allocate(layout.byteSize(), 8);
      s.set(JAVA_LONG, 0, layout.byteSize());
      return s;
    }
  }

  private static Struct args(String name, MemoryLayout... fields) {
    List<MemoryLayout> all = new ArrayList<>();
    all.add(JAVA_LONG.withName("struct_size"));
    all.add(ADDRESS.withName("extension_start"));
    all.addAll(List.of(fields));
    return new Struct(name, MemoryLayout.structLayout(all.toArray(MemoryLayout[]::new)).withName(name));
  }

  // ---- PJRT_Api itself: header, version, then one function pointer per slot.
  static final long API_STRUCT_SIZE = 0;
  static final long API_VERSION = 16; // PJRT_Api_Version {struct_size, extension_start, int major, int minor}
  static final long API_VERSION_STRUCT_SIZE = API_VERSION;
  static final long API_VERSION_MAJOR = API_VERSION + 16;
  static final long API_VERSION_MINOR = API_VERSION + 20;
  static final long API_FIRST_SLOT = API_VERSION + 24;
  static final long PJRT_API_VERSION_STRUCT_SIZE = 24;

  // ---- Errors
  static final Struct ERROR_DESTROY = args("PJRT_Error_Destroy_Args", ADDRESS.withName("error"));
  static final Struct ERROR_MESSAGE = args("PJRT_Error_Message_Args", ADDRESS.withName("error"),
      ADDRESS.withName("message"), JAVA_LONG.withName("message_size"));
  static final Struct ERROR_GET_CODE = args("PJRT_Error_GetCode_Args", ADDRESS.withName("error"),
      JAVA_INT.withName("code"));

  // ---- Named values: {name, name_size, type, <4 bytes padding>, union value, value_size}
  static final Struct NAMED_VALUE = args("PJRT_NamedValue", ADDRESS.withName("name"), JAVA_LONG.withName("name_size"),
      JAVA_INT.withName("type"), MemoryLayout.paddingLayout(4), JAVA_LONG.withName("value"),
      JAVA_LONG.withName("value_size"));
  static final int NAMED_VALUE_STRING = 0;
  static final int NAMED_VALUE_INT64 = 1;
  static final int NAMED_VALUE_INT64_LIST = 2;
  static final int NAMED_VALUE_FLOAT = 3;
  static final int NAMED_VALUE_BOOL = 4;

  // ---- Plugin
  static final Struct PLUGIN_INITIALIZE = args("PJRT_Plugin_Initialize_Args");
  static final Struct PLUGIN_ATTRIBUTES = args("PJRT_Plugin_Attributes_Args", ADDRESS.withName("attributes"),
      JAVA_LONG.withName("num_attributes"));

  // ---- Client
  static final Struct CLIENT_CREATE = args("PJRT_Client_Create_Args", ADDRESS.withName("create_options"),
      JAVA_LONG.withName("num_options"), ADDRESS.withName("kv_get_callback"), ADDRESS.withName("kv_get_user_arg"),
      ADDRESS.withName("kv_put_callback"), ADDRESS.withName("kv_put_user_arg"), ADDRESS.withName("client"),
      ADDRESS.withName("kv_try_get_callback"), ADDRESS.withName("kv_try_get_user_arg"));
  static final Struct CLIENT_DESTROY = args("PJRT_Client_Destroy_Args", ADDRESS.withName("client"));
  static final Struct CLIENT_PLATFORM_NAME = args("PJRT_Client_PlatformName_Args", ADDRESS.withName("client"),
      ADDRESS.withName("platform_name"), JAVA_LONG.withName("platform_name_size"));
  static final Struct CLIENT_PLATFORM_VERSION = args("PJRT_Client_PlatformVersion_Args", ADDRESS.withName("client"),
      ADDRESS.withName("platform_version"), JAVA_LONG.withName("platform_version_size"));
  static final Struct CLIENT_ADDRESSABLE_DEVICES = args("PJRT_Client_AddressableDevices_Args",
      ADDRESS.withName("client"), ADDRESS.withName("addressable_devices"),
      JAVA_LONG.withName("num_addressable_devices"));
  static final Struct DEVICE_GET_DESCRIPTION = args("PJRT_Device_GetDescription_Args", ADDRESS.withName("device"),
      ADDRESS.withName("device_description"));
  static final Struct DEVICE_DESCRIPTION_KIND = args("PJRT_DeviceDescription_Kind_Args",
      ADDRESS.withName("device_description"), ADDRESS.withName("device_kind"), JAVA_LONG.withName("device_kind_size"));
  static final Struct PROGRAM = args("PJRT_Program", ADDRESS.withName("code"), JAVA_LONG.withName("code_size"),
      ADDRESS.withName("format"), JAVA_LONG.withName("format_size"));
  static final Struct CLIENT_COMPILE = args("PJRT_Client_Compile_Args", ADDRESS.withName("client"),
      ADDRESS.withName("program"), ADDRESS.withName("compile_options"), JAVA_LONG.withName("compile_options_size"),
      ADDRESS.withName("executable"));

  // ---- Executables
  static final Struct EXECUTABLE_DESTROY = args("PJRT_Executable_Destroy_Args", ADDRESS.withName("executable"));
  static final Struct EXECUTABLE_NAME = args("PJRT_Executable_Name_Args", ADDRESS.withName("executable"),
      ADDRESS.withName("executable_name"), JAVA_LONG.withName("executable_name_size"));
  static final Struct EXECUTABLE_NUM_OUTPUTS = args("PJRT_Executable_NumOutputs_Args",
      ADDRESS.withName("executable"), JAVA_LONG.withName("num_outputs"));
  static final Struct EXECUTABLE_SERIALIZE = args("PJRT_Executable_Serialize_Args", ADDRESS.withName("executable"),
      ADDRESS.withName("serialized_bytes"), JAVA_LONG.withName("serialized_bytes_size"),
      ADDRESS.withName("serialized_executable"), ADDRESS.withName("serialized_executable_deleter"));
  static final Struct LOADED_EXECUTABLE_DESTROY = args("PJRT_LoadedExecutable_Destroy_Args",
      ADDRESS.withName("executable"));
  static final Struct LOADED_EXECUTABLE_GET_EXECUTABLE = args("PJRT_LoadedExecutable_GetExecutable_Args",
      ADDRESS.withName("loaded_executable"), ADDRESS.withName("executable"));
  static final Struct EXECUTABLE_DESERIALIZE_AND_LOAD = args("PJRT_Executable_DeserializeAndLoad_Args",
      ADDRESS.withName("client"), ADDRESS.withName("serialized_executable"),
      JAVA_LONG.withName("serialized_executable_size"), ADDRESS.withName("loaded_executable"),
      ADDRESS.withName("overridden_serialized_compile_options"),
      JAVA_LONG.withName("overridden_serialized_compile_options_size"));
}
