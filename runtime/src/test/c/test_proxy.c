/*
 * Drives the proxy (the sanitized build, $XLAC_TEST_PROXY) like a framework would, in front of the
 * real CPU plugin ($XLAC_PJRT_PLUGIN): compile, serialize, deserialize, execute; record mode; serving
 * from a layout; damaged, truncated, foreign, wrong-magic and unloadable entries; concurrent
 * compiles; several processes recording one key; a full record directory.
 *
 * The proxy reads its environment once per process, so every scenario runs in a forked child with
 * its own environment and its stderr in a file; the parent checks files, statistics and stderr.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"
#include "key.h"
#include "options.h"
#include "pjrt_client.h"
#include "sha256.h"
#include "testlib.h"

static char tmp[512];         /* this run's scratch directory */
static const char *plugin;    /* the real plugin */
static const char *proxy;     /* the proxy under test */
static char plugin_env[256];  /* XLAC_PJRT_PLUGIN_SHA256 for the real plugin */
static char plugin_hex[65];

/* ---------------------------------------------------------------- small file helpers */

static char *path_of(const char *fmt, ...) {
  static char buf[8][1024];
  static int next;
  char *p = buf[next++ % 8];
  int n = snprintf(p, 1024, "%s/", tmp);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p + n, 1024 - (size_t)n, fmt, ap);
  va_end(ap);
  return p;
}

static uint8_t *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *p = malloc(n > 0 ? (size_t)n + 1 : 1);
  size_t got = p ? fread(p, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!p || got != (size_t)n) {
    free(p);
    return NULL;
  }
  p[n] = 0;
  *size = (size_t)n;
  return p;
}

static int write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

static void mkdirs(const char *path) {
  char p[1024];
  snprintf(p, sizeof p, "%s", path);
  for (char *c = p + 1; *c; c++)
    if (*c == '/') {
      *c = 0;
      mkdir(p, 0755);
      *c = '/';
    }
  mkdir(p, 0755);
}

/* Counts the files in dir whose name starts with `prefix` (and ends with `suffix`). */
static int count_files(const char *dir, const char *prefix, const char *suffix) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t l = strlen(e->d_name), s = strlen(suffix);
    if (!strncmp(e->d_name, prefix, strlen(prefix)) && l >= s && !strcmp(e->d_name + l - s, suffix))
      n++;
  }
  closedir(d);
  return n;
}

/* The identity text of the one record in dir (malloc'd), or NULL when there is not exactly one. */
static char *record_identity(const char *dir, char name[300]);

/* Concatenates every stats-*.tsv in dir (malloc'd). */
static char *read_stats(const char *dir) {
  DIR *d = opendir(dir);
  char *all = calloc(1, 1);
  size_t total = 0;
  if (!d) return all;
  for (struct dirent *e; (e = readdir(d));) {
    if (strncmp(e->d_name, "stats-", 6)) continue;
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    size_t n;
    uint8_t *b = read_file(p, &n);
    if (!b) continue;
    all = realloc(all, total + n + 1);
    memcpy(all + total, b, n + 1);
    total += n;
    free(b);
  }
  closedir(d);
  return all;
}

static int count_lines(const char *text, const char *start) {
  int n = 0;
  size_t l = strlen(start);
  for (const char *p = text; p && *p;) {
    if (!strncmp(p, start, l)) n++;
    p = strchr(p, '\n');
    if (p) p++;
  }
  return n;
}

static int count_substr(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static void put_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* ---------------------------------------------------------------- children */

typedef int (*scenario_fn)(void *arg);

/* Loads the proxy in this (child) process and points the client helpers at its table. */
static const void *load_proxy(void) {
  void *h = dlopen(proxy, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h, "cannot load the proxy %s: %s", proxy, dlerror());
  const void *(*get)(void);
  void *sym = dlsym(h, "GetPjrtApi");
  memcpy(&get, &sym, sizeof get);
  REQUIRE(get, "the proxy exports no GetPjrtApi");
  tc_api = get();
  return tc_api;
}

static void counters(uint64_t out[6]) {
  void *h = dlopen(proxy, RTLD_NOW | RTLD_NOLOAD);
  void (*f)(uint64_t *);
  void *sym = h ? dlsym(h, "XlacPjrt_Counters") : NULL;
  memcpy(&f, &sym, sizeof f);
  memset(out, 0, 6 * sizeof out[0]);
  if (f) f(out);
}

/* Starts fn in a child with the given environment (NAME=VALUE strings, NULL-terminated) and stderr
 * in `err_path`; the child exits with fn's result. */
static pid_t spawn_child(scenario_fn fn, void *arg, const char *err_path, const char *const *env) {
  fflush(NULL);
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    test_failures = 0; /* the parent's failures are not the child's */
    unsetenv("XLAC_PJRT_LAYOUT");
    unsetenv("XLAC_PJRT_RECORD");
    unsetenv("XLAC_PJRT_STATS");
    unsetenv("XLAC_PJRT_PLUGIN_SHA256");
    unsetenv("XLAC_PJRT_REAL_PLUGIN");
    for (const char *const *e = env; *e; e++) putenv((char *)*e);
    int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, 2);
    exit(fn(arg));
  }
  return pid;
}

/* As spawn_child, and waits: the child's exit status (99 when it died of a signal). */
static int run_child(scenario_fn fn, void *arg, const char *err_path, const char *const *env) {
  pid_t pid = spawn_child(fn, arg, err_path, env);
  int status;
  waitpid(pid, &status, 0);
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 99;
  if (rc) fprintf(stderr, "child failed with status %d; its stderr is in %s\n", rc, err_path);
  return rc;
}

static char *env_strings[256]; /* keeps env() strings reachable: putenv holds on to them */
static int env_count;

static char *env(const char *fmt, ...) {
  char *s = malloc(1200);
  if (env_count < 256) env_strings[env_count++] = s;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s, 1200, fmt, ap);
  va_end(ap);
  return s; /* lives until the process ends; putenv keeps it */
}

static int stderr_lines(const char *err_path, const char *needle) {
  size_t n;
  char *text = (char *)read_file(err_path, &n);
  int count = text ? count_substr(text, needle) : -1;
  free(text);
  return count;
}

/* --- scenario: compile, execute, serialize, deserialize, execute; optionally check pass-through */

static int scenario_execute(void *arg) {
  int expect_real_table = arg != NULL;
  const void *api = load_proxy();
  if (!api) return 2;
  void *real_handle = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  const void *(*get)(void);
  void *sym = real_handle ? dlsym(real_handle, "GetPjrtApi") : NULL;
  memcpy(&get, &sym, sizeof get);
  const void *real = get();
  const xpjrt_api_header *a = api, *r = real;
  CHECK(a->struct_size == r->struct_size, "table size %zu, real %zu", a->struct_size, r->struct_size);
  CHECK(a->version.major_version == r->version.major_version &&
            a->version.minor_version == r->version.minor_version,
        "version %d.%d", a->version.major_version, a->version.minor_version);
  CHECK(a->extension_start == r->extension_start, "the extension chain is the real one");
  if (expect_real_table) {
    CHECK(api == real, "without layout, record or stats the real table is returned as it is");
  } else {
    CHECK(api != real, "the proxy's own table");
    for (unsigned s = 0; XP_SLOT_OFFSET(s) + 8 <= r->struct_size; s++)
      CHECK((xp_slot(api, s) == xp_slot(real, s)) == (s != XP_CLIENT_COMPILE && s != XP_LOADED_EXECUTE),
            "slot %u", s);
  }
  xpjrt_client *c = tc_client_create();
  if (!c) return 2;
  xpjrt_loaded *l = tc_compile(c, 1);
  CHECK(l && tc_check_program(c, l, 1) == 0, "compiled program runs");
  size_t size = 0;
  uint8_t *bytes = l ? tc_serialize(l, &size) : NULL;
  CHECK(bytes && size > 0, "serialized");
  xpjrt_loaded *back = bytes ? tc_deserialize(c, bytes, size) : NULL;
  CHECK(back && tc_check_program(c, back, 1) == 0, "deserialized program runs");
  free(bytes);
  if (back) tc_loaded_destroy(back);
  if (l) tc_loaded_destroy(l);
  tc_client_destroy(c);
  return test_failures ? 1 : 0;
}

/* --- scenario: a framework built against an older PJRT header (torch_xla 2.9) sends an 80-byte
 * PJRT_ExecuteOptions. The real plugin alone (arg non-NULL) refuses it; through the proxy the
 * execute is bridged (bridge.h) and computes right. */

static uint64_t bridged_executes(void) {
  void *h = dlopen(proxy, RTLD_NOW | RTLD_NOLOAD);
  uint64_t (*f)(void);
  void *sym = h ? dlsym(h, "XlacPjrt_BridgedExecutes") : NULL;
  memcpy(&f, &sym, sizeof f);
  return f ? f() : 0;
}

static int scenario_short_execute_options(void *arg) {
  int direct = arg != NULL;
  if (direct) {
    void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
    const void *(*get)(void);
    void *sym = h ? dlsym(h, "GetPjrtApi") : NULL;
    memcpy(&get, &sym, sizeof get);
    REQUIRE(get, "the real plugin");
    tc_api = get();
  } else if (!load_proxy()) {
    return 2;
  }
  tc_execute_options_size = 80;
  xpjrt_client *c = tc_client_create();
  if (!c) return 2;
  xpjrt_loaded *l = tc_compile(c, 3);
  CHECK(l, "compiled");
  int rc = l ? tc_check_program(c, l, 3) : -1;
  if (direct) {
    CHECK(rc != 0, "the real plugin refuses an 80-byte PJRT_ExecuteOptions (else the bridge is not needed)");
  } else {
    CHECK(rc == 0, "the bridged execute computes right");
    CHECK(bridged_executes() == 1, "one bridged execute, counted %llu", (unsigned long long)bridged_executes());
    tc_execute_options_size = 0; /* a whole struct passes as it is */
    CHECK(tc_check_program(c, l, 3) == 0 && bridged_executes() == 1, "a 112-byte struct is not bridged");
  }
  if (l) tc_loaded_destroy(l);
  tc_client_destroy(c);
  return test_failures ? 1 : 0;
}

/* --- scenario: compile programs given as a list of k (0-terminated), each run and checked */

typedef struct {
  int programs[8];
  int expect_hits, expect_misses, expect_fallbacks, expect_unrecorded;
} compile_plan;

static int scenario_compile(void *arg) {
  const compile_plan *plan = arg;
  if (!load_proxy()) return 2;
  xpjrt_client *c = tc_client_create();
  if (!c) return 2;
  for (int i = 0; plan->programs[i]; i++) {
    xpjrt_loaded *l = tc_compile(c, plan->programs[i]);
    CHECK(l && tc_check_program(c, l, plan->programs[i]) == 0, "program %d runs", plan->programs[i]);
    if (l) tc_loaded_destroy(l);
  }
  uint64_t n[6];
  counters(n);
  CHECK((int)n[1] == plan->expect_hits, "hits %d", (int)n[1]);
  CHECK((int)n[2] == plan->expect_misses, "misses %d", (int)n[2]);
  CHECK((int)n[3] == plan->expect_fallbacks, "fallbacks %d", (int)n[3]);
  CHECK((int)n[5] == plan->expect_unrecorded, "unrecorded %d", (int)n[5]);
  tc_client_destroy(c);
  return test_failures ? 1 : 0;
}

/* scenario_compile, killed by SIGALRM when it takes more than 60 s (a compile that blocks) */
static int scenario_compile_in_time(void *arg) {
  alarm(60);
  return scenario_compile(arg);
}

/* --- scenario: 8 threads compile a served program and their own missed one, concurrently */

typedef struct {
  xpjrt_client *client;
  int thread;
  int failures;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  for (int round = 0; round < 3; round++) {
    int ks[2] = {1, 10 + w->thread};
    for (int j = 0; j < 2; j++) {
      xpjrt_loaded *l = tc_compile(w->client, ks[j]);
      if (!l || tc_check_program(w->client, l, ks[j]) != 0) w->failures++;
      if (l) tc_loaded_destroy(l);
    }
  }
  return NULL;
}

static int scenario_threads(void *arg) {
  (void)arg;
  if (!load_proxy()) return 2;
  xpjrt_client *c = tc_client_create();
  if (!c) return 2;
  pthread_t t[8];
  worker w[8];
  for (int i = 0; i < 8; i++) {
    w[i] = (worker){c, i, 0};
    pthread_create(&t[i], NULL, work, &w[i]);
  }
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    CHECK(w[i].failures == 0, "thread %d: %d wrong results", i, w[i].failures);
  }
  uint64_t n[6];
  counters(n);
  CHECK(n[0] == 48 && n[1] == 24 && n[2] == 24 && n[3] == 0, "compiles %d hits %d misses %d fallbacks %d",
        (int)n[0], (int)n[1], (int)n[2], (int)n[3]);
  tc_client_destroy(c);
  return test_failures ? 1 : 0;
}

/* --- scenario: a recorder that waits for the go signal on a pipe, so that all record at once */

static int go_pipe[2];

static int scenario_record_on_signal(void *arg) {
  (void)arg;
  if (!load_proxy()) return 2;
  xpjrt_client *c = tc_client_create();
  if (!c) return 2;
  char b;
  ssize_t ignored = read(go_pipe[0], &b, 1); /* returns when the parent closes its end */
  (void)ignored;
  xpjrt_loaded *l = tc_compile(c, 3);
  CHECK(l && tc_check_program(c, l, 3) == 0, "program 3 runs");
  if (l) tc_loaded_destroy(l);
  tc_client_destroy(c);
  return test_failures ? 1 : 0;
}

/* Records programs 100, 101, ... until it is killed. */
static int scenario_record_forever(void *arg) {
  (void)arg;
  if (!load_proxy()) return 2;
  xpjrt_client *c = tc_client_create();
  if (!c) return 2;
  for (int k = 100; k < 400; k++) {
    xpjrt_loaded *l = tc_compile(c, k);
    if (l) tc_loaded_destroy(l);
  }
  tc_client_destroy(c);
  return 0;
}

static int scenario_no_plugin(void *arg) {
  (void)arg;
  return load_proxy() == NULL ? 0 : 1;
}

static int scenario_no_plugin_in_time(void *arg) {
  alarm(30);
  return scenario_no_plugin(arg);
}

/* Relative paths are taken at GetPjrtApi: the framework changing directory later does not move them. */
static int scenario_relative(void *arg) {
  (void)arg;
  REQUIRE(chdir(tmp) == 0, "chdir");
  if (!load_proxy()) return 2;
  REQUIRE(chdir("/") == 0, "chdir /");
  xpjrt_client *c = tc_client_create();
  if (!c) return 2;
  xpjrt_loaded *l = tc_compile(c, 1);
  CHECK(l && tc_check_program(c, l, 1) == 0, "program 1 runs");
  if (l) tc_loaded_destroy(l);
  tc_client_destroy(c);
  return test_failures ? 1 : 0;
}

/* The proxy hands back the fake plugin's own table (it must not wrap it). */
static int scenario_fake_plugin(void *arg) {
  const void *api = load_proxy();
  void *h = dlopen((const char *)arg, RTLD_NOW | RTLD_NOLOAD);
  const void *(*get)(void);
  void *sym = h ? dlsym(h, "GetPjrtApi") : NULL;
  memcpy(&get, &sym, sizeof get);
  return get && api == get() ? 0 : 1;
}

/* A framework with an older header: Compile_Args smaller than the fields the proxy reads. The
 * proxy passes the call on (the real plugin refuses it) and counts a fallback. */
static int scenario_small_args(void *arg) {
  (void)arg;
  if (!load_proxy()) return 2;
  xpjrt_client *c = tc_client_create();
  if (!c) return 2;
  char mlir[1024];
  tc_program(1, mlir, sizeof mlir);
  xp_program p = {XP_SIZE(xp_program, format_size), NULL, mlir, strlen(mlir), "mlir", 4};
  xp_client_compile_args a = {XP_SIZE(xp_client_compile_args, compile_options_size), NULL, c, &p,
                              (const char *)TC_OPTIONS, sizeof TC_OPTIONS, NULL};
  xpjrt_error *e = ((xp_client_compile_fn)xp_slot(tc_api, XP_CLIENT_COMPILE))(&a);
  CHECK(e != NULL, "the real plugin refuses the short struct");
  tc_failed(e, "expected: PJRT_Client_Compile");
  uint64_t n[6];
  counters(n);
  CHECK(n[0] == 1 && n[3] == 1, "one compile, one fallback: %d %d", (int)n[0], (int)n[3]);
  tc_client_destroy(c);
  return test_failures ? 1 : 0;
}

/* Compile requests the proxy does not fully understand: program 1 (in the layout) with a larger
 * Compile_Args, an extension on the PJRT_Program, an unknown extension on the Args, and one behind
 * the profiler's. None may be served or recorded; each is a fallback without a key. The profiler's
 * extension alone (JAX's) is served. */
static int scenario_unknown_inputs(void *arg) {
  (void)arg;
  if (!load_proxy()) return 2;
  xpjrt_client *c = tc_client_create();
  if (!c) return 2;
  char mlir[1024];
  tc_program(1, mlir, sizeof mlir);
  struct {
    size_t struct_size;
    int type;
    void *next;
  } extension = {24, 1000, NULL}; /* a PJRT_Extension_Base of a type nobody knows */
  struct {
    size_t struct_size;
    int type;
    void *next;
    void *profiler_api;
    int64_t traceme_context_id;
  } profiler = {40, 1, NULL, NULL, 7}; /* what JAX puts on every compile: harmless, served */
  for (int round = 0; round < 5; round++) {
    xp_program p = {XP_SIZE(xp_program, format_size), NULL, mlir, strlen(mlir), "mlir", 4};
    struct {
      xp_client_compile_args a;
      void *newer_field;
    } big;
    memset(&big, 0, sizeof big);
    big.a = (xp_client_compile_args){XP_SIZE(xp_client_compile_args, executable), NULL, c, &p,
                                     (const char *)TC_OPTIONS, sizeof TC_OPTIONS, NULL};
    if (round == 0) big.a.struct_size = sizeof big;
    if (round == 1) p.extension_start = &extension;
    if (round == 2) big.a.extension_start = &extension;
    if (round == 3) big.a.extension_start = &profiler;
    if (round == 4) { /* the profiler's, then an unknown one */
      big.a.extension_start = &profiler;
      profiler.next = &extension;
    }
    xpjrt_error *e = ((xp_client_compile_fn)xp_slot(tc_api, XP_CLIENT_COMPILE))(&big.a);
    CHECK(!tc_failed(e, "PJRT_Client_Compile") && big.a.executable, "round %d compiles", round);
    if (big.a.executable) {
      CHECK(tc_check_program(c, big.a.executable, 1) == 0, "round %d runs", round);
      tc_loaded_destroy(big.a.executable);
    }
  }
  uint64_t n[6];
  counters(n);
  CHECK(n[0] == 5 && n[1] == 1 && n[3] == 4 && n[4] == 0, "compiles %d hits %d fallbacks %d recorded %d",
        (int)n[0], (int)n[1], (int)n[3], (int)n[4]);
  tc_client_destroy(c);
  return test_failures ? 1 : 0;
}

/* Four threads of one process record their own program and a shared one at once. */
static void *record_work(void *arg) {
  worker *w = arg;
  int ks[2] = {3, 20 + w->thread};
  for (int j = 0; j < 2; j++) {
    xpjrt_loaded *l = tc_compile(w->client, ks[j]);
    if (!l || tc_check_program(w->client, l, ks[j]) != 0) w->failures++;
    if (l) tc_loaded_destroy(l);
  }
  return NULL;
}

static int scenario_record_threads(void *arg) {
  (void)arg;
  if (!load_proxy()) return 2;
  xpjrt_client *c = tc_client_create();
  if (!c) return 2;
  pthread_t t[4];
  worker w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker){c, i, 0};
    pthread_create(&t[i], NULL, record_work, &w[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    CHECK(w[i].failures == 0, "thread %d: %d wrong results", i, w[i].failures);
  }
  uint64_t n[6];
  counters(n);
  CHECK(n[0] == 8 && n[2] == 8 && n[4] == 8 && n[5] == 0, "compiles %d misses %d recorded %d unrecorded %d",
        (int)n[0], (int)n[2], (int)n[4], (int)n[5]);
  tc_client_destroy(c);
  return test_failures ? 1 : 0;
}

/* A disk that takes no more than 2 KiB per file (RLIMIT_FSIZE, SIGXFSZ ignored: writes fail with
 * EFBIG), as a full disk without root. */
static int scenario_file_size_limit(void *arg) {
  struct rlimit r = {2048, 2048};
  REQUIRE(setrlimit(RLIMIT_FSIZE, &r) == 0, "setrlimit");
  signal(SIGXFSZ, SIG_IGN);
  return scenario_compile(arg);
}

/* Programs 1, 1 and 2 missed with only a statistics directory; with `file_limit`, files may not grow
 * past that many bytes (the statistics lines fit, a request does not). */
typedef struct {
  rlim_t file_limit;
  int expect_unwritten;
} miss_plan;

static int scenario_miss_requests(void *arg) {
  const miss_plan *m = arg;
  if (m->file_limit) {
    struct rlimit r = {m->file_limit, m->file_limit};
    REQUIRE(setrlimit(RLIMIT_FSIZE, &r) == 0, "setrlimit");
    signal(SIGXFSZ, SIG_IGN);
  }
  int rc = scenario_compile(&(compile_plan){{1, 1, 2}, 0, 3, 0, 0});
  void *h = dlopen(proxy, RTLD_NOW | RTLD_NOLOAD);
  uint64_t (*unwritten)(void);
  void *sym = h ? dlsym(h, "XlacPjrt_MissRequestsUnwritten") : NULL;
  memcpy(&unwritten, &sym, sizeof unwritten);
  REQUIRE(unwritten, "the proxy exports no XlacPjrt_MissRequestsUnwritten");
  CHECK((int)unwritten() == m->expect_unwritten, "unwritten requests %d", (int)unwritten());
  return test_failures ? 1 : rc;
}

/* Runs program 1 from a directory holding another file of the plugin's name (see main). */
static int scenario_in_dir(void *arg) {
  REQUIRE(chdir((const char *)arg) == 0, "chdir");
  return scenario_compile(&(compile_plan){{1}, 0, 1, 0, 0});
}

/* Writes one record with a 64 MB executable, straight through xrecord_write. */
static int scenario_big_record(void *arg) {
  size_t n = 64u << 20;
  uint8_t *exe = malloc(n);
  REQUIRE(exe, "malloc");
  for (size_t i = 0; i < n; i++) exe[i] = (uint8_t)(i * 31);
  uint8_t key[32] = {0x42};
  xspan none = {(const uint8_t *)"", 0};
  uint64_t bytes;
  char reason[512];
  int rc = xrecord_write((const char *)arg, key, none, none, none, none, (xspan){exe, n}, 1, &bytes, reason,
                         sizeof reason);
  free(exe);
  return rc == 0 ? 0 : 1;
}

/* The temporary names of the first writes of an earlier process of this pid and tid (another PID
 * namespace) are taken: the write still succeeds. */
static int scenario_taken_temp_names(void *arg) {
  const char *spool = arg;
  for (int k = 0; k < 4; k++) {
    char p[1100];
    snprintf(p, sizeof p, "%s/.tmp-%ld-%ld-%d", spool, (long)getpid(), (long)syscall(SYS_gettid), k);
    REQUIRE(write_file(p, "x", 1) == 0, "write %s", p);
  }
  uint8_t key[32] = {0x43};
  xspan data = {(const uint8_t *)"abc", 3};
  uint64_t bytes;
  char reason[512] = "";
  int rc = xrecord_write(spool, key, data, data, data, data, data, 1, &bytes, reason, sizeof reason);
  CHECK(rc == 0, "xrecord_write: %s", reason);
  return test_failures ? 1 : 0;
}

/* Program runs behind the counting plugin: afterwards every PJRT object the proxy or the test made
 * must have been freed. */
static int scenario_counted(void *arg) {
  int rc = scenario_compile(arg);
  void *h = dlopen(getenv("XLAC_TEST_COUNTING_PLUGIN"), RTLD_NOW | RTLD_NOLOAD);
  void (*live)(long *);
  void *sym = h ? dlsym(h, "CountingPlugin_Live") : NULL;
  memcpy(&live, &sym, sizeof live);
  REQUIRE(live, "the counting plugin is not loaded");
  long n[4];
  live(n);
  CHECK(n[0] == 0 && n[1] == 0 && n[2] == 0 && n[3] == 0,
        "not freed: %ld errors, %ld loaded executables, %ld executables, %ld serialized executables", n[0],
        n[1], n[2], n[3]);
  if (((const compile_plan *)arg)->expect_hits) { /* deserializeArgsAreZeroedPastTheirSize */
    void (*last)(size_t *, int *);
    sym = dlsym(h, "CountingPlugin_LastDeserialize");
    memcpy(&last, &sym, sizeof last);
    size_t size = 0;
    int zero = 0;
    last(&size, &zero);
    int minor = ((const xpjrt_api_header *)tc_api)->version.minor_version;
    CHECK(size == (minor >= 71 ? 64u : 48u) && zero, "DeserializeAndLoad_Args: %zu bytes, zero after: %d", size,
          zero);
  }
  return test_failures ? 1 : rc;
}

/* --- scenario: loading ahead (preload.h) behind the counting plugin: the client is made, the loads
 * settle, the programs are compiled, run and checked, the client goes; every PJRT object is freed */

typedef struct {
  compile_plan compile;
  int settled;                /* loads (made or failed) to wait for before the first compile */
  uint64_t expect_preload[4]; /* loaded ahead, claimed, destroyed unclaimed, failed */
} preload_plan;

static void preload_counters(uint64_t out[4]) {
  void *h = dlopen(proxy, RTLD_NOW | RTLD_NOLOAD);
  void (*f)(uint64_t *);
  void *sym = h ? dlsym(h, "XlacPjrt_PreloadCounters") : NULL;
  memcpy(&f, &sym, sizeof f);
  memset(out, 0, 4 * sizeof out[0]);
  if (f) f(out);
}

static int scenario_preload(void *arg) {
  const preload_plan *plan = arg;
  alarm(60);
  if (!load_proxy()) return 2;
  xpjrt_client *c = tc_client_create();
  if (!c) return 2;
  uint64_t p[4];
  for (int i = 0; i < 500; i++) {
    preload_counters(p);
    if ((int)(p[0] + p[3]) >= plan->settled) break;
    usleep(10000);
  }
  for (int i = 0; plan->compile.programs[i]; i++) {
    xpjrt_loaded *l = tc_compile(c, plan->compile.programs[i]);
    CHECK(l && tc_check_program(c, l, plan->compile.programs[i]) == 0, "program %d runs", plan->compile.programs[i]);
    if (l) tc_loaded_destroy(l);
  }
  uint64_t n[6];
  counters(n);
  CHECK((int)n[1] == plan->compile.expect_hits, "hits %d", (int)n[1]);
  CHECK((int)n[2] == plan->compile.expect_misses, "misses %d", (int)n[2]);
  CHECK((int)n[3] == plan->compile.expect_fallbacks, "fallbacks %d", (int)n[3]);
  tc_client_destroy(c);
  preload_counters(p);
  for (int i = 0; i < 4; i++)
    CHECK(p[i] == plan->expect_preload[i], "preload counter %d: %llu, not %llu", i, (unsigned long long)p[i],
          (unsigned long long)plan->expect_preload[i]);
  void *h = dlopen(getenv("XLAC_TEST_COUNTING_PLUGIN"), RTLD_NOW | RTLD_NOLOAD);
  void (*live)(long *);
  void *sym = h ? dlsym(h, "CountingPlugin_Live") : NULL;
  memcpy(&live, &sym, sizeof live);
  REQUIRE(live, "the counting plugin is not loaded");
  long m[4];
  live(m);
  CHECK(m[0] == 0 && m[1] == 0 && m[2] == 0 && m[3] == 0, "not freed: %ld errors, %ld loaded executables, %ld "
        "executables, %ld serialized executables", m[0], m[1], m[2], m[3]);
  return test_failures ? 1 : 0;
}

/* Writes DIR/preload/NAME: the keys in order. */
static void write_preload_list(const char *dir, const char *name, const uint8_t (*keys)[32], int n) {
  char path[1100], hex[65];
  snprintf(path, sizeof path, "%s/preload", dir);
  mkdirs(path);
  snprintf(path, sizeof path, "%s/preload/%s", dir, name);
  FILE *f = fopen(path, "w");
  REQUIRE(f, "cannot write %s", path);
  fprintf(f, "xlac-preload 1\n");
  for (int i = 0; i < n; i++) {
    xhex(keys[i], 32, hex);
    fprintf(f, "pjrt1:%s\n", hex);
  }
  fclose(f);
}

/* ---------------------------------------------------------------- records and entries */

typedef struct {
  uint8_t key[32];
  xspan format, program, options, identity, executable;
  uint64_t compile_ns;
  uint8_t *bytes; /* the whole file, backing the spans */
} record;

/* Reads and verifies a .xpr file like xlac's reader; 0 when valid. */
static int read_record(const char *path, record *r) {
  size_t n;
  memset(r, 0, sizeof *r);
  uint8_t *b = read_file(path, &n);
  if (!b) return -1;
  r->bytes = b;
  if (n < 40 + 32 || memcmp(b, XRECORD_MAGIC, 8)) return -1;
  memcpy(r->key, b + 8, 32);
  size_t at = 40;
  xspan *s[5] = {&r->format, &r->program, &r->options, &r->identity, &r->executable};
  for (int i = 0; i < 5; i++) {
    if (n - at < 8) return -1;
    uint64_t len = le64(b + at);
    at += 8;
    if (len > n - at) return -1;
    *s[i] = (xspan){b + at, (size_t)len};
    at += (size_t)len;
  }
  if (n - at != 8 + 32) return -1;
  r->compile_ns = le64(b + at);
  uint8_t digest[32];
  xsha256_buffer(b, at + 8, digest);
  if (memcmp(digest, b + at + 8, 32)) return -1;
  size_t cn;
  uint8_t *canonical = xcanonical_options(r->options.data, r->options.size, &cn);
  uint8_t key[32];
  xrequest_key(r->format.data, r->format.size, r->program.data, r->program.size, canonical, cn,
               (const char *)r->identity.data, r->identity.size, key);
  free(canonical);
  return memcmp(key, r->key, 32) ? -2 : 0;
}

static char *record_identity(const char *dir, char name[300]) {
  name[0] = 0;
  if (count_files(dir, "", ".xpr") != 1) return NULL;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strstr(e->d_name, ".xpr")) snprintf(name, 300, "%s", e->d_name);
  if (d) closedir(d);
  char p[1400];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  record r;
  if (read_record(p, &r) != 0) {
    free(r.bytes);
    return NULL;
  }
  char *text = strndup((const char *)r.identity.data, r.identity.size);
  free(r.bytes);
  return text;
}

/* Writes a layout entry for `key` holding `exe` (what xlac's materialize does). */
static void write_entry(const char *layout, const uint8_t key[32], const uint8_t *exe, size_t n,
                        uint64_t compile_ns) {
  char hex[65], dir[1024], path[1100];
  xhex(key, 32, hex);
  snprintf(dir, sizeof dir, "%s/entries/%.2s", layout, hex);
  mkdirs(dir);
  snprintf(path, sizeof path, "%s/%s.xpx", dir, hex);
  uint8_t *b = calloc(1, XLAYOUT_HEADER + n);
  memcpy(b, XLAYOUT_MAGIC, 8);
  memcpy(b + 8, key, 32);
  put_le64(b + 40, n);
  xsha256_buffer(exe, n, b + 48);
  put_le64(b + 80, compile_ns);
  memcpy(b + XLAYOUT_HEADER, exe, n);
  REQUIRE(write_file(path, b, XLAYOUT_HEADER + n) == 0, "cannot write %s", path);
  free(b);
}

static char *entry_path(const char *layout, const uint8_t key[32]) {
  static char path[1100];
  char hex[65];
  xhex(key, 32, hex);
  snprintf(path, sizeof path, "%s/entries/%.2s/%s.xpx", layout, hex, hex);
  return path;
}

/* The key the proxy computes for program k with the test options and this identity. */
static void key_of(int k, xspan identity, uint8_t key[32]) {
  char mlir[1024];
  tc_program(k, mlir, sizeof mlir);
  size_t cn;
  uint8_t *canonical = xcanonical_options(TC_OPTIONS, sizeof TC_OPTIONS, &cn);
  xrequest_key((const uint8_t *)"mlir", 4, (const uint8_t *)mlir, strlen(mlir), canonical, cn,
               (const char *)identity.data, identity.size, key);
  free(canonical);
}

/* ---------------------------------------------------------------- main */

static void hash_plugin(void) {
  size_t n;
  struct stat st;
  REQUIRE(stat(plugin, &st) == 0, "cannot stat %s", plugin);
  uint8_t *b = read_file(plugin, &n);
  REQUIRE(b, "cannot read %s", plugin);
  uint8_t d[32];
  xsha256_buffer(b, n, d);
  free(b);
  xhex(d, 32, plugin_hex);
  snprintf(plugin_env, sizeof plugin_env, "XLAC_PJRT_PLUGIN_SHA256=%s:%lld:%llu:%llu:%llu", plugin_hex,
           (long long)st.st_size,
           (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec,
           (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
}

int main(void) {
  plugin = getenv("XLAC_PJRT_PLUGIN");
  proxy = getenv("XLAC_TEST_PROXY");
  const char *base = getenv("XLAC_TEST_TMP");
  if (!plugin || !*plugin) {
    const char *skip = getenv("XLAC_RUNTIME_SKIP_PLUGIN_TESTS");
    if (skip && !strcmp(skip, "1")) {
      printf("test_proxy: skipped (XLAC_RUNTIME_SKIP_PLUGIN_TESTS=1)\n");
      return 0;
    }
    fprintf(stderr,
            "test_proxy: XLAC_PJRT_PLUGIN is not set; it must name a real PJRT CPU plugin (.so) to "
            "test the proxy against. scripts/test sets it from the Python package lammps_jax_pjrt_cpu "
            "(python -c 'import lammps_jax_pjrt_cpu as p; print(p.PLUGIN_PATH)'); or set "
            "XLAC_RUNTIME_SKIP_PLUGIN_TESTS=1 to skip these tests\n");
    return 1;
  }
  REQUIRE(proxy && base, "XLAC_TEST_PROXY and XLAC_TEST_TMP must be set (make test sets them)");
  snprintf(tmp, sizeof tmp, "%s/%ld", base, (long)getpid());
  umask(022); /* the proxy serves no layout that others may write */
  mkdirs(tmp);
  hash_plugin();
  char *real = env("XLAC_PJRT_REAL_PLUGIN=%s", plugin);

  /* the proxy takes no lock (identityTakesNoLock): a fork() from another thread while one was held
   * would leave the child waiting on it for ever */
  {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "nm -D --undefined-only '%s' 2>/dev/null", proxy);
    FILE *nm = popen(cmd, "r");
    REQUIRE(nm, "nm");
    char line[300];
    int symbols = 0, locks = 0;
    while (fgets(line, sizeof line, nm)) {
      symbols++;
      if (strstr(line, "pthread_mutex_lock") || strstr(line, "pthread_rwlock") || strstr(line, "pthread_spin_lock"))
        locks++;
    }
    pclose(nm);
    CHECK(symbols > 0 && locks == 0, "the proxy imports %d lock functions (of %d symbols)", locks, symbols);
  }

  /* 1. no real plugin named, or one that does not load: GetPjrtApi answers NULL, says why once */
  {
    const char *e1[] = {NULL};
    CHECK(run_child(scenario_no_plugin, NULL, path_of("none.err"), e1) == 0, "NULL without a plugin");
    CHECK(stderr_lines(path_of("none.err"), "xlac runtime: XLAC_PJRT_REAL_PLUGIN is not set") == 1,
          "one line");
    const char *e2[] = {env("XLAC_PJRT_REAL_PLUGIN=%s/missing.so", tmp), NULL};
    CHECK(run_child(scenario_no_plugin, NULL, path_of("missing.err"), e2) == 0, "NULL, missing plugin");
    CHECK(stderr_lines(path_of("missing.err"), "xlac runtime: cannot load the real PJRT plugin") == 1,
          "one line");
    /* the proxy named as the real plugin, as in an xlac run inside another: refused, not a deadlock
     * (nestedRun_refusesTheProxyAsItsRealPlugin) */
    const char *e3[] = {env("XLAC_PJRT_REAL_PLUGIN=%s", proxy), env("XLAC_PJRT_STATS=%s", tmp), NULL};
    CHECK(run_child(scenario_no_plugin_in_time, NULL, path_of("nested.err"), e3) == 0, "NULL, the proxy itself");
    CHECK(stderr_lines(path_of("nested.err"), "is xlac's runtime proxy, not a real plugin") == 1, "one line");
    CHECK(stderr_lines(path_of("nested.err"), "xlac runtime: ") == 1, "only that line");
  }

  /* a real plugin the proxy cannot wrap (another major version, a short table): passed through */
  const char *fake = getenv("XLAC_TEST_FAKE_PLUGIN");
  REQUIRE(fake, "XLAC_TEST_FAKE_PLUGIN must be set (make test sets it)");
  {
    const char *e1[] = {env("XLAC_PJRT_REAL_PLUGIN=%s", fake), env("XLAC_PJRT_STATS=%s", tmp), NULL};
    CHECK(run_child(scenario_fake_plugin, (void *)fake, path_of("fake-major.err"), e1) == 0, "major 1");
    CHECK(stderr_lines(path_of("fake-major.err"),
                       "xlac runtime: the real plugin has PJRT C API 1.3; the proxy knows major version 0 "
                       "only; passing the real plugin through unchanged") == 1, "the line");
    const char *e2[] = {env("XLAC_PJRT_REAL_PLUGIN=%s", fake), env("XLAC_PJRT_STATS=%s", tmp),
                        "FAKE_PJRT_MAJOR=0", "FAKE_PJRT_SIZE=200", NULL};
    CHECK(run_child(scenario_fake_plugin, (void *)fake, path_of("fake-size.err"), e2) == 0, "short table");
    CHECK(stderr_lines(path_of("fake-size.err"), "xlac runtime: the real plugin's PJRT_Api is 200 bytes") == 1,
          "the line");
  }

  /* a framework whose PJRT_Client_Compile_Args is too short for the proxy: passed on, counted */
  mkdirs(path_of("stats-small"));
  {
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_STATS=%s", path_of("stats-small")), NULL};
    CHECK(run_child(scenario_small_args, NULL, path_of("small.err"), e) == 0, "short Compile_Args");
    CHECK(stderr_lines(path_of("small.err"), "xlac runtime: unexpected PJRT_Client_Compile_Args size; "
                                              "compiling with the real plugin") == 1, "the line");
    char *st = read_stats(path_of("stats-small"));
    CHECK(count_lines(st, "fallback\t-\t") == 1, "a fallback without a key: %s", st);
    free(st);
  }

  /* 2. pass-through: nothing to do, the real table itself; compile/serialize/deserialize/execute */
  {
    const char *e[] = {real, NULL};
    CHECK(run_child(scenario_execute, (void *)1, path_of("plain.err"), e) == 0, "pass-through");
    CHECK(stderr_lines(path_of("plain.err"), "xlac runtime") == 0, "silent");
  }

  /* 2b. struct-size bridging: torch_xla 2.9's 80-byte PJRT_ExecuteOptions, refused by the real plugin
   * ("expected 112, got 80"), executes through the proxy (executeOptionsFromAnOlderHeader_areEnlarged) */
  {
    const char *e[] = {real, env("XLAC_PJRT_STATS=%s", path_of("stats-bridge")), NULL};
    mkdirs(path_of("stats-bridge"));
    CHECK(run_child(scenario_short_execute_options, (void *)1, path_of("bridge-direct.err"), e) == 0,
          "the real plugin alone");
    CHECK(stderr_lines(path_of("bridge-direct.err"), "PJRT_ExecuteOptions") >= 1, "the plugin names the struct");
    CHECK(run_child(scenario_short_execute_options, NULL, path_of("bridge.err"), e) == 0, "through the proxy");
    CHECK(stderr_lines(path_of("bridge.err"), "xlac runtime") == 0, "silent");
  }

  /* 3. record mode: a miss, compiled by the real plugin and written to the spool */
  mkdirs(path_of("spool"));
  mkdirs(path_of("stats-record"));
  {
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_RECORD=%s", path_of("spool")),
                       env("XLAC_PJRT_STATS=%s", path_of("stats-record")), NULL};
    CHECK(run_child(scenario_execute, NULL, path_of("record.err"), e) == 0, "record run");
    CHECK(stderr_lines(path_of("record.err"), "xlac runtime") == 0, "silent");
  }
  CHECK(count_files(path_of("spool"), "", ".xpr") == 1, "one record");
  CHECK(count_files(path_of("spool"), ".tmp", "") == 0, "no temporaries");
  DIR *d = opendir(path_of("spool"));
  char record_name[300] = "";
  for (struct dirent *e; d && (e = readdir(d));)
    if (strstr(e->d_name, ".xpr")) snprintf(record_name, sizeof record_name, "%s", e->d_name);
  if (d) closedir(d);
  record rec;
  REQUIRE(read_record(path_of("spool/%s", record_name), &rec) == 0, "the record %s is valid", record_name);
  char key_hex[65];
  xhex(rec.key, 32, key_hex);
  CHECK(!strncmp(record_name, key_hex, 64), "named by its key");
  CHECK(rec.format.size == 4 && !memcmp(rec.format.data, "mlir", 4), "format");
  CHECK(rec.options.size == sizeof TC_OPTIONS && !memcmp(rec.options.data, TC_OPTIONS, sizeof TC_OPTIONS),
        "options as received");
  CHECK(rec.executable.size > 0 && rec.compile_ns > 0, "executable and compile time");
  char *identity = strndup((const char *)rec.identity.data, rec.identity.size);
  CHECK(!strncmp(identity, "xlac-pjrt-plugin/3\nplatform_name=cpu\nplatform_version=", 53), "%s", identity);
  CHECK(!strstr(identity, "device_count=") && strstr(identity, "\ndevice_kind=cpu\n") != NULL, "%s", identity);
  {
    /* a CPU plugin's identity names this machine's CPU, right after the device kinds */
    char *host = xhost_cpu_lines((xstr){"cpu", 3}), want_host[1200];
    snprintf(want_host, sizeof want_host, "\ndevice_kind=cpu\n%sxla_flags=", host ? host : "?");
    CHECK(host && !strncmp(host, "host_cpu=", 9) && strstr(identity, want_host), "%s", identity);
    free(host);
  }
  CHECK(strstr(identity, "\nxla_flags=\nlibtpu_init_args=\n") != NULL, "%s", identity);
  CHECK(strstr(identity, "\napi_version=0.") != NULL, "%s", identity);
  char sha_line[100];
  snprintf(sha_line, sizeof sha_line, "\nplugin_sha256=%s\n", plugin_hex);
  CHECK(strstr(identity, sha_line) != NULL, "%s", identity);
  CHECK(strstr(identity, "\nattribute=xla_version=i:") != NULL, "%s", identity);
  char *stats = read_stats(path_of("stats-record"));
  char want[200];
  snprintf(want, sizeof want, "miss\tpjrt1:%s\t", key_hex);
  CHECK(count_lines(stats, want) == 1 && count_lines(stats, "miss\t") == 1, "miss line: %s", stats);
  snprintf(want, sizeof want, "recorded\tpjrt1:%s\t", key_hex);
  CHECK(count_lines(stats, want) == 1, "recorded line: %s", stats);
  free(stats);

  /* the same key without XLAC_PJRT_PLUGIN_SHA256: the proxy hashes the plugin file itself */
  mkdirs(path_of("spool-hashed"));
  {
    compile_plan plan = {{1}, 0, 1, 0, 0};
    const char *e[] = {real, env("XLAC_PJRT_RECORD=%s", path_of("spool-hashed")), NULL};
    CHECK(run_child(scenario_compile, &plan, path_of("hashed.err"), e) == 0, "hashed run");
    CHECK(count_files(path_of("spool-hashed"), key_hex, ".xpr") == 1, "same key when hashed itself");
  }

  /* relative paths: as of the first GetPjrtApi */
  mkdirs(path_of("spool-relative"));
  {
    const char *e[] = {real, plugin_env, "XLAC_PJRT_RECORD=spool-relative", NULL};
    CHECK(run_child(scenario_relative, NULL, path_of("relative.err"), e) == 0, "relative run");
    CHECK(count_files(path_of("spool-relative"), key_hex, ".xpr") == 1, "recorded where it was named");
  }

  /* XLA_FLAGS fills the debug options the request does not carry: another value, another key
   * (identityCoversXlaFlags) */
  mkdirs(path_of("spool-flags"));
  {
    compile_plan plan = {{1}, 0, 1, 0, 0};
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_RECORD=%s", path_of("spool-flags")),
                       "XLA_FLAGS=--xla_backend_optimization_level=2", NULL};
    CHECK(run_child(scenario_compile, &plan, path_of("flags.err"), e) == 0, "XLA_FLAGS run");
    char name[300];
    char *id = record_identity(path_of("spool-flags"), name);
    CHECK(id && strncmp(name, key_hex, 64) != 0, "another key with XLA_FLAGS: %s", name);
    CHECK(id && strstr(id, "\nxla_flags=--xla_backend_optimization_level=2\n"), "%s", id);
    free(id);
  }

  /* XLA_FLAGS naming a file: the key covers the flags in it, so the same flags written in a file give
   * the key they give in the variable, and an edited file another one
   * (xlaFlagsNamingAFile_keyTheFlagsInTheFile) */
  {
    char *flags_file = strdup(path_of("xla-flags-file"));
    char keys[2][65];
    const char *contents[2] = {"--xla_backend_optimization_level=2\n", "--xla_backend_optimization_level=1\n"};
    for (int i = 0; i < 2; i++) {
      REQUIRE(write_file(flags_file, contents[i], strlen(contents[i])) == 0, "write %s", flags_file);
      char *dir = strdup(path_of("spool-flags-file-%d", i));
      mkdirs(dir);
      compile_plan plan = {{1}, 0, 1, 0, 0};
      const char *e[] = {real, plugin_env, env("XLAC_PJRT_RECORD=%s", dir), env("XLA_FLAGS=%s", flags_file), NULL};
      CHECK(run_child(scenario_compile, &plan, path_of("flags-file-%d.err", i), e) == 0, "XLA_FLAGS file run %d", i);
      char name[300];
      char *id = record_identity(dir, name);
      snprintf(keys[i], sizeof keys[i], "%.64s", name);
      snprintf(want, sizeof want, "\nxla_flags=--xla_backend_optimization_level=%d\n", 2 - i);
      CHECK(id && strstr(id, want), "the file's flags: %s", id);
      free(id);
      free(dir);
    }
    char name[300];
    free(record_identity(path_of("spool-flags"), name));
    CHECK(!strncmp(keys[0], name, 64), "the file's flags give the variable's key: %s, %s", keys[0], name);
    CHECK(strcmp(keys[0], keys[1]) != 0, "an edited flags file gives another key");
    free(flags_file);
  }

  /* XLAC_PJRT_PLUGIN_SHA256 is trusted for the stat it names only (staleOrMalformedPluginShaIsRehashed) */
  {
    struct stat st;
    REQUIRE(stat(plugin, &st) == 0, "stat");
    char zeros[65];
    memset(zeros, '0', 64);
    zeros[64] = 0;
    unsigned long long mtime =
        (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec;
    struct {
      const char *name;
      char *value;
      int trusted;
    } cases[] = {
        {"stale", env("XLAC_PJRT_PLUGIN_SHA256=%s:%lld:%llu:%llu:%llu", zeros, (long long)st.st_size, mtime + 1,
                      (unsigned long long)st.st_dev, (unsigned long long)st.st_ino), 0},
        {"malformed", env("XLAC_PJRT_PLUGIN_SHA256=%s:%lld", zeros, (long long)st.st_size), 0},
        {"trusted", env("XLAC_PJRT_PLUGIN_SHA256=%s:%lld:%llu:%llu:%llu", zeros, (long long)st.st_size, mtime,
                        (unsigned long long)st.st_dev, (unsigned long long)st.st_ino), 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      char *dir = strdup(path_of("spool-sha-%s", cases[i].name));
      mkdirs(dir);
      compile_plan plan = {{1}, 0, 1, 0, 0};
      const char *e[] = {real, cases[i].value, env("XLAC_PJRT_RECORD=%s", dir), NULL};
      CHECK(run_child(scenario_compile, &plan, path_of("sha-%s.err", cases[i].name), e) == 0, "%s", cases[i].name);
      char name[300];
      char *id = record_identity(dir, name);
      snprintf(sha_line, sizeof sha_line, "\nplugin_sha256=%s\n", cases[i].trusted ? zeros : plugin_hex);
      CHECK(id && strstr(id, sha_line), "%s: %s", cases[i].name, id);
      CHECK(id && (strncmp(name, key_hex, 64) == 0) == !cases[i].trusted, "%s: key %s", cases[i].name, name);
      free(id);
      free(dir);
    }
  }

  /* the file dlopen loaded is the one hashed, not a file of that name in the working directory
   * (bareNameHashesTheLoadedFile): a name without a slash is looked up on LD_LIBRARY_PATH */
  {
    const char *slash = strrchr(plugin, '/');
    const char *ld = getenv("LD_LIBRARY_PATH");
    char dir[1024];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash ? slash - plugin : 0), plugin);
    if (slash && ld && strstr(ld, dir)) {
      char *cwd = strdup(path_of("bare"));
      mkdirs(cwd);
      char decoy[1100];
      snprintf(decoy, sizeof decoy, "%s/%s", cwd, slash + 1);
      size_t n;
      uint8_t *fake_bytes = read_file(getenv("XLAC_TEST_FAKE_PLUGIN"), &n);
      REQUIRE(fake_bytes && write_file(decoy, fake_bytes, n) == 0, "decoy");
      free(fake_bytes);
      mkdirs(path_of("spool-bare"));
      const char *e[] = {env("XLAC_PJRT_REAL_PLUGIN=%s", slash + 1),
                         env("XLAC_PJRT_RECORD=%s", path_of("spool-bare")), NULL};
      CHECK(run_child(scenario_in_dir, cwd, path_of("bare.err"), e) == 0, "bare name run");
      CHECK(count_files(path_of("spool-bare"), key_hex, ".xpr") == 1, "the loaded file's hash, the same key");
      free(cwd);
    } else {
      CHECK(0, "LD_LIBRARY_PATH must hold %s (make test sets it)", dir);
    }
  }

  /* several threads of one process recording at once (recordThreadsLeaveWholeRecords) */
  mkdirs(path_of("spool-threads"));
  {
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_RECORD=%s", path_of("spool-threads")), NULL};
    CHECK(run_child(scenario_record_threads, NULL, path_of("record-threads.err"), e) == 0, "record threads");
    CHECK(count_files(path_of("spool-threads"), "", ".xpr") == 5, "4 own programs and the shared one");
    CHECK(count_files(path_of("spool-threads"), ".tmp", "") == 0, "no temporaries");
    DIR *k = opendir(path_of("spool-threads"));
    for (struct dirent *de; k && (de = readdir(k));) {
      if (!strstr(de->d_name, ".xpr")) continue;
      record r;
      CHECK(read_record(path_of("spool-threads/%s", de->d_name), &r) == 0, "%s is whole", de->d_name);
      free(r.bytes);
    }
    if (k) closedir(k);
  }

  /* a taken temporary name (another PID namespace's process of the same pid and tid) */
  mkdirs(path_of("spool-taken"));
  {
    const char *e[] = {NULL};
    CHECK(run_child(scenario_taken_temp_names, path_of("spool-taken"), path_of("taken.err"), e) == 0,
          "tempNamesDoNotCollideAcrossPidNamespaces");
  }

  /* 3c. a miss's request is kept in the statistics directory, whole, once per key, for xlac to say why it
   * was not served (missWithoutReason_requestKeptInStatistics); a write that fails is counted, never the
   * compile's failure (missRequestWriteFails_compileSucceeds) */
  mkdirs(path_of("stats-miss"));
  {
    miss_plan plan = {0, 0};
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_STATS=%s", path_of("stats-miss")), NULL};
    CHECK(run_child(scenario_miss_requests, &plan, path_of("miss.err"), e) == 0, "miss run");
    CHECK(stderr_lines(path_of("miss.err"), "xlac runtime") == 0, "silent");
    CHECK(count_files(path_of("stats-miss"), "", ".xpr") == 2, "one request per missed key");
    CHECK(count_files(path_of("stats-miss"), key_hex, ".xpr") == 1, "named by its key");
    CHECK(count_files(path_of("stats-miss"), ".tmp", "") == 0, "no temporaries");
    record r;
    CHECK(read_record(path_of("stats-miss/%s.xpr", key_hex), &r) == 0, "the request is a whole record");
    CHECK(r.format.size == 4 && !memcmp(r.format.data, "mlir", 4), "format");
    CHECK(r.options.size == sizeof TC_OPTIONS && !memcmp(r.options.data, TC_OPTIONS, sizeof TC_OPTIONS),
          "options as received");
    CHECK(r.identity.size == rec.identity.size && !memcmp(r.identity.data, rec.identity.data, r.identity.size),
          "the identity text");
    CHECK(r.executable.size == 0 && r.compile_ns > 0, "no executable, the compile time");
    struct stat st;
    CHECK(stat(path_of("stats-miss/%s.xpr", key_hex), &st) == 0 && st.st_size > 512, "size %lld",
          (long long)st.st_size);
    free(r.bytes);
    char *stats = read_stats(path_of("stats-miss"));
    CHECK(count_lines(stats, "miss\t") == 3, "three misses: %s", stats);
    free(stats);
  }
  mkdirs(path_of("stats-miss-full"));
  {
    miss_plan plan = {512, 3}; /* each try counted: the key was never written */
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_STATS=%s", path_of("stats-miss-full")), NULL};
    CHECK(run_child(scenario_miss_requests, &plan, path_of("miss-full.err"), e) == 0, "miss run, full disk");
    CHECK(stderr_lines(path_of("miss-full.err"), "xlac runtime") == 0, "silent");
    CHECK(count_files(path_of("stats-miss-full"), "", ".xpr") == 0, "no request");
    CHECK(count_files(path_of("stats-miss-full"), ".tmp", "") == 0, "no temporaries");
    char *stats = read_stats(path_of("stats-miss-full"));
    CHECK(count_lines(stats, "miss\t") == 3, "three misses counted: %s", stats);
    free(stats);
  }

  /* 4. a layout entry made from the record: the next compile is a hit, and runs right */
  char *layout = path_of("layout");
  layout = strdup(layout);
  write_entry(layout, rec.key, rec.executable.data, rec.executable.size, 123456789);
  mkdirs(path_of("stats-hit"));
  mkdirs(path_of("spool-hit"));
  {
    compile_plan plan = {{1, 1}, 2, 0, 0, 0};
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_LAYOUT=%s", layout),
                       env("XLAC_PJRT_RECORD=%s", path_of("spool-hit")),
                       env("XLAC_PJRT_STATS=%s", path_of("stats-hit")), NULL};
    CHECK(run_child(scenario_compile, &plan, path_of("hit.err"), e) == 0, "hit run");
    CHECK(stderr_lines(path_of("hit.err"), "xlac runtime") == 0, "silent");
    stats = read_stats(path_of("stats-hit"));
    snprintf(want, sizeof want, "hit\tpjrt1:%s\t", key_hex);
    CHECK(count_lines(stats, want) == 2, "hit lines: %s", stats);
    CHECK(strstr(stats, "\t123456789\n") != NULL, "saved ns from the entry: %s", stats);
    free(stats);
    CHECK(count_files(path_of("spool-hit"), "", "") == 2, "a hit is not recorded"); /* . and .. */
  }

  /* an entry recorded on a machine with a CPU feature this one lacks (its identity's cpu_features
   * line has one more bit) is a miss: XLA:CPU's code for it could die of SIGILL here
   * (recordedOnAnotherCpu_isAMiss) */
  {
    char *other = strndup((const char *)rec.identity.data, rec.identity.size);
    char *word = other ? strstr(other, "\ncpu_features=") : NULL;
    REQUIRE(word && (word = strstr(word, "7.ebx:")), "a cpu_features line with 7.ebx: %s", other);
    word += 6; /* leaf 7 EBX (AVX2, AVX-512...): one more bit, a feature this machine lacks */
    unsigned bits = (unsigned)strtoul(word, NULL, 16), more = bits | (~bits & (~bits + 1));
    REQUIRE(more != bits, "a feature bit to add");
    char hex8[9];
    snprintf(hex8, sizeof hex8, "%08x", more);
    memcpy(word, hex8, 8);
    uint8_t other_key[32];
    key_of(1, (xspan){(const uint8_t *)other, strlen(other)}, other_key);
    CHECK(memcmp(other_key, rec.key, 32) != 0, "another CPU, another key");
    char *dir = strdup(path_of("layout-other-cpu"));
    write_entry(dir, other_key, rec.executable.data, rec.executable.size, 1);
    compile_plan plan = {{1}, 0, 1, 0, 0};
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_LAYOUT=%s", dir), NULL};
    CHECK(run_child(scenario_compile, &plan, path_of("other-cpu.err"), e) == 0, "another CPU's entry: a miss");
    free(dir);
    free(other);
  }

  /* 5. broken entries: each falls back, computes the right result, says so once */
  uint8_t key2[32];
  key_of(2, rec.identity, key2);
  struct {
    const char *name;
    int program;
  } broken[] = {{"damaged", 1}, {"truncated", 1}, {"short", 1}, {"magic", 1}, {"foreign", 2},
                {"garbage", 1}, {"directory", 1}};
  for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
    char *dir = strdup(path_of("layout-%s", broken[i].name));
    const char *name = broken[i].name;
    size_t n;
    uint8_t *entry = read_file(entry_path(layout, rec.key), &n);
    REQUIRE(entry, "entry");
    if (!strcmp(name, "garbage")) { /* a valid entry whose executable does not deserialize */
      uint8_t junk[256];
      for (int j = 0; j < 256; j++) junk[j] = (uint8_t)(j * 7 + 3);
      write_entry(dir, rec.key, junk, sizeof junk, 1);
    } else {
      const uint8_t *key = rec.key;
      if (!strcmp(name, "damaged")) entry[XLAYOUT_HEADER + (n - XLAYOUT_HEADER) / 2] ^= 0x01;
      if (!strcmp(name, "truncated")) n -= 10;
      if (!strcmp(name, "short")) n = 50;
      if (!strcmp(name, "magic")) entry[0] = 'Y';
      if (!strcmp(name, "foreign")) key = key2; /* program 1's entry under program 2's name */
      char *p = entry_path(dir, key);
      char parent[1100];
      snprintf(parent, sizeof parent, "%s", p);
      *strrchr(parent, '/') = 0;
      mkdirs(parent);
      if (!strcmp(name, "directory")) mkdirs(p); /* a directory where the entry should be */
      else REQUIRE(write_file(p, entry, n) == 0, "write %s", p);
    }
    free(entry);
    char *stats_dir = strdup(path_of("stats-%s", name));
    mkdirs(stats_dir);
    compile_plan plan = {{broken[i].program, broken[i].program}, 0, 0, 2, 0};
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_LAYOUT=%s", dir),
                       env("XLAC_PJRT_STATS=%s", stats_dir), NULL};
    char *err = strdup(path_of("%s.err", name));
    CHECK(run_child(scenario_compile, &plan, err, e) == 0, "%s: falls back and computes right", name);
    CHECK(stderr_lines(err, "xlac runtime: ") == 1, "%s: one line on stderr", name);
    CHECK(stderr_lines(err, "; compiling with the real plugin (further fallbacks are counted, not printed)") == 1,
          "%s: the line", name);
    stats = read_stats(stats_dir);
    CHECK(count_lines(stats, "fallback\tpjrt1:") == 2, "%s: fallback lines: %s", name, stats);
    free(stats);
    free(dir);
    free(stats_dir);
    free(err);
  }

  /* 5b. layouts that others could have written, and entries that are not plain files: never served,
   * never blocking; one line per process (issue 22, "a layout that only the cache can write") */
  {
    struct {
      const char *name; /* also the regression test's name */
      const char *says; /* in the one stderr line */
      int served;       /* a trusted variant: still a hit */
    } cases[] = {
        {"groupWritableEntry_isNotServed", "its group or others may write it (mode 664)", 0},
        {"otherWritableEntriesDirectory_isNotServed", "its group or others may write it (mode 757)", 0},
        {"groupWritableLayoutDirectory_isNotServed", "its group or others may write it (mode 775)", 0},
        {"groupWritableAncestor_isNotServed", "its group or others may write it (mode 777)", 0},
        {"entryOfAnotherUser_isNotServed", "belongs to user 4242", 0},
        {"symlinkedEntry_isNotServed", "it is a symbolic link", 0},
        {"symlinkedEntriesDirectory_isNotServed", "a symbolic link or not a directory", 0},
        {"fifoEntry_fallsBackInsteadOfHanging", "is not a regular file", 0},
        {"symlinkToFifoEntry_fallsBackInsteadOfHanging", "it is a symbolic link", 0},
        {"deviceEntry_fallsBack", "is not a regular file", 0},
        {"stickyWorldWritableAncestor_isServed", NULL, 1},
        {"symlinkedLayoutPath_isServed", NULL, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      const char *name = cases[i].name;
      if (!strcmp(name, "entryOfAnotherUser_isNotServed") && geteuid() != 0) {
        printf("test_proxy: %s skipped (needs root to chown)\n", name);
        continue;
      }
      char *parent = strdup(path_of("trust-%zu", i));
      char *dir = strdup(path_of("trust-%zu/layout", i));
      write_entry(dir, rec.key, rec.executable.data, rec.executable.size, 7);
      char *entry = strdup(entry_path(dir, rec.key));
      char sub[1100], entries[1100], moved[1100];
      snprintf(sub, sizeof sub, "%s", entry);
      *strrchr(sub, '/') = 0;
      snprintf(entries, sizeof entries, "%s/entries", dir);
      const char *serve_from = dir, *says = cases[i].says;
      int made = 0;
      if (!strcmp(name, "groupWritableEntry_isNotServed")) made = chmod(entry, 0664);
      else if (!strcmp(name, "otherWritableEntriesDirectory_isNotServed")) made = chmod(entries, 0757);
      else if (!strcmp(name, "groupWritableLayoutDirectory_isNotServed")) made = chmod(dir, 0775);
      else if (!strcmp(name, "groupWritableAncestor_isNotServed")) made = chmod(parent, 0777);
      else if (!strcmp(name, "stickyWorldWritableAncestor_isServed")) made = chmod(parent, 01777);
      else if (!strcmp(name, "entryOfAnotherUser_isNotServed")) made = chown(entry, 4242, 4242);
      else if (!strcmp(name, "symlinkedEntry_isNotServed")) { /* a trusted file, reached by a link */
        snprintf(moved, sizeof moved, "%s/elsewhere.xpx", parent);
        made = rename(entry, moved) || symlink(moved, entry);
      } else if (!strcmp(name, "symlinkedEntriesDirectory_isNotServed")) {
        snprintf(moved, sizeof moved, "%s/elsewhere", parent);
        made = rename(entries, moved) || symlink(moved, entries);
      } else if (!strcmp(name, "fifoEntry_fallsBackInsteadOfHanging")) {
        made = unlink(entry) || mkfifo(entry, 0600);
      } else if (!strcmp(name, "symlinkToFifoEntry_fallsBackInsteadOfHanging")) {
        snprintf(moved, sizeof moved, "%s/fifo", parent);
        made = unlink(entry) || mkfifo(moved, 0600) || symlink(moved, entry);
      } else if (!strcmp(name, "deviceEntry_fallsBack")) {
        made = unlink(entry);
        /* /dev/zero's node needs root to make; a link to it otherwise */
        if (!made && mknod(entry, S_IFCHR | 0600, makedev(1, 5)) != 0) {
          made = symlink("/dev/zero", entry);
          says = "it is a symbolic link";
        }
      } else if (!strcmp(name, "symlinkedLayoutPath_isServed")) {
        snprintf(moved, sizeof moved, "%s/link", parent);
        made = symlink(dir, moved);
        serve_from = moved;
      }
      REQUIRE(made == 0, "%s: set-up: %s", name, strerror(errno));
      char *stats_dir = strdup(path_of("stats-trust-%zu", i));
      mkdirs(stats_dir);
      int hits = cases[i].served ? 2 : 0, fallbacks = cases[i].served ? 0 : 2;
      compile_plan plan = {{1, 1}, hits, 0, fallbacks, 0};
      const char *e[] = {real, plugin_env, env("XLAC_PJRT_LAYOUT=%s", serve_from),
                         env("XLAC_PJRT_STATS=%s", stats_dir), NULL};
      char *err = strdup(path_of("trust-%zu.err", i));
      CHECK(run_child(scenario_compile_in_time, &plan, err, e) == 0, "%s: the compiles", name);
      if (says) {
        CHECK(stderr_lines(err, "xlac runtime: ") == 1, "%s: one line on stderr", name);
        CHECK(stderr_lines(err, says) == 1, "%s: says why (%s)", name, says);
      } else {
        CHECK(stderr_lines(err, "xlac runtime") == 0, "%s: silent", name);
      }
      stats = read_stats(stats_dir);
      CHECK(count_lines(stats, cases[i].served ? "hit\tpjrt1:" : "fallback\tpjrt1:") == 2, "%s: %s", name, stats);
      free(stats);
      chmod(parent, 0755); /* lets the clean-up remove it */
      free(err);
      free(stats_dir);
      free(entry);
      free(dir);
      free(parent);
    }
  }

  /* a layout directory that does not exist: a fallback (missingLayoutDirectoryFallsBack) */
  mkdirs(path_of("stats-nolayout"));
  {
    compile_plan plan = {{1}, 0, 0, 1, 0};
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_LAYOUT=%s", path_of("no-such-layout")),
                       env("XLAC_PJRT_STATS=%s", path_of("stats-nolayout")), NULL};
    CHECK(run_child(scenario_compile, &plan, path_of("nolayout.err"), e) == 0, "missing layout");
    CHECK(stderr_lines(path_of("nolayout.err"), "is not a directory; compiling with the real plugin") == 1,
          "the line");
  }

  /* a non-zero reserved field (offset 88) is ignored: still a hit */
  {
    char *dir = strdup(path_of("layout-reserved"));
    write_entry(dir, rec.key, rec.executable.data, rec.executable.size, 5);
    size_t n;
    char *p = entry_path(dir, rec.key);
    uint8_t *entry = read_file(p, &n);
    REQUIRE(entry, "entry");
    put_le64(entry + 88, 0xfeedu);
    REQUIRE(write_file(p, entry, n) == 0, "write");
    free(entry);
    compile_plan plan = {{1}, 1, 0, 0, 0};
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_LAYOUT=%s", dir), NULL};
    CHECK(run_child(scenario_compile, &plan, path_of("reserved.err"), e) == 0, "reservedFieldIsIgnored");
    free(dir);
  }

  /* requests the proxy does not fully understand: not served, not recorded, fallbacks without a key
   * (unknownCompileInputsAreNotServed) */
  mkdirs(path_of("stats-unknown"));
  mkdirs(path_of("spool-unknown"));
  {
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_LAYOUT=%s", layout),
                       env("XLAC_PJRT_RECORD=%s", path_of("spool-unknown")),
                       env("XLAC_PJRT_STATS=%s", path_of("stats-unknown")), NULL};
    CHECK(run_child(scenario_unknown_inputs, NULL, path_of("unknown.err"), e) == 0, "unknown inputs");
    CHECK(stderr_lines(path_of("unknown.err"), "xlac runtime: ") == 1, "one line");
    stats = read_stats(path_of("stats-unknown"));
    CHECK(count_lines(stats, "fallback\t-\t") == 4, "fallbacks without a key: %s", stats);
    CHECK(count_lines(stats, "hit\t") == 1, "the profiler's extension is served: %s", stats);
    free(stats);
    CHECK(count_files(path_of("spool-unknown"), "", ".xpr") == 0, "nothing recorded");
  }

  /* every PJRT object made is freed, on a record, a hit, a miss and a fallback
   * (pjrtObjectsAreFreedOnEveryPath); LeakSanitizer cannot see this, its suppression covers the
   * real plugin's frames */
  {
    const char *counting = getenv("XLAC_TEST_COUNTING_PLUGIN");
    REQUIRE(counting, "XLAC_TEST_COUNTING_PLUGIN must be set (make test sets it)");
    char *counted = env("XLAC_TEST_COUNTED_PLUGIN=%s", plugin);
    char *creal = env("XLAC_PJRT_REAL_PLUGIN=%s", counting);
    mkdirs(path_of("spool-count"));
    compile_plan first = {{1, 3}, 0, 2, 0, 0};
    const char *e1[] = {creal, counted, env("XLAC_PJRT_RECORD=%s", path_of("spool-count")), NULL};
    CHECK(run_child(scenario_counted, &first, path_of("count-record.err"), e1) == 0, "counted: record");
    /* program 1's record as a good entry, program 3's key with bytes that do not deserialize */
    char *dir = strdup(path_of("layout-count"));
    DIR *k = opendir(path_of("spool-count"));
    int entries = 0;
    uint8_t key1[32], key3[32];
    char *ident1 = NULL;
    for (struct dirent *de; k && (de = readdir(k));) {
      if (!strstr(de->d_name, ".xpr")) continue;
      record r;
      REQUIRE(read_record(path_of("spool-count/%s", de->d_name), &r) == 0, "counted record");
      char mlir3[1024];
      tc_program(3, mlir3, sizeof mlir3);
      int is3 = r.program.size == strlen(mlir3) && !memcmp(r.program.data, mlir3, r.program.size);
      uint8_t junk[64];
      memset(junk, 0x5a, sizeof junk);
      if (is3) write_entry(dir, r.key, junk, sizeof junk, 1);
      else write_entry(dir, r.key, r.executable.data, r.executable.size, 1);
      memcpy(is3 ? key3 : key1, r.key, 32);
      if (!is3) ident1 = strndup((const char *)r.identity.data, r.identity.size);
      entries++;
      free(r.bytes);
    }
    if (k) closedir(k);
    CHECK(entries == 2, "two counted records");
    mkdirs(path_of("spool-count2"));
    compile_plan second = {{1, 2, 3}, 1, 1, 1, 0};
    const char *e2[] = {creal, counted, env("XLAC_PJRT_LAYOUT=%s", dir),
                        env("XLAC_PJRT_RECORD=%s", path_of("spool-count2")), NULL};
    CHECK(run_child(scenario_counted, &second, path_of("count-serve.err"), e2) == 0,
          "counted: hit, miss, fallback, records");
    CHECK(count_files(path_of("spool-count2"), "", ".xpr") == 2, "the miss and the fallback recorded");
    /* a plugin built against a newer header, whose PJRT_NamedValue has grown: the same identity, so the
     * same keys and a hit, not a crash (namedValuesOfANewerPlugin_giveTheSameKeys) */
    compile_plan wide = {{1}, 1, 0, 0, 0};
    const char *e3[] = {creal, counted, env("XLAC_PJRT_LAYOUT=%s", dir), "COUNTING_WIDER_NAMED_VALUES=1", NULL};
    CHECK(run_child(scenario_counted, &wide, path_of("count-wider.err"), e3) == 0,
          "namedValuesOfANewerPlugin_giveTheSameKeys");
    CHECK(stderr_lines(path_of("count-wider.err"), "xlac runtime") == 0, "silent");

    /* loading ahead: program 1 loaded ahead and claimed (a hit), program 3's junk entry fails to load ahead
     * and then falls back as before, program 2 (on the list, not in the layout) misses
     * (loadedAhead_isClaimed_andAFailedLoadFallsBack) */
    uint8_t list[3][32];
    memcpy(list[0], key1, 32);
    memcpy(list[1], key3, 32);
    uint8_t key2[32];
    REQUIRE(ident1, "program 1's identity");
    key_of(2, (xspan){(const uint8_t *)ident1, strlen(ident1)}, key2);
    free(ident1);
    memcpy(list[2], key2, 32);
    write_preload_list(dir, "run.keys", (const uint8_t (*)[32])list, 3);
    mkdirs(path_of("stats-preload"));
    preload_plan ahead = {{{1, 3, 2}, 1, 1, 1, 0}, 3, {1, 1, 0, 2}};
    const char *e4[] = {creal, counted, env("XLAC_PJRT_LAYOUT=%s", dir), env("XLAC_PJRT_PRELOAD=%s/preload/run.keys", dir),
                        env("XLAC_PJRT_STATS=%s", path_of("stats-preload")), NULL};
    CHECK(run_child(scenario_preload, &ahead, path_of("preload.err"), e4) == 0, "loading ahead");
    stats = read_stats(path_of("stats-preload"));
    char hex1[65];
    xhex(key1, 32, hex1);
    snprintf(want, sizeof want, "preloaded\tpjrt1:%s\t", hex1);
    CHECK(count_lines(stats, want) == 1, "one preloaded line: %s", stats);
    snprintf(want, sizeof want, "preload_hit\tpjrt1:%s\t", hex1);
    CHECK(count_lines(stats, want) == 1 && count_lines(stats, "hit\t") == 1, "one hit, loaded ahead: %s", stats);
    free(stats);
    /* a run whose first request is not on the list stops loading ahead; what was loaded and never claimed
     * is destroyed with the client, and counted (outOfSequence_stops_andUnclaimedAreDestroyed) */
    write_preload_list(dir, "changed.keys", (const uint8_t (*)[32])list, 1);
    preload_plan changed = {{{2}, 0, 1, 0, 0}, 1, {1, 0, 1, 0}};
    const char *e5[] = {creal, counted, env("XLAC_PJRT_LAYOUT=%s", dir),
                        env("XLAC_PJRT_PRELOAD=%s/preload/changed.keys", dir), NULL};
    CHECK(run_child(scenario_preload, &changed, path_of("preload-changed.err"), e5) == 0, "out of sequence");
    CHECK(stderr_lines(path_of("preload-changed.err"), "xlac runtime") == 0, "silent");
    free(dir);
  }

  /* 6. eight threads: hits of program 1 and misses of their own programs, at once */
  mkdirs(path_of("stats-threads"));
  {
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_LAYOUT=%s", layout),
                       env("XLAC_PJRT_STATS=%s", path_of("stats-threads")), NULL};
    CHECK(run_child(scenario_threads, NULL, path_of("threads.err"), e) == 0, "threads");
    stats = read_stats(path_of("stats-threads"));
    CHECK(count_lines(stats, "hit\t") == 24 && count_lines(stats, "miss\t") == 24, "whole lines: %s", stats);
    free(stats);
  }

  /* 7. four processes record the same key at once: one whole record, no temporaries */
  mkdirs(path_of("spool-many"));
  {
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_RECORD=%s", path_of("spool-many")), NULL};
    REQUIRE(pipe(go_pipe) == 0, "pipe");
    pid_t kids[4];
    for (int i = 0; i < 4; i++) {
      kids[i] = fork();
      if (kids[i] == 0) {
        close(go_pipe[1]); /* only the parent may hold the write end, or no reader sees its close */
        exit(run_child(scenario_record_on_signal, NULL, path_of("many-%d.err", i), e));
      }
    }
    close(go_pipe[0]);
    sleep(3); /* let every child load the plugin and create its client */
    close(go_pipe[1]);
    for (int i = 0; i < 4; i++) {
      int status;
      waitpid(kids[i], &status, 0);
      CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "recorder %d", i);
    }
    CHECK(count_files(path_of("spool-many"), "", ".xpr") == 1, "one record");
    CHECK(count_files(path_of("spool-many"), ".tmp", "") == 0, "no temporaries");
    uint8_t key3[32];
    key_of(3, rec.identity, key3);
    char hex3[65];
    xhex(key3, 32, hex3);
    record r3;
    CHECK(read_record(path_of("spool-many/%s.xpr", hex3), &r3) == 0, "the record is whole");
    free(r3.bytes);
  }

  /* 8. a full disk while recording: counted as unrecorded, the compile still succeeds */
  {
    char *full = strdup(path_of("full"));
    mkdirs(full);
    int mounted = geteuid() == 0 && mount("tmpfs", full, "tmpfs", 0, "size=64k") == 0;
    if (mounted) { /* fill it up */
      char filler[4096];
      memset(filler, 'x', sizeof filler);
      int fd = open(path_of("full/filler"), O_WRONLY | O_CREAT, 0644);
      while (fd >= 0 && write(fd, filler, sizeof filler) > 0) {
      }
      if (fd >= 0) close(fd);
      printf("test_proxy: full disk = a filled 64 KiB tmpfs\n");
    } else { /* no tmpfs: a record "directory" that is a file */
      free(full);
      full = strdup(path_of("not-a-dir"));
      write_file(full, "x", 1);
      printf("test_proxy: full disk = a record path that is a file (cannot mount a tmpfs here)\n");
    }
    mkdirs(path_of("stats-full"));
    compile_plan plan = {{1}, 0, 1, 0, 1};
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_RECORD=%s", full),
                       env("XLAC_PJRT_STATS=%s", path_of("stats-full")), NULL};
    CHECK(run_child(scenario_compile, &plan, path_of("full.err"), e) == 0, "full disk run");
    CHECK(stderr_lines(path_of("full.err"), "xlac runtime: ") == 1, "one line");
    stats = read_stats(path_of("stats-full"));
    CHECK(count_lines(stats, "unrecorded\tpjrt1:") == 1, "unrecorded line: %s", stats);
    free(stats);
    if (mounted) {
      CHECK(count_files(full, ".tmp", "") == 0, "no temporaries left");
      CHECK(count_files(full, "", ".xpr") == 0, "no record");
      umount(full);
    }
    free(full);
  }

  /* 9. kill -9 while recording: whatever records are there are whole */
  mkdirs(path_of("spool-killed"));
  {
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_RECORD=%s", path_of("spool-killed")), NULL};
    pid_t kid = spawn_child(scenario_record_forever, NULL, path_of("killed.err"), e);
    /* wait for some records, then kill the recorder somewhere in its next compile or write */
    for (int i = 0; i < 200 && count_files(path_of("spool-killed"), "", ".xpr") < 5; i++) usleep(50000);
    usleep(7919);
    CHECK(kill(kid, SIGKILL) == 0, "killed the recorder");
    int status;
    waitpid(kid, &status, 0);
    CHECK(WIFSIGNALED(status), "the recorder died of the signal");
    int whole = 0, broken = 0;
    DIR *k = opendir(path_of("spool-killed"));
    for (struct dirent *de; k && (de = readdir(k));) {
      if (!strstr(de->d_name, ".xpr")) continue;
      record r;
      if (read_record(path_of("spool-killed/%s", de->d_name), &r) == 0) whole++;
      else broken++;
      free(r.bytes);
    }
    if (k) closedir(k);
    CHECK(whole >= 5 && broken == 0, "after kill -9: %d whole records, %d broken", whole, broken);
  }

  /* 10. a full disk without root: files may not grow past 2 KiB (fileSizeLimitLeavesNothingBehind) */
  mkdirs(path_of("spool-fsize"));
  {
    compile_plan plan = {{1}, 0, 1, 0, 1};
    const char *e[] = {real, plugin_env, env("XLAC_PJRT_RECORD=%s", path_of("spool-fsize")), NULL};
    CHECK(run_child(scenario_file_size_limit, &plan, path_of("fsize.err"), e) == 0, "file size limit run");
    CHECK(stderr_lines(path_of("fsize.err"), "File too large") == 1, "says why, once");
    CHECK(count_files(path_of("spool-fsize"), ".tmp", "") == 0, "no temporaries left");
    CHECK(count_files(path_of("spool-fsize"), "", ".xpr") == 0, "no record");
  }

  /* 11. kill -9 in the middle of writing a 64 MB record: no record, or a whole one
   * (killedMidWriteLeavesNoPartialRecord) */
  mkdirs(path_of("spool-big"));
  {
    const char *e[] = {NULL};
    pid_t kid = spawn_child(scenario_big_record, path_of("spool-big"), path_of("big.err"), e);
    int seen = 0;
    for (int i = 0; i < 20000 && !seen; i++) {
      seen = count_files(path_of("spool-big"), ".tmp", "") > 0;
      if (!seen) usleep(500);
    }
    CHECK(seen, "the temporary appeared");
    kill(kid, SIGKILL);
    int status;
    waitpid(kid, &status, 0);
    DIR *k = opendir(path_of("spool-big"));
    int partial = 0, whole = 0;
    for (struct dirent *de; k && (de = readdir(k));) {
      if (!strstr(de->d_name, ".xpr")) continue;
      record r;
      if (read_record(path_of("spool-big/%s", de->d_name), &r) == 0) whole++;
      else partial++;
      free(r.bytes);
    }
    if (k) closedir(k);
    CHECK(partial == 0, "after kill -9: %d partial records (%d whole)", partial, whole);
    if (WIFSIGNALED(status)) printf("test_proxy: killed the 64 MB record write (%d whole records)\n", whole);
  }

  free(identity);
  free(rec.bytes);
  free(layout);
  if (!test_failures) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
  }
  return test_summary("test_proxy");
}
