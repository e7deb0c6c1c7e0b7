/* The request key (pjrt1) and the plugin identity text it covers (runtime/README.md). */
#ifndef XLAC_KEY_H
#define XLAC_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "pjrt_abi.h"

#define XKEY_PREFIX "pjrt1:"
#define XKEY_TEXT_SIZE (6 + 64 + 1) /* "pjrt1:" + hex + NUL */

/* SHA-256 of the request (format, program, canonical options, identity), each length-prefixed. */
void xrequest_key(const uint8_t *format, size_t format_size, const uint8_t *program,
                  size_t program_size, const uint8_t *canonical_options, size_t options_size,
                  const char *identity, size_t identity_size, uint8_t key[32]);

/* The attribute lines of the identity text, sorted by name, as one malloc'd string (NULL when out
 * of memory or when a named value's struct is smaller than the fields read). */
char *xidentity_attributes(const xp_named_value *attributes, size_t count);

/* The whole identity text (malloc'd). */
char *xidentity_text(const char *platform_name, size_t name_size, const char *platform_version,
                     size_t version_size, int api_major, int api_minor, const char *plugin_sha256_hex,
                     const char *attribute_lines);

#endif
