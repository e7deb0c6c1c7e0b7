#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files.h"

void xstats_line(const char *stats_dir, const char *line) {
  size_t size = strlen(stats_dir) + 64;
  char *path = malloc(size);
  if (!path) return;
  /* opened per line, not kept: a forked child then writes its own stats-<pid>.tsv */
  snprintf(path, size, "%s/stats-%ld.tsv", stats_dir, (long)getpid());
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  free(path);
  if (fd < 0) return;
  /* one write per line: O_APPEND keeps lines of concurrent threads whole */
  ssize_t ignored = write(fd, line, strlen(line));
  (void)ignored;
  close(fd);
}
