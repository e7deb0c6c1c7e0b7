/* The proxy's files: runtime layout entries (read), record spool files (written), statistics lines
 * (appended). Formats: runtime/README.md. */
#ifndef XLAC_FILES_H
#define XLAC_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define XLAYOUT_HEADER 96
#define XLAYOUT_MAGIC "XLACPJX1"
#define XRECORD_MAGIC "XLACPJR1"

enum { XLAYOUT_ABSENT = 0, XLAYOUT_FOUND = 1, XLAYOUT_BAD = -1, XLAYOUT_NO_DIRECTORY = -2 };

/* Whether the runtime layout may be trusted: every directory from / down to it (links resolved)
 * belongs to this user or root and nobody else may write it (an ancestor that others may write
 * only with the sticky bit, as /tmp). 0, or XLAYOUT_BAD (or XLAYOUT_NO_DIRECTORY: missing, or
 * not a directory) with `reason`.
 * Costs a stat per ancestor: the proxy asks once per process. */
int xlayout_check_chain(const char *layout_dir, char *reason, size_t reason_size);

struct stat;
/* Why `st` may not be trusted, or NULL: it must belong to this user or root, and nobody else may
 * write it. A directory that others may write is tolerated only as an ancestor with the sticky bit
 * (/tmp): others cannot rename or remove what is ours in it. */
const char *xlayout_untrusted(const struct stat *st, int sticky_ok, char *why, size_t size);

/* Reads exactly n bytes of `fd` at offset (pread, EINTR retried); 0 on success, -1 otherwise. */
int xfile_read_at(int fd, uint8_t *p, size_t n, off_t offset);

/* Reads and verifies the entry for `key`: entries/, entries/<hh>/ and the entry are opened without
 * following links (the entry without blocking: it may be a FIFO) and must be trusted as above;
 * the entry must be a regular file. XLAYOUT_FOUND: *executable (malloc'd, *size bytes) and
 * *compile_ns are set. XLAYOUT_ABSENT: no such file. XLAYOUT_BAD: `reason` says what is wrong. */
int xlayout_read(const char *layout_dir, const uint8_t key[32], uint8_t **executable, size_t *size,
                 uint64_t *compile_ns, char *reason, size_t reason_size);

typedef struct {
  const uint8_t *data;
  size_t size;
} xspan;

/* Writes SPOOL/<hex>.xpr atomically (unique temporary, fsync, rename, directory fsync). Returns 0
 * and the file's size in *bytes, or -1 with `reason` (the temporary is removed). */
int xrecord_write(const char *spool, const uint8_t key[32], xspan format, xspan program,
                  xspan options, xspan identity, xspan executable, uint64_t compile_ns,
                  uint64_t *bytes, char *reason, size_t reason_size);

/* As xrecord_write into `dir`; without `durable`, neither the file nor the directory is fsynced (a
 * statistics directory, read by this machine when the run ends). */
int xrecord_write_to(const char *dir, const uint8_t key[32], xspan format, xspan program,
                     xspan options, xspan identity, xspan executable, uint64_t compile_ns, int durable,
                     uint64_t *bytes, char *reason, size_t reason_size);

/* A miss's request, kept for xlac to say why it was not served: STATS/<hex>.xpr, a record file with an
 * empty executable section (runtime/README.md, "Run statistics"), written once per key (an existing
 * file is kept), never fsynced. Best effort: a failure is only counted (XlacPjrt_MissRequestsUnwritten, for tests). */
void xstats_request(const char *stats_dir, const uint8_t key[32], xspan format, xspan program,
                    xspan options, xspan identity, uint64_t compile_ns);

/* Appends one line to STATS/stats-<pid>.tsv with a single write(); failures are ignored (statistics
 * must never disturb the run). */
void xstats_line(const char *stats_dir, const char *line);

#endif
