/* One-line reasons for the caller's buffer: the way the proxy's file readers and writers, and the
 * fast start's plan check, say why something failed. */
#ifndef XLAC_REASON_H
#define XLAC_REASON_H

#include <stddef.h>

/* Formats the reason into reason (size bytes, always NUL-terminated) and returns -1. */
int xreason(char *reason, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
