/*
 * The few pieces of the PJRT C API ABI that the proxy touches, declared by hand.
 *
 * Only what is used is declared, so that the proxy does not depend on one version of
 * openxla/xla's pjrt_c_api.h. Layouts were checked against that header (PJRT C API 0.94 and the
 * 0.115 CPU plugin): every Args struct begins with {size_t struct_size; void *extension_start;},
 * a struct's size is offsetof(last field) + sizeof(last field), and the function table has its
 * header (struct_size, extension_start, a 24-byte version struct) in the first 40 bytes,
 * followed by one function pointer per slot. The device slots (Client_AddressableDevices 16,
 * DeviceDescription_Kind 26, Device_GetDescription 29) and their Args were checked against the 0.94
 * header too. PJRT_Executable_DeserializeAndLoad_Args: 48 bytes up to 0.70, 64 bytes (the two
 * override fields) from 0.71 on, unchanged up to 0.94 and the 0.115 CPU plugin.
 */
#ifndef XLAC_PJRT_ABI_H
#define XLAC_PJRT_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct xpjrt_error xpjrt_error;   /* PJRT_Error, opaque */
typedef struct xpjrt_client xpjrt_client; /* PJRT_Client, opaque */
typedef struct xpjrt_loaded xpjrt_loaded; /* PJRT_LoadedExecutable, opaque */
typedef struct xpjrt_exe xpjrt_exe;       /* PJRT_Executable, opaque */
typedef struct xpjrt_serialized xpjrt_serialized;
typedef struct xpjrt_device xpjrt_device;           /* PJRT_Device, opaque */
typedef struct xpjrt_device_desc xpjrt_device_desc; /* PJRT_DeviceDescription, opaque */

/* Slots of the PJRT_Api function table (index of the function pointer after the header). */
enum {
  XP_ERROR_DESTROY = 0,
  XP_ERROR_MESSAGE = 1,
  XP_ERROR_GETCODE = 2,
  XP_PLUGIN_INITIALIZE = 3,
  XP_PLUGIN_ATTRIBUTES = 4,
  XP_EVENT_DESTROY = 5,
  XP_EVENT_AWAIT = 8,
  XP_CLIENT_CREATE = 10,
  XP_CLIENT_DESTROY = 11,
  XP_CLIENT_PLATFORM_NAME = 12,
  XP_CLIENT_PLATFORM_VERSION = 14,
  XP_CLIENT_ADDRESSABLE_DEVICES = 16,
  XP_CLIENT_COMPILE = 20,
  XP_CLIENT_BUFFER_FROM_HOST = 22,
  XP_DEVICE_DESCRIPTION_KIND = 26,
  XP_DEVICE_GET_DESCRIPTION = 29,
  XP_DEVICE_MEMORY_STATS = 34,
  XP_EXECUTABLE_DESTROY = 40,
  XP_EXECUTABLE_NUM_OUTPUTS = 44,
  XP_EXECUTABLE_SERIALIZE = 49,
  XP_LOADED_DESTROY = 50,
  XP_LOADED_GET_EXECUTABLE = 51,
  XP_LOADED_EXECUTE = 55,
  XP_EXECUTABLE_DESERIALIZE_AND_LOAD = 56,
  XP_BUFFER_DESTROY = 58,
  XP_BUFFER_TO_HOST = 70,
  XP_COMPILE = 89, /* PJRT_Compile: topology (device-less) compiles, not served by the proxy */
};

#define XP_API_HEADER 40u                       /* bytes before slot 0 */
#define XP_SLOT_OFFSET(slot) (XP_API_HEADER + 8u * (unsigned)(slot))

/* The API table's header; the slots follow it. */
typedef struct {
  size_t struct_size;
  void *extension_start;
  struct {
    size_t struct_size;
    void *extension_start;
    int major_version;
    int minor_version;
  } version;
} xpjrt_api_header;

typedef void (*xpjrt_fn)(void);

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_error *error;
} xp_error_destroy_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  const xpjrt_error *error;
  const char *message; /* out, lives as long as the error */
  size_t message_size; /* out */
} xp_error_message_args;

typedef enum { XP_NV_STRING = 0, XP_NV_INT64, XP_NV_INT64_LIST, XP_NV_FLOAT, XP_NV_BOOL } xp_nv_type;

typedef struct {
  size_t struct_size;
  void *extension_start;
  const char *name;
  size_t name_size;
  xp_nv_type type;
  union {
    const char *string_value;
    int64_t int64_value;
    const int64_t *int64_array_value;
    float float_value;
    bool bool_value;
  } value;
  size_t value_size; /* elements of a list or string, 1 for scalars */
} xp_named_value;

typedef struct {
  size_t struct_size;
  void *extension_start;
} xp_plugin_initialize_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  const xp_named_value *attributes; /* out, lives as long as the process */
  size_t num_attributes;            /* out */
} xp_plugin_attributes_args;

/* PJRT_Client_Create_Args up to the client it makes (the fields after it are not read). */
typedef struct {
  size_t struct_size;
  void *extension_start;
  const void *create_options;
  size_t num_options;
  void *kv_get_callback, *kv_get_user_arg, *kv_put_callback, *kv_put_user_arg;
  xpjrt_client *client; /* out */
} xp_client_create_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_client *client;
} xp_client_destroy_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_client *client;
  const char *text; /* out: platform name or version, owned by the client */
  size_t text_size; /* out */
} xp_client_text_args; /* PJRT_Client_PlatformName_Args and PJRT_Client_PlatformVersion_Args */

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_client *client;
  xpjrt_device *const *devices; /* out, owned by the client */
  size_t num_devices;           /* out */
} xp_client_devices_args;       /* PJRT_Client_AddressableDevices_Args */

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_device *device;
  xpjrt_device_desc *description; /* out, owned by the device */
} xp_device_get_description_args;

/* PJRT_Device_MemoryStats_Args as of the 0.94 header (the proxy reads bytes_in_use and bytes_limit; a plugin
 * takes a larger struct than its own and refuses a smaller one, so all of it is sent). */
typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_device *device;
  int64_t bytes_in_use; /* out */
  int64_t peak_bytes_in_use;
  bool peak_bytes_in_use_is_set;
  int64_t num_allocs;
  bool num_allocs_is_set;
  int64_t largest_alloc_size;
  bool largest_alloc_size_is_set;
  int64_t bytes_limit; /* out: the user-allocatable device memory */
  bool bytes_limit_is_set;
  int64_t bytes_reserved;
  bool bytes_reserved_is_set;
  int64_t peak_bytes_reserved;
  bool peak_bytes_reserved_is_set;
  int64_t bytes_reservable_limit;
  bool bytes_reservable_limit_is_set;
  int64_t largest_free_block_bytes;
  bool largest_free_block_bytes_is_set;
  int64_t pool_bytes;
  bool pool_bytes_is_set;
  int64_t peak_pool_bytes;
  bool peak_pool_bytes_is_set;
} xp_device_memory_stats_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_device_desc *description;
  const char *kind; /* out, lives as long as the device */
  size_t kind_size; /* out */
} xp_device_kind_args; /* PJRT_DeviceDescription_Kind_Args */

typedef struct {
  size_t struct_size;
  void *extension_start;
  char *code;
  size_t code_size;
  const char *format;
  size_t format_size;
} xp_program;

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_client *client;
  const xp_program *program;
  const char *compile_options; /* serialized CompileOptionsProto */
  size_t compile_options_size;
  xpjrt_loaded *executable; /* out */
} xp_client_compile_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_loaded *loaded_executable;
  xpjrt_exe *executable; /* out, freed with Executable_Destroy */
} xp_loaded_get_executable_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_exe *executable;
} xp_executable_destroy_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_loaded *executable;
} xp_loaded_destroy_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  const xpjrt_exe *executable;
  const char *serialized_bytes;             /* out */
  size_t serialized_bytes_size;             /* out */
  xpjrt_serialized *serialized_executable;  /* out, backs the bytes */
  void (*serialized_executable_deleter)(xpjrt_serialized *); /* out */
} xp_executable_serialize_args;

typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_client *client;
  const char *serialized_executable;
  size_t serialized_executable_size;
  xpjrt_loaded *loaded_executable; /* out */
  /* Since PJRT C API 0.71 (openxla/xla PR #27371): the options to load with. */
  const char *overridden_serialized_compile_options;
  size_t overridden_serialized_compile_options_size;
} xp_deserialize_and_load_args;

/* PJRT_LoadedExecutable_Execute_Args, up to the field the proxy touches (the rest passes as it is). */
typedef struct {
  size_t struct_size;
  void *extension_start;
  xpjrt_loaded *executable;
  void *options; /* PJRT_ExecuteOptions*, bridged by bridge.h */
} xp_loaded_execute_args;

/* PJRT_Extension_Base: the head of every extension struct in an extension_start chain. */
typedef struct xp_extension {
  size_t struct_size;
  int type; /* PJRT_Extension_Type */
  struct xp_extension *next;
} xp_extension;
/* PJRT_Extension_Type_Profiler: JAX puts one (a profiler API and a trace context id) on every
 * PJRT_Client_Compile_Args; it links profiler traces and does not change what is compiled. */
#define XP_EXTENSION_PROFILER 1

/* Sizes as the header's *_STRUCT_SIZE computes them (offsetof(last) + sizeof(last)). */
#define XP_SIZE(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))
#define XP_DESERIALIZE_OVERRIDE_MINOR 71
/* What the proxy sends as PJRT_Executable_DeserializeAndLoad_Args: a zeroed buffer of this many
 * bytes whose struct_size names only the fields known for the real plugin's minor version. */
#define XP_DESERIALIZE_BUFFER 128

typedef xpjrt_error *(*xp_plugin_attributes_fn)(xp_plugin_attributes_args *);
typedef xpjrt_error *(*xp_client_text_fn)(xp_client_text_args *);
typedef xpjrt_error *(*xp_client_compile_fn)(xp_client_compile_args *);
typedef xpjrt_error *(*xp_client_create_fn)(xp_client_create_args *);
typedef xpjrt_error *(*xp_client_destroy_fn)(xp_client_destroy_args *);
typedef xpjrt_error *(*xp_client_devices_fn)(xp_client_devices_args *);
typedef xpjrt_error *(*xp_device_get_description_fn)(xp_device_get_description_args *);
typedef xpjrt_error *(*xp_device_kind_fn)(xp_device_kind_args *);
typedef xpjrt_error *(*xp_device_memory_stats_fn)(xp_device_memory_stats_args *);
typedef xpjrt_error *(*xp_get_executable_fn)(xp_loaded_get_executable_args *);
typedef xpjrt_error *(*xp_executable_destroy_fn)(xp_executable_destroy_args *);
typedef xpjrt_error *(*xp_loaded_destroy_fn)(xp_loaded_destroy_args *);
typedef xpjrt_error *(*xp_serialize_fn)(xp_executable_serialize_args *);
typedef xpjrt_error *(*xp_loaded_execute_fn)(xp_loaded_execute_args *);
typedef xpjrt_error *(*xp_deserialize_fn)(xp_deserialize_and_load_args *);
typedef void (*xp_error_destroy_fn)(xp_error_destroy_args *);
typedef void (*xp_error_message_fn)(xp_error_message_args *);

/* Reads slot `slot` of an API table (NULL when the table is too small to have it). */
static inline xpjrt_fn xp_slot(const void *api, unsigned slot) {
  const xpjrt_api_header *h = (const xpjrt_api_header *)api;
  if (h->struct_size < XP_SLOT_OFFSET(slot) + sizeof(xpjrt_fn)) return NULL;
  xpjrt_fn f;
  __builtin_memcpy(&f, (const char *)api + XP_SLOT_OFFSET(slot), sizeof f);
  return f;
}

#endif
