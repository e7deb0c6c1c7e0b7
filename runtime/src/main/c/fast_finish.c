/* xlac run's finish without a JVM (fast_finish.h; runtime/README.md, "The finish without a JVM"). It does
 * only what the JVM's finish (pipeline RuntimeRun.finish, cli RunCommand) would do for a run in which
 * every compile was served: it reads the statistics with the JVM's grammar, and takes the JVM path on
 * anything else (a miss, a fallback, a recording, a line it does not know, a preload list that changes, a
 * plugin replaced during the run). Its order keeps a fallback whole: the report (which the JVM would write
 * again) before the pending hits (which the JVM would count twice), and nothing printed before both. */
#define _GNU_SOURCE /* mkostemp */
#include "fast_finish.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "reason.h"

#define MAX_KEYS 65536            /* distinct keys of a run finished here (the pending record's bound) */
#define PRELOAD_MAX_KEYS 4096     /* runtime PreloadList.MAX_KEYS */
#define STATS_FILE_MAX (64u << 20)
#define KEY_TEXT 70               /* "pjrt1:" and 64 hex digits */

typedef struct {
  char (*keys)[KEY_TEXT + 1]; /* in the order first seen: the run's requests, as RunStatistics.requested */
  unsigned long long *counts;
  size_t n;
  uint32_t *slots; /* open addressing over keys, index + 1 (0: empty) */
  size_t n_slots;
  unsigned long long hits, serve_ns, saved_ns, preloaded, preload_hits, preload_hidden_ns;
} tally;

static void tally_free(tally *t) {
  free(t->keys);
  free(t->counts);
  free(t->slots);
}

static int is_key(const char *s) {
  if (strlen(s) != KEY_TEXT || strncmp(s, "pjrt1:", 6)) return 0;
  for (const char *c = s + 6; *c; c++)
    if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'))) return 0;
  return 1;
}

/* A non-negative decimal as Java's Long.parseLong reads one without a sign; -1 otherwise. */
static int number(const char *s, unsigned long long *v) {
  if (!*s || strlen(s) > 18) return -1;
  unsigned long long x = 0;
  for (const char *c = s; *c; c++) {
    if (*c < '0' || *c > '9') return -1;
    x = x * 10 + (unsigned long long)(*c - '0');
  }
  *v = x;
  return 0;
}

static int add_hit(tally *t, const char *key) {
  uint64_t h = 1469598103934665603ull;
  for (const char *c = key + 6; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  size_t i = (size_t)(h & (t->n_slots - 1));
  while (t->slots[i]) {
    size_t k = t->slots[i] - 1;
    if (!strcmp(t->keys[k], key)) {
      t->counts[k]++;
      return 0;
    }
    i = (i + 1) & (t->n_slots - 1);
  }
  if (t->n == MAX_KEYS) return -1;
  memcpy(t->keys[t->n], key, KEY_TEXT + 1);
  t->counts[t->n] = 1;
  t->slots[i] = (uint32_t)++t->n;
  return 0;
}

/* One statistics line (runtime/README.md, "Run statistics"); -1 with `reason` for any line the run's
 * finish here does not take. */
static int add_line(tally *t, char *line, char *reason, size_t rs) {
  char *f[6];
  size_t n = 0;
  for (char *s = line;; n++) {
    if (n == 6) return xreason(reason, rs, "a statistics line with too many fields");
    f[n] = s;
    char *tab = strchr(s, '\t');
    if (!tab) {
      n++;
      break;
    }
    *tab = 0;
    s = tab + 1;
  }
  unsigned long long a, b, c;
  if (!strcmp(f[0], "hit") && n == 5 && is_key(f[1]) && !number(f[2], &a) && !number(f[3], &b) && !number(f[4], &c)) {
    if (add_hit(t, f[1])) return xreason(reason, rs, "more than %d distinct executables", MAX_KEYS);
    t->hits++;
    t->serve_ns += a + b;
    t->saved_ns += c;
    return 0;
  }
  if (!strcmp(f[0], "preloaded") && n == 3 && is_key(f[1]) && !number(f[2], &a)) {
    t->preloaded++;
    return 0;
  }
  if (!strcmp(f[0], "preload_hit") && n == 4 && is_key(f[1]) && !number(f[2], &a) && !number(f[3], &b)) {
    t->preload_hits++;
    t->preload_hidden_ns += b;
    return 0;
  }
  if (!strcmp(f[0], "miss") || !strcmp(f[0], "fallback") || !strcmp(f[0], "recorded") || !strcmp(f[0], "unrecorded"))
    return xreason(reason, rs, "not every compile was served (a %s)", f[0]);
  return xreason(reason, rs, "a statistics line it does not read ('%s')", f[0]);
}

/* The whole of `path`, a regular file (not followed if a link, never waited on if a FIFO) of at most `max`
 * bytes, NUL-terminated: malloc'd text and *size, or NULL. */
static char *read_whole(const char *path, size_t max, size_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat st;
  char *text = NULL;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= max &&
      (text = malloc((size_t)st.st_size + 1))) {
    size_t got = 0;
    while (got < (size_t)st.st_size) {
      ssize_t k = read(fd, text + got, (size_t)st.st_size - got);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;
      got += (size_t)k;
    }
    text[got] = 0;
    if (got != (size_t)st.st_size) {
      free(text);
      text = NULL;
    }
    *size = got;
  }
  if (fd >= 0) close(fd);
  return text;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Doubles *names (at least 16 slots); 0, with *names as it was, when there is no memory. */
static int grow(char ***names, size_t *cap) {
  size_t more = *cap ? 2 * *cap : 16;
  char **bigger = realloc(*names, more * sizeof *bigger);
  if (!bigger) return 0;
  *names = bigger;
  *cap = more;
  return 1;
}

/* Reads every stats-*.tsv of `dir` in name order (as RunStatistics.read); anything else there (a miss's
 * request, a stranger's file) is the JVM's to look at. */
static int read_stats(const char *dir, tally *t, char *reason, size_t rs) {
  DIR *d = opendir(dir);
  if (!d) return xreason(reason, rs, "cannot read the statistics directory: %s", strerror(errno));
  char **names = NULL;
  size_t n = 0, cap = 0;
  int r = 0;
  struct dirent *de;
  while (!r && (de = readdir(d))) {
    const char *name = de->d_name;
    size_t len = strlen(name);
    if (!strcmp(name, ".") || !strcmp(name, "..")) continue;
    if (strncmp(name, "stats-", 6) || len < 10 || strcmp(name + len - 4, ".tsv")) {
      r = xreason(reason, rs, "the statistics directory holds %s", name);
    } else if (n == cap && !grow(&names, &cap)) {
      r = xreason(reason, rs, "out of memory");
    } else if (!(names[n] = strdup(name))) {
      r = xreason(reason, rs, "out of memory");
    } else {
      n++;
    }
  }
  closedir(d);
  if (!r && n) qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; !r && i < n; i++) {
    size_t pl = strlen(dir) + strlen(names[i]) + 2, got = 0;
    char *path = malloc(pl);
    char *text = NULL;
    if (!path) {
      r = xreason(reason, rs, "out of memory");
    } else {
      snprintf(path, pl, "%s/%s", dir, names[i]);
      if (!(text = read_whole(path, STATS_FILE_MAX, &got)) || memchr(text, 0, got))
        r = xreason(reason, rs, "%s is not a statistics file it can read", names[i]);
      for (char *line = text; !r && *line;) {
        char *nl = strchr(line, '\n');
        if (!nl) {
          r = xreason(reason, rs, "%s ends in a partial line", names[i]);
          break;
        }
        *nl = 0;
        if (*line) r = add_line(t, line, reason, rs);
        line = nl + 1;
      }
    }
    free(text);
    free(path);
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  return r;
}

/* Whether the list the next run loads ahead (PreloadList.text of this run's requests) is already `file`:
 * writing it is the JVM's (under the cache's lock). */
static int preload_list_holds(const tally *t, const char *file, char *reason, size_t rs) {
  if (!t->n) return 0; /* a run without requests writes no list */
  if (!file) return xreason(reason, rs, "no list to load ahead");
  size_t keys = t->n < PRELOAD_MAX_KEYS ? t->n : PRELOAD_MAX_KEYS;
  size_t want = strlen("xlac-preload 1\n") + keys * (KEY_TEXT + 1);
  size_t got = 0;
  char *text = read_whole(file, want, &got);
  int same = text && got == want && !strncmp(text, "xlac-preload 1\n", 15);
  for (size_t i = 0, at = 15; same && i < keys; i++, at += KEY_TEXT + 1)
    same = !memcmp(text + at, t->keys[i], KEY_TEXT) && text[at + KEY_TEXT] == '\n';
  free(text);
  return same ? 0 : xreason(reason, rs, "the list to load ahead changes");
}

/* The plugin is still the file the plan was made for (the JVM forgets the stamp when it is not). */
static int plugin_unchanged(const xplan *plan, char *reason, size_t rs) {
  const char *v = xplan_set_value(plan, "XLAC_PJRT_PLUGIN_SHA256");
  unsigned long long size, mtime, dev, ino;
  char sha[65], tail;
  struct stat st;
  if (!v || !plan->plugin_real || sscanf(v, "%64[0-9a-f]:%llu:%llu:%llu:%llu%c", sha, &size, &mtime, &dev, &ino, &tail) != 5)
    return xreason(reason, rs, "the plan names no plugin identity");
  char *now = plan->plugin_given ? realpath(plan->plugin_given, NULL) : NULL;
  int moved = !now || strcmp(now, plan->plugin_real);
  free(now);
  if (moved) return xreason(reason, rs, "the plugin's path resolves to another file now");
  if (lstat(plan->plugin_real, &st) != 0 || (unsigned long long)st.st_size != size ||
      (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec != mtime ||
      (unsigned long long)st.st_dev != dev || (unsigned long long)st.st_ino != ino)
    return xreason(reason, rs, "the plugin changed during the run");
  return 0;
}

void xfinish_java_double(double v, char *out, size_t size) {
  if (isnan(v) || isinf(v)) { /* core Json writes these as null */
    snprintf(out, size, "null");
    return;
  }
  if (v == 0) {
    snprintf(out, size, signbit(v) ? "-0.0" : "0.0");
    return;
  }
  char buf[40];
  for (int p = 0; p < 17; p++) { /* the shortest correctly rounded decimal that reads back as v */
    snprintf(buf, sizeof buf, "%.*e", p, v);
    if (strtod(buf, NULL) == v) break;
  }
  char digits[24];
  size_t nd = 0;
  const char *c = buf;
  int negative = *c == '-';
  if (negative) c++;
  for (; *c && *c != 'e'; c++)
    if (*c != '.') digits[nd++] = *c;
  int e = atoi(c + 1);
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  digits[nd] = 0;
  double a = fabs(v);
  char body[64];
  if (a >= 1e-3 && a < 1e7) {
    if (e >= 0) {
      char whole[16], frac[24];
      size_t w = 0, f = 0;
      for (int i = 0; i <= e; i++) whole[w++] = (size_t)i < nd ? digits[i] : '0';
      for (size_t i = (size_t)e + 1; i < nd; i++) frac[f++] = digits[i];
      if (!f) frac[f++] = '0';
      whole[w] = frac[f] = 0;
      snprintf(body, sizeof body, "%s.%s", whole, frac);
    } else {
      snprintf(body, sizeof body, "0.%.*s%s", -e - 1, "000", digits);
    }
  } else {
    snprintf(body, sizeof body, "%c.%sE%d", digits[0], nd > 1 ? digits + 1 : "0", e);
  }
  snprintf(out, size, "%s%s", negative ? "-" : "", body);
}

/* A JSON string as core Json.quote writes one (the bytes of the path as they are: UTF-8). */
static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    switch (*c) {
      case '"': fputs("\\\"", f); break;
      case '\\': fputs("\\\\", f); break;
      case '\n': fputs("\\n", f); break;
      case '\r': fputs("\\r", f); break;
      case '\t': fputs("\\t", f); break;
      default:
        if (*c < 0x20) fprintf(f, "\\u%04x", *c);
        else fputc(*c, f);
    }
  }
  fputc('"', f);
}

static void json_seconds(FILE *f, const char *name, double s, int rounded) {
  char v[40];
  /* core Durations.round: Math.round(s * 1000) / 1000.0 */
  xfinish_java_double(rounded ? floor(s * 1000 + 0.5) / 1000.0 : s, v, sizeof v);
  fprintf(f, "  \"%s\": %s,\n", name, v);
}

/* --report, as RunResult.toJson and core Json write it, as core AtomicFiles does: a sibling temporary named as
 * SiblingTemporaries names them (.NAME.tmp-PID.N, so that a JVM removes one a killed run left), created with the
 * process's default mode, fsynced, renamed over the report, the directory fsynced. */
static int write_report(const xplan *plan, const tally *t, int exit_status, long long wall_ns, char *reason,
                        size_t rs) {
  const char *slash = strrchr(plan->report_path, '/');
  int dir_len = slash ? (int)(slash - plan->report_path) : 0;
  const char *base = slash ? slash + 1 : plan->report_path;
  size_t pl = strlen(plan->report_path) + 64;
  char *tmp = malloc(pl);
  if (!tmp) return xreason(reason, rs, "out of memory");
  int fd = -1;
  for (int n = 1; fd < 0 && n < 1000; n++) {
    snprintf(tmp, pl, "%.*s%s.%s.tmp-%ld.%d", dir_len, plan->report_path, slash ? "/" : "", base, (long)getpid(), n);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
  if (!f) {
    if (fd >= 0) {
      close(fd);
      unlink(tmp);
    }
    free(tmp);
    return xreason(reason, rs, "cannot write the report");
  }
  unsigned long long wasted = t->preloaded > t->preload_hits ? t->preloaded - t->preload_hits : 0;
  fprintf(f, "{\n  \"compiles\": %llu,\n  \"hits\": %llu,\n  \"misses\": 0,\n  \"fallbacks\": 0,\n", t->hits, t->hits);
  json_seconds(f, "compile_seconds", 0, 1);
  json_seconds(f, "saved_seconds", (double)t->saved_ns / 1e9, 1);
  fprintf(f, "  \"recorded\": 0,\n  \"unrecorded\": 0,\n  \"fallback_reasons\": [],\n");
  json_seconds(f, "miss_lookup_seconds", 0, 0);
  json_seconds(f, "miss_overhead_percent", 0, 0);
  json_seconds(f, "serve_seconds", (double)t->serve_ns / 1e9, 0);
  fprintf(f, "  \"preloaded\": %llu,\n  \"preload_hits\": %llu,\n  \"preload_wasted\": %llu,\n", t->preloaded,
          t->preload_hits, wasted);
  json_seconds(f, "preload_hidden_seconds", (double)t->preload_hidden_ns / 1e9, 0);
  fprintf(f, "  \"exit_status\": %d,\n", exit_status);
  json_seconds(f, "wall_seconds", (double)wall_ns / 1e9, 1);
  fputs("  \"plugin\": ", f);
  json_string(f, plan->report_plugin);
  fputs(",\n  \"plugin_sha256\": ", f);
  json_string(f, plan->report_sha256);
  fputs(",\n  \"layout\": ", f);
  json_string(f, plan->report_layout);
  fputs(",\n  \"ingested\": null,\n  \"remote\": null,\n  \"miss_reasons\": []\n}\n", f);
  int bad = fflush(f) != 0 || ferror(f) || fsync(fd) != 0;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, plan->report_path) != 0) {
    unlink(tmp);
    free(tmp);
    return xreason(reason, rs, "cannot write the report");
  }
  free(tmp);
  char *dir = dir_len ? strndup(plan->report_path, (size_t)dir_len) : strdup(slash ? "/" : ".");
  int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (dfd >= 0) {
    fsync(dfd); /* as AtomicFiles.syncDirectory: where a directory cannot be synced, the rename is still atomic */
    close(dfd);
  }
  free(dir);
  return 0;
}

/* Writes the run's hits for the next JVM to count (cache README, "Runtime hits waiting to be counted"):
 * PENDING/<host>-<pid>-<ns>-XXXXXX.hits, whole and fsynced before it has its name, and the directory
 * fsynced after; -1 when it cannot (the JVM counts them then). */
static int write_pending(const char *dir, const tally *t, char *reason, size_t rs) {
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) return xreason(reason, rs, "cannot make %s: %s", dir, strerror(errno));
  struct stat st;
  if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
    return xreason(reason, rs, "%s is not a private directory of this user", dir);
  DIR *d = opendir(dir);
  if (!d) return xreason(reason, rs, "cannot read %s: %s", dir, strerror(errno));
  int waiting = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t len = strlen(de->d_name);
    if (len > 5 && !strcmp(de->d_name + len - 5, ".hits")) waiting++;
  }
  closedir(d);
  if (waiting >= XFINISH_MAX_PENDING) return xreason(reason, rs, "%d runs' hits wait to be counted", waiting);

  char host[256];
  xplan_host_name(host);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  long long ns = (long long)now.tv_sec * 1000000000ll + now.tv_nsec;
  size_t pl = strlen(dir) + strlen(host) + 96;
  char *tmp = malloc(pl), *final = malloc(pl);
  if (!tmp || !final) {
    free(tmp);
    free(final);
    return xreason(reason, rs, "out of memory");
  }
  snprintf(tmp, pl, "%s/.tmp-%s-%ld-%lld-XXXXXX", dir, host, (long)getpid(), ns);
  int fd = mkostemp(tmp, O_CLOEXEC);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
  int bad = !f;
  if (f) {
    fprintf(f, "xlac-pending-hits 1\nat %lld\nsaved_ns %llu\n", ns / 1000000, t->saved_ns);
    for (size_t i = 0; i < t->n; i++) fprintf(f, "hit %s %llu\n", t->keys[i], t->counts[i]);
    fputs("end\n", f);
    bad = fflush(f) != 0 || ferror(f) || fsync(fd) != 0;
    bad |= fclose(f) != 0;
  } else if (fd >= 0) {
    close(fd);
  }
  const char *base = fd < 0 ? NULL : strrchr(tmp, '/') + 1 + 5; /* after ".tmp-" */
  if (!bad) snprintf(final, pl, "%s/%s.hits", dir, base);
  /* link, not rename: a name never replaces another run's record */
  bad = bad || link(tmp, final) != 0;
  if (fd >= 0) unlink(tmp);
  /* Once linked, the record is there for a JVM to count at once: it is the run's, whatever the directory's fsync
   * says (as AtomicFiles.syncDirectory, where a directory cannot be synced the link is still atomic). */
  int dfd = bad ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  free(tmp);
  free(final);
  return bad ? xreason(reason, rs, "cannot write the run's hits to %s", dir) : 0;
}

static int has_flag(const char *flags, const char *flag) {
  size_t n = strlen(flag);
  for (const char *p = flags; (p = strstr(p, flag)); p += n)
    if ((p == flags || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ')) return 1;
  return 0;
}

int xfinish_native(const xplan *plan, const char *stats, int exit_status, long long wall_ns, int *exit_out,
                   char *reason, size_t rs) {
  if (!plan->finish_flags || !plan->pending_dir) return xreason(reason, rs, "the plan has no finish");
  /* sized for MAX_KEYS at once: large allocations are mapped, and only the pages used are touched */
  tally t;
  memset(&t, 0, sizeof t);
  t.n_slots = 2 * MAX_KEYS; /* a power of two, at most half full */
  t.keys = malloc(MAX_KEYS * sizeof *t.keys);
  t.counts = malloc(MAX_KEYS * sizeof *t.counts);
  t.slots = calloc(t.n_slots, sizeof *t.slots);
  int r = t.keys && t.counts && t.slots ? 0 : xreason(reason, rs, "out of memory");
  if (!r) r = read_stats(stats, &t, reason, rs);
  if (!r) r = plugin_unchanged(plan, reason, rs);
  if (!r) r = preload_list_holds(&t, xplan_set_value(plan, "XLAC_PJRT_PRELOAD"), reason, rs);
  if (!r && plan->report_path) r = write_report(plan, &t, exit_status, wall_ns, reason, rs);
  if (!r && t.hits) r = write_pending(plan->pending_dir, &t, reason, rs);
  if (r) {
    tally_free(&t);
    return -1;
  }
  /* RunCommand's lines: the summary (unless --quiet), then --require-hits' failure */
  if (!has_flag(plan->finish_flags, "quiet")) {
    unsigned long long centis = (t.saved_ns + 5000000ull) / 10000000ull; /* %.2f, half up */
    fprintf(stderr, "xlac run: %llu compile%s: %llu served from the cache, 0 compiled; %llu.%02llu s of compiling saved\n",
            t.hits, t.hits == 1 ? "" : "s", t.hits, centis / 100, centis % 100);
  }
  *exit_out = exit_status;
  if (has_flag(plan->finish_flags, "require-hits") && exit_status == 0 && t.hits == 0) {
    fprintf(stderr, "xlac run: --require-hits: no compile went through xlac's proxy, so none was served from the cache"
                    " (did the command load its PJRT plugin through xlac?)\n");
    *exit_out = 1;
  }
  fflush(stderr);
  tally_free(&t);
  return 0;
}
