/* The runtime layout's directory chain: every directory from "/" down to the layout is checked. */
#define _DEFAULT_SOURCE /* chroot */
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"
#include "testlib.h"

/* In a child (chroot changes the process for good): "/" is a directory anyone may write, without
 * the sticky bit, so anyone could rename what is below it and plant a layout. */
static int chain_in_root(mode_t root_mode, char *reason, size_t size) {
  char root[] = "/tmp/xlac-test-root-XXXXXX";
  REQUIRE(mkdtemp(root), "mkdtemp");
  char layout[256];
  snprintf(layout, sizeof layout, "%s/layout", root);
  REQUIRE(mkdir(layout, 0700) == 0, "mkdir");
  REQUIRE(chmod(root, root_mode) == 0, "chmod");
  int pipefd[2];
  REQUIRE(pipe(pipefd) == 0, "pipe");
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork");
  if (pid == 0) {
    close(pipefd[0]);
    if (chroot(root) != 0 || chdir("/") != 0) _exit(2);
    char why[512] = "";
    int r = xlayout_check_chain("/layout", why, sizeof why);
    ssize_t ignored = write(pipefd[1], why, strlen(why));
    (void)ignored;
    _exit(r == 0 ? 0 : 1);
  }
  close(pipefd[1]);
  ssize_t got = read(pipefd[0], reason, size - 1);
  reason[got > 0 ? got : 0] = 0;
  close(pipefd[0]);
  int status;
  waitpid(pid, &status, 0);
  rmdir(layout);
  rmdir(root);
  REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) != 2, "chroot failed");
  return WEXITSTATUS(status);
}

int main(void) {
  if (geteuid() != 0) {
    printf("test_layout: skipped (chroot needs root)\n");
    return 0;
  }
  char reason[512];
  /* rootWritableByOthers_isNotTrusted */
  CHECK(chain_in_root(0777, reason, sizeof reason) == 1, "a world-writable / was trusted");
  CHECK(strstr(reason, "not trusted: /: its group or others may write it"), "reason: %s", reason);
  /* a sticky world-writable / is tolerated as an ancestor, as /tmp is; a private one is fine */
  CHECK(chain_in_root(01777, reason, sizeof reason) == 0, "sticky /: %s", reason);
  CHECK(chain_in_root(0755, reason, sizeof reason) == 0, "0755 /: %s", reason);
  return test_summary("test_layout");
}
