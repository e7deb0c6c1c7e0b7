/* Run statistics: a statistics file that is not a regular file never blocks or redirects a compile. */
#include <fcntl.h>
#include <stdint.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"

uint64_t XlacPjrt_MissRequestsUnwritten(void);
#include "testlib.h"

static char dir[] = "/tmp/xlac-test-stats-XXXXXX";

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "FAIL: a statistics line waited on a FIFO\n";
  ssize_t ignored = write(2, msg, sizeof msg - 1);
  (void)ignored;
  _exit(1);
}

int main(void) {
  REQUIRE(mkdtemp(dir), "mkdtemp");
  char path[256], line[] = "hit\tpjrt1:x\t1\t2\t3\n";

  /* statsFileThatIsAFifo_isNotWaitedOn: open for writing without a reader blocks for ever */
  snprintf(path, sizeof path, "%s/stats-%ld.tsv", dir, (long)getpid());
  REQUIRE(mkfifo(path, 0600) == 0, "mkfifo");
  signal(SIGALRM, on_alarm);
  alarm(5);
  xstats_line(dir, line);
  alarm(0);
  unlink(path);

  /* statsFileThatIsALink_isNotFollowed: the line does not land in the link's target */
  char target[256];
  snprintf(target, sizeof target, "%s/elsewhere", dir);
  int fd = open(target, O_WRONLY | O_CREAT, 0600);
  REQUIRE(fd >= 0, "target");
  close(fd);
  REQUIRE(symlink(target, path) == 0, "symlink");
  xstats_line(dir, line);
  struct stat st;
  CHECK(stat(target, &st) == 0 && st.st_size == 0, "the link's target got %lld bytes", (long long)st.st_size);
  unlink(path);

  /* missRequestOfAHugeProgram_isNotKept: the statistics directory is often on a tmpfs (memory) */
  {
    size_t huge = (64u << 20) + 1;
    uint8_t *program = calloc(1, huge);
    REQUIRE(program, "calloc");
    uint8_t key[32] = {7};
    xspan fmt = {(const uint8_t *)"hlo", 3}, prog = {program, huge}, none = {(const uint8_t *)"", 0};
    uint64_t before = XlacPjrt_MissRequestsUnwritten();
    xstats_request(dir, key, fmt, prog, none, none, 1);
    free(program);
    char kept[320];
    snprintf(kept, sizeof kept, "%s/0700000000000000000000000000000000000000000000000000000000000000.xpr", dir);
    struct stat big;
    CHECK(stat(kept, &big) != 0, "a %zu-byte program was kept", huge);
    CHECK(XlacPjrt_MissRequestsUnwritten() == before + 1, "counted as not kept");
    xspan small = {(const uint8_t *)"abc", 3};
    xstats_request(dir, key, fmt, small, none, none, 1);
    CHECK(stat(kept, &big) == 0, "a small program is kept");
    unlink(kept);
  }

  /* a regular file gets the line, private to the user */
  xstats_line(dir, line);
  CHECK(stat(path, &st) == 0 && st.st_size == (off_t)strlen(line), "the line was written");
  CHECK((st.st_mode & 077) == 0, "mode %o", (unsigned)(st.st_mode & 0777));
  unlink(path);
  unlink(target);
  rmdir(dir);
  return test_summary("test_stats");
}
