#define _GNU_SOURCE
#include "fast_child.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Closes every descriptor from 3 up: close_range(2) where the kernel has it, else each one listed
 * in /proc/self/fd, else each one up to the soft limit. */
static void close_from_3(void) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return;
#endif
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    int own = dirfd(d);
    int fds[256], n = 0;
    struct dirent *de;
    /* closing while listing can skip entries: collect, close, list again until none is left */
    for (;;) {
      n = 0;
      rewinddir(d);
      while ((de = readdir(d)) && n < 256) {
        char *end;
        long fd = strtol(de->d_name, &end, 10);
        if (*end || de->d_name[0] == '.' || fd < 3 || fd == own) continue;
        fds[n++] = (int)fd;
      }
      if (n == 0) break;
      for (int i = 0; i < n; i++) close(fds[i]);
    }
    closedir(d);
    return;
  }
  long max = sysconf(_SC_OPEN_MAX);
  for (long fd = 3; fd < (max > 0 ? max : 1024); fd++) close((int)fd);
}

void xfast_child_setup(void) {
  setsid();
  close_from_3();
  const int defaults[] = {SIGPIPE, SIGXFSZ, SIGQUIT, SIGCHLD};
  for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) signal(defaults[i], SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

void xfast_forward(pid_t pid, int sig) {
  int saved = errno;
  if (pid > 0 && kill(-pid, sig) != 0) kill(pid, sig);
  errno = saved;
}

int xfast_wait_ended(pid_t pid) {
  siginfo_t info;
  for (;;) {
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) == 0) return 0;
    if (errno != EINTR) return -1;
  }
}

int xfast_reap(pid_t pid, int *status) {
  while (waitpid(pid, status, 0) < 0)
    if (errno != EINTR) return -1;
  return 0;
}
