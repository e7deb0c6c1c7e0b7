#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "sha256.h"

static int bad(char *reason, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, size, fmt, ap);
  va_end(ap);
  return XLAYOUT_BAD;
}

static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* Reads exactly n bytes at offset; 0 on success. */
static int read_at(int fd, uint8_t *p, size_t n, off_t offset) {
  while (n > 0) {
    ssize_t r = pread(fd, p, n, offset);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
    offset += r;
  }
  return 0;
}

int xlayout_read(const char *layout_dir, const uint8_t key[32], uint8_t **executable, size_t *size,
                 uint64_t *compile_ns, char *reason, size_t reason_size) {
  char hex[65];
  xhex(key, 32, hex);
  size_t path_size = strlen(layout_dir) + 100;
  char *path = malloc(path_size);
  if (!path) return bad(reason, reason_size, "out of memory");
  snprintf(path, path_size, "%s/entries/%.2s/%s.xpx", layout_dir, hex, hex);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    struct stat st;
    int result;
    if (e == ENOENT && stat(layout_dir, &st) == 0 && S_ISDIR(st.st_mode))
      result = XLAYOUT_ABSENT; /* a plain miss */
    else if (e == ENOENT)
      result = bad(reason, reason_size, "runtime layout %s is not a directory", layout_dir);
    else
      result = bad(reason, reason_size, "cannot open layout entry %s: %s", path, strerror(e));
    free(path);
    return result;
  }
  uint8_t header[XLAYOUT_HEADER];
  struct stat st;
  int result = XLAYOUT_BAD;
  uint8_t *exe = NULL;
  if (fstat(fd, &st) != 0) {
    bad(reason, reason_size, "cannot stat layout entry %s: %s", path, strerror(errno));
    goto out;
  }
  if (!S_ISREG(st.st_mode)) {
    bad(reason, reason_size, "layout entry %s is not a regular file", path);
    goto out;
  }
  if (st.st_size < XLAYOUT_HEADER || read_at(fd, header, XLAYOUT_HEADER, 0) != 0) {
    bad(reason, reason_size, "layout entry %s is truncated (%lld bytes)", path, (long long)st.st_size);
    goto out;
  }
  if (memcmp(header, XLAYOUT_MAGIC, 8) != 0) {
    bad(reason, reason_size, "layout entry %s is not an xlac layout entry (bad magic)", path);
    goto out;
  }
  if (memcmp(header + 8, key, 32) != 0) {
    bad(reason, reason_size, "layout entry %s holds another request key", path);
    goto out;
  }
  uint64_t n = le64(header + 40);
  if (n > (uint64_t)st.st_size || (uint64_t)st.st_size - XLAYOUT_HEADER != n) {
    bad(reason, reason_size, "layout entry %s has %lld bytes, its header says %llu + %d", path,
        (long long)st.st_size, (unsigned long long)n, XLAYOUT_HEADER);
    goto out;
  }
  exe = malloc(n ? (size_t)n : 1);
  if (!exe) {
    bad(reason, reason_size, "out of memory reading layout entry %s", path);
    goto out;
  }
  if (read_at(fd, exe, (size_t)n, XLAYOUT_HEADER) != 0) {
    bad(reason, reason_size, "cannot read layout entry %s: %s", path,
        errno ? strerror(errno) : "shorter than its size");
    goto out;
  }
  uint8_t digest[32];
  xsha256_buffer(exe, (size_t)n, digest);
  if (memcmp(digest, header + 48, 32) != 0) {
    bad(reason, reason_size, "layout entry %s is damaged (checksum mismatch)", path);
    goto out;
  }
  *executable = exe;
  exe = NULL;
  *size = (size_t)n;
  *compile_ns = le64(header + 80);
  result = XLAYOUT_FOUND;
out:
  free(exe);
  close(fd);
  free(path);
  return result;
}
