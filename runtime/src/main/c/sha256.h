/* SHA-256 (FIPS 180-4), small and dependency-free: the proxy hashes request keys, layout entries
 * and the plugin file with it. */
#ifndef XLAC_SHA256_H
#define XLAC_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint32_t state[8];
  uint64_t length; /* bytes hashed so far */
  uint8_t block[64];
  size_t used; /* bytes waiting in block */
} xsha256;

void xsha256_init(xsha256 *s);
void xsha256_update(xsha256 *s, const void *data, size_t n);
void xsha256_final(xsha256 *s, uint8_t out[32]);
void xsha256_buffer(const void *data, size_t n, uint8_t out[32]);
/* Tests: 1 turns the x86 SHA-extensions path off, so that the portable one can be checked too. */
void xsha256_portable_only(int on);
/* Lowercase hex of n bytes into out (2n + 1 bytes, NUL-terminated). */
void xhex(const uint8_t *bytes, size_t n, char *out);
/* Parses exactly 2n hex digits (either case); 0 on success. */
int xunhex(const char *text, size_t n, uint8_t *out);

#endif
