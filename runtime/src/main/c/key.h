/* The request key (pjrt1) and the plugin identity text it covers (runtime/README.md). */
#ifndef XLAC_KEY_H
#define XLAC_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "pjrt_abi.h"

#define XKEY_PREFIX "pjrt1:"
#define XKEY_TEXT_SIZE (6 + 64 + 1) /* "pjrt1:" + hex + NUL */

/* SHA-256 of the request (format, program in its canonical form (program.h), canonical options,
 * identity), each length-prefixed. */
void xrequest_key(const uint8_t *format, size_t format_size, const uint8_t *program,
                  size_t program_size, const uint8_t *canonical_options, size_t options_size,
                  const char *identity, size_t identity_size, uint8_t key[32]);

/* The attribute lines of the identity text, sorted by name, as one malloc'd string, from the
 * plugin's array of PJRT_NamedValue (walked by its elements' struct_size, which may be larger than
 * the proxy's). NULL when out of memory, or when the elements' struct_size is smaller than the
 * fields read, larger than XNAMED_VALUE_MAX_SIZE or not the same for all. */
#define XNAMED_VALUE_MAX_SIZE 1024
char *xidentity_attributes(const void *attributes, size_t count);

/* XLA_FLAGS as the key sees it: the flags XLA reads (from the value, or from the file it names),
 * split into words exactly as XLA splits them, without the dump-only ones, each written with `\` as
 * `\\` and a space as `\s`, joined by one space (runtime/README.md). malloc'd; NULL when `value` is
 * NULL or empty, or out of memory. Reads the file, when it names one, now. */
char *xkeyed_xla_flags(const char *value);

/* `keyed` (a variable's keyed text), or, when it is NULL although the variable's `value` is set (it
 * could not be read: out of memory), a text in `buffer` unique to this process and moment, so that
 * nothing recorded elsewhere is served to it; NULL when the variable is unset or empty. */
char *xkeyed_or_unread(char *keyed, const char *value, char *buffer, size_t size, const char *name);

typedef struct {
  const char *data;
  size_t size;
} xstr;

/* The identity's host CPU lines ("host_cpu=...\ncpu_features=...\n", runtime/README.md) when the
 * platform is "cpu" (XLA:CPU compiles for the host's instruction set), else "". malloc'd; NULL when
 * out of memory. */
char *xhost_cpu_lines(xstr platform_name);

/* What the identity text (xlac-pjrt-plugin/3) is made of. */
typedef struct {
  xstr platform_name, platform_version;
  int api_major, api_minor;
  const char *plugin_sha256_hex;
  size_t device_count;      /* addressable devices of the compile's client */
  const xstr *device_kinds; /* their kinds, one per device, any order, repeats allowed */
  const char *host_cpu_lines; /* from xhost_cpu_lines; NULL: none */
  xstr xla_flags, libtpu_init_args;
  const char *attribute_lines; /* from xidentity_attributes */
} xidentity_parts;

/* The whole identity text (malloc'd, NUL-terminated; its length in *size, which it never exceeds
 * as escaping leaves no NUL inside), or NULL when out of memory. */
char *xidentity_text(const xidentity_parts *parts, size_t *size);

/* XLAC_PJRT_PLUGIN_SHA256 ("HEX:SIZE:MTIME_NS:DEV:INO"): 1 and the digest when it is well formed and
 * its stat fields equal `st` (size, mtime in ns, st_dev, st_ino), else 0. */
struct stat;
int xplugin_sha_env_matches(const char *env, const struct stat *st, uint8_t digest[32]);

#endif
