/*
 * A tiny PJRT plugin for xlac's isolation tests. It implements just the slots xlac's PJRT driver
 * calls, "compiles" by echoing the module name, and misbehaves on purpose depending on the HLO
 * module's name (HloModuleProto field 1):
 *
 *   name contains "crash"  -> abort()                    (the worker dies with SIGABRT)
 *   name contains "segv"   -> writes through NULL        (the worker dies with SIGSEGV)
 *   name contains "hang"   -> sleeps for an hour         (the parent's timeout must fire)
 *   name contains "reject" -> returns INVALID_ARGUMENT   (an ordinary compile error)
 *   name contains "oomkill"-> raises SIGKILL             (what the kernel's OOM killer does)
 *   name contains "slow"   -> sleeps 600 ms, then compiles (for tests that watch concurrency)
 *   anything else          -> an executable whose serialization is "xlac-test-executable:<name>"
 *
 * Layouts follow xla/pjrt/c/pjrt_c_api.h on LP64: every argument struct starts with
 * size_t struct_size and a pointer, and PJRT_Api holds its function pointers from byte 40 on.
 * Built by the tests: gcc -shared -fPIC -o target/xlac-test-plugin.so src/test/c/xlac_test_plugin.c
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct { size_t struct_size; void *ext; } Head;

typedef struct TestError { int code; char message[200]; } TestError;
typedef struct TestClient { int unused; } TestClient;
typedef struct TestExecutable { char name[128]; char serialized[160]; size_t serialized_size; } TestExecutable;

/* ---- argument structs (only the fields this plugin touches, at their header offsets) ---- */
typedef struct { Head h; TestError *error; } ErrorDestroyArgs;
typedef struct { Head h; const TestError *error; const char *message; size_t message_size; } ErrorMessageArgs;
typedef struct { Head h; const TestError *error; int code; } ErrorGetCodeArgs;
typedef struct {
  size_t struct_size; void *ext; const char *name; size_t name_size; int type; int64_t value; size_t value_size;
} NamedValue;
typedef struct { Head h; const NamedValue *attributes; size_t num_attributes; } PluginAttributesArgs;
typedef struct {
  Head h; const NamedValue *options; size_t num_options; void *kv[4]; TestClient *client; void *kv_try[2];
} ClientCreateArgs;
typedef struct { Head h; TestClient *client; } ClientDestroyArgs;
typedef struct { Head h; TestClient *client; const char *text; size_t text_size; } ClientStringArgs;
typedef struct { Head h; const char *code; size_t code_size; const char *format; size_t format_size; } Program;
typedef struct {
  Head h; TestClient *client; const Program *program; const char *options; size_t options_size;
  TestExecutable *executable;
} ClientCompileArgs;
typedef struct { Head h; TestExecutable *executable; } ExecutableArgs;
typedef struct { Head h; TestExecutable *executable; const char *name; size_t name_size; } ExecutableNameArgs;
typedef struct { Head h; TestExecutable *executable; size_t num_outputs; } ExecutableNumOutputsArgs;
typedef struct {
  Head h; const TestExecutable *executable; const char *bytes; size_t bytes_size; void *backing;
  void (*deleter)(void *);
} ExecutableSerializeArgs;
typedef struct { Head h; TestExecutable *loaded; TestExecutable *executable; } GetExecutableArgs;
typedef struct {
  Head h; TestClient *client; const char *bytes; size_t bytes_size; TestExecutable *loaded;
  const char *options; size_t options_size;
} DeserializeArgs;

static TestError *error(int code, const char *message, const char *detail) {
  TestError *e = calloc(1, sizeof *e);
  e->code = code;
  snprintf(e->message, sizeof e->message, "%s%s", message, detail);
  return e;
}

static void error_destroy(ErrorDestroyArgs *a) { free(a->error); }
static void error_message(ErrorMessageArgs *a) {
  a->message = a->error->message;
  a->message_size = strlen(a->error->message);
}
static void *error_get_code(ErrorGetCodeArgs *a) { a->code = a->error->code; return NULL; }
static void *plugin_initialize(void *a) { (void) a; return NULL; }

#ifndef XLAC_TEST_WIDER_NAMED_VALUES
static const NamedValue ATTRIBUTES[] = {
  {sizeof(NamedValue), NULL, "xlac_test_plugin", 16, 1 /* kInt64 */, 1, 1},
};
static void *plugin_attributes(PluginAttributesArgs *a) {
  a->attributes = ATTRIBUTES;
  a->num_attributes = 1;
  return NULL;
}
#else
/* A plugin built against a newer header whose PJRT_NamedValue has grown by a field: readers must walk
 * the array by its elements' struct_size (PjrtNamedValuesTest). */
typedef struct { NamedValue known; int64_t newer; } WiderNamedValue;
static const WiderNamedValue WIDER[] = {
  {{sizeof(WiderNamedValue), NULL, "xlac_test_plugin", 16, 1 /* kInt64 */, 1, 1}, -1},
  {{sizeof(WiderNamedValue), NULL, "second", 6, 1 /* kInt64 */, 2, 1}, -1},
};
static void *plugin_attributes(PluginAttributesArgs *a) {
  a->attributes = (const NamedValue *) WIDER;
  a->num_attributes = 2;
  return NULL;
}
#endif

static void *client_create(ClientCreateArgs *a) {
  if (a->num_options > 0) return error(3, "xlac test plugin takes no options", "");
  a->client = calloc(1, sizeof(TestClient));
  return NULL;
}
static void *client_destroy(ClientDestroyArgs *a) { free(a->client); return NULL; }
static void *platform_name(ClientStringArgs *a) { a->text = "xlac-test"; a->text_size = 9; return NULL; }
static void *platform_version(ClientStringArgs *a) { a->text = "1.0"; a->text_size = 3; return NULL; }

/* One device of kind "xlac-test": PJRT_Client_AddressableDevices, PJRT_Device_GetDescription and
 * PJRT_DeviceDescription_Kind (what the plugin identity text lists). */
typedef struct { size_t struct_size; void *ext; void *client; void *const *devices; size_t num_devices; } DevicesArgs;
typedef struct { size_t struct_size; void *ext; void *device; void *description; } DescriptionArgs;
typedef struct { size_t struct_size; void *ext; void *description; const char *kind; size_t kind_size; } KindArgs;
static int THE_DEVICE, THE_DESCRIPTION;
static void *const DEVICES[] = {&THE_DEVICE};
static void *addressable_devices(DevicesArgs *a) { a->devices = DEVICES; a->num_devices = 1; return NULL; }
static void *device_description(DescriptionArgs *a) { a->description = &THE_DESCRIPTION; return NULL; }
static void *device_kind(KindArgs *a) { a->kind = "xlac-test"; a->kind_size = 9; return NULL; }

/* HloModuleProto.name is field 1, written first by every serializer: tag 0x0A, varint length. */
static int module_name(const char *code, size_t size, char *out, size_t out_size) {
  if (size < 2 || (unsigned char) code[0] != 0x0A) return 0;
  size_t length = 0, i = 1;
  for (int shift = 0; i < size && shift < 35; shift += 7) {
    unsigned char b = (unsigned char) code[i++];
    length |= (size_t) (b & 0x7F) << shift;
    if (!(b & 0x80)) break;
  }
  if (length >= out_size || i + length > size) return 0;
  memcpy(out, code + i, length);
  out[length] = 0;
  return 1;
}

static TestExecutable *executable_named(const char *name) {
  TestExecutable *e = calloc(1, sizeof *e);
  snprintf(e->name, sizeof e->name, "%s", name);
  e->serialized_size = (size_t) snprintf(e->serialized, sizeof e->serialized, "xlac-test-executable:%s", e->name);
  return e;
}

static void *client_compile(ClientCompileArgs *a) {
  char name[128];
  if (!module_name(a->program->code, a->program->code_size, name, sizeof name)) {
    return error(3, "xlac test plugin: cannot read the module name", "");
  }
  if (strstr(name, "crash")) abort();
  if (strstr(name, "segv")) *(volatile int *) (uintptr_t) 8 = 1;
  if (strstr(name, "hang")) sleep(3600);
  if (strstr(name, "reject")) return error(3, "xlac test plugin rejects module ", name);
  if (strstr(name, "oomkill")) raise(SIGKILL);
  if (strstr(name, "slow")) usleep(600000);
  a->executable = executable_named(name);
  return NULL;
}

static void *executable_destroy(ExecutableArgs *a) { free(a->executable); return NULL; }
static void *executable_name(ExecutableNameArgs *a) {
  a->name = a->executable->name;
  a->name_size = strlen(a->executable->name);
  return NULL;
}
static void *executable_num_outputs(ExecutableNumOutputsArgs *a) { a->num_outputs = 1; return NULL; }
static void serialized_free(void *backing) { free(backing); }
static void *executable_serialize(ExecutableSerializeArgs *a) {
  char *copy = malloc(a->executable->serialized_size);
  memcpy(copy, a->executable->serialized, a->executable->serialized_size);
  a->bytes = copy;
  a->bytes_size = a->executable->serialized_size;
  a->backing = copy;
  a->deleter = serialized_free;
  return NULL;
}
static void *get_executable(GetExecutableArgs *a) {
  a->executable = executable_named(a->loaded->name);
  return NULL;
}
static void *deserialize_and_load(DeserializeArgs *a) {
  static const char prefix[] = "xlac-test-executable:";
  size_t p = sizeof prefix - 1;
  if (a->bytes_size <= p || a->bytes_size - p >= 128 || memcmp(a->bytes, prefix, p) != 0) {
    return error(3, "xlac test plugin: not one of its executables", "");
  }
  char name[128];
  memcpy(name, a->bytes + p, a->bytes_size - p);
  name[a->bytes_size - p] = 0;
  a->loaded = executable_named(name);
  return NULL;
}

/* PJRT_Api: header (40 bytes), then slots; unimplemented slots stay NULL. */
#define SLOTS 57
static struct {
  size_t struct_size; void *ext;
  struct { size_t struct_size; void *ext; int major; int minor; } version;
  void *slots[SLOTS];
} api;

const void *GetPjrtApi(void) {
  api.struct_size = sizeof api;
  api.version.struct_size = sizeof api.version;
  api.version.major = 0;
  api.version.minor = 94;
  api.slots[0] = (void *) error_destroy;
  api.slots[1] = (void *) error_message;
  api.slots[2] = (void *) error_get_code;
  api.slots[3] = (void *) plugin_initialize;
  api.slots[4] = (void *) plugin_attributes;
  api.slots[10] = (void *) client_create;
  api.slots[11] = (void *) client_destroy;
  api.slots[12] = (void *) platform_name;
  api.slots[14] = (void *) platform_version;
  api.slots[16] = (void *) addressable_devices;
  api.slots[20] = (void *) client_compile;
  api.slots[26] = (void *) device_kind;
  api.slots[29] = (void *) device_description;
  api.slots[40] = (void *) executable_destroy;
  api.slots[41] = (void *) executable_name;
  api.slots[44] = (void *) executable_num_outputs;
  api.slots[49] = (void *) executable_serialize;
  api.slots[50] = (void *) executable_destroy; /* loaded and unloaded executables are the same here */
  api.slots[51] = (void *) get_executable;
  api.slots[56] = (void *) deserialize_and_load;
  return &api;
}
