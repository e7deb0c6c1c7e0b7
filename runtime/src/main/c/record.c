#define _GNU_SOURCE /* gettid */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "files.h"
#include "reason.h"
#include "sha256.h"

/* Numbers the temporaries of this process, so two threads never share one. */
static atomic_uint_fast64_t temp_counter;

typedef struct {
  int fd;
  xsha256 sum;
  uint64_t written;
  int error; /* errno of the first failed write */
} out_file;

static void out_raw(out_file *o, const void *data, size_t n) {
  const uint8_t *p = data;
  while (n > 0 && !o->error) {
    ssize_t w = write(o->fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      o->error = errno;
      return;
    }
    if (w == 0) {
      o->error = EIO;
      return;
    }
    p += w;
    n -= (size_t)w;
    o->written += (uint64_t)w;
  }
}

/* Writes and hashes: the record's checksum covers every byte before it. */
static void out_put(out_file *o, const void *data, size_t n) {
  xsha256_update(&o->sum, data, n);
  out_raw(o, data, n);
}

static void out_u64(out_file *o, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
  out_put(o, b, 8);
}

static void out_section(out_file *o, xspan s) {
  out_u64(o, s.size);
  out_put(o, s.data, s.size);
}

int xrecord_write(const char *spool, const uint8_t key[32], xspan format, xspan program,
                  xspan options, xspan identity, xspan executable, uint64_t compile_ns,
                  uint64_t *bytes, char *reason, size_t reason_size) {
  return xrecord_write_to(spool, key, format, program, options, identity, executable, compile_ns, 1, bytes,
                          reason, reason_size);
}

int xrecord_write_to(const char *spool, const uint8_t key[32], xspan format, xspan program,
                     xspan options, xspan identity, xspan executable, uint64_t compile_ns, int durable,
                     uint64_t *bytes, char *reason, size_t reason_size) {
  char hex[65];
  xhex(key, 32, hex);
  size_t size = strlen(spool) + 128;
  char *temp = malloc(size), *final = malloc(size);
  if (!temp || !final) {
    free(temp);
    free(final);
    return xreason(reason, reason_size, "out of memory");
  }
  /* pid and tid repeat across PID namespaces (containers sharing a spool): 8 random bytes too */
  uint8_t noise[8];
  if (getrandom(noise, sizeof noise, GRND_NONBLOCK) != (ssize_t)sizeof noise) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    uint64_t mix = (uint64_t)t.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)t.tv_sec ^ (uint64_t)(uintptr_t)&t;
    memcpy(noise, &mix, sizeof noise);
  }
  char random_hex[17];
  xhex(noise, sizeof noise, random_hex);
  snprintf(temp, size, "%s/.tmp-%ld-%ld-%llu-%s", spool, (long)getpid(), (long)syscall(SYS_gettid),
           (unsigned long long)atomic_fetch_add(&temp_counter, 1), random_hex);
  snprintf(final, size, "%s/%s.xpr", spool, hex);
  int result = -1;
  out_file o = {.fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)};
  if (o.fd < 0) {
    xreason(reason, reason_size, "cannot create a file in record spool %s: %s", spool, strerror(errno));
    goto done;
  }
  xsha256_init(&o.sum);
  out_put(&o, XRECORD_MAGIC, 8);
  out_put(&o, key, 32);
  out_section(&o, format);
  out_section(&o, program);
  out_section(&o, options);
  out_section(&o, identity);
  out_section(&o, executable);
  out_u64(&o, compile_ns);
  uint8_t digest[32];
  xsha256_final(&o.sum, digest);
  out_raw(&o, digest, 32);
  if (o.error) {
    xreason(reason, reason_size, "cannot write %s: %s", temp, strerror(o.error));
  } else if (durable && fsync(o.fd) != 0) {
    xreason(reason, reason_size, "cannot flush %s: %s", temp, strerror(errno));
  } else if (close(o.fd) != 0) {
    o.fd = -1;
    xreason(reason, reason_size, "cannot close %s: %s", temp, strerror(errno));
  } else {
    o.fd = -1;
    if (rename(temp, final) != 0) {
      xreason(reason, reason_size, "cannot rename %s to %s: %s", temp, final, strerror(errno));
    } else {
      /* the rename is durable only once the directory is flushed */
      int dir = durable ? open(spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
      if (dir >= 0) {
        fsync(dir);
        close(dir);
      }
      *bytes = o.written;
      result = 0;
    }
  }
  if (o.fd >= 0) close(o.fd);
  if (result != 0) unlink(temp);
done:
  free(temp);
  free(final);
  return result;
}
