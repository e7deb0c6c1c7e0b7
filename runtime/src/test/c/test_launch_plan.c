/* The launch plan of xlac run's fast start: a plan for the state as it is holds; each condition
 * changed on its own makes it fail (so the JVM path runs); damaged and truncated plans are no
 * plans. Then the fast start binary itself (XLAC_TEST_FAST_START), with /bin/echo standing in for
 * the java command line: which path it took, and what the command and the finish got. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <signal.h>

#include "fast_child.h"
#include "fast_finish.h"
#include "launch_plan.h"
#include "sha256.h"
#include "testlib.h"

static char root[2048], cwd[2048];
static char *options[] = {"--cache", "C", "--plugin", "P"};

static void hexword(char *out, const char *s) {
  out[0] = 'x';
  xhex((const uint8_t *)s, strlen(s), out + 1);
}

static void appendf(char **buf, size_t *len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *line;
  int n = vasprintf(&line, fmt, ap);
  va_end(ap);
  REQUIRE(n >= 0, "vasprintf");
  *buf = realloc(*buf, *len + (size_t)n + 1);
  memcpy(*buf + *len, line, (size_t)n + 1);
  *len += (size_t)n;
  free(line);
}

static void path_of(char *out, const char *name) { snprintf(out, 4096, "%s/%s", root, name); }

static void write_file(const char *name, const char *text) {
  char p[4096];
  path_of(p, name);
  FILE *f = fopen(p, "w");
  REQUIRE(f, "open %s", p);
  fputs(text, f);
  fclose(f);
}

/* The plugin identity the plans give the command (XLAC_PJRT_PLUGIN_SHA256). */
static char plugin_identity[200] = "ab:1:2:3:4";

/* A plan for the files as they are now, as pipeline FastStart writes one (with `extra` lines). */
static char *plan_now(const char *extra) {
  char *b = NULL, h[20000], h2[20000], p[4096];
  size_t n = 0;
  appendf(&b, &n, "%s\n", XPLAN_FORMAT);
  hexword(h, cwd);
  appendf(&b, &n, "cwd %s\n", h);
  for (size_t i = 0; i < 4; i++) {
    hexword(h, options[i]);
    appendf(&b, &n, "opt %s\n", h);
  }
  const char *watch[][2] = {{"prefix", "XLACT_"}, {"suffix", "_TLIB"}, {"name", "TWATCH"}, {"except", "XLACT_DEBUG"}};
  for (int i = 0; i < 4; i++) {
    hexword(h, watch[i][0]);
    hexword(h2, watch[i][1]);
    appendf(&b, &n, "watch %s %s\n", h, h2);
  }
  for (char **e = environ; *e; e++) {
    if (strncmp(*e, "XLACT_", 6) && strncmp(*e, "TWATCH=", 7) && !strstr(*e, "_TLIB=")) continue;
    if (!strncmp(*e, "XLACT_DEBUG=", 12)) continue;
    char name[256];
    const char *eq = strchr(*e, '=');
    snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
    hexword(h, name);
    hexword(h2, eq + 1);
    appendf(&b, &n, "env %s %s\n", h, h2);
  }
  struct stat st;
  path_of(p, "plugin-link.so");
  hexword(h, p);
  path_of(p, "plugin.so");
  hexword(h2, p);
  appendf(&b, &n, "realpath %s %s\n", h, h2);
  REQUIRE(lstat(p, &st) == 0, "stat plugin");
  hexword(h, p);
  appendf(&b, &n, "file %s %lld %llu %llu %llu\n", h, (long long)st.st_size,
          (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec,
          (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
  snprintf(p, sizeof p, "%u", (unsigned)geteuid());
  hexword(h, p);
  appendf(&b, &n, "uid %s\n", h);
  struct passwd *pw = getpwuid(getuid());
  hexword(h, pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : getenv("HOME"));
  appendf(&b, &n, "home %s\n", h);
  path_of(p, "pjrt.stamp");
  hexword(h, p);
  hexword(h2, "stamp 1\n");
  appendf(&b, &n, "content %s %s\n", h, h2);
  path_of(p, "db");
  hexword(h, p);
  appendf(&b, &n, "dir %s\nwritable %s\ndb %s 2\n", h, h, h);
  path_of(p, "report.json");
  hexword(h2, p);
  appendf(&b, &n, "notdir %s\n", h2);
  path_of(p, "db");
  const char *dbfiles[] = {"CURRENT", "000001.sst"};
  for (int i = 0; i < 2; i++) {
    char f[8192];
    snprintf(f, sizeof f, "%s/%s", p, dbfiles[i]);
    REQUIRE(lstat(f, &st) == 0, "stat %s", f);
    hexword(h2, dbfiles[i]);
    appendf(&b, &n, "dbfile %s %lld %llu\n", h2, (long long)st.st_size,
            (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec);
  }
  path_of(p, "tmp");
  hexword(h, p);
  hexword(h2, "xlac-run-stats-");
  appendf(&b, &n, "stats %s %s\n", h, h2);
  hexword(h, "XLACT_ADDED");
  hexword(h2, "added value");
  appendf(&b, &n, "set %s %s\n", h, h2);
  hexword(h, "TO_REMOVE");
  appendf(&b, &n, "unset %s\n", h);
  hexword(h, "XLAC_PJRT_PLUGIN_SHA256");
  hexword(h2, plugin_identity);
  appendf(&b, &n, "set %s %s\n", h, h2);
  hexword(h, "XLACT_STATS");
  appendf(&b, &n, "set-stats %s\n", h);
  appendf(&b, &n, "%send\n", extra ? extra : "");
  return b;
}

static int check(const char *plan, char *reason) {
  xplan p;
  int r = xplan_check(plan, strlen(plan), cwd, options, 4, environ, &p, reason, 512);
  if (r == 0) xplan_free(&p);
  return r;
}

/* The plan made before `change` fails after it, and names what changed. */
static void expect_mismatch(const char *what, void (*change)(void), void (*undo)(void), const char *needle) {
  char *plan = plan_now(NULL);
  char reason[512] = "";
  CHECK(check(plan, reason) == 0, "%s: the plan should hold before the change: %s", what, reason);
  change();
  reason[0] = 0;
  CHECK(check(plan, reason) == -1, "%s: the plan should fail after the change", what);
  CHECK(strstr(reason, needle) != NULL, "%s: reason '%s' does not name '%s'", what, reason, needle);
  undo();
  free(plan);
}

static void sleep_tick(void) {
  struct timespec t = {0, 20 * 1000 * 1000};
  nanosleep(&t, NULL);
}
static void nothing(void) {}
static void env_change(void) { setenv("XLACT_ONE", "two", 1); }
static void env_undo(void) { setenv("XLACT_ONE", "one", 1); }
static void env_add(void) { setenv("XLACT_NEW", "x", 1); }
static void env_add_undo(void) { unsetenv("XLACT_NEW"); }
static void env_remove(void) { unsetenv("X_TLIB"); }
static void env_remove_undo(void) { setenv("X_TLIB", "/lib", 1); }
static void env_name(void) { setenv("TWATCH", "changed", 1); }
static void env_name_undo(void) { setenv("TWATCH", "w", 1); }
static void plugin_touch(void) {
  sleep_tick();
  write_file("plugin.so", "plugin bytes");
}
static void link_retarget(void) {
  char p[4096];
  path_of(p, "plugin-link.so");
  unlink(p);
  REQUIRE(symlink("other-plugin.so", p) == 0, "symlink");
}
static void link_undo(void) {
  char p[4096];
  path_of(p, "plugin-link.so");
  unlink(p);
  REQUIRE(symlink("plugin.so", p) == 0, "symlink");
}
static void stamp_change(void) { write_file("pjrt.stamp", "stamp 2\n"); }
static void stamp_undo(void) { write_file("pjrt.stamp", "stamp 1\n"); }
static void db_add(void) { write_file("db/000002.sst", "new"); }
static void db_add_undo(void) {
  char p[4096];
  path_of(p, "db/000002.sst");
  unlink(p);
}
static void db_change(void) {
  sleep_tick();
  write_file("db/CURRENT", "MANIFEST-000002\n");
}
static void db_remove(void) {
  char p[4096];
  path_of(p, "db/000001.sst");
  unlink(p);
}
static void db_remove_undo(void) { write_file("db/000001.sst", "sst"); }
static void report_mkdir(void) {
  char p[4096];
  path_of(p, "report.json");
  REQUIRE(mkdir(p, 0755) == 0, "mkdir");
}
static void report_rmdir(void) {
  char p[4096];
  path_of(p, "report.json");
  rmdir(p);
}
static void log_add(void) { write_file("db/LOG.old.1", "log"); }

static void conditions(void) {
  char reason[512] = "";
  char *plan = plan_now(NULL);
  CHECK(check(plan, reason) == 0, "a plan of the state as it is holds: %s", reason);
  {
    xplan p;
    REQUIRE(xplan_check(plan, strlen(plan), cwd, options, 4, environ, &p, reason, sizeof reason) == 0, "%s", reason);
    char **env = xplan_environment(&p, environ, "/stats/dir");
    REQUIRE(env, "environment");
    int added = 0, removed = 1, stats = 0, kept = 0;
    for (char **e = env; *e; e++) {
      added |= !strcmp(*e, "XLACT_ADDED=added value");
      removed &= strncmp(*e, "TO_REMOVE=", 10) != 0;
      stats |= !strcmp(*e, "XLACT_STATS=/stats/dir");
      kept |= !strcmp(*e, "XLACT_ONE=one");
      free(*e);
    }
    free(env);
    CHECK(added && removed && stats && kept, "environment: added %d removed %d stats %d kept %d", added, removed,
          stats, kept);
    xplan_free(&p);
  }
  /* options and working directory */
  char *other[] = {"--cache", "C", "--plugin", "Q"};
  xplan p;
  CHECK(xplan_check(plan, strlen(plan), cwd, other, 4, environ, &p, reason, sizeof reason) == -1 &&
            strstr(reason, "other options"), "other options: %s", reason);
  CHECK(xplan_check(plan, strlen(plan), cwd, options, 3, environ, &p, reason, sizeof reason) == -1,
        "fewer options");
  CHECK(xplan_check(plan, strlen(plan), "/elsewhere", options, 4, environ, &p, reason, sizeof reason) == -1 &&
            strstr(reason, "working directory"), "cwd: %s", reason);
  /* an unwatched variable changes nothing */
  setenv("UNWATCHED_VARIABLE", "1", 1);
  CHECK(check(plan, reason) == 0, "an unwatched variable must not matter: %s", reason);
  unsetenv("UNWATCHED_VARIABLE");
  setenv("XLACT_DEBUG", "1", 1); /* excepted from its prefix */
  CHECK(check(plan, reason) == 0, "an excepted variable must not matter: %s", reason);
  unsetenv("XLACT_DEBUG");
  /* damaged and truncated plans, cut at every length */
  size_t len = strlen(plan);
  for (size_t cut = 0; cut < len; cut++) {
    CHECK(xplan_check(plan, cut, cwd, options, 4, environ, &p, reason, sizeof reason) == -1, "cut at %zu held", cut);
  }
  char *bad = strdup(plan);
  bad[strlen(XPLAN_FORMAT) + 6] = 'z'; /* a hex digit of cwd */
  CHECK(check(bad, reason) == -1 && strstr(reason, "damaged"), "bad hex: %s", reason);
  free(bad);
  char *twice = plan_now("end\n");
  CHECK(check(twice, reason) == -1, "text after end");
  free(twice);
  char *unknown = plan_now("bogus x00\n");
  CHECK(check(unknown, reason) == -1, "an unknown line");
  free(unknown);
  CHECK(check("xlac-run-plan 3\nend\n", reason) == -1 && strstr(reason, "format"), "another format: %s", reason);
  {
    /* plan_for_anotherUser_doesNotHold: the cache and user.home come from the user */
    char line[600], h[200];
    snprintf(line, sizeof line, "%u", (unsigned)geteuid() + 1);
    hexword(h, line);
    snprintf(line, sizeof line, "uid %s\n", h);
    char *other_user = plan_now(line);
    CHECK(check(other_user, reason) == -1 && strstr(reason, "another user"), "another uid: %s", reason);
    free(other_user);
    hexword(h, "/no/such/home");
    snprintf(line, sizeof line, "home %s\n", h);
    char *other_home = plan_now(line);
    CHECK(check(other_home, reason) == -1 && strstr(reason, "user.home"), "another user.home: %s", reason);
    free(other_home);
  }
  free(plan);

  expect_mismatch("watched variable changed", env_change, env_undo, "XLACT_ONE changed");
  expect_mismatch("watched variable added", env_add, env_add_undo, "XLACT_NEW is new");
  expect_mismatch("watched variable removed", env_remove, env_remove_undo, "gone");
  expect_mismatch("watched name changed", env_name, env_name_undo, "TWATCH changed");
  expect_mismatch("plugin touched", plugin_touch, nothing, "plugin.so changed");
  expect_mismatch("plugin link pointed elsewhere", link_retarget, link_undo, "resolves to another file");
  expect_mismatch("stamp changed", stamp_change, stamp_undo, "pjrt.stamp changed");
  expect_mismatch("db file added", db_add, db_add_undo, "000002.sst is new");
  expect_mismatch("db file changed", db_change, nothing, "CURRENT changed");
  expect_mismatch("db file removed", db_remove, db_remove_undo, "gone");
  /* reportIntoADirectory_takesTheJvmPath, which refuses it before the command starts */
  expect_mismatch("report path made a directory", report_mkdir, report_rmdir, "report.json is a directory");
  /* an info log in db/ does not count, as for the stamp */
  plan = plan_now(NULL);
  log_add();
  CHECK(check(plan, reason) == 0, "a LOG file must not matter: %s", reason);
  free(plan);
}

static char *fast_start;

/* How the caller of the fast start differs from a plain one. */
typedef struct {
  const char *java;   /* the java command line's program (default /bin/echo) */
  long fsize;         /* a file size limit (RLIMIT_FSIZE, SIGXFSZ ignored): writes past it fail, as on a full disk */
  int sigchld_ignored; /* the caller ignores SIGCHLD (inherited across exec) */
  int fd3;            /* the caller has a descriptor 3 open (without close-on-exec) */
  int quit_after;     /* SIGQUIT to the fast start once the command wrote STARTED; then root/go is made */
} caller;

static int run_fast_as(const caller *c, char *const *user, int n_user, char **out) {
  char plans[4096], log[4096], go[4096];
  path_of(plans, "plans");
  path_of(log, "run.log");
  path_of(go, "go");
  unlink(go);
  int ready[2];
  REQUIRE(pipe(ready) == 0, "pipe");
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork");
  if (pid == 0) {
    close(ready[0]);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    close(3);
    if (c && c->fd3) {
      REQUIRE(dup2(ready[1], 3) == 3, "dup2 3"); /* not close-on-exec */
    }
    close(ready[1]);
    if (c && c->sigchld_ignored) signal(SIGCHLD, SIG_IGN);
    if (c && c->fsize) {
      signal(SIGXFSZ, SIG_IGN);
      struct rlimit lim = {(rlim_t)c->fsize, (rlim_t)c->fsize};
      REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
    }
    REQUIRE(chdir(cwd) == 0, "chdir");
    char *argv[64] = {fast_start, plans, "2", (char *)(c && c->java ? c->java : "/bin/echo"), "JAVA"};
    for (int i = 0; i < n_user; i++) argv[5 + i] = user[i];
    argv[5 + n_user] = NULL;
    execv(fast_start, argv);
    _exit(99);
  }
  close(ready[1]);
  close(ready[0]);
  if (c && c->quit_after) {
    char buf[70000];
    for (int tries = 0; tries < 1000; tries++) { /* at most 10 s */
      FILE *f = fopen(log, "r");
      size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
      if (f) fclose(f);
      buf[got] = 0;
      if (strstr(buf, "STARTED")) break;
      struct timespec t = {0, 10 * 1000 * 1000};
      nanosleep(&t, NULL);
    }
    kill(pid, SIGQUIT);
    write_file("go", "");
  }
  int ws;
  waitpid(pid, &ws, 0);
  FILE *f = fopen(log, "r");
  *out = calloc(1, 65536);
  if (f) {
    size_t ignored = fread(*out, 1, 65535, f);
    (void)ignored;
    fclose(f);
  }
  return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* Runs the fast start with plan dir PLANS, java = /bin/echo JAVA, user args; stdout+stderr into *out. */
static int run_fast(char *const *user, int n_user, char **out) { return run_fast_as(NULL, user, n_user, out); }

/* How many entries the stats parent (root/tmp) holds. */
static int stats_dirs_left(void) {
  char tmp[4096];
  path_of(tmp, "tmp");
  DIR *d = opendir(tmp);
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
  if (d) closedir(d);
  return n;
}

static void install_plan(const char *text) {
  char key[65], name[200];
  xplan_key(cwd, options, 4, key);
  snprintf(name, sizeof name, "plans/%s.plan", key);
  write_file(name, text);
}

static void binary(void) {
  fast_start = getenv("XLAC_TEST_FAST_START");
  if (!fast_start) {
    fprintf(stderr, "skipping the fast start binary: XLAC_TEST_FAST_START is not set\n");
    return;
  }
  char *out;
  char *cmd[] = {"run", "--cache", "C", "--plugin", "P", "--", "sh", "-c",
                 "echo CMD $XLACT_ADDED; test -d \"$XLACT_STATS\" && echo STATS-DIR; exit 7"};
  /* no plan: the java command line, unchanged */
  int status = run_fast(cmd, 9, &out);
  CHECK(status == 0 && !strncmp(out, "JAVA run --cache C --plugin P -- sh -c", 38), "no plan: %d '%s'", status, out);
  free(out);
  /* a plan that holds: the command runs with the delta, then the finish with its outcome */
  char *plan = plan_now(NULL);
  install_plan(plan);
  status = run_fast(cmd, 9, &out);
  CHECK(strstr(out, "CMD added value\nSTATS-DIR\n") != NULL, "served: '%s'", out);
  CHECK(strstr(out, "-Dxlac.run.adopted.exit=7 ") != NULL && strstr(out, "-Dxlac.run.adopted.stats=") != NULL &&
            strstr(out, " JAVA run --cache C --plugin P -- sh -c") != NULL, "finish: '%s'", out);
  free(out);
  /* a missing command: the JVM's one line and 127, no finish */
  char *missing[] = {"run", "--cache", "C", "--plugin", "P", "--", "no-such-command-xlac"};
  status = run_fast(missing, 7, &out);
  CHECK(status == 127 && !strcmp(out, "xlac: command not found: no-such-command-xlac (not on PATH)\n"),
        "missing: %d '%s'", status, out);
  free(out);
  /* sigchld_ignoredByTheCaller_isNotReadAsExit0: the command's own status reaches the finish */
  caller ignoring = {.sigchld_ignored = 1};
  status = run_fast_as(&ignoring, cmd, 9, &out);
  CHECK(strstr(out, "-Dxlac.run.adopted.exit=7 ") != NULL, "SIGCHLD ignored by the caller: %d '%s'", status, out);
  free(out);
  /* fd3_ofTheCaller_isNotVisibleToTheCommand (the JVM path closes it) */
  char *fds[] = {"run", "--cache", "C", "--plugin", "P", "--", "sh", "-c",
                 "if [ -e /proc/$$/fd/3 ]; then echo FD3-OPEN; else echo FD3-CLOSED; fi"};
  caller with_fd3 = {.fd3 = 1};
  status = run_fast_as(&with_fd3, fds, 9, &out);
  CHECK(!strncmp(out, "FD3-CLOSED\n", 11) && strstr(out, "-Dxlac.run.adopted.exit=0 ") != NULL,
        "a descriptor 3 of the caller: %d '%s'", status, out);
  free(out);
  /* finishJava_thatCannotRun_exitsWithTheCommandsStatus: one line, the stats directory removed */
  int before = stats_dirs_left();
  caller no_java = {.java = "/no/such/java"};
  status = run_fast_as(&no_java, cmd, 9, &out);
  CHECK(status == 7 && strstr(out, "CMD added value") != NULL &&
            strstr(out, "xlac: cannot run /no/such/java to finish the run: No such file or directory\n") != NULL,
        "finish java missing: %d '%s'", status, out);
  CHECK(stats_dirs_left() == before, "finish java missing: the stats directory is left (%d, was %d)",
        stats_dirs_left(), before);
  free(out);
  /* sigquit_whileTheCommandRuns_doesNotKillTheFastStart (the JVM path prints a thread dump and goes on) */
  char *waiting[] = {"run", "--cache", "C", "--plugin", "P", "--", "sh", "-c",
                     "echo STARTED; while [ ! -e go ]; do sleep 0.02; done; exit 5"};
  caller quitting = {.quit_after = 1};
  status = run_fast_as(&quitting, waiting, 9, &out);
  CHECK(status == 0 && strstr(out, "-Dxlac.run.adopted.exit=5 ") != NULL, "SIGQUIT: %d '%s'", status, out);
  free(out);
  /* the finish learns the plan's plugin identity and cache database */
  status = run_fast(cmd, 9, &out);
  CHECK(strstr(out, "-Dxlac.run.adopted.plugin=ab:1:2:3:4 ") != NULL && strstr(out, "-Dxlac.run.adopted.db=/") != NULL,
        "the plan's plugin and cache: '%s'", out);
  free(out);
  /* plan_writableByOthers_isNotTaken: a plan sets the command's environment */
  char key[65], planfile[8300], plandir[4096];
  xplan_key(cwd, options, 4, key);
  snprintf(plandir, sizeof plandir, "%s/plans", root);
  snprintf(planfile, sizeof planfile, "%s/%s.plan", plandir, key);
  chmod(planfile, 0666);
  status = run_fast(cmd, 9, &out);
  CHECK(status == 0 && !strncmp(out, "JAVA run", 8), "a plan others can write: %d '%s'", status, out);
  free(out);
  chmod(planfile, 0600);
  chmod(plandir, 0777);
  status = run_fast(cmd, 9, &out);
  CHECK(status == 0 && !strncmp(out, "JAVA run", 8), "a plans directory others can write: %d '%s'", status, out);
  free(out);
  chmod(plandir, 0700);
  status = run_fast(cmd, 9, &out);
  CHECK(strstr(out, "CMD added value") != NULL, "a plan of this user's own, 0600 in 0700: '%s'", out);
  free(out);
  /* a damaged plan: the java path, no crash */
  plan[strlen(plan) - 2] = 'x';
  install_plan(plan);
  status = run_fast(cmd, 9, &out);
  CHECK(status == 0 && !strncmp(out, "JAVA run", 8), "damaged plan: %d '%s'", status, out);
  free(out);
  free(plan);
  /* a stats directory that cannot be made: the java path */
  char tmp[4096];
  path_of(tmp, "tmp");
  chmod(tmp, 0500);
  plan = plan_now(NULL);
  install_plan(plan);
  status = run_fast(cmd, 9, &out);
  CHECK(geteuid() == 0 || (status == 0 && !strncmp(out, "JAVA run", 8)), "unwritable stats parent: '%s'", out);
  free(out);
  free(plan);
  char rm[8300];
  snprintf(rm, sizeof rm, "rm -rf '%s'", tmp);
  REQUIRE(system(rm) == 0, "%s", rm);
  plan = plan_now(NULL); /* names a stats parent that is gone now */
  install_plan(plan);
  status = run_fast(cmd, 9, &out);
  CHECK(status == 0 && !strncmp(out, "JAVA run", 8), "missing stats parent: %d '%s'", status, out);
  free(out);
  free(plan);
  mkdir(tmp, 0700);
}

/* The names in DIR ending in `suffix`, and the text of the last one read (into text, size bytes). */
static int files_ending(const char *dir, const char *suffix, char *text, size_t size) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir(d))) {
    size_t len = strlen(de->d_name), sl = strlen(suffix);
    if (len < sl || strcmp(de->d_name + len - sl, suffix)) continue;
    n++;
    if (text) {
      char p[8400];
      snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
      FILE *f = fopen(p, "r");
      size_t got = f ? fread(text, 1, size - 1, f) : 0;
      text[got] = 0;
      if (f) fclose(f);
    }
  }
  if (d) closedir(d);
  return n;
}

static const char *KA = "pjrt1:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
static const char *KB = "pjrt1:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/* A plan that lets the fast start finish (`flags`, the pending directory, a report when `report`), with the list to
 * load ahead at root/preload.keys. */
static char *finishing_plan(const char *flags, int report) {
  char h[9000], h2[9000], p[4096], extra[40000];
  hexword(h, flags);
  path_of(p, "pending");
  hexword(h2, p);
  int n = snprintf(extra, sizeof extra, "finish %s %s\n", h, h2);
  path_of(p, "preload.keys");
  hexword(h, "XLAC_PJRT_PRELOAD");
  hexword(h2, p);
  n += snprintf(extra + n, sizeof extra - (size_t)n, "set %s %s\n", h, h2);
  if (report) {
    char a[9000], b[9000], c[9000];
    path_of(p, "report.json");
    hexword(a, p);
    hexword(b, "/lib/pl\"ugin.so");
    hexword(c, "0123");
    hexword(h, "cache/runtime/pjrt");
    snprintf(extra + n, sizeof extra - (size_t)n, "report %s %s %s %s\n", a, b, c, h);
  }
  return plan_now(extra);
}

/* The plans give the command plugin.so's identity as it is now (its stat), as the JVM writes it. */
static void identity_of_plugin(void) {
  char p[4096];
  struct stat st;
  path_of(p, "plugin.so");
  REQUIRE(lstat(p, &st) == 0, "stat plugin");
  snprintf(plugin_identity, sizeof plugin_identity, "%s:%lld:%llu:%llu:%llu",
           "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", (long long)st.st_size,
           (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec,
           (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
}

/* The fast start's finish without a JVM (fast_finish.c): every compile served, the summary, the report and
 * --require-hits as the JVM gives them, the hits left in the pending directory; anything else the JVM's. */
static void native_finish(void) {
  if (!fast_start) return;
  char p[4096], pending[4096], text[70000], *out;
  struct stat st;
  identity_of_plugin();
  path_of(pending, "pending");
  snprintf(text, sizeof text, "xlac-preload 1\n%s\n%s\n", KB, KA); /* the files in name order, as the JVM reads them */
  write_file("preload.keys", text);
  char script[4000];
  snprintf(script, sizeof script,
           "echo CMD; printf 'preloaded\t%s\t5\nhit\t%s\t10\t20\t300000000\npreload_hit\t%s\t0\t7000000000\n'"
           " > $XLACT_STATS/stats-2.tsv; printf 'hit\t%s\t1\t2\t205000000\nhit\t%s\t1\t2\t0\n' > $XLACT_STATS/stats-1.tsv;"
           " exit 3", KA, KA, KA, KB, KA);
  char *served[] = {"run", "--cache", "C", "--plugin", "P", "--", "sh", "-c", script};
  char *plan = finishing_plan("", 1);
  install_plan(plan);
  free(plan);
  int before = stats_dirs_left();
  int status = run_fast(served, 9, &out);
  /* allServed_finishesWithoutAJvm: the command's status, the JVM's summary line, no java */
  CHECK(status == 3 && !strstr(out, "JAVA") &&
            strstr(out, "CMD\nxlac run: 3 compiles: 3 served from the cache, 0 compiled; 0.51 s of compiling saved\n"),
        "all served: %d '%s'", status, out);
  CHECK(stats_dirs_left() == before, "the stats directory is removed");
  free(out);
  CHECK(files_ending(pending, ".hits", text, sizeof text) == 1, "one record of hits waits");
  char want[2000];
  snprintf(want, sizeof want, "\nsaved_ns 505000000\nhit %s 1\nhit %s 2\nend\n", KB, KA);
  CHECK(!strncmp(text, "xlac-pending-hits 1\nat ", 23) && strstr(text, want) && text[strlen(text) - 1] == '\n',
        "the pending record: '%s'", text);
  CHECK(lstat(pending, &st) == 0 && (st.st_mode & 0777) == 0700, "a private pending directory");
  CHECK(files_ending(pending, "", NULL, 0) == 3, "no temporary is left (%d entries)", files_ending(pending, "", NULL, 0));
  path_of(p, "report.json");
  /* reportOfTheFinishWithoutAJvm_hasTheJvmsMode: the process's default (umask 022 here), as AtomicFiles gives it */
  CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0644, "the report's mode: %o", (unsigned)(st.st_mode & 0777));
  DIR *rd = opendir(root);
  int temporaries = 0;
  for (struct dirent *de; rd && (de = readdir(rd));) temporaries += !strncmp(de->d_name, ".report.json.tmp-", 17);
  if (rd) closedir(rd);
  CHECK(temporaries == 0, "no temporary of the report is left (%d)", temporaries);
  FILE *f = fopen(p, "r");
  size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
  text[got] = 0;
  if (f) fclose(f);
  CHECK(strstr(text, "{\n  \"compiles\": 3,\n  \"hits\": 3,\n  \"misses\": 0,\n  \"fallbacks\": 0,\n"
                     "  \"compile_seconds\": 0.0,\n  \"saved_seconds\": 0.505,\n  \"recorded\": 0,\n  \"unrecorded\": 0,\n"
                     "  \"fallback_reasons\": [],\n  \"miss_lookup_seconds\": 0.0,\n  \"miss_overhead_percent\": 0.0,\n"
                     "  \"serve_seconds\": 3.6E-8,\n  \"preloaded\": 1,\n  \"preload_hits\": 1,\n  \"preload_wasted\": 0,\n"
                     "  \"preload_hidden_seconds\": 7.0,\n  \"exit_status\": 3,\n  \"wall_seconds\": ") == text &&
            strstr(text, ",\n  \"plugin\": \"/lib/pl\\\"ugin.so\",\n  \"plugin_sha256\": \"0123\",\n"
                         "  \"layout\": \"cache/runtime/pjrt\",\n  \"ingested\": null,\n  \"remote\": null,\n"
                         "  \"miss_reasons\": []\n}\n"),
        "the report: '%s'", text);

  /* requireHits_withoutACompile_failsAsTheJvmDoes, and --quiet prints no summary */
  char *none[] = {"run", "--cache", "C", "--plugin", "P", "--", "sh", "-c", "exit 0"};
  plan = finishing_plan("quiet require-hits", 0);
  install_plan(plan);
  free(plan);
  status = run_fast(none, 9, &out);
  CHECK(status == 1 && !strcmp(out, "xlac run: --require-hits: no compile went through xlac's proxy, so none was"
                                    " served from the cache (did the command load its PJRT plugin through xlac?)\n"),
        "require-hits without compiles: %d '%s'", status, out);
  free(out);
  CHECK(files_ending(pending, ".hits", NULL, 0) == 1, "a run without hits leaves no record");

  /* each of these is the JVM's to finish, with nothing left to count twice */
  struct {
    const char *what, *script;
  } jvm[] = {
      {"a miss", "printf 'miss\t%s\t1\t2\n' > $XLACT_STATS/stats-1.tsv"},
      {"a miss's request kept", "printf 'hit\t%s\t1\t2\t3\n' > $XLACT_STATS/stats-1.tsv; : > $XLACT_STATS/aa.xpr"},
      {"a line it does not know", "printf 'hit\t%s\t1\t2\t3\nnew_kind\t1\n' > $XLACT_STATS/stats-1.tsv"},
      {"a partial line", "printf 'hit\t%s\t1\t2' > $XLACT_STATS/stats-1.tsv"},
      {"a negative number", "printf 'hit\t%s\t1\t-2\t3\n' > $XLACT_STATS/stats-1.tsv"},
      {"a FIFO for a statistics file", "mkfifo $XLACT_STATS/stats-9.tsv"},
      {"another list to load ahead", "printf 'hit\t%s\t1\t2\t3\n' > $XLACT_STATS/stats-1.tsv"},
  };
  plan = finishing_plan("", 0);
  install_plan(plan);
  free(plan);
  for (size_t i = 0; i < sizeof jvm / sizeof *jvm; i++) {
    snprintf(script, sizeof script, jvm[i].script, KB);
    char *cmd[] = {"run", "--cache", "C", "--plugin", "P", "--", "sh", "-c", script};
    status = run_fast(cmd, 9, &out);
    CHECK(strstr(out, "-Dxlac.run.adopted.exit=0 ") && !strstr(out, "xlac run:"), "%s: the JVM finishes: %d '%s'",
          jvm[i].what, status, out);
    free(out);
    CHECK(files_ending(pending, ".hits", NULL, 0) == 1, "%s: no record left", jvm[i].what);
  }
  /* a run whose list to load ahead is the same ([B]) is finished here again */
  snprintf(text, sizeof text, "xlac-preload 1\n%s\n", KB);
  write_file("preload.keys", text);
  snprintf(script, sizeof script, "printf 'hit\t%s\t1\t2\t3\n' > $XLACT_STATS/stats-1.tsv", KB);
  char *one[] = {"run", "--cache", "C", "--plugin", "P", "--", "sh", "-c", script};
  status = run_fast(one, 9, &out);
  CHECK(status == 0 && strstr(out, "xlac run: 1 compile: 1 served") && !strstr(out, "JAVA"), "one hit: '%s'", out);
  free(out);
  CHECK(files_ending(pending, ".hits", NULL, 0) == 2, "its record");

  /* pendingRecord_onAFullDisk_leavesTheRunToTheJvm: nothing half-written stays */
  caller full = {.fsize = 100};
  status = run_fast_as(&full, one, 9, &out);
  /* (the limit cuts the log of the java command line too) */
  CHECK(!strncmp(out, "-Dxlac.run.adopted.stats=", 25) && !strstr(out, "xlac run:"), "a full disk: %d '%s'", status, out);
  free(out);
  CHECK(files_ending(pending, ".hits", NULL, 0) == 2 && files_ending(pending, "", NULL, 0) == 4,
        "a full disk: no record, no temporary left (%d entries)", files_ending(pending, "", NULL, 0));
  /* a pending directory others can write, or a link in its place: the JVM's */
  chmod(pending, 0777);
  status = run_fast(one, 9, &out);
  CHECK(strstr(out, "-Dxlac.run.adopted.exit=0 "), "a pending directory others can write: '%s'", out);
  free(out);
  chmod(pending, 0700);
  char moved[4096];
  path_of(moved, "pending-real");
  REQUIRE(rename(pending, moved) == 0 && symlink(moved, pending) == 0, "link the pending directory");
  status = run_fast(one, 9, &out);
  CHECK(strstr(out, "-Dxlac.run.adopted.exit=0 "), "a linked pending directory: '%s'", out);
  free(out);
  REQUIRE(unlink(pending) == 0 && rename(moved, pending) == 0, "unlink");
  /* pendingRecords_pastTheBound_areCountedByTheJvm */
  for (int i = files_ending(pending, ".hits", NULL, 0); i < XFINISH_MAX_PENDING; i++) {
    char name[100];
    snprintf(name, sizeof name, "pending/filler-%d.hits", i);
    write_file(name, "");
  }
  status = run_fast(one, 9, &out);
  CHECK(strstr(out, "-Dxlac.run.adopted.exit=0 "), "too many waiting records: '%s'", out);
  free(out);
  /* the plugin replaced during the run (the JVM forgets the stamp) */
  snprintf(text, sizeof text, "rm -f %s/pending/filler-*; printf 'hit\t%s\t1\t2\t3\n' > $XLACT_STATS/stats-1.tsv;"
           " touch -d @1 %s/plugin.so", root, KB, root);
  char *replacing[] = {"run", "--cache", "C", "--plugin", "P", "--", "sh", "-c", text};
  status = run_fast(replacing, 9, &out);
  CHECK(strstr(out, "-Dxlac.run.adopted.exit=0 "), "the plugin changed during the run: '%s'", out);
  free(out);
  /* pluginLinkRepointedDuringTheRun_isTheJvmsToFinish: the JVM resolves the plugin again and forgets the plan */
  snprintf(text, sizeof text, "printf 'hit\t%s\t1\t2\t3\n' > $XLACT_STATS/stats-1.tsv; ln -sfn other-plugin.so %s/plugin-link.so",
           KB, root);
  char *repointing[] = {"run", "--cache", "C", "--plugin", "P", "--", "sh", "-c", text};
  identity_of_plugin();
  plan = finishing_plan("", 0);
  install_plan(plan);
  free(plan);
  status = run_fast(repointing, 9, &out);
  CHECK(strstr(out, "-Dxlac.run.adopted.exit=0 "), "the plugin's link pointed elsewhere during the run: '%s'", out);
  free(out);
  path_of(p, "plugin-link.so");
  unlink(p);
  REQUIRE(symlink("plugin.so", p) == 0, "restore the plugin link");
  snprintf(plugin_identity, sizeof plugin_identity, "ab:1:2:3:4");
}

/* javaDouble_asJavasDoubleToString: the report's numbers, as the JVM's report writes them */
static void java_double(void) {
  struct {
    double v;
    const char *want;
  } cases[] = {{0.5, "0.5"}, {0.0, "0.0"}, {1e-4, "1.0E-4"}, {0.001, "0.001"}, {12345678.0, "1.2345678E7"},
               {100.0, "100.0"}, {0.1 + 0.2, "0.30000000000000004"}, {1e7, "1.0E7"}, {9999999.0, "9999999.0"},
               {123.456, "123.456"}, {0.012345678, "0.012345678"}, {2.5e-5, "2.5E-5"}, {3.6e-8, "3.6E-8"},
               {1.0 / 3, "0.3333333333333333"}, {-2.0, "-2.0"}, {7.0, "7.0"}, {0.505, "0.505"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char out[40];
    xfinish_java_double(cases[i].v, out, sizeof out);
    CHECK(!strcmp(out, cases[i].want), "java double of %.17g: '%s', want '%s'", cases[i].v, out, cases[i].want);
  }
}

/* signal_beforeTheChildsSetsid_isNotLost: forwarded while the child has no group of its own yet, it
 * stays pending there until the child's set-up, then acts. */
static void signal_before_setsid(void) {
  int ready[2], go[2];
  REQUIRE(pipe(ready) == 0 && pipe(go) == 0, "pipe");
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigprocmask(SIG_BLOCK, &block, &old);
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork");
  if (pid == 0) {
    char c = 0;
    if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(98);
    xfast_child_setup();
    _exit(0); /* reached only when the signal was lost */
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
  char c;
  REQUIRE(read(ready[0], &c, 1) == 1, "child ready");
  xfast_forward(pid, SIGTERM); /* the child has not called setsid: no group -pid */
  REQUIRE(write(go[1], &c, 1) == 1, "go");
  int ws;
  waitpid(pid, &ws, 0);
  CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGTERM, "a signal before the child's setsid was lost (status %d)", ws);
  close(ready[0]);
  close(ready[1]);
  close(go[0]);
  close(go[1]);
}

/* endedChild_keepsItsPidUntilReaped: the fast start stops forwarding signals between
 * xfast_wait_ended and xfast_reap; this holds only if the ended child still holds its pid (a
 * zombie) then, so that no other process can have taken it over, and gives it up at the reap. */
static void ended_child_keeps_its_pid(void) {
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork");
  if (pid == 0) _exit(7);
  CHECK(xfast_wait_ended(pid) == 0, "wait: %s", strerror(errno));
  char path[64], stat_line[256] = "";
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "r");
  if (f) {
    if (!fgets(stat_line, sizeof stat_line, f)) stat_line[0] = 0;
    fclose(f);
  }
  const char *state = strrchr(stat_line, ')');
  CHECK(kill(pid, 0) == 0, "the ended child's pid is no longer taken before the reap");
  CHECK(state && !strncmp(state, ") Z", 3), "the ended child is a zombie until the reap: %s", stat_line);
  int ws = 0;
  CHECK(xfast_reap(pid, &ws) == 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 7, "reaped, status %d", ws);
  CHECK(kill(pid, 0) != 0 && errno == ESRCH, "the reap gave the pid up");
}

/* childSetup_givesTheCommand_theJvmPathsMaskAndDispositions: an empty mask, SIGPIPE/SIGQUIT/SIGCHLD
 * at their defaults, an ignored SIGINT left ignored, its own session, no descriptor from 3 up. */
static void child_setup(void) {
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork");
  if (pid == 0) {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGCHLD, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    int extra = open("/dev/null", O_RDONLY);
    if (dup2(extra, 7) != 7) _exit(90);
    xfast_child_setup();
    sigset_t now;
    sigprocmask(SIG_SETMASK, NULL, &now);
    struct sigaction sa;
    int bad = 0;
    if (sigismember(&now, SIGUSR1) || sigismember(&now, SIGHUP)) bad |= 1;
    sigaction(SIGPIPE, NULL, &sa);
    if (sa.sa_handler != SIG_DFL) bad |= 2;
    sigaction(SIGQUIT, NULL, &sa);
    if (sa.sa_handler != SIG_DFL) bad |= 4;
    sigaction(SIGCHLD, NULL, &sa);
    if (sa.sa_handler != SIG_DFL) bad |= 8;
    sigaction(SIGINT, NULL, &sa);
    if (sa.sa_handler != SIG_IGN) bad |= 16;
    if (getsid(0) != getpid()) bad |= 32;
    if (fcntl(7, F_GETFD) != -1 || fcntl(extra, F_GETFD) != -1) bad |= 64;
    _exit(bad);
  }
  int ws;
  waitpid(pid, &ws, 0);
  CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "child set-up: wrong mask/dispositions/session/fds (bits %d)",
        WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
}

/* killedRunsStatsDir_isNamedAfterItsProcess: host, PID namespace, pid and start time, as pipeline StatsDirectories
 * parses them (otherContainersStatsDir_isLeftAlone: the namespace tells containers sharing a host name apart) */
static void stats_template(void) {
  xplan p;
  memset(&p, 0, sizeof p);
  p.stats_parent = "/t";
  p.stats_prefix = "xlac-run-stats-";
  char out[600];
  REQUIRE(xplan_stats_template(&p, out, sizeof out) == 0, "stats template");
  char host[256] = "";
  gethostname(host, sizeof host);
  host[255] = 0;
  for (char *c = host; *c; c++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.", *c)) *c = '_';
  char stat[1024] = "";
  FILE *f = fopen("/proc/self/stat", "r");
  REQUIRE(f && fgets(stat, sizeof stat, f), "/proc/self/stat");
  fclose(f);
  unsigned long long start = 0;
  REQUIRE(sscanf(strrchr(stat, ')') + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                 &start) == 1, "start time");
  char link[64] = "";
  ssize_t ln = readlink("/proc/self/ns/pid", link, sizeof link - 1);
  REQUIRE(ln > 5 && !strncmp(link, "pid:[", 5) && link[ln - 1] == ']', "/proc/self/ns/pid");
  link[ln - 1] = 0;
  char want[600];
  snprintf(want, sizeof want, "/t/xlac-run-stats-%s-ns%s-%ld-%llu-XXXXXX", host[0] ? host : "localhost", link + 5,
           (long)getpid(), start);
  CHECK(!strcmp(out, want), "stats template '%s', want '%s'", out, want);
  CHECK(xplan_stats_template(&p, out, 20) == -1, "a template that does not fit");
}

int main(void) {
  umask(022);
  const char *base = getenv("XLAC_TEST_TMP");
  char tmpl[4096];
  snprintf(tmpl, sizeof tmpl, "%s/launch-plan-XXXXXX", base ? base : "/tmp");
  if (base) mkdir(base, 0755);
  REQUIRE(mkdtemp(tmpl), "mkdtemp %s", tmpl);
  REQUIRE(realpath(tmpl, root), "realpath");
  snprintf(cwd, sizeof cwd, "%s", root);
  char p[4096];
  const char *dirs[] = {"db", "tmp", "plans"};
  for (int i = 0; i < 3; i++) {
    path_of(p, dirs[i]);
    mkdir(p, 0755);
  }
  write_file("plugin.so", "plugin");
  write_file("other-plugin.so", "another plugin");
  path_of(p, "plugin-link.so");
  REQUIRE(symlink("plugin.so", p) == 0, "symlink");
  write_file("pjrt.stamp", "stamp 1\n");
  write_file("db/CURRENT", "MANIFEST-000001\n");
  write_file("db/000001.sst", "sst");
  write_file("db/LOG", "log");
  setenv("XLACT_ONE", "one", 1);
  setenv("X_TLIB", "/lib", 1);
  setenv("TWATCH", "w", 1);
  setenv("TO_REMOVE", "r", 1);
  conditions();
  stats_template();
  signal_before_setsid();
  ended_child_keeps_its_pid();
  child_setup();
  binary();
  native_finish();
  java_double();
  char cmd[8300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
  return test_summary("test_launch_plan");
}
