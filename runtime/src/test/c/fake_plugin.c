/* A stand-in "real plugin" whose table the proxy must not wrap: FAKE_PJRT_MAJOR sets its major
 * version (default 1), FAKE_PJRT_SIZE its table size (default the full table). The proxy must hand
 * this table back unchanged and say why once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt_abi.h"

static _Alignas(16) unsigned char table[2048];

__attribute__((visibility("default"))) const void *GetPjrtApi(void) {
  xpjrt_api_header h;
  memset(&h, 0, sizeof h);
  const char *size = getenv("FAKE_PJRT_SIZE"), *major = getenv("FAKE_PJRT_MAJOR");
  h.struct_size = size ? (size_t)atol(size) : sizeof table;
  h.version.struct_size = 24;
  h.version.major_version = major ? atoi(major) : 1;
  h.version.minor_version = 3;
  memcpy(table, &h, sizeof h);
  for (size_t at = sizeof h; at + 8 <= sizeof table; at += 8) memcpy(table + at, &table, 8); /* non-NULL slots */
  return table;
}
