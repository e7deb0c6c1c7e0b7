/* Loading ahead: preload.h. */
#define _GNU_SOURCE
#include "preload.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "files.h"
#include "key.h"
#include "sha256.h"

/* A slot's life: PENDING -> LOADING -> LOADED -> CLAIMED (or UNCLAIMED when the client goes);
 * PENDING -> TAKEN when its request came first (served the usual way); LOADING -> FAILED (the usual
 * way then says why); LOADING -> PENDING when loading ahead stopped before the load began. */
enum { PENDING, LOADING, LOADED, CLAIMED, TAKEN, FAILED, UNCLAIMED };

typedef struct {
  uint8_t key[32];
  _Atomic int state;
  xpjrt_loaded *executable; /* set before the state becomes LOADED */
  uint64_t bytes, load_ns, compile_ns;
} slot;

struct xpreload {
  xpreload_setup setup;
  size_t count;
  slot *slots;
  pid_t pid;             /* the process whose thread loads; a forked child has none */
  _Atomic int stopping;  /* out of sequence, or the client is going */
  _Atomic int progress;  /* bumped at every claim and stop: the loader waits on it for budget */
  atomic_uint_fast64_t outstanding; /* bytes loaded ahead and not claimed */
  atomic_uint_fast64_t loaded, claimed, unclaimed, failed;
  pthread_t thread;
  int joined;
};

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Waits while *word == value, at most 20 ms (callers re-check: a lost wake-up costs a tick, never a hang). */
static void wait_while(_Atomic int *word, int value) {
  struct timespec t = {0, 20 * 1000 * 1000};
  syscall(SYS_futex, (int *)word, FUTEX_WAIT_PRIVATE, value, &t, NULL, 0);
}

static void wake_all(_Atomic int *word) { syscall(SYS_futex, (int *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0); }

static void set_state(slot *s, int state) {
  atomic_store(&s->state, state);
  wake_all(&s->state);
}

static void bump(xpreload *p) {
  atomic_fetch_add(&p->progress, 1);
  wake_all(&p->progress);
}

static void line(const xpreload *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(const xpreload *p, const char *fmt, ...) {
  if (!p->setup.stats) return;
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(text, sizeof text - 1, fmt, ap);
  va_end(ap);
  if (n < 0 || n > (int)sizeof text - 2) return;
  text[n] = '\n';
  text[n + 1] = 0;
  xstats_line(p->setup.stats, text);
}

static xpjrt_fn slot_fn(const xpreload *p, unsigned slot) { return xp_slot(p->setup.api, slot); }

static void drop_error(const xpreload *p, xpjrt_error *e) {
  if (!e) return;
  xp_error_destroy_args d = {XP_SIZE(xp_error_destroy_args, error), NULL, e};
  ((xp_error_destroy_fn)slot_fn(p, XP_ERROR_DESTROY))(&d);
}

static void destroy_loaded(const xpreload *p, xpjrt_loaded *l) {
  xp_loaded_destroy_args d = {XP_SIZE(xp_loaded_destroy_args, executable), NULL, l};
  drop_error(p, ((xp_loaded_destroy_fn)slot_fn(p, XP_LOADED_DESTROY))(&d));
}

/* DeserializeAndLoad of an entry's bytes, with the executable's own compile options (the request's
 * are not known yet; they equal them up to what the key leaves out). NULL on failure. */
static xpjrt_loaded *load(const xpreload *p, const uint8_t *exe, size_t size) {
  union {
    xp_deserialize_and_load_args args;
    unsigned char bytes[XP_DESERIALIZE_BUFFER];
  } buffer;
  memset(&buffer, 0, sizeof buffer);
  xp_deserialize_and_load_args *d = &buffer.args;
  d->struct_size = p->setup.api_minor >= XP_DESERIALIZE_OVERRIDE_MINOR
                       ? XP_SIZE(xp_deserialize_and_load_args, overridden_serialized_compile_options_size)
                       : XP_SIZE(xp_deserialize_and_load_args, loaded_executable);
  d->client = p->setup.client;
  d->serialized_executable = (const char *)exe;
  d->serialized_executable_size = size;
  xpjrt_error *e = ((xp_deserialize_fn)slot_fn(p, XP_EXECUTABLE_DESERIALIZE_AND_LOAD))(d);
  if (e) {
    drop_error(p, e);
    return NULL;
  }
  return d->loaded_executable;
}

/* The budget, also at most half the device memory the client's first device has free, when the plugin
 * reports its limit (a GPU's; the CPU plugin reports none): executables loaded ahead must leave the
 * script its memory. */
static uint64_t device_budget(const xpreload *p, uint64_t budget) {
  xp_client_devices_fn devices = (xp_client_devices_fn)slot_fn(p, XP_CLIENT_ADDRESSABLE_DEVICES);
  xp_device_memory_stats_fn stats = (xp_device_memory_stats_fn)slot_fn(p, XP_DEVICE_MEMORY_STATS);
  if (!devices || !stats) return budget;
  xp_client_devices_args d = {XP_SIZE(xp_client_devices_args, num_devices), NULL, p->setup.client, NULL, 0};
  xpjrt_error *e = devices(&d);
  if (e || !d.devices || d.num_devices == 0) {
    drop_error(p, e);
    return budget;
  }
  xp_device_memory_stats_args m;
  memset(&m, 0, sizeof m);
  m.struct_size = XP_SIZE(xp_device_memory_stats_args, peak_pool_bytes_is_set);
  m.device = d.devices[0];
  e = stats(&m);
  if (e || !m.bytes_limit_is_set || m.bytes_limit <= 0) {
    drop_error(p, e);
    return budget;
  }
  uint64_t free_bytes = m.bytes_limit > m.bytes_in_use ? (uint64_t)(m.bytes_limit - m.bytes_in_use) : 0;
  return free_bytes / 2 < budget ? free_bytes / 2 : budget;
}

/* Whether `size` more bytes fit the budget (the first executable outstanding always does). */
static int within_budget(xpreload *p, uint64_t size) {
  uint64_t out = atomic_load(&p->outstanding);
  return out == 0 || out + size <= p->setup.budget_bytes;
}

static void *loader(void *arg) {
  xpreload *p = arg;
  p->setup.budget_bytes = device_budget(p, p->setup.budget_bytes); /* here: not on the client's creation path */
  for (size_t i = 0; i < p->count && !atomic_load(&p->stopping); i++) {
    slot *s = &p->slots[i];
    int expected = PENDING;
    if (!atomic_compare_exchange_strong(&s->state, &expected, LOADING)) continue; /* its request came first */
    uint64_t t0 = now_ns();
    uint8_t *exe = NULL;
    size_t size = 0;
    char reason[600];
    if (xlayout_read(p->setup.layout, s->key, &exe, &size, &s->compile_ns, reason, sizeof reason) != XLAYOUT_FOUND ||
        size > p->setup.budget_bytes) {
      free(exe); /* absent, damaged or too large alone: the usual way misses, says why or serves it */
      atomic_fetch_add(&p->failed, 1);
      set_state(s, FAILED);
      continue;
    }
    uint64_t read_ns = now_ns() - t0;
    if (!within_budget(p, size)) {
      /* Wait for claims to free room with the slot given back: its own request, should it come first,
       * must not wait for a room that only other claims can make. */
      set_state(s, PENDING);
      while (!atomic_load(&p->stopping) && !within_budget(p, size)) {
        int seen = atomic_load(&p->progress);
        if (!within_budget(p, size)) wait_while(&p->progress, seen);
      }
      expected = PENDING;
      if (atomic_load(&p->stopping) || !atomic_compare_exchange_strong(&s->state, &expected, LOADING)) {
        free(exe); /* stopped (its request goes the usual way), or its request took it */
        if (atomic_load(&p->stopping)) break;
        continue;
      }
    }
    uint64_t t1 = now_ns();
    xpjrt_loaded *l = load(p, exe, size);
    free(exe);
    if (!l) {
      atomic_fetch_add(&p->failed, 1);
      set_state(s, FAILED);
      continue;
    }
    s->executable = l;
    s->bytes = size;
    s->load_ns = read_ns + (now_ns() - t1); /* the budget wait is not load time */
    atomic_fetch_add(&p->outstanding, size);
    atomic_fetch_add(&p->loaded, 1);
    char hex[65];
    xhex(s->key, 32, hex);
    line(p, "preloaded\t" XKEY_PREFIX "%s\t%" PRIu64, hex, s->load_ns);
    set_state(s, LOADED);
  }
  return NULL;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

#define LIST_FIRST_LINE "xlac-preload 1"

int xpreload_parse(const char *text, size_t size, uint8_t (**keys)[32], size_t *count, char *reason, size_t rsize) {
  size_t first = strlen(LIST_FIRST_LINE);
  if (size < first + 1 || memcmp(text, LIST_FIRST_LINE, first) != 0 || text[first] != '\n') {
    snprintf(reason, rsize, "it does not start with the line '%s'", LIST_FIRST_LINE);
    return -1;
  }
  size_t line_size = 6 + 64 + 1;
  size_t body = size - first - 1;
  if (body % line_size != 0 || body / line_size > XPRELOAD_MAX_KEYS) {
    snprintf(reason, rsize, "it is not a whole list of at most %d keys", XPRELOAD_MAX_KEYS);
    return -1;
  }
  size_t n = body / line_size, kept = 0;
  uint8_t (*out)[32] = calloc(n ? n : 1, 32);
  if (!out) {
    snprintf(reason, rsize, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    const char *l = text + first + 1 + i * line_size;
    int ok = memcmp(l, XKEY_PREFIX, 6) == 0 && l[line_size - 1] == '\n';
    uint8_t key[32];
    for (int b = 0; ok && b < 32; b++) {
      int hi = hex_value(l[6 + 2 * b]), lo = hex_value(l[7 + 2 * b]);
      ok = hi >= 0 && lo >= 0;
      key[b] = (uint8_t)(hi << 4 | lo);
    }
    if (!ok) {
      free(out);
      snprintf(reason, rsize, "line %zu is not a request key", i + 2);
      return -1;
    }
    int seen = 0;
    for (size_t j = 0; j < kept && !seen; j++) seen = !memcmp(out[j], key, 32);
    if (!seen) memcpy(out[kept++], key, 32);
  }
  *keys = out;
  *count = kept;
  return 0;
}

/* The list's bytes, read as the layout's entries are: its directories trusted, the file opened without
 * following a link or blocking, a regular file of this user or root that nobody else may write. */
static char *read_list(const char *path, size_t *size, char *reason, size_t rsize) {
  reason[0] = 0;
  char *dir = strdup(path);
  if (!dir) return NULL;
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) *slash = 0;
  int chain = xlayout_check_chain(dir, reason, rsize);
  free(dir);
  if (chain == XLAYOUT_NO_DIRECTORY) {
    reason[0] = 0; /* no list yet */
    return NULL;
  }
  if (chain != 0) return NULL;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) snprintf(reason, rsize, "cannot open %s: %s", path, errno == ELOOP ? "a symbolic link" : strerror(errno));
    return NULL;
  }
  struct stat st;
  char *text = NULL;
  char why[160];
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(reason, rsize, "%s is not a regular file", path);
  } else if (xlayout_untrusted(&st, 0, why, sizeof why)) {
    snprintf(reason, rsize, "%s is not trusted: %s", path, why);
  } else if (st.st_size > XPRELOAD_MAX_FILE) {
    snprintf(reason, rsize, "%s is larger than %u bytes", path, XPRELOAD_MAX_FILE);
  } else if ((text = malloc((size_t)st.st_size + 1))) {
    if (xfile_read_at(fd, (uint8_t *)text, (size_t)st.st_size, 0) != 0) {
      snprintf(reason, rsize, "cannot read %s", path);
      free(text);
      text = NULL;
    } else {
      *size = (size_t)st.st_size;
    }
  }
  close(fd);
  return text;
}

xpreload *xpreload_start(const char *list_path, const xpreload_setup *setup, char *reason, size_t size) {
  size_t text_size = 0;
  char *text = read_list(list_path, &text_size, reason, size);
  if (!text) return NULL;
  uint8_t (*keys)[32] = NULL;
  size_t count = 0;
  char why[200];
  int parsed = xpreload_parse(text, text_size, &keys, &count, why, sizeof why);
  free(text);
  if (parsed != 0) {
    snprintf(reason, size, "loading ahead list %s: %s", list_path, why);
    return NULL;
  }
  xpreload *p = calloc(1, sizeof *p);
  slot *slots = calloc(count ? count : 1, sizeof *slots);
  if (!p || !slots || count == 0) {
    free(p);
    free(slots);
    free(keys);
    if (count) snprintf(reason, size, "out of memory");
    return NULL;
  }
  for (size_t i = 0; i < count; i++) memcpy(slots[i].key, keys[i], 32);
  free(keys);
  p->setup = *setup;
  p->count = count;
  p->slots = slots;
  p->pid = getpid();
  if (pthread_create(&p->thread, NULL, loader, p) != 0) {
    snprintf(reason, size, "cannot start the loading ahead thread");
    free(slots);
    free(p);
    return NULL;
  }
  return p;
}

xpjrt_client *xpreload_client(const xpreload *p) { return p->setup.client; }

static slot *find(xpreload *p, const uint8_t key[32]) {
  for (size_t i = 0; i < p->count; i++)
    if (!memcmp(p->slots[i].key, key, 32)) return &p->slots[i];
  return NULL;
}

int xpreload_claim(xpreload *p, const uint8_t key[32], xpjrt_loaded **executable, uint64_t *waited_ns,
                   uint64_t *hidden_ns, uint64_t *compile_ns) {
  if (getpid() != p->pid) return XPRELOAD_NONE; /* a forked child: no loader here */
  slot *s = find(p, key);
  if (!s) { /* the run left the expected sequence: the program changed */
    if (!atomic_exchange(&p->stopping, 1)) bump(p);
    return XPRELOAD_NONE;
  }
  uint64_t t0 = now_ns();
  for (;;) {
    int state = atomic_load(&s->state);
    if (state == PENDING) {
      if (atomic_compare_exchange_strong(&s->state, &state, TAKEN)) return XPRELOAD_NONE;
    } else if (state == LOADING) {
      wait_while(&s->state, LOADING);
    } else if (state == LOADED) {
      if (atomic_compare_exchange_strong(&s->state, &state, CLAIMED)) {
        *executable = s->executable;
        *waited_ns = now_ns() - t0;
        *hidden_ns = s->load_ns > *waited_ns ? s->load_ns - *waited_ns : 0;
        *compile_ns = s->compile_ns;
        atomic_fetch_sub(&p->outstanding, s->bytes);
        atomic_fetch_add(&p->claimed, 1);
        bump(p);
        return XPRELOAD_CLAIMED;
      }
    } else {
      return XPRELOAD_NONE; /* claimed already (a second compile of it), failed, or the client is going */
    }
  }
}

uint64_t xpreload_stop(xpreload *p) {
  if (getpid() != p->pid || p->joined) return 0;
  atomic_store(&p->stopping, 1);
  bump(p);
  pthread_join(p->thread, NULL);
  p->joined = 1;
  uint64_t n = 0;
  for (size_t i = 0; i < p->count; i++) {
    slot *s = &p->slots[i];
    int state = LOADED;
    if (atomic_compare_exchange_strong(&s->state, &state, UNCLAIMED)) {
      destroy_loaded(p, s->executable);
      s->executable = NULL;
      n++;
    }
  }
  atomic_fetch_add(&p->unclaimed, n);
  return n;
}

void xpreload_counts(const xpreload *p, uint64_t out[4]) {
  out[0] = atomic_load(&p->loaded);
  out[1] = atomic_load(&p->claimed);
  out[2] = atomic_load(&p->unclaimed);
  out[3] = atomic_load(&p->failed);
}

void xpreload_free(xpreload *p) {
  free(p->slots);
  free(p);
}
