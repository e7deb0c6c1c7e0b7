/* xlac-fast-start: `xlac run` without a JVM before the command starts (runtime/README.md, "The
 * fast start"). The ./xlac launcher runs it, for `run` only, as
 *
 *   xlac-fast-start PLAN_DIR N JAVA_WORD_1 ... JAVA_WORD_N run OPTIONS... -- COMMAND...
 *
 * where the N words are the java command line the launcher would otherwise exec. When the launch
 * plan for this working directory and these options holds (launch_plan.c), it starts the command
 * itself, as xlac run's JVM would (own session, the same environment, signals forwarded to its
 * group), waits for it, and then execs the java command line with the command's outcome
 * (-Dxlac.run.adopted.*) to finish the run: statistics, cache, stamp, summary line, report (its
 * stdout is our stderr: the command's stdout stays the command's). In
 * every other case it execs the java command line unchanged. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fast_child.h"
#include "fast_finish.h"
#include "launch_plan.h"

extern char **environ;

static volatile sig_atomic_t child_group;
static volatile sig_atomic_t last_signal;

static void forward(int sig) {
  last_signal = sig;
  xfast_forward((pid_t)child_group, sig);
}

static int debug(void) {
  const char *d = getenv("XLAC_FAST_START_DEBUG");
  return d && *d && strcmp(d, "0");
}

/* The java command line, with `extra` words after its first, then the user's arguments; when it
 * cannot be run, one line and exit `status`. */
static void exec_java(char **java, int n_java, char **extra, int n_extra, char **user, int n_user, int status) {
  char **argv = calloc((size_t)(n_java + n_extra + n_user + 1), sizeof *argv);
  if (argv) {
    int k = 0;
    argv[k++] = java[0];
    for (int i = 0; i < n_extra; i++) argv[k++] = extra[i];
    for (int i = 1; i < n_java; i++) argv[k++] = java[i];
    for (int i = 0; i < n_user; i++) argv[k++] = user[i];
    execv(java[0], argv);
  }
  fprintf(stderr, "xlac: cannot run %s: %s\n", java[0], strerror(errno));
  exit(status);
}

/* Removes the statistics directory, with the proxy's files in it (it holds no directories). */
static void remove_stats(const char *stats) {
  char rm[8400];
  DIR *d = opendir(stats);
  if (d) {
    struct dirent *de;
    while ((de = readdir(d)))
      if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
        snprintf(rm, sizeof rm, "%s/%s", stats, de->d_name);
        unlink(rm);
      }
    closedir(d);
  }
  rmdir(stats);
}

/* The finish: when its java cannot be run, one line, the stats directory removed, and the
 * command's own status (the command did run). */
static void exec_java_or_exit(char **java, int n_java, char **extra, int n_extra, char **user, int n_user,
                              const char *stats, int status) {
  int k = 0;
  char **argv = calloc((size_t)(n_java + n_extra + n_user + 1), sizeof *argv);
  if (argv) {
    argv[k++] = java[0];
    for (int i = 0; i < n_extra; i++) argv[k++] = extra[i];
    for (int i = 1; i < n_java; i++) argv[k++] = java[i];
    for (int i = 0; i < n_user; i++) argv[k++] = user[i];
    execv(java[0], argv);
  }
  int e = errno;
  remove_stats(stats);
  fprintf(stderr, "xlac: cannot run %s to finish the run: %s\n", java[0], strerror(e));
  exit(status);
}

static void to_java(char **java, int n_java, char **user, int n_user, const char *why) {
  if (debug()) fprintf(stderr, "xlac-fast-start: JVM path: %s\n", why);
  exec_java(java, n_java, NULL, 0, user, n_user, 3);
}

/* Whether the command can be run, with the lookup and one-line messages of xlac's JVM
 * (capture CommandTracer.requireRunnable, core Executables.onPath): 0, or 127/126 with `message`. */
static int runnable(const char *program, const char *path, char *message, size_t size) {
  struct stat st;
  const char *found = NULL;
  char *candidate = NULL;
  if (strchr(program, '/')) {
    if (stat(program, &st) != 0) {
      snprintf(message, size, "command not found: %s (no such file)", program);
      return 127;
    }
    found = program;
  } else if (path && *program) {
    const char *p = path;
    for (;;) {
      const char *colon = strchr(p, ':');
      size_t len = colon ? (size_t)(colon - p) : strlen(p);
      candidate = malloc(len + strlen(program) + 3);
      if (!candidate) break;
      if (len == 0) {
        sprintf(candidate, "./%s", program);
      } else {
        sprintf(candidate, "%.*s/%s", (int)len, p, program);
      }
      if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode) && access(candidate, X_OK) == 0) {
        found = candidate;
        break;
      }
      free(candidate);
      candidate = NULL;
      if (!colon) break;
      p = colon + 1;
    }
  }
  if (!found) {
    snprintf(message, size, "command not found: %s (not on PATH)", program);
    return 127;
  }
  int status = 0;
  if (stat(found, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(message, size, "cannot run %s: is a directory", program);
    status = 126;
  } else if (access(found, X_OK) != 0) {
    snprintf(message, size, "cannot run %s: permission denied (not executable)", program);
    status = 126;
  }
  free(candidate);
  return status;
}

static const char *signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "INT";
    case SIGTERM: return "TERM";
    case SIGHUP: return "HUP";
    default: return "";
  }
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: xlac-fast-start PLAN_DIR N JAVA_WORDS... run ARGS...\n");
    return 4;
  }
  char *end;
  long n_java = strtol(argv[2], &end, 10);
  if (*end || n_java < 1 || n_java > argc - 3) {
    fprintf(stderr, "xlac-fast-start: bad word count %s\n", argv[2]);
    return 4;
  }
  /* A SIGCHLD ignored by the caller would let the kernel reap the command, and waitpid fail. */
  signal(SIGCHLD, SIG_DFL);
  char **java = argv + 3;
  char **user = java + n_java;
  int n_user = argc - 3 - (int)n_java;
  if (n_user < 3 || strcmp(user[0], "run")) to_java(java, (int)n_java, user, n_user, "not a plain run");
  int dash = 1;
  while (dash < n_user && strcmp(user[dash], "--")) dash++;
  if (dash >= n_user - 1) to_java(java, (int)n_java, user, n_user, "no -- COMMAND");
  for (int i = dash + 1; i < n_user; i++)
    if (user[i][0] == '@') to_java(java, (int)n_java, user, n_user, "a command word starting with @");
  char **command = user + dash + 1;

  char cwd[8192];
  if (!getcwd(cwd, sizeof cwd)) to_java(java, (int)n_java, user, n_user, "no working directory");
  xplan plan;
  char reason[512];
  if (xplan_load(argv[1], cwd, user + 1, (size_t)(dash - 1), environ, &plan, reason, sizeof reason) != 0)
    to_java(java, (int)n_java, user, n_user, reason);

  size_t sl = strlen(plan.stats_parent) + strlen(plan.stats_prefix) + 400;
  char *stats = malloc(sl);
  if (!stats) to_java(java, (int)n_java, user, n_user, "out of memory");
  if (xplan_stats_template(&plan, stats, sl) != 0) to_java(java, (int)n_java, user, n_user, "stats name too long");
  char **env = NULL;
  if (!mkdtemp(stats)) {
    snprintf(reason, sizeof reason, "cannot make the stats directory: %s", strerror(errno));
    to_java(java, (int)n_java, user, n_user, reason);
  }
  env = xplan_environment(&plan, environ, stats);
  if (!env) {
    rmdir(stats);
    to_java(java, (int)n_java, user, n_user, "out of memory");
  }
  const char *path = NULL;
  for (char **e = env; *e; e++)
    if (!strncmp(*e, "PATH=", 5)) path = *e + 5;
  char message[8400];
  int status = runnable(command[0], path, message, sizeof message);
  if (status) {
    rmdir(stats);
    fprintf(stderr, "xlac: %s\n", message);
    return status;
  }

  /* Signals are blocked across the fork, and in the child until it has its own session
   * (fast_child.h): one sent before then stays pending there. The parent forwards INT, TERM and HUP
   * and ignores QUIT while the command runs (the JVM path prints a thread dump and goes on). */
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGHUP);
  sigaddset(&block, SIGQUIT);
  sigprocmask(SIG_BLOCK, &block, &old);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &old, NULL);
    rmdir(stats);
    to_java(java, (int)n_java, user, n_user, "cannot fork");
  }
  if (pid == 0) {
    xfast_child_setup();
    environ = env;
    execvp(command[0], command);
    /* as util-linux setsid, which runs the command on xlac's JVM path */
    int e = errno;
    fprintf(stderr, "setsid: failed to execute %s: %s\n", command[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  child_group = pid;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  struct sigaction quit_ignored, quit_was;
  memset(&quit_ignored, 0, sizeof quit_ignored);
  quit_ignored.sa_handler = SIG_IGN;
  sigemptyset(&quit_ignored.sa_mask);
  sigaction(SIGQUIT, &quit_ignored, &quit_was);
  sigprocmask(SIG_SETMASK, &old, NULL);
  /* Forwarding stops after the command has ended and before it is reaped: until then its pid
   * cannot be reused, so a forwarded signal never reaches another process that took it over. */
  int ws;
  int waited = xfast_wait_ended(pid);
  child_group = 0;
  if (waited != 0 || xfast_reap(pid, &ws) != 0) { /* never read as an exit status */
    fprintf(stderr, "xlac: cannot wait for the command: %s\n", strerror(errno));
    remove_stats(stats);
    return 4;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  int exit_status = WIFEXITED(ws) ? WEXITSTATUS(ws) : WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : 1;
  long long wall = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGHUP, SIG_DFL);
  sigaction(SIGQUIT, &quit_was, NULL);

  /* Every compile served and nothing to do but count: finished here (fast_finish.h). Else the JVM. */
  int finished_status;
  if (xfinish_native(&plan, stats, exit_status, wall, &finished_status, reason, sizeof reason) == 0) {
    if (debug()) fprintf(stderr, "xlac-fast-start: served without a JVM; finished without one\n");
    remove_stats(stats);
    return finished_status;
  }
  if (debug()) fprintf(stderr, "xlac-fast-start: finishing in java: %s\n", reason);

  /* the plugin the plan was made for, and its cache: the finish holds the run to them */
  const char *identity = xplan_set_value(&plan, "XLAC_PJRT_PLUGIN_SHA256");
  size_t pl = strlen(identity ? identity : "") + 64, dl = strlen(plan.db_dir ? plan.db_dir : "") + 64;
  char *p_plugin = malloc(pl), *p_db = malloc(dl);
  if (!p_plugin || !p_db) {
    fprintf(stderr, "xlac: out of memory finishing the run\n");
    return exit_status;
  }
  snprintf(p_plugin, pl, "-Dxlac.run.adopted.plugin=%s", identity ? identity : "");
  snprintf(p_db, dl, "-Dxlac.run.adopted.db=%s", plan.db_dir ? plan.db_dir : "");
  char p_stats[8300], p_exit[64], p_wall[64], p_signal[64];
  snprintf(p_stats, sizeof p_stats, "-Dxlac.run.adopted.stats=%s", stats);
  snprintf(p_exit, sizeof p_exit, "-Dxlac.run.adopted.exit=%d", exit_status);
  snprintf(p_wall, sizeof p_wall, "-Dxlac.run.adopted.wall=%lld", wall);
  snprintf(p_signal, sizeof p_signal, "-Dxlac.run.adopted.signal=%s", signal_name(last_signal));
  char *extra[] = {p_stats, p_exit, p_wall, p_signal, p_plugin, p_db};
  if (debug()) fprintf(stderr, "xlac-fast-start: served without a JVM\n");
  /* The command's stdout is the command's: nothing of the finish (its lines, or a JVM's own warning) goes there. */
  fflush(stdout);
  dup2(STDERR_FILENO, STDOUT_FILENO);
  exec_java_or_exit(java, (int)n_java, extra, 6, user, n_user, stats, exit_status);
  return 4;
}
