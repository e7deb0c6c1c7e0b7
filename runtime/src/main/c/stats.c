#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "sha256.h"

static atomic_uint_fast64_t requests_unwritten, request_bytes;

#define XSTATS_REQUEST_MAX (64ull << 20)
#define XSTATS_REQUESTS_MAX (256ull << 20)

void xstats_line(const char *stats_dir, const char *line) {
  size_t size = strlen(stats_dir) + 64;
  char *path = malloc(size);
  if (!path) return;
  /* opened per line, not kept: a forked child then writes its own stats-<pid>.tsv */
  snprintf(path, size, "%s/stats-%ld.tsv", stats_dir, (long)getpid());
  /* a FIFO or a link put in its place must not block or redirect the compile: not followed, not
   * waited on, and only a regular file is written */
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  free(path);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return;
  }
  /* one write per line: O_APPEND keeps lines of concurrent threads whole */
  ssize_t ignored = write(fd, line, strlen(line));
  (void)ignored;
  close(fd);
}

void xstats_request(const char *stats_dir, const uint8_t key[32], xspan format, xspan program,
                    xspan options, xspan identity, uint64_t compile_ns) {
  /* Bounded: the statistics directory is in TMPDIR, often a tmpfs (memory). A program larger than
   * 64 MiB, or one past 256 MiB of this process's, is not kept (its miss is explained as unknown). */
  uint64_t bytes_now = (uint64_t)program.size + options.size + identity.size + format.size;
  if (bytes_now > XSTATS_REQUEST_MAX ||
      atomic_fetch_add(&request_bytes, bytes_now) + bytes_now > XSTATS_REQUESTS_MAX) {
    atomic_fetch_add(&requests_unwritten, 1);
    return;
  }
  char hex[65];
  xhex(key, 32, hex);
  size_t size = strlen(stats_dir) + 80;
  char *path = malloc(size);
  if (!path) {
    atomic_fetch_add(&requests_unwritten, 1);
    return;
  }
  snprintf(path, size, "%s/%s.xpr", stats_dir, hex);
  struct stat st;
  /* once per key: another compile of it (this process or another of the run) wrote it already */
  int exists = lstat(path, &st) == 0;
  free(path);
  if (exists) return;
  uint64_t bytes;
  char reason[512];
  xspan no_executable = {(const uint8_t *)"", 0};
  if (xrecord_write_to(stats_dir, key, format, program, options, identity, no_executable, compile_ns, 0,
                       &bytes, reason, sizeof reason) != 0)
    atomic_fetch_add(&requests_unwritten, 1);
}

/* For tests: how many miss requests could not be written in this process. */
__attribute__((visibility("default"))) uint64_t XlacPjrt_MissRequestsUnwritten(void) {
  return atomic_load(&requests_unwritten);
}
