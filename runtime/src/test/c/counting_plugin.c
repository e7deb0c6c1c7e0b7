/* A PJRT plugin in front of the real one ($XLAC_TEST_COUNTED_PLUGIN) that counts what is made and
 * what is freed: PJRT_Errors, loaded executables, executables and serialized executables. The proxy
 * test puts the proxy in front of it and asserts, after hits, misses, fallbacks and records, that
 * everything made was freed (LeakSanitizer cannot tell, as the real plugin's frames are suppressed). */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt_abi.h"

static _Alignas(16) unsigned char table[16384];
static const void *real;
static atomic_long errors, loaded, executables, serialized;
static _Atomic(void (*)(xpjrt_serialized *)) real_deleter;

typedef xpjrt_error *(*any_fn)(void *);

static any_fn real_fn(unsigned slot) {
  xpjrt_fn f = xp_slot(real, slot);
  any_fn g;
  memcpy(&g, &f, sizeof g);
  return g;
}

static xpjrt_error *counted(unsigned slot, void *args) {
  xpjrt_error *e = real_fn(slot)(args);
  if (e) atomic_fetch_add(&errors, 1);
  return e;
}

static void error_destroy(xp_error_destroy_args *a) {
  if (a->error) atomic_fetch_sub(&errors, 1);
  ((xp_error_destroy_fn)xp_slot(real, XP_ERROR_DESTROY))(a);
}

#define PLAIN(name, slot) \
  static xpjrt_error *name(void *a) { return counted(slot, a); }

/* With COUNTING_WIDER_NAMED_VALUES set, the real plugin's attributes are handed on as a plugin built
 * against a newer header would: each PJRT_NamedValue grown by two fields (struct_size 68, 72 apart). */
typedef struct {
  xp_named_value known;
  int64_t newer;
  int32_t newest;
} wider_named_value;
static wider_named_value wider[256];

static xpjrt_error *plugin_attributes(xp_plugin_attributes_args *a) {
  xpjrt_error *e = counted(XP_PLUGIN_ATTRIBUTES, a);
  if (e || !getenv("COUNTING_WIDER_NAMED_VALUES") || !a->attributes || a->num_attributes > 256) return e;
  for (size_t i = 0; i < a->num_attributes; i++) {
    memset(&wider[i], 0xa5, sizeof wider[i]); /* what the reader must not take for a field of its own */
    wider[i].known = a->attributes[i];
    wider[i].known.struct_size = offsetof(wider_named_value, newest) + sizeof(int32_t);
  }
  a->attributes = &wider[0].known;
  return NULL;
}
PLAIN(platform_name, XP_CLIENT_PLATFORM_NAME)
PLAIN(platform_version, XP_CLIENT_PLATFORM_VERSION)
PLAIN(addressable_devices, XP_CLIENT_ADDRESSABLE_DEVICES)
PLAIN(device_kind, XP_DEVICE_DESCRIPTION_KIND)
PLAIN(get_description, XP_DEVICE_GET_DESCRIPTION)
PLAIN(memory_stats, XP_DEVICE_MEMORY_STATS)

static xpjrt_error *compile(xp_client_compile_args *a) {
  xpjrt_error *e = counted(XP_CLIENT_COMPILE, a);
  if (!e && a->executable) atomic_fetch_add(&loaded, 1);
  return e;
}

static atomic_size_t deserialize_size; /* the last DeserializeAndLoad_Args struct_size */
static atomic_int deserialize_tail;    /* 1 when its bytes from struct_size up to 128 were zero */

static xpjrt_error *deserialize(xp_deserialize_and_load_args *a) {
  int zero = 1;
  for (size_t i = a->struct_size; i < 128; i++) zero &= ((const unsigned char *)a)[i] == 0;
  atomic_store(&deserialize_size, a->struct_size);
  atomic_store(&deserialize_tail, zero);
  xpjrt_error *e = counted(XP_EXECUTABLE_DESERIALIZE_AND_LOAD, a);
  if (!e && a->loaded_executable) atomic_fetch_add(&loaded, 1);
  return e;
}

static xpjrt_error *loaded_destroy(xp_loaded_destroy_args *a) {
  if (a->executable) atomic_fetch_sub(&loaded, 1);
  return counted(XP_LOADED_DESTROY, a);
}

static xpjrt_error *get_executable(xp_loaded_get_executable_args *a) {
  xpjrt_error *e = counted(XP_LOADED_GET_EXECUTABLE, a);
  if (!e && a->executable) atomic_fetch_add(&executables, 1);
  return e;
}

static xpjrt_error *executable_destroy(xp_executable_destroy_args *a) {
  if (a->executable) atomic_fetch_sub(&executables, 1);
  return counted(XP_EXECUTABLE_DESTROY, a);
}

static void deleter(xpjrt_serialized *s) {
  atomic_fetch_sub(&serialized, 1);
  atomic_load(&real_deleter)(s);
}

static xpjrt_error *serialize(xp_executable_serialize_args *a) {
  xpjrt_error *e = counted(XP_EXECUTABLE_SERIALIZE, a);
  if (!e && a->serialized_executable_deleter) {
    atomic_fetch_add(&serialized, 1);
    atomic_store(&real_deleter, a->serialized_executable_deleter);
    a->serialized_executable_deleter = deleter;
  }
  return e;
}

static void put(unsigned slot, const void *fn) {
  memcpy(table + XP_SLOT_OFFSET(slot), &fn, sizeof fn);
}

__attribute__((visibility("default"))) const void *GetPjrtApi(void) {
  if (real) return table;
  const char *path = getenv("XLAC_TEST_COUNTED_PLUGIN");
  void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  void *sym = h ? dlsym(h, "GetPjrtApi") : NULL;
  const void *(*get)(void);
  memcpy(&get, &sym, sizeof get);
  const void *api = get ? get() : NULL;
  if (!api || ((const xpjrt_api_header *)api)->struct_size > sizeof table) return NULL;
  memcpy(table, api, ((const xpjrt_api_header *)api)->struct_size);
  real = api;
  put(XP_ERROR_DESTROY, (const void *)error_destroy);
  put(XP_PLUGIN_ATTRIBUTES, (const void *)plugin_attributes);
  put(XP_CLIENT_PLATFORM_NAME, (const void *)platform_name);
  put(XP_CLIENT_PLATFORM_VERSION, (const void *)platform_version);
  put(XP_CLIENT_ADDRESSABLE_DEVICES, (const void *)addressable_devices);
  put(XP_DEVICE_DESCRIPTION_KIND, (const void *)device_kind);
  put(XP_DEVICE_GET_DESCRIPTION, (const void *)get_description);
  put(XP_DEVICE_MEMORY_STATS, (const void *)memory_stats);
  put(XP_CLIENT_COMPILE, (const void *)compile);
  put(XP_EXECUTABLE_DESERIALIZE_AND_LOAD, (const void *)deserialize);
  put(XP_LOADED_DESTROY, (const void *)loaded_destroy);
  put(XP_LOADED_GET_EXECUTABLE, (const void *)get_executable);
  put(XP_EXECUTABLE_DESTROY, (const void *)executable_destroy);
  put(XP_EXECUTABLE_SERIALIZE, (const void *)serialize);
  return table;
}

/* The last DeserializeAndLoad call: its struct_size, and whether the bytes after it (to 128) were 0. */
__attribute__((visibility("default"))) void CountingPlugin_LastDeserialize(size_t *size, int *zero_tail) {
  *size = atomic_load(&deserialize_size);
  *zero_tail = atomic_load(&deserialize_tail);
}

/* Made minus freed: errors, loaded executables, executables, serialized executables. */
__attribute__((visibility("default"))) void CountingPlugin_Live(long out[4]) {
  out[0] = atomic_load(&errors);
  out[1] = atomic_load(&loaded);
  out[2] = atomic_load(&executables);
  out[3] = atomic_load(&serialized);
}
