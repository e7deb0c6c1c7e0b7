/*
 * libxlac_pjrt.so: a PJRT plugin that stands in front of the real one (runtime/README.md).
 *
 * GetPjrtApi loads the real plugin and returns a copy of its function table in which only
 * PJRT_Client_Compile is replaced. Everything else, including the API version, the extension
 * chain, Plugin_Initialize and Plugin_Attributes, is the real plugin's. A compile whose request key
 * has a valid entry in the runtime layout is answered with PJRT_Executable_DeserializeAndLoad; any
 * other compile, and every failure on the proxy's side, goes to the real PJRT_Client_Compile.
 *
 * State: the table, the configuration read once from the environment, the plugin identities
 * (computed once per platform name and version, under a lock) and atomic counters. Compile calls
 * may arrive on several threads at once.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
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

#include "files.h"
#include "key.h"
#include "options.h"
#include "pjrt_abi.h"
#include "sha256.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static const void *answer; /* what GetPjrtApi returns: the real table, our copy, or NULL */
static _Alignas(16) unsigned char table[16384];

static struct {
  char *real_path;
  char *plugin_sha256; /* XLAC_PJRT_PLUGIN_SHA256 */
  char *layout, *record, *stats;
} cfg;

static const void *real;      /* the real plugin's table */
static int api_major, api_minor;

static pthread_mutex_t identity_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct identity {
  struct identity *next;
  char *name, *version; /* as the client reports them */
  size_t name_size, version_size;
  char *text;
  size_t text_size;
} identity;
static identity *identities; /* guarded by identity_lock; never freed */
static char plugin_sha_hex[65]; /* guarded by identity_lock; "" until known */
static char *attribute_lines;   /* guarded by identity_lock */

enum { C_COMPILES, C_HITS, C_MISSES, C_FALLBACKS, C_RECORDED, C_UNRECORDED, C_COUNT };
static atomic_uint_fast64_t counters[C_COUNT];
static atomic_bool fallback_said, record_failure_said;

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

static char *env_dup(const char *name) {
  const char *v = getenv(name);
  return v && *v ? strdup(v) : NULL;
}

/* A path from the environment made absolute now: the framework may change directory later. */
static char *env_path(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) return NULL;
  if (v[0] == '/') return strdup(v);
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) return strdup(v);
  size_t n = strlen(cwd) + strlen(v) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", cwd, v);
  return p;
}

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
  cfg.real_path = env_path("XLAC_PJRT_REAL_PLUGIN");
  cfg.plugin_sha256 = env_dup("XLAC_PJRT_PLUGIN_SHA256");
  cfg.layout = env_path("XLAC_PJRT_LAYOUT");
  cfg.record = env_path("XLAC_PJRT_RECORD");
  cfg.stats = env_path("XLAC_PJRT_STATS");
  if (!cfg.real_path) return;
  if (!cfg.layout && !cfg.record && !cfg.stats) return; /* nothing to do: the real table as it is */
  char why[256];
  if (unwrappable(api, why, sizeof why)) {
    say("%s; passing the real plugin through unchanged", why);
    return;
  }
  const xpjrt_api_header *h = api;
  api_major = h->version.major_version;
  api_minor = h->version.minor_version;
  memcpy(table, api, h->struct_size);
  xp_client_compile_fn hook = proxy_compile;
  memcpy(table + XP_SLOT_OFFSET(XP_CLIENT_COMPILE), &hook, sizeof hook);
  answer = table;
}

EXPORT const void *GetPjrtApi(void) {
  pthread_once(&init_once, init);
  return answer;
}

/* For tests: compiles, hits, misses, fallbacks, recorded, unrecorded. */
EXPORT void XlacPjrt_Counters(uint64_t out[6]) {
  for (int i = 0; i < C_COUNT; i++) out[i] = atomic_load(&counters[i]);
}

/* ---------------------------------------------------------------- plugin identity */

/* The plugin file's SHA-256: from XLAC_PJRT_PLUGIN_SHA256 when its stat still matches the file,
 * else read from the file (once per process). Called under identity_lock. */
static int plugin_sha256(char *reason, size_t size) {
  if (plugin_sha_hex[0]) return 0;
  struct stat st;
  if (stat(cfg.real_path, &st) != 0) {
    snprintf(reason, size, "cannot stat the real plugin %s: %s", cfg.real_path, strerror(errno));
    return -1;
  }
  const char *e = cfg.plugin_sha256;
  uint8_t digest[32];
  if (e && strlen(e) > 65 && e[64] == ':' && xunhex(e, 32, digest) == 0) {
    char *end;
    const char *p = e + 65;
    unsigned long long fields[4];
    int k = 0;
    for (; k < 4; k++) {
      errno = 0;
      fields[k] = strtoull(p, &end, 10);
      if (errno || end == p || (k < 3 && *end != ':') || (k == 3 && *end)) break;
      p = end + 1;
    }
    uint64_t mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
    if (k == 4 && fields[0] == (unsigned long long)st.st_size && fields[1] == mtime &&
        fields[2] == (unsigned long long)st.st_dev && fields[3] == (unsigned long long)st.st_ino) {
      xhex(digest, 32, plugin_sha_hex);
      return 0;
    }
  }
  int fd = open(cfg.real_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(reason, size, "cannot read the real plugin %s: %s", cfg.real_path, strerror(errno));
    return -1;
  }
  enum { CHUNK = 1 << 20 };
  uint8_t *chunk = malloc(CHUNK);
  xsha256 s;
  xsha256_init(&s);
  ssize_t r = -1;
  while (chunk && ((r = read(fd, chunk, CHUNK)) > 0 || (r < 0 && errno == EINTR)))
    if (r > 0) xsha256_update(&s, chunk, (size_t)r);
  int err = errno;
  free(chunk);
  close(fd);
  if (r != 0) {
    snprintf(reason, size, "cannot read the real plugin %s: %s", cfg.real_path,
             chunk ? strerror(err) : "out of memory");
    return -1;
  }
  xsha256_final(&s, digest);
  xhex(digest, 32, plugin_sha_hex);
  return 0;
}

static int client_text(unsigned slot, xpjrt_client *client, const char **text, size_t *size,
                       char *reason, size_t reason_size) {
  xp_client_text_args a = {XP_SIZE(xp_client_text_args, text_size), NULL, client, NULL, 0};
  xpjrt_error *e = SLOT(xp_client_text_fn, slot)(&a);
  if (e) {
    char m[256];
    take_error(e, m, sizeof m);
    snprintf(reason, reason_size, "cannot read the client's platform %s: %s",
             slot == XP_CLIENT_PLATFORM_NAME ? "name" : "version", m);
    return -1;
  }
  *text = a.text ? a.text : "";
  *size = a.text ? a.text_size : 0;
  return 0;
}

/* The identity text for the compile's client (computed once per platform name and version). */
static const identity *identity_for(xpjrt_client *client, char *reason, size_t size) {
  const char *name, *version;
  size_t name_size, version_size;
  if (client_text(XP_CLIENT_PLATFORM_NAME, client, &name, &name_size, reason, size) ||
      client_text(XP_CLIENT_PLATFORM_VERSION, client, &version, &version_size, reason, size))
    return NULL;
  pthread_mutex_lock(&identity_lock);
  identity *found = NULL;
  for (identity *i = identities; i && !found; i = i->next)
    if (i->name_size == name_size && i->version_size == version_size &&
        !memcmp(i->name, name, name_size) && !memcmp(i->version, version, version_size))
      found = i;
  if (!found && plugin_sha256(reason, size) == 0) {
    if (!attribute_lines) {
      xp_plugin_attributes_args a = {XP_SIZE(xp_plugin_attributes_args, num_attributes), NULL, NULL,
                                     0};
      xpjrt_error *e = SLOT(xp_plugin_attributes_fn, XP_PLUGIN_ATTRIBUTES)(&a);
      if (e) {
        char m[256];
        take_error(e, m, sizeof m);
        snprintf(reason, size, "cannot read the real plugin's attributes: %s", m);
      } else {
        attribute_lines = xidentity_attributes(a.attributes, a.attributes ? a.num_attributes : 0);
        if (!attribute_lines)
          snprintf(reason, size, "the real plugin's attributes have an unexpected struct size");
      }
    }
    identity *i = attribute_lines ? calloc(1, sizeof *i) : NULL;
    if (i) {
      i->name = malloc(name_size + 1);
      i->version = malloc(version_size + 1);
      i->text = xidentity_text(name, name_size, version, version_size, api_major, api_minor,
                               plugin_sha_hex, attribute_lines);
      if (i->name && i->version && i->text) {
        memcpy(i->name, name, name_size);
        memcpy(i->version, version, version_size);
        i->name_size = name_size;
        i->version_size = version_size;
        i->text_size = strlen(i->text);
        i->next = identities;
        identities = i;
        found = i;
      } else {
        free(i->name);
        free(i->version);
        free(i->text);
        free(i);
        snprintf(reason, size, "out of memory");
      }
    } else if (attribute_lines) {
      snprintf(reason, size, "out of memory");
    }
  }
  pthread_mutex_unlock(&identity_lock);
  return found;
}

/* ---------------------------------------------------------------- the compile */

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
  uint8_t *exe = NULL;
  size_t exe_size = 0;
  int found = xlayout_read(cfg.layout, key, &exe, &exe_size, saved_ns, reason, size);
  if (found != XLAYOUT_FOUND) return found == XLAYOUT_ABSENT ? 0 : -1;
  uint64_t t = now_ns();
  xp_deserialize_and_load_args d = {0};
  d.struct_size = XP_SIZE(xp_deserialize_and_load_args, loaded_executable);
  d.client = args->client;
  d.serialized_executable = (const char *)exe;
  d.serialized_executable_size = exe_size;
  if (api_minor >= XP_DESERIALIZE_OVERRIDE_MINOR) {
    /* load with the request's own options, as a compile would have used them */
    d.struct_size = XP_SIZE(xp_deserialize_and_load_args, overridden_serialized_compile_options_size);
    d.overridden_serialized_compile_options = args->compile_options;
    d.overridden_serialized_compile_options_size = args->compile_options_size;
  }
  xpjrt_error *e = SLOT(xp_deserialize_fn, XP_EXECUTABLE_DESERIALIZE_AND_LOAD)(&d);
  *load_ns = now_ns() - t;
  free(exe);
  if (e || !d.loaded_executable) {
    char m[512] = "no executable";
    if (e) take_error(e, m, sizeof m);
    snprintf(reason, size, "cannot load the cached executable: %s", m);
    return -1;
  }
  args->executable = d.loaded_executable;
  return 1;
}

static xpjrt_error *proxy_compile(xp_client_compile_args *args) {
  xp_client_compile_fn real_compile = SLOT(xp_client_compile_fn, XP_CLIENT_COMPILE);
  atomic_fetch_add(&counters[C_COMPILES], 1);
  uint64_t t0 = now_ns();
  char reason[768] = "";
  const char *why_not = NULL;
  if (!args || args->struct_size < XP_SIZE(xp_client_compile_args, executable))
    why_not = "unexpected PJRT_Client_Compile_Args size";
  else if (!args->program || args->program->struct_size < XP_SIZE(xp_program, format_size))
    why_not = "unexpected PJRT_Program size";
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
  char key_text[XKEY_TEXT_SIZE] = "-";
  int served = -1; /* 1 hit, 0 miss, -1 fallback */
  uint64_t load_ns = 0, saved_ns = 0;
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
      memcpy(key_text, XKEY_PREFIX, 6);
      xhex(key, 32, key_text + 6);
      served = cfg.layout ? serve(args, key, &load_ns, &saved_ns, reason, sizeof reason) : 0;
    } else {
      snprintf(reason, sizeof reason, "out of memory computing the request key");
    }
  }
  uint64_t t1 = now_ns();
  if (served == 1) {
    atomic_fetch_add(&counters[C_HITS], 1);
    stat_line("hit\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64, key_text, t1 - t0 - load_ns, load_ns,
              saved_ns);
    return NULL;
  }
  if (served < 0) note_fallback(reason);
  xpjrt_error *e = real_compile(args);
  uint64_t compile_ns = now_ns() - t1;
  if (served == 0) {
    atomic_fetch_add(&counters[C_MISSES], 1);
    stat_line("miss\t%s\t%" PRIu64 "\t%" PRIu64, key_text, t1 - t0, compile_ns);
  } else {
    stat_line("fallback\t%s\t%" PRIu64 "\t%" PRIu64 "\t%s", key_text, t1 - t0, compile_ns, reason);
  }
  if (!e && cfg.record && id && args->executable) record(key_text, key, args, id, compile_ns);
  return e;
}
