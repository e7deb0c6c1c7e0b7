/*
 * Loading ahead (preload.c) against a stand-in plugin table whose DeserializeAndLoad can be slowed
 * down or made to fail per executable, and which counts what it loads, destroys and errs: the order
 * of loads, a claim that waits for its load, a claim after it, the stop when the run leaves the
 * expected sequence, the byte budget, unclaimed executables destroyed and counted, a failing load
 * that leaves the compile to the usual way, concurrent claims, and the list's format and trust.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "files.h"
#include "preload.h"
#include "sha256.h"
#include "testlib.h"

/* ------------------------------------------------------------ the stand-in plugin */

static _Alignas(16) unsigned char table[XP_SLOT_OFFSET(XP_EXECUTABLE_DESERIALIZE_AND_LOAD) + 8];
static atomic_int live_executables, live_errors, load_log_size;
static int load_log[64];      /* the k of each load begun, in order */
static atomic_int delay_ms[64]; /* per k: how long its load takes */

struct xpjrt_error {
  int unused;
};
struct xpjrt_loaded {
  int k;
};

/* An executable's bytes: "K<k>" padded to its size; a first byte 'F' fails its load. */
static xpjrt_error *fake_deserialize(xp_deserialize_and_load_args *a) {
  int k = atoi(a->serialized_executable + 1);
  int at = atomic_fetch_add(&load_log_size, 1);
  if (at < 64) load_log[at] = k;
  int ms = k >= 0 && k < 64 ? atomic_load(&delay_ms[k]) : 0;
  if (ms) nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000}, NULL);
  if (a->serialized_executable[0] == 'F') {
    atomic_fetch_add(&live_errors, 1);
    return calloc(1, sizeof(xpjrt_error));
  }
  xpjrt_loaded *l = calloc(1, sizeof *l);
  l->k = k;
  atomic_fetch_add(&live_executables, 1);
  a->loaded_executable = l;
  return NULL;
}

static xpjrt_error *fake_loaded_destroy(xp_loaded_destroy_args *a) {
  free(a->executable);
  atomic_fetch_sub(&live_executables, 1);
  return NULL;
}

static void fake_error_destroy(xp_error_destroy_args *a) {
  free(a->error);
  atomic_fetch_sub(&live_errors, 1);
}

/* The device's memory: a limit of 0 is a plugin that reports none (an error, as the CPU plugin's). */
static atomic_llong memory_limit, memory_in_use;
static xpjrt_device *const fake_devices[1] = {(xpjrt_device *)0x10};

static xpjrt_error *fake_devices_fn(xp_client_devices_args *a) {
  a->devices = fake_devices;
  a->num_devices = 1;
  return NULL;
}

static xpjrt_error *fake_memory_stats(xp_device_memory_stats_args *a) {
  if (a->device != fake_devices[0] || a->struct_size < XP_SIZE(xp_device_memory_stats_args, bytes_limit_is_set)) abort();
  if (!atomic_load(&memory_limit)) {
    atomic_fetch_add(&live_errors, 1);
    return calloc(1, sizeof(xpjrt_error));
  }
  a->bytes_limit = atomic_load(&memory_limit);
  a->bytes_limit_is_set = true;
  a->bytes_in_use = atomic_load(&memory_in_use);
  return NULL;
}

static void put(unsigned slot, const void *fn) { memcpy(table + XP_SLOT_OFFSET(slot), &fn, sizeof fn); }

static void make_table(void) {
  xpjrt_api_header h = {sizeof table, NULL, {24, NULL, 0, 81}};
  memcpy(table, &h, sizeof h);
  put(XP_ERROR_DESTROY, (const void *)fake_error_destroy);
  put(XP_LOADED_DESTROY, (const void *)fake_loaded_destroy);
  put(XP_EXECUTABLE_DESERIALIZE_AND_LOAD, (const void *)fake_deserialize);
  put(XP_CLIENT_ADDRESSABLE_DEVICES, (const void *)fake_devices_fn);
  put(XP_DEVICE_MEMORY_STATS, (const void *)fake_memory_stats);
}

/* ------------------------------------------------------------ a layout and its list */

static char layout[600], list[700];

static void key_of(int k, uint8_t key[32]) {
  char text[32];
  snprintf(text, sizeof text, "test-key-%d", k);
  xsha256_buffer(text, strlen(text), key);
}

static void put_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Writes entry k with an executable of `size` bytes; `fail`: one whose load fails. */
static void write_entry(int k, size_t size, int fail) {
  uint8_t key[32], digest[32];
  key_of(k, key);
  uint8_t *exe = calloc(1, size);
  snprintf((char *)exe, size, "%c%d", fail ? 'F' : 'K', k);
  xsha256_buffer(exe, size, digest);
  uint8_t header[XLAYOUT_HEADER] = {0};
  memcpy(header, XLAYOUT_MAGIC, 8);
  memcpy(header + 8, key, 32);
  put_le64(header + 40, size);
  memcpy(header + 48, digest, 32);
  put_le64(header + 80, 1000u * (uint64_t)k);
  char hex[65], path[800];
  xhex(key, 32, hex);
  snprintf(path, sizeof path, "%s/entries/%.2s", layout, hex);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/entries/%.2s/%s.xpx", layout, hex, hex);
  FILE *f = fopen(path, "wb");
  REQUIRE(f, "cannot write %s", path);
  fwrite(header, 1, sizeof header, f);
  fwrite(exe, 1, size, f);
  fclose(f);
  free(exe);
}

/* The list of the ks (0-terminated). */
static void write_list(const int *ks) {
  FILE *f = fopen(list, "w");
  REQUIRE(f, "cannot write %s", list);
  fprintf(f, "xlac-preload 1\n");
  for (; *ks; ks++) {
    uint8_t key[32];
    char hex[65];
    key_of(*ks, key);
    xhex(key, 32, hex);
    fprintf(f, "pjrt1:%s\n", hex);
  }
  fclose(f);
}

static void reset(void) {
  atomic_store(&load_log_size, 0);
  for (int i = 0; i < 64; i++) atomic_store(&delay_ms[i], 0);
}

static xpreload *start(uint64_t budget) {
  xpreload_setup s = {table, 81, layout, NULL, (xpjrt_client *)0x1, budget};
  char reason[700] = "";
  xpreload *p = xpreload_start(list, &s, reason, sizeof reason);
  REQUIRE(p, "not started: %s", reason);
  return p;
}

static void sleep_ms(int ms) { nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000}, NULL); }

/* Waits until the preload counted `loaded + failed` loads (at most 5 s). */
static void settle(xpreload *p, uint64_t n) {
  for (int i = 0; i < 500; i++) {
    uint64_t c[4];
    xpreload_counts(p, c);
    if (c[0] + c[3] >= n) return;
    sleep_ms(10);
  }
}

static int claim(xpreload *p, int k, xpjrt_loaded **l, uint64_t *waited) {
  uint8_t key[32];
  key_of(k, key);
  uint64_t w = 0, hidden = 0, compile = 0;
  xpjrt_loaded *got = NULL;
  int r = xpreload_claim(p, key, &got, &w, &hidden, &compile);
  if (l) *l = got;
  if (waited) *waited = w;
  if (r == XPRELOAD_CLAIMED) CHECK(compile == 1000u * (uint64_t)k, "the entry's compile time: %llu", (unsigned long long)compile);
  return r;
}

static void release(xpjrt_loaded *l) {
  xp_loaded_destroy_args d = {sizeof d, NULL, l};
  fake_loaded_destroy(&d);
}

static void finish(xpreload *p) {
  xpreload_stop(p);
  xpreload_free(p);
}

/* ------------------------------------------------------------ concurrent claims */

typedef struct {
  xpreload *p;
  int k;
  int result;
  xpjrt_loaded *got;
} claimer;

static void *claim_thread(void *arg) {
  claimer *c = arg;
  c->result = claim(c->p, c->k, &c->got, NULL);
  return NULL;
}

int main(void) {
  const char *base = getenv("XLAC_TEST_TMP");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/preload-%ld", base ? base : "/tmp", (long)getpid());
  mkdir(base ? base : "/tmp", 0700);
  REQUIRE(mkdir(dir, 0700) == 0, "mkdir %s: %s", dir, strerror(errno));
  snprintf(layout, sizeof layout, "%s/layout", dir);
  char path[800];
  mkdir(layout, 0700);
  snprintf(path, sizeof path, "%s/entries", layout);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/preload", layout);
  mkdir(path, 0700);
  snprintf(list, sizeof list, "%s/preload/command.keys", layout);
  make_table();
  for (int k = 1; k <= 9; k++) write_entry(k, 1000, k == 7);
  write_entry(10, 5000, 0);

  /* loadsInTheListsOrder, thenClaimTakesTheLoadedExecutable */
  {
    reset();
    write_list((int[]){3, 1, 2, 4, 0});
    xpreload *p = start(1 << 20);
    settle(p, 4);
    CHECK(atomic_load(&load_log_size) == 4, "loads: %d", atomic_load(&load_log_size));
    CHECK(load_log[0] == 3 && load_log[1] == 1 && load_log[2] == 2 && load_log[3] == 4, "order %d %d %d %d",
          load_log[0], load_log[1], load_log[2], load_log[3]);
    xpjrt_loaded *l = NULL;
    CHECK(claim(p, 1, &l, NULL) == XPRELOAD_CLAIMED && l && l->k == 1, "claim after loaded");
    CHECK(claim(p, 1, NULL, NULL) == XPRELOAD_NONE, "a second compile of one key goes the usual way");
    if (l) release(l);
    finish(p);
  }

  /* claimWhileLoading_waitsForTheLoad */
  {
    reset();
    atomic_store(&delay_ms[1], 300);
    write_list((int[]){1, 2, 0});
    xpreload *p = start(1 << 20);
    sleep_ms(50);
    xpjrt_loaded *l = NULL;
    uint64_t waited = 0;
    CHECK(claim(p, 1, &l, &waited) == XPRELOAD_CLAIMED && l && l->k == 1, "claim while loading");
    CHECK(waited >= 150u * 1000000u, "waited only %llu ns", (unsigned long long)waited);
    CHECK(atomic_load(&load_log_size) >= 1 && load_log[0] == 1, "loaded once");
    if (l) release(l);
    finish(p);
  }

  /* requestBeforeItsLoad_goesTheUsualWay_andIsNotLoaded */
  {
    reset();
    atomic_store(&delay_ms[1], 200);
    write_list((int[]){1, 2, 3, 0});
    xpreload *p = start(1 << 20);
    sleep_ms(30);
    CHECK(claim(p, 3, NULL, NULL) == XPRELOAD_NONE, "not loaded yet: the usual way");
    settle(p, 2);
    sleep_ms(50);
    int loaded3 = 0;
    for (int i = 0; i < atomic_load(&load_log_size); i++) loaded3 |= load_log[i] == 3;
    CHECK(!loaded3, "a key whose request came first was loaded ahead anyway");
    finish(p);
  }

  /* outOfSequenceRequest_stopsLoadingAhead */
  {
    reset();
    atomic_store(&delay_ms[2], 300);
    write_list((int[]){1, 2, 3, 4, 0});
    xpreload *p = start(1 << 20);
    sleep_ms(100); /* 1 loaded, 2 loading */
    CHECK(claim(p, 8, NULL, NULL) == XPRELOAD_NONE, "a key not on the list");
    sleep_ms(400);
    CHECK(atomic_load(&load_log_size) == 2, "loads after the stop: %d", atomic_load(&load_log_size));
    CHECK(claim(p, 3, NULL, NULL) == XPRELOAD_NONE, "3 was never loaded: the usual way");
    xpjrt_loaded *l = NULL;
    CHECK(claim(p, 2, &l, NULL) == XPRELOAD_CLAIMED, "what was loading when it stopped is still claimed");
    if (l) release(l);
    CHECK(xpreload_stop(p) == 1, "1 unclaimed");
    xpreload_free(p);
  }

  /* budget_loadsNoFurtherUntilAClaimFreesRoom; anExecutableLargerThanTheBudgetIsNotLoadedAhead */
  {
    reset();
    write_list((int[]){10, 1, 2, 3, 0});
    xpreload *p = start(2500);
    settle(p, 3); /* 10 is too large (failed), 1 and 2 fit */
    sleep_ms(100);
    uint64_t c[4];
    xpreload_counts(p, c);
    CHECK(c[0] == 2 && c[3] == 1, "within 2500 bytes: loaded %llu, not loaded %llu", (unsigned long long)c[0],
          (unsigned long long)c[3]);
    xpjrt_loaded *l = NULL;
    CHECK(claim(p, 1, &l, NULL) == XPRELOAD_CLAIMED, "claim 1");
    settle(p, 4);
    xpreload_counts(p, c);
    CHECK(c[0] == 3, "a claim makes room: loaded %llu", (unsigned long long)c[0]);
    if (l) release(l);
    finish(p);
  }

  /* budgetWait_leavesTheWaitingKeyToItsRequest: 3 waits for room that only claims of 1 or 2 make; its own
   * request must not wait for it (in a child: without the fix it waits for ever) */
  {
    reset();
    write_list((int[]){1, 2, 3, 0});
    pid_t pid = fork();
    if (pid == 0) {
      alarm(5);
      xpreload *p = start(2500);
      settle(p, 2);
      sleep_ms(100);
      int r = claim(p, 3, NULL, NULL);
      uint64_t c[4];
      xpreload_counts(p, c);
      int ok = r == XPRELOAD_NONE && c[0] == 2;
      finish(p);
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the request for the key waiting on the budget: status %d",
          status);
  }

  /* deviceMemory_boundsTheBudget: half of what the device has free (4000 - 0), not the 1 MiB asked */
  {
    reset();
    atomic_store(&memory_limit, 5000);
    atomic_store(&memory_in_use, 1000);
    write_list((int[]){1, 2, 3, 0});
    xpreload *p = start(1 << 20);
    settle(p, 2);
    sleep_ms(100);
    uint64_t c[4];
    xpreload_counts(p, c);
    CHECK(c[0] == 2, "within half the free device memory: loaded %llu", (unsigned long long)c[0]);
    finish(p);
    atomic_store(&memory_limit, 0);
  }

  /* unclaimedExecutables_areDestroyedWithTheClient_andCounted */
  {
    reset();
    int before = atomic_load(&live_executables);
    write_list((int[]){1, 2, 3, 0});
    xpreload *p = start(1 << 20);
    settle(p, 3);
    xpjrt_loaded *l = NULL;
    CHECK(claim(p, 2, &l, NULL) == XPRELOAD_CLAIMED, "claim 2");
    CHECK(xpreload_stop(p) == 2, "2 unclaimed destroyed");
    uint64_t c[4];
    xpreload_counts(p, c);
    CHECK(c[0] == 3 && c[1] == 1 && c[2] == 2, "counts %llu %llu %llu", (unsigned long long)c[0],
          (unsigned long long)c[1], (unsigned long long)c[2]);
    CHECK(claim(p, 1, NULL, NULL) == XPRELOAD_NONE, "nothing claimed after the stop");
    if (l) release(l);
    CHECK(atomic_load(&live_executables) == before, "live executables: %d", atomic_load(&live_executables) - before);
    xpreload_free(p);
  }

  /* failingLoad_leavesTheCompileToTheUsualWay */
  {
    reset();
    write_list((int[]){7, 1, 0});
    xpreload *p = start(1 << 20);
    settle(p, 2);
    CHECK(claim(p, 7, NULL, NULL) == XPRELOAD_NONE, "a failed load is not claimed");
    xpjrt_loaded *l = NULL;
    CHECK(claim(p, 1, &l, NULL) == XPRELOAD_CLAIMED, "the next one still is");
    uint64_t c[4];
    xpreload_counts(p, c);
    CHECK(c[3] == 1, "failed loads %llu", (unsigned long long)c[3]);
    CHECK(atomic_load(&live_errors) == 0, "errors not destroyed: %d", atomic_load(&live_errors));
    if (l) release(l);
    finish(p);
  }

  /* absentEntry_isNotLoaded_andStaysInSequence */
  {
    reset();
    write_list((int[]){11, 1, 0}); /* 11 has no entry: a miss of this run, not a change of program */
    xpreload *p = start(1 << 20);
    settle(p, 2);
    CHECK(claim(p, 11, NULL, NULL) == XPRELOAD_NONE, "absent");
    xpjrt_loaded *l = NULL;
    CHECK(claim(p, 1, &l, NULL) == XPRELOAD_CLAIMED, "still in sequence");
    if (l) release(l);
    finish(p);
  }

  /* concurrentClaims_eachExecutableGoesToExactlyOneCaller */
  {
    reset();
    for (int k = 1; k <= 6; k++) atomic_store(&delay_ms[k], 20);
    write_list((int[]){1, 2, 3, 4, 5, 6, 0});
    xpreload *p = start(1 << 20);
    claimer c[12];
    pthread_t t[12];
    for (int i = 0; i < 12; i++) {
      c[i] = (claimer){p, 1 + i % 6, -1, NULL};
      REQUIRE(pthread_create(&t[i], NULL, claim_thread, &c[i]) == 0, "thread");
    }
    int got[7] = {0};
    for (int i = 0; i < 12; i++) {
      pthread_join(t[i], NULL);
      if (c[i].result == XPRELOAD_CLAIMED) {
        got[c[i].k]++;
        CHECK(c[i].got && c[i].got->k == c[i].k, "claimed the wrong executable");
        release(c[i].got);
      }
    }
    for (int k = 1; k <= 6; k++) CHECK(got[k] <= 1, "key %d claimed %d times", k, got[k]);
    finish(p);
    CHECK(atomic_load(&live_executables) == 0, "live executables: %d", atomic_load(&live_executables));
  }

  /* forkedChild_neitherClaimsNorWaits */
  {
    reset();
    atomic_store(&delay_ms[1], 2000);
    write_list((int[]){1, 0});
    xpreload *p = start(1 << 20);
    sleep_ms(30);
    pid_t pid = fork();
    if (pid == 0) {
      alarm(3); /* a child that waits for a load no thread of its own does would hang here */
      struct timespec a, b;
      clock_gettime(CLOCK_MONOTONIC, &a);
      int r = claim(p, 1, NULL, NULL);
      clock_gettime(CLOCK_MONOTONIC, &b);
      _exit(r == XPRELOAD_NONE && b.tv_sec - a.tv_sec < 1 && xpreload_stop(p) == 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child claimed or waited");
    finish(p);
  }

  /* theListsFormat */
  {
    uint8_t (*keys)[32] = NULL;
    size_t n = 0;
    char why[200];
    const char *k1 = "pjrt1:0000000000000000000000000000000000000000000000000000000000000001\n";
    char text[400];
    snprintf(text, sizeof text, "xlac-preload 1\n%s%s", k1, k1);
    CHECK(xpreload_parse(text, strlen(text), &keys, &n, why, sizeof why) == 0 && n == 1 && keys[0][31] == 1,
          "a duplicate is dropped");
    free(keys);
    CHECK(xpreload_parse("xlac-preload 2\n", 15, &keys, &n, why, sizeof why) == -1, "another version");
    snprintf(text, sizeof text, "xlac-preload 1\n%s", k1);
    CHECK(xpreload_parse(text, strlen(text) - 1, &keys, &n, why, sizeof why) == -1, "cut short");
    text[20] = 'X';
    CHECK(xpreload_parse(text, strlen(text), &keys, &n, why, sizeof why) == -1 && strstr(why, "line 2"),
          "bad hex: %s", why);
  }

  /* untrustedOrMissingList_loadsNothing */
  {
    xpreload_setup s = {table, 81, layout, NULL, (xpjrt_client *)0x1, 1 << 20};
    char reason[700];
    write_list((int[]){1, 0});
    chmod(list, 0666);
    CHECK(!xpreload_start(list, &s, reason, sizeof reason) && strstr(reason, "not trusted"), "0666: %s", reason);
    chmod(list, 0600);
    char link[800];
    snprintf(link, sizeof link, "%s/preload/link.keys", layout);
    CHECK(symlink(list, link) == 0, "symlink");
    CHECK(!xpreload_start(link, &s, reason, sizeof reason) && strstr(reason, "symbolic link"), "a link: %s", reason);
    snprintf(link, sizeof link, "%s/preload/none.keys", layout);
    CHECK(!xpreload_start(link, &s, reason, sizeof reason) && !reason[0], "no list: %s", reason);
    snprintf(link, sizeof link, "%s/no-such-dir/none.keys", layout);
    CHECK(!xpreload_start(link, &s, reason, sizeof reason) && !reason[0], "no directory: %s", reason);
  }

  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0, "cleanup");
  return test_summary("test_preload");
}
