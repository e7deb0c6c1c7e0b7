#define _XOPEN_SOURCE 700 /* realpath, S_ISVTX */
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

int xfile_read_at(int fd, uint8_t *p, size_t n, off_t offset) {
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

const char *xlayout_untrusted(const struct stat *st, int sticky_ok, char *why, size_t size) {
  if (st->st_uid != geteuid() && st->st_uid != 0) {
    snprintf(why, size, "it belongs to user %lu, neither you nor root", (unsigned long)st->st_uid);
    return why;
  }
  if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(sticky_ok && S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX))) {
    snprintf(why, size, "its group or others may write it (mode %03o)", (unsigned)(st->st_mode & 0777));
    return why;
  }
  return NULL;
}

int xlayout_check_chain(const char *layout_dir, char *reason, size_t reason_size) {
  char *real = realpath(layout_dir, NULL);
  if (!real) {
    int e = errno;
    if (e == ENOENT || e == ENOTDIR) {
      bad(reason, reason_size, "runtime layout %s is not a directory", layout_dir);
      return XLAYOUT_NO_DIRECTORY;
    }
    return bad(reason, reason_size, "cannot resolve runtime layout %s: %s", layout_dir, strerror(e));
  }
  size_t n = strlen(real);
  char *prefix = malloc(n + 1);
  if (!prefix) {
    free(real);
    return bad(reason, reason_size, "out of memory");
  }
  int result = 0;
  char why[120];
  /* "/", then each longer prefix of the resolved path, the layout directory last */
  for (size_t end = 0;; end++) {
    if (end) while (end < n && real[end] != '/') end++;
    size_t len = end ? end : 1; /* end 0: "/" itself */
    memcpy(prefix, real, len);
    prefix[len] = 0;
    int last = len >= n;
    struct stat st;
    if (lstat(prefix, &st) != 0) {
      result = bad(reason, reason_size, "cannot check runtime layout %s: %s: %s", layout_dir, prefix, strerror(errno));
    } else if (!S_ISDIR(st.st_mode)) {
      bad(reason, reason_size, "runtime layout %s is not a directory", layout_dir);
      result = XLAYOUT_NO_DIRECTORY;
    } else if (xlayout_untrusted(&st, !last, why, sizeof why)) {
      result = bad(reason, reason_size, "runtime layout %s is not trusted: %s: %s", layout_dir, prefix, why);
    }
    if (result || last) break;
  }
  free(prefix);
  free(real);
  return result;
}

/* Opens `name` in `dir` (AT_FDCWD: a path) as a directory without following a symlink, and checks
 * that it may be trusted. The descriptor, or -1 with *absent set (a plain miss) or `reason`. */
static int open_trusted_dir(int dir, const char *name, const char *shown, int *absent, char *reason,
                            size_t size) {
  int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) *absent = 1;
    else bad(reason, size, "cannot open layout directory %s: %s", shown,
             e == ELOOP || e == ENOTDIR ? "a symbolic link or not a directory" : strerror(e));
    return -1;
  }
  struct stat st;
  char why[120];
  const char *problem = fstat(fd, &st) != 0 ? strerror(errno) : xlayout_untrusted(&st, 0, why, sizeof why);
  if (problem) {
    bad(reason, size, "layout directory %s is not trusted: %s", shown, problem);
    close(fd);
    return -1;
  }
  return fd;
}

int xlayout_read(const char *layout_dir, const uint8_t key[32], uint8_t **executable, size_t *size,
                 uint64_t *compile_ns, char *reason, size_t reason_size) {
  char hex[65];
  xhex(key, 32, hex);
  size_t path_size = strlen(layout_dir) + 100;
  char *path = malloc(path_size);
  if (!path) return bad(reason, reason_size, "out of memory");
  /* entries/, entries/<hh>/ and the entry, each opened without following a symlink and checked on
   * its descriptor; the entry with O_NONBLOCK, as opening a FIFO would otherwise wait for a writer */
  int entries = -1, sub = -1, fd = -1, absent = 0;
  snprintf(path, path_size, "%s/entries", layout_dir);
  entries = open_trusted_dir(AT_FDCWD, path, path, &absent, reason, reason_size);
  if (entries >= 0) {
    char name[3] = {hex[0], hex[1], 0};
    snprintf(path, path_size, "%s/entries/%.2s", layout_dir, hex);
    sub = open_trusted_dir(entries, name, path, &absent, reason, reason_size);
  }
  if (sub >= 0) {
    char name[70];
    snprintf(name, sizeof name, "%s.xpx", hex);
    snprintf(path, path_size, "%s/entries/%.2s/%s.xpx", layout_dir, hex, hex);
    fd = openat(sub, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    if (fd < 0 && e == ENOENT) absent = 1;
    else if (fd < 0)
      bad(reason, reason_size, "cannot open layout entry %s: %s", path,
          e == ELOOP ? "it is a symbolic link" : strerror(e));
  }
  if (entries >= 0) close(entries);
  if (sub >= 0) close(sub);
  if (fd < 0) {
    free(path);
    return absent ? XLAYOUT_ABSENT : XLAYOUT_BAD; /* a missing directory or entry is a plain miss */
  }
  uint8_t header[XLAYOUT_HEADER];
  struct stat st;
  int result = XLAYOUT_BAD;
  uint8_t *exe = NULL;
  char why[120];
  if (fstat(fd, &st) != 0) {
    bad(reason, reason_size, "cannot stat layout entry %s: %s", path, strerror(errno));
    goto out;
  }
  if (!S_ISREG(st.st_mode)) {
    bad(reason, reason_size, "layout entry %s is not a regular file", path);
    goto out;
  }
  if (xlayout_untrusted(&st, 0, why, sizeof why)) {
    bad(reason, reason_size, "layout entry %s is not trusted: %s", path, why);
    goto out;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK)) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  if (st.st_size < XLAYOUT_HEADER || xfile_read_at(fd, header, XLAYOUT_HEADER, 0) != 0) {
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
  if (xfile_read_at(fd, exe, (size_t)n, XLAYOUT_HEADER) != 0) {
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
