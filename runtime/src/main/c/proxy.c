/*
 * libxlac_pjrt.so: a PJRT plugin that stands in front of the real one (runtime/README.md).
 *
 * GetPjrtApi loads the real plugin and returns a copy of its function table in which only
 * PJRT_Client_Compile is replaced (and PJRT_LoadedExecutable_Execute, for struct-size bridging
 * only: bridge.h; PJRT_Client_Create and _Destroy when loading ahead: preload.h). Everything
 * else, including the API version, the extension chain, Plugin_Initialize and Plugin_Attributes,
 * is the real plugin's. A compile whose request key has a valid entry in the runtime layout is
 * answered with PJRT_Executable_DeserializeAndLoad (or an executable loaded ahead); any other
 * compile, and every failure on the proxy's side, goes to the real PJRT_Client_Compile.
 *
 * State: the table, the configuration read once from the environment, the plugin identities
 * (computed once per platform name and version, under a lock), the preloads (kept) and atomic
 * counters. Compile calls may arrive on several threads at once.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bridge.h"
#include "files.h"
#include "key.h"
#include "options.h"
#include "pjrt_abi.h"
#include "preload.h"
#include "sha256.h"

#define EXPORT __attribute__((visibility("default")))
#define XLAC_PROXY_MARKER "XlacPjrt_ThisIsTheProxy" /* the exported marker below, by name */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static const void *answer; /* what GetPjrtApi returns: the real table, our copy, or NULL */
static _Alignas(16) unsigned char table[16384];

static struct {
  char *real_path;     /* the loaded plugin file (its link map name, made absolute) */
  int plugin_fd;       /* that file, opened at GetPjrtApi; -1 once its hash is known or unreadable */
  struct stat plugin_st; /* fstat of plugin_fd */
  char *plugin_open_error;
  char *layout, *record, *stats;
  char *preload;          /* XLAC_PJRT_PRELOAD: the list of keys to load ahead, or NULL */
  uint64_t preload_budget; /* XLAC_PJRT_PRELOAD_BUDGET bytes */
  char *xla_flags, *libtpu_init_args; /* as of GetPjrtApi; NULL: unset */
} cfg = {.plugin_fd = -1};

static const void *real;      /* the real plugin's table */
static int api_major, api_minor;

/* The plugin-wide parts of the identity, computed once (outside any lock: a fork from another
 * thread must not leave a child waiting on a lock). Racing first compiles may both compute them;
 * one publishes, the other frees its own. */
static _Atomic(char *) plugin_sha_hex; /* 64 hex digits */
static _Atomic(char *) attribute_lines;
/* Whether the layout's directories may be trusted, checked at the first lookup (files.h): "" when
 * they may, else why not. A missing layout is not remembered: it may still appear. */
static _Atomic(char *) layout_distrust;

/* One identity per distinct client description (platform name and version, devices): an
 * append-only list, never freed, pushed with compare-and-swap. */
typedef struct identity {
  struct identity *next;
  uint8_t *client; /* the client description it was made for */
  size_t client_size;
  char *text;
  size_t text_size;
} identity;
static _Atomic(identity *) identities;

enum { C_COMPILES, C_HITS, C_MISSES, C_FALLBACKS, C_RECORDED, C_UNRECORDED, C_COUNT };
static atomic_uint_fast64_t counters[C_COUNT];
static atomic_bool fallback_said, record_failure_said;
static atomic_uint_fast64_t bridged_executes;

/* Loading ahead (preload.h): the preload of the live client, if any, and every preload ever started
 * (kept, never freed: a compile on another thread may still read one whose client just went). */
typedef struct preload_node {
  struct preload_node *next;
  xpreload *preload;
} preload_node;
static _Atomic(xpreload *) preload_active;
static _Atomic(preload_node *) preloads;
static atomic_bool preload_refusal_said;
#define PRELOAD_DEFAULT_BUDGET (1ull << 30)

/* One line on stderr, written with one write() so that it is never interleaved. */
static void say(const char *fmt, ...) {
  char line[1024];
  int n = snprintf(line, sizeof line, "xlac runtime: ");
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  ssize_t ignored = write(2, line, (size_t)n);
  (void)ignored;
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A path made absolute now: the framework may change directory later. */
static char *absolute(const char *v) {
  if (!v || !*v) return NULL;
  if (v[0] == '/') return strdup(v);
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) return strdup(v);
  size_t n = strlen(cwd) + strlen(v) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", cwd, v);
  return p;
}

static char *env_path(const char *name) { return absolute(getenv(name)); }

#define SLOT(type, slot) ((type)xp_slot(real, (slot)))

/* Copies the message of `error` into `out` and destroys the error. */
static void take_error(xpjrt_error *error, char *out, size_t size) {
  xp_error_message_args m = {XP_SIZE(xp_error_message_args, message_size), NULL, error, NULL, 0};
  SLOT(xp_error_message_fn, XP_ERROR_MESSAGE)(&m);
  size_t n = m.message ? m.message_size : 0;
  if (n > size - 1) n = size - 1;
  if (n) memcpy(out, m.message, n);
  out[n] = 0;
  xp_error_destroy_args d = {XP_SIZE(xp_error_destroy_args, error), NULL, error};
  SLOT(xp_error_destroy_fn, XP_ERROR_DESTROY)(&d);
}

/* Why the proxy cannot wrap this table, or NULL when it can. */
static const char *unwrappable(const void *api, char *why, size_t size) {
  const xpjrt_api_header *h = api;
  size_t need = XP_SLOT_OFFSET(XP_EXECUTABLE_DESERIALIZE_AND_LOAD) + sizeof(xpjrt_fn);
  if (h->struct_size < need) {
    snprintf(why, size, "the real plugin's PJRT_Api is %zu bytes, fewer than the %zu the proxy reads",
             h->struct_size, need);
    return why;
  }
  if (h->struct_size > sizeof table) {
    snprintf(why, size, "the real plugin's PJRT_Api is %zu bytes, more than the proxy's copy holds",
             h->struct_size);
    return why;
  }
  if (h->version.struct_size < 24 || h->version.major_version != 0) {
    snprintf(why, size, "the real plugin has PJRT C API %d.%d; the proxy knows major version 0 only",
             h->version.major_version, h->version.minor_version);
    return why;
  }
  static const struct {
    unsigned slot;
    const char *name;
  } needed[] = {
      {XP_ERROR_DESTROY, "PJRT_Error_Destroy"},
      {XP_ERROR_MESSAGE, "PJRT_Error_Message"},
      {XP_PLUGIN_ATTRIBUTES, "PJRT_Plugin_Attributes"},
      {XP_CLIENT_PLATFORM_NAME, "PJRT_Client_PlatformName"},
      {XP_CLIENT_PLATFORM_VERSION, "PJRT_Client_PlatformVersion"},
      {XP_CLIENT_ADDRESSABLE_DEVICES, "PJRT_Client_AddressableDevices"},
      {XP_DEVICE_DESCRIPTION_KIND, "PJRT_DeviceDescription_Kind"},
      {XP_DEVICE_GET_DESCRIPTION, "PJRT_Device_GetDescription"},
      {XP_CLIENT_COMPILE, "PJRT_Client_Compile"},
      {XP_EXECUTABLE_DESTROY, "PJRT_Executable_Destroy"},
      {XP_EXECUTABLE_SERIALIZE, "PJRT_Executable_Serialize"},
      {XP_LOADED_GET_EXECUTABLE, "PJRT_LoadedExecutable_GetExecutable"},
      {XP_EXECUTABLE_DESERIALIZE_AND_LOAD, "PJRT_Executable_DeserializeAndLoad"},
  };
  for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
    if (!xp_slot(api, needed[i].slot)) {
      snprintf(why, size, "the real plugin has no %s", needed[i].name);
      return why;
    }
  return NULL;
}

static xpjrt_error *proxy_compile(xp_client_compile_args *args);
static xpjrt_error *proxy_client_create(xp_client_create_args *args);
static xpjrt_error *proxy_client_destroy(xp_client_destroy_args *args);

/* Opens the file the real plugin was loaded from (dlopen of a name without a slash searches the
 * library path, so the name as given may be another file) and trusts XLAC_PJRT_PLUGIN_SHA256 when
 * its stat is that file's. */
static void open_plugin_file(void *handle, const char *given) {
  struct link_map *map = NULL;
  const char *name = dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name
                         ? map->l_name
                         : given;
  cfg.real_path = absolute(name);
  if (!cfg.real_path) return;
  int fd = open(cfg.real_path, O_RDONLY | O_CLOEXEC);
  char why[600];
  if (fd < 0 || fstat(fd, &cfg.plugin_st) != 0) {
    snprintf(why, sizeof why, "cannot read the real plugin %s: %s", cfg.real_path, strerror(errno));
    cfg.plugin_open_error = strdup(why);
    if (fd >= 0) close(fd);
    return;
  }
  uint8_t digest[32];
  if (xplugin_sha_env_matches(getenv("XLAC_PJRT_PLUGIN_SHA256"), &cfg.plugin_st, digest)) {
    char *hex = malloc(65);
    if (hex) {
      xhex(digest, 32, hex);
      atomic_store(&plugin_sha_hex, hex);
      close(fd);
      return;
    }
  }
  cfg.plugin_fd = fd; /* hashed at the first compile */
}

/*
 * PJRT_LoadedExecutable_Execute, with the framework's PJRT_ExecuteOptions enlarged to the size the
 * plugin demands when it is shorter (bridge.h). The caller's Args get the enlarged copy for the
 * call and their own options back after it; everything else passes through untouched.
 */
static xpjrt_error *proxy_execute(xp_loaded_execute_args *args) {
  xp_loaded_execute_fn real_execute = SLOT(xp_loaded_execute_fn, XP_LOADED_EXECUTE);
  if (!args || args->struct_size < XP_SIZE(xp_loaded_execute_args, options)) return real_execute(args);
  _Alignas(16) unsigned char buffer[XBRIDGE_EXECUTE_OPTIONS_SIZE];
  void *own = args->options;
  const void *bridged = xbridge_execute_options(own, buffer, sizeof buffer);
  if (bridged == own) return real_execute(args);
  atomic_fetch_add(&bridged_executes, 1);
  args->options = (void *)bridged;
  xpjrt_error *e = real_execute(args);
  args->options = own;
  return e;
}

/* PJRT_Client_Create, then loading ahead for the new client when no other client has it. A list that
 * cannot be used is said once; loading ahead never fails the client. */
static xpjrt_error *proxy_client_create(xp_client_create_args *args) {
  xpjrt_error *e = SLOT(xp_client_create_fn, XP_CLIENT_CREATE)(args);
  if (e || !args || args->struct_size < XP_SIZE(xp_client_create_args, client) || !args->client ||
      atomic_load(&preload_active))
    return e;
  xpreload_setup setup = {real, api_minor, cfg.layout, cfg.stats, args->client, cfg.preload_budget};
  char reason[700];
  xpreload *p = xpreload_start(cfg.preload, &setup, reason, sizeof reason);
  if (!p) {
    if (reason[0] && !atomic_exchange(&preload_refusal_said, true))
      say("%s; compiles are served without loading ahead", reason);
    return NULL;
  }
  preload_node *node = calloc(1, sizeof *node);
  xpreload *none = NULL;
  if (!node || !atomic_compare_exchange_strong(&preload_active, &none, p)) {
    xpreload_stop(p); /* another client took loading ahead meanwhile */
    xpreload_free(p);
    free(node);
    return NULL;
  }
  node->preload = p;
  node->next = atomic_load(&preloads);
  while (!atomic_compare_exchange_weak(&preloads, &node->next, node)) {
  }
  return NULL;
}

/* PJRT_Client_Destroy: first loading ahead for it stops and what nobody claimed is destroyed. */
static xpjrt_error *proxy_client_destroy(xp_client_destroy_args *args) {
  xpreload *p = atomic_load(&preload_active);
  if (args && args->struct_size >= XP_SIZE(xp_client_destroy_args, client) && p &&
      xpreload_client(p) == args->client && atomic_compare_exchange_strong(&preload_active, &p, NULL))
    xpreload_stop(p);
  return SLOT(xp_client_destroy_fn, XP_CLIENT_DESTROY)(args);
}

static void init(void) {
  const char *path = getenv("XLAC_PJRT_REAL_PLUGIN");
  if (!path || !*path) {
    say("XLAC_PJRT_REAL_PLUGIN is not set; it must name the real PJRT plugin to load");
    return;
  }
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    say("cannot load the real PJRT plugin %s: %s", path, dlerror());
    return;
  }
  /* An xlac run inside another sees the outer run's proxy as the real plugin: ourselves (its
   * GetPjrtApi would wait for this very initialisation for ever) or another copy of the proxy. */
  if (dlsym(handle, XLAC_PROXY_MARKER) || dlsym(handle, "XlacPjrt_Counters") /* proxies before the marker */) {
    say("the real PJRT plugin %s is xlac's runtime proxy, not a real plugin (an xlac run inside another?); "
        "XLAC_PJRT_REAL_PLUGIN must name the real plugin",
        path);
    return;
  }
  const void *(*get)(void);
  void *sym = dlsym(handle, "GetPjrtApi");
  memcpy(&get, &sym, sizeof get);
  const void *api = get ? get() : NULL;
  if (!api) {
    say("the real PJRT plugin %s has no GetPjrtApi, or it returned no API", path);
    return;
  }
  real = api;
  answer = api; /* from here on, any problem passes the real plugin through */
  cfg.layout = env_path("XLAC_PJRT_LAYOUT");
  cfg.record = env_path("XLAC_PJRT_RECORD");
  cfg.stats = env_path("XLAC_PJRT_STATS");
  cfg.preload = env_path("XLAC_PJRT_PRELOAD");
  const char *budget = getenv("XLAC_PJRT_PRELOAD_BUDGET");
  char *budget_end = NULL;
  unsigned long long budget_value = budget && *budget ? strtoull(budget, &budget_end, 10) : 0;
  cfg.preload_budget = budget_end && !*budget_end ? (uint64_t)budget_value : PRELOAD_DEFAULT_BUDGET;
  if (!cfg.layout && !cfg.record && !cfg.stats) return; /* nothing to do: the real table as it is */
  char why[256];
  if (unwrappable(api, why, sizeof why)) {
    say("%s; passing the real plugin through unchanged", why);
    return;
  }
  /* the plugin reads these itself (XLA_FLAGS fills the debug options a request does not carry) */
  const char *flags = getenv("XLA_FLAGS"), *tpu = getenv("LIBTPU_INIT_ARGS");
  cfg.xla_flags = xkeyed_xla_flags(flags); /* a file it names is read now, as XLA reads it once */
  cfg.libtpu_init_args = tpu ? strdup(tpu) : NULL;
  /* out of memory while reading them: never keyed as unset (that would serve what was compiled
   * without them), but for this process alone, so every compile misses */
  static char xla_flags_unread[160], libtpu_unread[160];
  cfg.xla_flags = xkeyed_or_unread(cfg.xla_flags, flags, xla_flags_unread, sizeof xla_flags_unread, "XLA_FLAGS");
  cfg.libtpu_init_args =
      xkeyed_or_unread(cfg.libtpu_init_args, tpu, libtpu_unread, sizeof libtpu_unread, "LIBTPU_INIT_ARGS");
  open_plugin_file(handle, path);
  if (!cfg.real_path) return;
  const xpjrt_api_header *h = api;
  api_major = h->version.major_version;
  api_minor = h->version.minor_version;
  memcpy(table, api, h->struct_size);
  xp_client_compile_fn hook = proxy_compile;
  memcpy(table + XP_SLOT_OFFSET(XP_CLIENT_COMPILE), &hook, sizeof hook);
  if (cfg.preload && cfg.layout) { /* loading ahead starts with the client and ends with it */
    xp_client_create_fn create = proxy_client_create;
    xp_client_destroy_fn destroy = proxy_client_destroy;
    memcpy(table + XP_SLOT_OFFSET(XP_CLIENT_CREATE), &create, sizeof create);
    memcpy(table + XP_SLOT_OFFSET(XP_CLIENT_DESTROY), &destroy, sizeof destroy);
  }
  if (xp_slot(api, XP_LOADED_EXECUTE)) { /* struct-size bridging (bridge.h) */
    xp_loaded_execute_fn execute = proxy_execute;
    memcpy(table + XP_SLOT_OFFSET(XP_LOADED_EXECUTE), &execute, sizeof execute);
  }
  answer = table;
}

/* Marks this library as xlac's proxy (a data symbol, found with dlsym here and in the file's bytes
 * by xlac run's RealPlugin): a "real plugin" that has it is refused. */
EXPORT const char XlacPjrt_ThisIsTheProxy[] = "xlac runtime proxy";

EXPORT const void *GetPjrtApi(void) {
  pthread_once(&init_once, init);
  return answer;
}

/* For tests: how many executes had their PJRT_ExecuteOptions enlarged (bridge.h). */
EXPORT uint64_t XlacPjrt_BridgedExecutes(void) { return atomic_load(&bridged_executes); }

/*
 * The identity's host CPU lines of this machine (xhost_cpu_lines for a "cpu" platform), for xlac's
 * Java side, which keys recorded requests for a plugin as the proxy would here: written into `out`
 * (NUL-terminated, cut to `size`); returns their length, or 0 when out of memory.
 */
EXPORT size_t XlacPjrt_HostCpuLines(char *out, size_t size) {
  char *lines = xhost_cpu_lines((xstr){"cpu", 3});
  size_t n = lines ? strlen(lines) : 0;
  if (out && size) snprintf(out, size, "%s", lines ? lines : "");
  free(lines);
  return n;
}

/* For tests: over every client's loading ahead, executables loaded ahead, claimed, destroyed unclaimed
 * and loads that failed. */
EXPORT void XlacPjrt_PreloadCounters(uint64_t out[4]) {
  memset(out, 0, 4 * sizeof out[0]);
  for (preload_node *n = atomic_load(&preloads); n; n = n->next) {
    uint64_t c[4];
    xpreload_counts(n->preload, c);
    for (int i = 0; i < 4; i++) out[i] += c[i];
  }
}

/* For tests: compiles, hits, misses, fallbacks, recorded, unrecorded. */
EXPORT void XlacPjrt_Counters(uint64_t out[6]) {
  for (int i = 0; i < C_COUNT; i++) out[i] = atomic_load(&counters[i]);
}

/* ---------------------------------------------------------------- plugin identity */

/* The plugin file's SHA-256, read from the file opened at GetPjrtApi unless XLAC_PJRT_PLUGIN_SHA256
 * gave it. NULL with `reason` when it cannot be read. */
static const char *plugin_sha256(char *reason, size_t size) {
  char *known = atomic_load(&plugin_sha_hex);
  if (known) return known;
  if (cfg.plugin_fd < 0) {
    snprintf(reason, size, "%s", cfg.plugin_open_error ? cfg.plugin_open_error : "cannot read the real plugin");
    return NULL;
  }
  struct stat st;
  if (fstat(cfg.plugin_fd, &st) != 0 || st.st_dev != cfg.plugin_st.st_dev || st.st_ino != cfg.plugin_st.st_ino) {
    snprintf(reason, size, "the real plugin's file descriptor no longer reads %s", cfg.real_path);
    return NULL;
  }
  enum { CHUNK = 1 << 20 };
  uint8_t *chunk = malloc(CHUNK);
  xsha256 s;
  xsha256_init(&s);
  ssize_t r = -1;
  off_t at = 0;
  while (chunk && ((r = pread(cfg.plugin_fd, chunk, CHUNK, at)) > 0 || (r < 0 && errno == EINTR)))
    if (r > 0) {
      xsha256_update(&s, chunk, (size_t)r);
      at += r;
    }
  int err = errno;
  free(chunk);
  if (r != 0) {
    snprintf(reason, size, "cannot read the real plugin %s: %s", cfg.real_path,
             chunk ? strerror(err) : "out of memory");
    return NULL;
  }
  uint8_t digest[32];
  xsha256_final(&s, digest);
  char *hex = malloc(65);
  if (!hex) {
    snprintf(reason, size, "out of memory");
    return NULL;
  }
  xhex(digest, 32, hex);
  char *expected = NULL;
  if (!atomic_compare_exchange_strong(&plugin_sha_hex, &expected, hex)) {
    free(hex); /* another thread was first; same bytes */
    return expected;
  }
  return hex;
}

static const char *attributes(char *reason, size_t size) {
  char *known = atomic_load(&attribute_lines);
  if (known) return known;
  xp_plugin_attributes_args a = {XP_SIZE(xp_plugin_attributes_args, num_attributes), NULL, NULL, 0};
  xpjrt_error *e = SLOT(xp_plugin_attributes_fn, XP_PLUGIN_ATTRIBUTES)(&a);
  if (e) {
    char m[256];
    take_error(e, m, sizeof m);
    snprintf(reason, size, "cannot read the real plugin's attributes: %s", m);
    return NULL;
  }
  char *lines = xidentity_attributes(a.attributes, a.attributes ? a.num_attributes : 0);
  if (!lines) {
    snprintf(reason, size, "the real plugin's attributes have an unexpected struct size, or out of memory");
    return NULL;
  }
  char *expected = NULL;
  if (!atomic_compare_exchange_strong(&attribute_lines, &expected, lines)) {
    free(lines);
    return expected;
  }
  return lines;
}

static int client_text(unsigned slot, xpjrt_client *client, xstr *out, char *reason, size_t reason_size) {
  xp_client_text_args a = {XP_SIZE(xp_client_text_args, text_size), NULL, client, NULL, 0};
  xpjrt_error *e = SLOT(xp_client_text_fn, slot)(&a);
  if (e) {
    char m[256];
    take_error(e, m, sizeof m);
    snprintf(reason, reason_size, "cannot read the client's platform %s: %s",
             slot == XP_CLIENT_PLATFORM_NAME ? "name" : "version", m);
    return -1;
  }
  out->data = a.text ? a.text : "";
  out->size = a.text ? a.text_size : 0;
  return 0;
}

/* What the identity depends on per client: its platform name and version and the kind of each of
 * its addressable devices. `kinds` is malloc'd (one per device). */
typedef struct {
  xstr name, version;
  size_t device_count;
  xstr *kinds;
} client_info;

static int read_client(xpjrt_client *client, client_info *c, char *reason, size_t size) {
  memset(c, 0, sizeof *c);
  if (client_text(XP_CLIENT_PLATFORM_NAME, client, &c->name, reason, size) ||
      client_text(XP_CLIENT_PLATFORM_VERSION, client, &c->version, reason, size))
    return -1;
  char m[256];
  xp_client_devices_args d = {XP_SIZE(xp_client_devices_args, num_devices), NULL, client, NULL, 0};
  xpjrt_error *e = SLOT(xp_client_devices_fn, XP_CLIENT_ADDRESSABLE_DEVICES)(&d);
  if (e) {
    take_error(e, m, sizeof m);
    snprintf(reason, size, "cannot list the client's addressable devices: %s", m);
    return -1;
  }
  size_t n = d.devices ? d.num_devices : 0;
  c->kinds = calloc(n ? n : 1, sizeof *c->kinds);
  if (!c->kinds) {
    snprintf(reason, size, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    xp_device_get_description_args g = {XP_SIZE(xp_device_get_description_args, description), NULL,
                                        d.devices[i], NULL};
    e = SLOT(xp_device_get_description_fn, XP_DEVICE_GET_DESCRIPTION)(&g);
    xp_device_kind_args k = {XP_SIZE(xp_device_kind_args, kind_size), NULL, g.description, NULL, 0};
    if (!e) e = SLOT(xp_device_kind_fn, XP_DEVICE_DESCRIPTION_KIND)(&k);
    if (e) {
      take_error(e, m, sizeof m);
      snprintf(reason, size, "cannot read the kind of device %zu: %s", i, m);
      free(c->kinds);
      c->kinds = NULL;
      return -1;
    }
    c->kinds[i] = (xstr){k.kind ? k.kind : "", k.kind ? k.kind_size : 0};
  }
  c->device_count = n;
  return 0;
}

/* The client's description as bytes, to find its identity: each part length-prefixed. */
static uint8_t *describe(const client_info *c, size_t *size) {
  size_t n = 8 + c->name.size + 8 + c->version.size + 8;
  for (size_t i = 0; i < c->device_count; i++) n += 8 + c->kinds[i].size;
  uint8_t *b = malloc(n), *p = b;
  if (!b) return NULL;
#define PUT(data, len)                        \
  do {                                        \
    uint64_t l_ = (len);                      \
    memcpy(p, &l_, 8);                        \
    p += 8;                                   \
    if (l_) memcpy(p, (data), (size_t)l_);    \
    p += l_;                                  \
  } while (0)
  PUT(c->name.data, c->name.size);
  PUT(c->version.data, c->version.size);
  uint64_t count = c->device_count;
  memcpy(p, &count, 8);
  p += 8;
  for (size_t i = 0; i < c->device_count; i++) PUT(c->kinds[i].data, c->kinds[i].size);
#undef PUT
  *size = n;
  return b;
}

/* The identity text for the compile's client (computed once per client description). */
static const identity *identity_for(xpjrt_client *client, char *reason, size_t size) {
  client_info c;
  if (read_client(client, &c, reason, size)) return NULL;
  size_t desc_size = 0;
  uint8_t *desc = describe(&c, &desc_size);
  const identity *found = NULL;
  if (!desc) snprintf(reason, size, "out of memory");
  for (identity *i = desc ? atomic_load(&identities) : NULL; i && !found; i = i->next)
    if (i->client_size == desc_size && !memcmp(i->client, desc, desc_size)) found = i;
  const char *sha = NULL, *attrs = NULL;
  char *host = NULL;
  if (desc && !found && (sha = plugin_sha256(reason, size)) && (attrs = attributes(reason, size)) &&
      !(host = xhost_cpu_lines(c.name)))
    snprintf(reason, size, "out of memory");
  if (host) {
    xidentity_parts parts = {
        .platform_name = c.name,
        .platform_version = c.version,
        .api_major = api_major,
        .api_minor = api_minor,
        .plugin_sha256_hex = sha,
        .device_count = c.device_count,
        .device_kinds = c.kinds,
        .host_cpu_lines = host,
        .xla_flags = {cfg.xla_flags ? cfg.xla_flags : "", cfg.xla_flags ? strlen(cfg.xla_flags) : 0},
        .libtpu_init_args = {cfg.libtpu_init_args ? cfg.libtpu_init_args : "",
                             cfg.libtpu_init_args ? strlen(cfg.libtpu_init_args) : 0},
        .attribute_lines = attrs,
    };
    identity *i = calloc(1, sizeof *i);
    if (i) i->text = xidentity_text(&parts, &i->text_size);
    if (i && i->text) {
      i->client = desc;
      i->client_size = desc_size;
      desc = NULL;
      i->next = atomic_load(&identities);
      while (!atomic_compare_exchange_weak(&identities, &i->next, i)) {
      }
      found = i;
    } else {
      if (i) free(i);
      snprintf(reason, size, "out of memory");
    }
  }
  free(host);
  free(desc);
  free(c.kinds);
  return found;
}

/* ---------------------------------------------------------------- the compile */

/* Whether every extension on the Compile_Args is one that does not change what is compiled (the
 * profiler's); at most 16 are looked at. */
static bool harmless_extensions(const xp_extension *x) {
  for (int n = 0; x; x = x->next, n++)
    if (n == 16 || x->struct_size < sizeof *x || x->type != XP_EXTENSION_PROFILER) return false;
  return true;
}

/* Makes a reason fit a statistics line: one line, no tabs. */
static void one_line(char *text) {
  for (char *c = text; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = ' ';
}

static void stat_line(const char *fmt, ...) {
  if (!cfg.stats) return;
  char line[1200];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n] = '\n';
  line[n + 1] = 0;
  xstats_line(cfg.stats, line);
}

static void note_fallback(char *reason) {
  atomic_fetch_add(&counters[C_FALLBACKS], 1);
  one_line(reason);
  if (!atomic_exchange(&fallback_said, true))
    say("%s; compiling with the real plugin (further fallbacks are counted, not printed)", reason);
}

static void note_unrecorded(const char *key_text, char *reason) {
  atomic_fetch_add(&counters[C_UNRECORDED], 1);
  one_line(reason);
  stat_line("unrecorded\t%s\t%s", key_text, reason);
  if (!atomic_exchange(&record_failure_said, true))
    say("%s; the compile itself succeeded (further recording failures are counted, not printed)",
        reason);
}

/* Serializes what the real plugin compiled and writes it to the record spool. */
static void record(const char *key_text, const uint8_t key[32], const xp_client_compile_args *args,
                   const identity *id, uint64_t compile_ns) {
  char reason[768];
  xp_loaded_get_executable_args g = {XP_SIZE(xp_loaded_get_executable_args, executable), NULL,
                                     args->executable, NULL};
  xpjrt_error *e = SLOT(xp_get_executable_fn, XP_LOADED_GET_EXECUTABLE)(&g);
  if (e || !g.executable) {
    char m[256] = "no executable";
    if (e) take_error(e, m, sizeof m);
    snprintf(reason, sizeof reason, "cannot get the compiled executable to record it: %s", m);
    note_unrecorded(key_text, reason);
    return;
  }
  xp_executable_serialize_args s = {XP_SIZE(xp_executable_serialize_args, serialized_executable_deleter),
                                    NULL, g.executable, NULL, 0, NULL, NULL};
  e = SLOT(xp_serialize_fn, XP_EXECUTABLE_SERIALIZE)(&s);
  if (e) {
    char m[256];
    take_error(e, m, sizeof m);
    snprintf(reason, sizeof reason, "cannot serialize the compiled executable to record it: %s", m);
    note_unrecorded(key_text, reason);
  } else {
    const xp_program *p = args->program;
    uint64_t bytes = 0;
    xspan format = {(const uint8_t *)p->format, p->format ? p->format_size : 0};
    xspan program = {(const uint8_t *)p->code, p->code ? p->code_size : 0};
    xspan options = {(const uint8_t *)args->compile_options,
                     args->compile_options ? args->compile_options_size : 0};
    xspan ident = {(const uint8_t *)id->text, id->text_size};
    xspan exe = {(const uint8_t *)s.serialized_bytes, s.serialized_bytes ? s.serialized_bytes_size : 0};
    if (xrecord_write(cfg.record, key, format, program, options, ident, exe, compile_ns, &bytes,
                      reason, sizeof reason) == 0) {
      atomic_fetch_add(&counters[C_RECORDED], 1);
      stat_line("recorded\t%s\t%" PRIu64, key_text, bytes);
    } else {
      note_unrecorded(key_text, reason);
    }
    if (s.serialized_executable_deleter) s.serialized_executable_deleter(s.serialized_executable);
  }
  xp_executable_destroy_args d = {XP_SIZE(xp_executable_destroy_args, executable), NULL, g.executable};
  e = SLOT(xp_executable_destroy_fn, XP_EXECUTABLE_DESTROY)(&d);
  if (e) {
    char m[256];
    take_error(e, m, sizeof m);
  }
}

/* Tries to answer the compile from the layout: 1 served, 0 miss, -1 fallback (reason set). */
static int serve(xp_client_compile_args *args, const uint8_t key[32], uint64_t *load_ns,
                 uint64_t *saved_ns, char *reason, size_t size) {
  char *distrust = atomic_load(&layout_distrust);
  if (!distrust) {
    int chain = xlayout_check_chain(cfg.layout, reason, size);
    if (chain == XLAYOUT_NO_DIRECTORY) return -1;
    char *verdict = strdup(chain == 0 ? "" : reason);
    if (!verdict) {
      snprintf(reason, size, "out of memory");
      return -1;
    }
    distrust = NULL;
    if (!atomic_compare_exchange_strong(&layout_distrust, &distrust, verdict)) free(verdict);
    else distrust = verdict;
  }
  if (*distrust) {
    snprintf(reason, size, "%s", distrust);
    return -1;
  }
  uint8_t *exe = NULL;
  size_t exe_size = 0;
  int found = xlayout_read(cfg.layout, key, &exe, &exe_size, saved_ns, reason, size);
  if (found != XLAYOUT_FOUND) return found == XLAYOUT_ABSENT ? 0 : -1;
  uint64_t t = now_ns();
  /* A plugin reads no further than the struct_size we give, but a larger zeroed buffer keeps a
   * plugin that reads more (or a newer field) from reading stack garbage. */
  union {
    xp_deserialize_and_load_args args;
    unsigned char bytes[XP_DESERIALIZE_BUFFER];
  } buffer;
  _Static_assert(sizeof(xp_deserialize_and_load_args) <= XP_DESERIALIZE_BUFFER, "buffer");
  memset(&buffer, 0, sizeof buffer);
  xp_deserialize_and_load_args *d = &buffer.args;
  d->struct_size = XP_SIZE(xp_deserialize_and_load_args, loaded_executable);
  d->client = args->client;
  d->serialized_executable = (const char *)exe;
  d->serialized_executable_size = exe_size;
  if (api_minor >= XP_DESERIALIZE_OVERRIDE_MINOR) {
    /* load with the request's own options, as a compile would have used them */
    d->struct_size = XP_SIZE(xp_deserialize_and_load_args, overridden_serialized_compile_options_size);
    d->overridden_serialized_compile_options = args->compile_options;
    d->overridden_serialized_compile_options_size = args->compile_options_size;
  }
  xpjrt_error *e = SLOT(xp_deserialize_fn, XP_EXECUTABLE_DESERIALIZE_AND_LOAD)(d);
  *load_ns = now_ns() - t;
  free(exe);
  if (e || !d->loaded_executable) {
    char m[512] = "no executable";
    if (e) take_error(e, m, sizeof m);
    snprintf(reason, size, "cannot load the cached executable: %s", m);
    return -1;
  }
  args->executable = d->loaded_executable;
  return 1;
}

static xpjrt_error *proxy_compile(xp_client_compile_args *args) {
  xp_client_compile_fn real_compile = SLOT(xp_client_compile_fn, XP_CLIENT_COMPILE);
  atomic_fetch_add(&counters[C_COMPILES], 1);
  uint64_t t0 = now_ns();
  char reason[768] = "";
  const char *why_not = NULL;
  char why_buf[200];
  if (!args || args->struct_size < XP_SIZE(xp_client_compile_args, executable))
    why_not = "unexpected PJRT_Client_Compile_Args size";
  else if (!args->program || args->program->struct_size < XP_SIZE(xp_program, format_size))
    why_not = "unexpected PJRT_Program size";
  else if (args->struct_size > XP_SIZE(xp_client_compile_args, executable) ||
           args->program->struct_size > XP_SIZE(xp_program, format_size)) {
    /* fields the proxy does not know could change what is compiled: not served, not recorded */
    snprintf(why_buf, sizeof why_buf,
             "PJRT_Client_Compile_Args (%zu bytes) or PJRT_Program (%zu bytes) has fields the proxy "
             "does not know",
             args->struct_size, args->program->struct_size);
    why_not = why_buf;
  } else if (!harmless_extensions(args->extension_start) || args->program->extension_start) {
    why_not = "the compile request carries a PJRT extension the proxy does not know";
  }
  if (why_not) {
    snprintf(reason, sizeof reason, "%s", why_not);
    note_fallback(reason);
    uint64_t t1 = now_ns();
    xpjrt_error *e = real_compile(args);
    stat_line("fallback\t-\t%" PRIu64 "\t%" PRIu64 "\t%s", t1 - t0, now_ns() - t1, reason);
    return e;
  }

  const identity *id = identity_for(args->client, reason, sizeof reason);
  uint8_t key[32];
  bool have_key = false;
  char key_text[XKEY_TEXT_SIZE] = "-";
  int served = -1; /* 1 hit, 0 miss, -1 fallback */
  uint64_t load_ns = 0, saved_ns = 0, waited_ns = 0, hidden_ns = 0;
  bool claimed = false; /* served by an executable loaded ahead */
  if (id) {
    const xp_program *p = args->program;
    size_t canonical_size = 0;
    uint8_t *canonical = xcanonical_options((const uint8_t *)args->compile_options,
                                            args->compile_options ? args->compile_options_size : 0,
                                            &canonical_size);
    if (canonical) {
      xrequest_key((const uint8_t *)p->format, p->format ? p->format_size : 0,
                   (const uint8_t *)p->code, p->code ? p->code_size : 0, canonical, canonical_size,
                   id->text, id->text_size, key);
      free(canonical);
      have_key = true;
      memcpy(key_text, XKEY_PREFIX, 6);
      xhex(key, 32, key_text + 6);
      xpreload *ahead = cfg.layout ? atomic_load(&preload_active) : NULL;
      xpjrt_loaded *loaded = NULL;
      if (ahead && xpreload_client(ahead) == args->client &&
          xpreload_claim(ahead, key, &loaded, &waited_ns, &hidden_ns, &saved_ns) == XPRELOAD_CLAIMED) {
        args->executable = loaded;
        served = 1;
        claimed = true;
      } else {
        served = cfg.layout ? serve(args, key, &load_ns, &saved_ns, reason, sizeof reason) : 0;
      }
    } else {
      snprintf(reason, sizeof reason, "out of memory computing the request key");
    }
  }
  uint64_t t1 = now_ns();
  if (served == 1) {
    atomic_fetch_add(&counters[C_HITS], 1);
    stat_line("hit\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64, key_text, t1 - t0 - load_ns, load_ns,
              saved_ns);
    if (claimed) stat_line("preload_hit\t%s\t%" PRIu64 "\t%" PRIu64, key_text, waited_ns, hidden_ns);
    return NULL;
  }
  if (served < 0) note_fallback(reason);
  xpjrt_error *e = real_compile(args);
  uint64_t compile_ns = now_ns() - t1;
  if (served == 0) {
    atomic_fetch_add(&counters[C_MISSES], 1);
    stat_line("miss\t%s\t%" PRIu64 "\t%" PRIu64, key_text, t1 - t0, compile_ns);
    if (cfg.stats) { /* the request, for xlac to say why it was not served */
      const xp_program *p = args->program;
      xstats_request(cfg.stats, key, (xspan){(const uint8_t *)p->format, p->format ? p->format_size : 0},
                     (xspan){(const uint8_t *)p->code, p->code ? p->code_size : 0},
                     (xspan){(const uint8_t *)args->compile_options,
                             args->compile_options ? args->compile_options_size : 0},
                     (xspan){(const uint8_t *)id->text, id->text_size}, compile_ns);
    }
  } else {
    stat_line("fallback\t%s\t%" PRIu64 "\t%" PRIu64 "\t%s", key_text, t1 - t0, compile_ns, reason);
  }
  if (!e && cfg.record && have_key && id && args->executable) record(key_text, key, args, id, compile_ns);
  return e;
}
