#include "launch_plan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reason.h"
#include "sha256.h"

/* The plan's lines (written by pipeline FastStart; runtime/README.md, "The fast start"): words
 * separated by one space; every string is `x` followed by the hex of its bytes, so that no value
 * needs quoting. The last line is `end`: a truncated plan is no plan. */

void xplan_key(const char *cwd, char *const *options, size_t n_options, char out[65]) {
  xsha256 s;
  uint8_t digest[32];
  xsha256_init(&s);
  xsha256_update(&s, cwd, strlen(cwd) + 1);
  for (size_t i = 0; i < n_options; i++) xsha256_update(&s, options[i], strlen(options[i]) + 1);
  xsha256_final(&s, digest);
  xhex(digest, 32, out);
}

typedef struct {
  char **items;
  size_t n, cap;
} strings;

static int push(strings *l, char *s) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    char **items = realloc(l->items, cap * sizeof *items);
    if (!items) return -1;
    l->items = items;
    l->cap = cap;
  }
  l->items[l->n++] = s;
  return 0;
}

static void strings_free(strings *l) {
  for (size_t i = 0; i < l->n; i++) free(l->items[i]);
  free(l->items);
  l->items = NULL;
  l->n = l->cap = 0;
}

/* Everything a check needs besides the caller's arguments. */
typedef struct {
  strings opts, watch_kind, watch_text, env_names, env_values, db_names;
  strings db_dir; /* one entry */
  unsigned long long *db_stats; /* size, mtime for each db name */
  size_t db_stats_cap;
  long long db_count;
} parsed;

static void parsed_free(parsed *p) {
  strings_free(&p->opts);
  strings_free(&p->watch_kind);
  strings_free(&p->watch_text);
  strings_free(&p->env_names);
  strings_free(&p->env_values);
  strings_free(&p->db_names);
  strings_free(&p->db_dir);
  free(p->db_stats);
}

/* Decodes one `x<hex>` word (NUL-terminated result, malloc'd); NULL when malformed or holding a NUL. */
static char *unhex_word(const char *w) {
  if (!w || w[0] != 'x') return NULL;
  size_t n = strlen(w + 1);
  if (n % 2) return NULL;
  char *out = malloc(n / 2 + 1);
  if (!out) return NULL;
  if (xunhex(w + 1, n / 2, (uint8_t *)out) != 0 || memchr(out, 0, n / 2)) {
    free(out);
    return NULL;
  }
  out[n / 2] = 0;
  return out;
}

static int parse_ull(const char *w, unsigned long long *v) {
  if (!w || !*w || *w == '-' || *w == '+') return -1;
  char *end;
  errno = 0;
  *v = strtoull(w, &end, 10);
  return errno || *end ? -1 : 0;
}

static int is_watched(const parsed *p, const char *name, size_t len) {
  for (size_t i = 0; i < p->watch_kind.n; i++) {
    const char *t = p->watch_text.items[i];
    if (!strcmp(p->watch_kind.items[i], "except") && strlen(t) == len && !memcmp(name, t, len)) return 0;
  }
  for (size_t i = 0; i < p->watch_kind.n; i++) {
    const char *k = p->watch_kind.items[i], *t = p->watch_text.items[i];
    size_t tl = strlen(t);
    if (!strcmp(k, "name") && tl == len && !memcmp(name, t, len)) return 1;
    if (!strcmp(k, "prefix") && tl <= len && !memcmp(name, t, tl)) return 1;
    if (!strcmp(k, "suffix") && tl <= len && !memcmp(name + len - tl, t, tl)) return 1;
  }
  return 0;
}

static unsigned long long mtime_ns(const struct stat *st) {
  return (unsigned long long)st->st_mtim.tv_sec * 1000000000ull + (unsigned long long)st->st_mtim.tv_nsec;
}

static int check_file(const char *path, char *const *w, char *reason, size_t rs) {
  unsigned long long size, mtime, dev, ino;
  if (parse_ull(w[0], &size) || parse_ull(w[1], &mtime) || parse_ull(w[2], &dev) || parse_ull(w[3], &ino))
    return xreason(reason, rs, "damaged plan: bad file line for %s", path);
  struct stat st;
  if (lstat(path, &st) != 0) return xreason(reason, rs, "%s: %s", path, strerror(errno));
  unsigned long long m = mtime_ns(&st);
  if ((unsigned long long)st.st_size != size || m != mtime || (unsigned long long)st.st_dev != dev ||
      (unsigned long long)st.st_ino != ino)
    return xreason(reason, rs, "%s changed", path);
  return 0;
}

static int check_content(const char *path, const char *want, char *reason, size_t rs) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return xreason(reason, rs, "%s: %s", path, strerror(errno));
  size_t n = strlen(want), got = 0;
  char *buf = malloc(n + 2);
  if (!buf) {
    close(fd);
    return xreason(reason, rs, "out of memory");
  }
  ssize_t r;
  while (got < n + 1 && (r = read(fd, buf + got, n + 1 - got)) != 0) {
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    got += (size_t)r;
  }
  close(fd);
  int same = got == n && !memcmp(buf, want, n);
  free(buf);
  return same ? 0 : xreason(reason, rs, "%s changed", path);
}

static int check_env(const parsed *p, char *const *envp, char *reason, size_t rs) {
  size_t seen = 0;
  for (char *const *e = envp; *e; e++) {
    const char *eq = strchr(*e, '=');
    size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
    if (!is_watched(p, *e, len)) continue;
    size_t i = 0;
    while (i < p->env_names.n && !(strlen(p->env_names.items[i]) == len && !memcmp(p->env_names.items[i], *e, len)))
      i++;
    if (i == p->env_names.n) return xreason(reason, rs, "environment variable %.*s is new", (int)len, *e);
    if (!eq || strcmp(eq + 1, p->env_values.items[i]))
      return xreason(reason, rs, "environment variable %.*s changed", (int)len, *e);
    seen++;
  }
  if (seen != p->env_names.n) return xreason(reason, rs, "a watched environment variable is gone");
  return 0;
}

static int check_db(const parsed *p, char *reason, size_t rs) {
  if (p->db_dir.n != 1) return xreason(reason, rs, "damaged plan: no db line");
  const char *dir = p->db_dir.items[0];
  DIR *d = opendir(dir);
  if (!d) return xreason(reason, rs, "%s: %s", dir, strerror(errno));
  size_t seen = 0;
  int bad = 0;
  struct dirent *de;
  size_t dl = strlen(dir);
  while (!bad && (de = readdir(d))) {
    const char *name = de->d_name;
    if (!strcmp(name, ".") || !strcmp(name, "..") || !strncmp(name, "LOG", 3)) continue;
    size_t i = 0;
    while (i < p->db_names.n && strcmp(p->db_names.items[i], name)) i++;
    if (i == p->db_names.n) {
      bad = xreason(reason, rs, "%s/%s is new", dir, name);
      break;
    }
    char *path = malloc(dl + strlen(name) + 2);
    struct stat st;
    if (!path) {
      bad = xreason(reason, rs, "out of memory");
      break;
    }
    sprintf(path, "%s/%s", dir, name);
    int r = lstat(path, &st);
    free(path);
    if (r != 0 || (unsigned long long)st.st_size != p->db_stats[2 * i] || mtime_ns(&st) != p->db_stats[2 * i + 1])
      bad = xreason(reason, rs, "%s/%s changed", dir, name);
    seen++;
  }
  closedir(d);
  if (bad) return -1;
  if (seen != p->db_names.n || (long long)seen != p->db_count) return xreason(reason, rs, "a file of %s is gone", dir);
  return 0;
}

/* Splits `line` (modified) into at most max words at single spaces; the number of words. */
static size_t split(char *line, char **w, size_t max) {
  size_t n = 0;
  char *s = line;
  while (n < max) {
    w[n++] = s;
    char *sp = strchr(s, ' ');
    if (!sp) break;
    *sp = 0;
    s = sp + 1;
  }
  return n;
}

static int check_lines(char *text, const char *cwd, char *const *options, size_t n_options, char *const *envp,
                       parsed *p, xplan *plan, char *reason, size_t rs) {
  char *line = text;
  int first = 1, ended = 0, seen_uid = 0, seen_home = 0;
  while (*line) {
    char *nl = strchr(line, '\n');
    if (!nl) return xreason(reason, rs, "damaged plan: truncated");
    *nl = 0;
    char *next = nl + 1;
    if (ended) return xreason(reason, rs, "damaged plan: text after end");
    if (first) {
      if (strcmp(line, XPLAN_FORMAT)) return xreason(reason, rs, "not a plan of this format");
      first = 0;
      line = next;
      continue;
    }
    char *w[8];
    size_t n = split(line, w, 8);
    const char *k = w[0];
    char *a = n > 1 ? unhex_word(w[1]) : NULL;
    char *b = NULL;
    int r = 0;
    if (!strcmp(k, "end") && n == 1) {
      ended = 1;
    } else if (!a) {
      r = xreason(reason, rs, "damaged plan: bad line '%s'", k);
    } else if (!strcmp(k, "cwd") && n == 2) {
      if (strcmp(a, cwd)) r = xreason(reason, rs, "another working directory");
    } else if (!strcmp(k, "opt") && n == 2) {
      r = push(&p->opts, a);
      a = NULL;
    } else if (!strcmp(k, "watch") && n == 3 && (b = unhex_word(w[2])) &&
               (!strcmp(a, "name") || !strcmp(a, "prefix") || !strcmp(a, "suffix") || !strcmp(a, "except"))) {
      r = push(&p->watch_kind, a) || push(&p->watch_text, b);
      a = b = NULL;
    } else if (!strcmp(k, "env") && n == 3 && (b = unhex_word(w[2]))) {
      r = push(&p->env_names, a) || push(&p->env_values, b);
      a = b = NULL;
    } else if (!strcmp(k, "file") && n == 6) {
      r = check_file(a, w + 2, reason, rs);
    } else if (!strcmp(k, "content") && n == 3 && (b = unhex_word(w[2]))) {
      r = check_content(a, b, reason, rs);
    } else if (!strcmp(k, "realpath") && n == 3 && (b = unhex_word(w[2]))) {
      char *real = realpath(a, NULL);
      if (!real || strcmp(real, b)) r = xreason(reason, rs, "%s now resolves to another file", a);
      free(real);
      if (!r && !plan->plugin_real) {
        plan->plugin_given = a;
        plan->plugin_real = b;
        a = b = NULL;
      }
    } else if (!strcmp(k, "uid") && n == 2) {
      unsigned long long uid;
      seen_uid = 1;
      if (parse_ull(a, &uid) || uid != (unsigned long long)geteuid()) r = xreason(reason, rs, "another user");
    } else if (!strcmp(k, "home") && n == 2) {
      seen_home = 1;
      /* the JVM's user.home: the password entry's home directory of the real uid, else $HOME */
      struct passwd *pw = getpwuid(getuid());
      const char *home = pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : getenv("HOME");
      if (!home || strcmp(home, a)) r = xreason(reason, rs, "another home directory (user.home)");
    } else if (!strcmp(k, "dir") && n == 2) {
      struct stat st;
      if (stat(a, &st) != 0 || !S_ISDIR(st.st_mode)) r = xreason(reason, rs, "%s is not a directory", a);
    } else if (!strcmp(k, "writable") && n == 2) {
      struct stat st;
      if (stat(a, &st) != 0 || !S_ISDIR(st.st_mode) || access(a, W_OK) != 0)
        r = xreason(reason, rs, "%s is not a writable directory", a);
    } else if (!strcmp(k, "notdir") && n == 2) {
      struct stat st; /* the --report file: a directory there is found after the command, too late */
      if (lstat(a, &st) == 0 && S_ISDIR(st.st_mode)) r = xreason(reason, rs, "%s is a directory", a);
    } else if (!strcmp(k, "db") && n == 3 && p->db_dir.n == 0) {
      unsigned long long c;
      if (parse_ull(w[2], &c) || c > 1000000) {
        r = xreason(reason, rs, "damaged plan: bad db line");
      } else {
        p->db_count = (long long)c;
        r = push(&p->db_dir, a) || !(plan->db_dir = strdup(a));
        a = NULL;
      }
    } else if (!strcmp(k, "dbfile") && n == 4) {
      unsigned long long size, mtime;
      if (parse_ull(w[2], &size) || parse_ull(w[3], &mtime)) {
        r = xreason(reason, rs, "damaged plan: bad dbfile line");
      } else {
        if (p->db_names.n + 1 > p->db_stats_cap) {
          size_t cap = p->db_stats_cap ? 2 * p->db_stats_cap : 64;
          unsigned long long *s = realloc(p->db_stats, 2 * cap * sizeof *s);
          if (!s) {
            free(a);
            return xreason(reason, rs, "out of memory");
          }
          p->db_stats = s;
          p->db_stats_cap = cap;
        }
        p->db_stats[2 * p->db_names.n] = size;
        p->db_stats[2 * p->db_names.n + 1] = mtime;
        r = push(&p->db_names, a);
        a = NULL;
      }
    } else if (!strcmp(k, "stats") && n == 3 && !plan->stats_parent && (b = unhex_word(w[2]))) {
      plan->stats_parent = a;
      plan->stats_prefix = b;
      a = b = NULL;
    } else if (!strcmp(k, "finish") && n == 3 && !plan->finish_flags && (b = unhex_word(w[2]))) {
      plan->finish_flags = a;
      plan->pending_dir = b;
      a = b = NULL;
    } else if (!strcmp(k, "report") && n == 5 && !plan->report_path) {
      plan->report_path = a;
      a = NULL;
      if (!(plan->report_plugin = unhex_word(w[2])) || !(plan->report_sha256 = unhex_word(w[3])) ||
          !(plan->report_layout = unhex_word(w[4])))
        r = xreason(reason, rs, "damaged plan: bad line '%s'", k);
    } else if ((!strcmp(k, "set") && n == 3 && (b = unhex_word(w[2]))) ||
               ((!strcmp(k, "unset") || !strcmp(k, "set-stats")) && n == 2)) {
      xplan_change *c = realloc(plan->changes, (plan->n_changes + 1) * sizeof *c);
      if (!c) {
        r = xreason(reason, rs, "out of memory");
      } else {
        plan->changes = c;
        c[plan->n_changes++] = (xplan_change){a, b, !strcmp(k, "set-stats")};
        a = b = NULL;
      }
    } else {
      r = xreason(reason, rs, "damaged plan: bad line '%s'", k);
    }
    free(a);
    free(b);
    if (r) return -1;
    line = next;
  }
  if (first || !ended) return xreason(reason, rs, "damaged plan: truncated");
  if (p->opts.n != n_options) return xreason(reason, rs, "other options");
  for (size_t i = 0; i < n_options; i++)
    if (strcmp(p->opts.items[i], options[i])) return xreason(reason, rs, "other options");
  if (!plan->stats_parent) return xreason(reason, rs, "damaged plan: no stats line");
  if (p->watch_kind.n == 0) return xreason(reason, rs, "damaged plan: no watch line");
  if (!seen_uid || !seen_home) return xreason(reason, rs, "damaged plan: no uid or home line");
  if (check_env(p, envp, reason, rs)) return -1;
  return check_db(p, reason, rs);
}

int xplan_check(const char *text, size_t len, const char *cwd, char *const *options, size_t n_options,
                char *const *envp, xplan *plan, char *reason, size_t reason_size) {
  memset(plan, 0, sizeof *plan);
  if (memchr(text, 0, len)) return xreason(reason, reason_size, "damaged plan: a NUL byte");
  char *copy = malloc(len + 1);
  if (!copy) return xreason(reason, reason_size, "out of memory");
  memcpy(copy, text, len);
  copy[len] = 0;
  parsed p;
  memset(&p, 0, sizeof p);
  int r = check_lines(copy, cwd, options, n_options, envp, &p, plan, reason, reason_size);
  parsed_free(&p);
  free(copy);
  if (r) xplan_free(plan);
  return r;
}

int xplan_load(const char *plan_dir, const char *cwd, char *const *options, size_t n_options,
               char *const *envp, xplan *plan, char *reason, size_t reason_size) {
  memset(plan, 0, sizeof *plan);
  char key[65];
  xplan_key(cwd, options, n_options, key);
  size_t size = strlen(plan_dir) + 80;
  char *path = malloc(size);
  if (!path) return xreason(reason, reason_size, "out of memory");
  snprintf(path, size, "%s/%s.plan", plan_dir, key);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  free(path);
  if (fd < 0) return xreason(reason, reason_size, "no plan (%s)", strerror(errno));
  /* A plan sets the command's environment: only one this user wrote, in a directory only this user
   * can write to, is taken. */
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
    close(fd);
    return xreason(reason, reason_size, "the plan is not a file of this user that only this user can write");
  }
  if (stat(plan_dir, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
    close(fd);
    return xreason(reason, reason_size, "%s is not a directory of this user that only this user can write", plan_dir);
  }
  char *text = malloc(XPLAN_MAX_BYTES);
  size_t got = 0;
  ssize_t n = 0;
  while (text && got < XPLAN_MAX_BYTES && (n = read(fd, text + got, XPLAN_MAX_BYTES - got)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    got += (size_t)n;
  }
  close(fd);
  if (!text || n < 0 || got == XPLAN_MAX_BYTES) {
    free(text);
    return xreason(reason, reason_size, "cannot read the plan");
  }
  int r = xplan_check(text, got, cwd, options, n_options, envp, plan, reason, reason_size);
  free(text);
  return r;
}

static char *joined(const char *name, const char *value) {
  size_t n = strlen(name), v = strlen(value);
  char *s = malloc(n + v + 2);
  if (!s) return NULL;
  memcpy(s, name, n);
  s[n] = '=';
  memcpy(s + n + 1, value, v + 1);
  return s;
}

char **xplan_environment(const xplan *plan, char *const *envp, const char *stats_dir) {
  size_t n = 0;
  while (envp[n]) n++;
  char **out = calloc(n + plan->n_changes + 1, sizeof *out);
  if (!out) return NULL;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const char *eq = strchr(envp[i], '=');
    size_t len = eq ? (size_t)(eq - envp[i]) : strlen(envp[i]);
    int changed = 0;
    for (size_t c = 0; c < plan->n_changes && !changed; c++)
      changed = strlen(plan->changes[c].name) == len && !memcmp(plan->changes[c].name, envp[i], len);
    if (!changed && !(out[m++] = strdup(envp[i]))) goto oom;
  }
  for (size_t c = 0; c < plan->n_changes; c++) {
    const xplan_change *ch = &plan->changes[c];
    const char *value = ch->to_stats ? stats_dir : ch->value;
    if (value && !(out[m++] = joined(ch->name, value))) goto oom;
  }
  return out;
oom:
  for (size_t i = 0; i < m; i++) free(out[i]);
  free(out);
  return NULL;
}

const char *xplan_set_value(const xplan *plan, const char *name) {
  for (size_t i = 0; i < plan->n_changes; i++)
    if (!strcmp(plan->changes[i].name, name) && !plan->changes[i].to_stats) return plan->changes[i].value;
  return NULL;
}

/* Field 22 of /proc/self/stat (after the command in parentheses, which may hold spaces); -1 if unknown. */
static long long start_ticks(void) {
  char buf[1024];
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  if (!p) return -1;
  p++;
  for (int field = 3; field < 22 && p; field++) p = strchr(p + 1, ' '); /* to the space before field 22 */
  if (!p) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(p + 1, &end, 10);
  return errno || end == p + 1 ? -1 : v;
}

/* "ns" and the inode of this process's PID namespace ("pid:[4026531836]"), as pipeline StatsDirectories names it;
 * "nsunknown" if it cannot be read, which no run takes as its own: containers on one node share the host name and
 * /tmp but not the pids they see, so a directory is only judged by a run of its own namespace. */
static void pid_namespace(char *out, size_t size) {
  char link[64];
  ssize_t n = readlink("/proc/self/ns/pid", link, sizeof link - 1);
  unsigned long long inode;
  char tail;
  if (n > 0) link[n] = 0;
  if (n <= 0 || sscanf(link, "pid:[%llu%c", &inode, &tail) != 2 || tail != ']' || strchr(link, ']')[1] != 0)
    snprintf(out, size, "nsunknown");
  else
    snprintf(out, size, "ns%llu", inode);
}

void xplan_host_name(char out[256]) {
  if (gethostname(out, 256) != 0) out[0] = 0;
  out[255] = 0;
  for (char *c = out; *c; c++) {
    int keep = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.';
    if (!keep) *c = '_';
  }
  if (!out[0]) snprintf(out, 256, "localhost");
}

int xplan_stats_template(const xplan *plan, char *out, size_t size) {
  char ns[32];
  pid_namespace(ns, sizeof ns);
  char host[256];
  xplan_host_name(host);
  int n = snprintf(out, size, "%s/%s%s-%s-%ld-%lld-XXXXXX", plan->stats_parent, plan->stats_prefix, host, ns,
                   (long)getpid(), start_ticks());
  return n < 0 || (size_t)n >= size ? -1 : 0;
}

void xplan_free(xplan *plan) {
  free(plan->stats_parent);
  free(plan->stats_prefix);
  free(plan->db_dir);
  free(plan->plugin_given);
  free(plan->plugin_real);
  free(plan->finish_flags);
  free(plan->pending_dir);
  free(plan->report_path);
  free(plan->report_plugin);
  free(plan->report_sha256);
  free(plan->report_layout);
  for (size_t i = 0; i < plan->n_changes; i++) {
    free(plan->changes[i].name);
    free(plan->changes[i].value);
  }
  free(plan->changes);
  memset(plan, 0, sizeof *plan);
}
