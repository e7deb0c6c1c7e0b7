/* xlac-pjrt-key: the proxy's key functions on the command line, so that the Java tests can check
 * that RequestKey, CanonicalOptions and PluginIdentityText compute what the proxy computes.
 * Test-only; built under target/native-test.
 *
 *   xlac-pjrt-key canonical OPTIONS_FILE...              hex of the canonical options, one line each
 *   xlac-pjrt-key key FORMAT PROGRAM_FILE OPTIONS_FILE IDENTITY_FILE     pjrt1:<hex>
 *   xlac-pjrt-key program PROGRAM_FILE...               hex of the canonical HloModuleProto, one line each
 *       ("raw" when it does not parse: the key then hashes the exact bytes)
 *   xlac-pjrt-key identity NAME VERSION MAJOR MINOR SHA XLA_FLAGS LIBTPU_INIT_ARGS COUNT KIND... \
 *       [TYPE NAME VALUE]...                          the identity text (COUNT device kinds; for the
 *       platform "cpu", this machine's host CPU lines)
 *       TYPE: s (string), i (int64), l (comma-separated int64s), f (float), b (true/false);
 *       a string argument written hex:<hex digits> stands for those bytes (to pass a NUL)
 *   xlac-pjrt-key host-cpu                               this machine's host CPU lines of the identity
 *   xlac-pjrt-key xla-flags VALUE                        the keyed XLA_FLAGS for that value (a file it
 *       names is read), then a newline
 *   xlac-pjrt-key stat FILE [ENV]                        SIZE:MTIME_NS:DEV:INO as the proxy stats FILE;
 *       with ENV (an XLAC_PJRT_PLUGIN_SHA256 value) a second line: match or mismatch
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "key.h"
#include "options.h"
#include "program.h"
#include "sha256.h"

static uint8_t *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "xlac-pjrt-key: cannot read %s\n", path);
    exit(2);
  }
  size_t cap = 4096, n = 0;
  uint8_t *p = malloc(cap);
  for (size_t r; p && (r = fread(p + n, 1, cap - n, f)) > 0;) {
    n += r;
    if (n == cap) p = realloc(p, cap *= 2);
  }
  fclose(f);
  *size = n;
  return p;
}

/* An argument as bytes: "hex:<digits>" decoded, anything else as it is. */
static xstr arg(const char *a) {
  if (strncmp(a, "hex:", 4)) return (xstr){a, strlen(a)};
  size_t n = strlen(a + 4) / 2;
  uint8_t *b = malloc(n + 1);
  if (!b || xunhex(a + 4, n, b) != 0) {
    fprintf(stderr, "xlac-pjrt-key: bad hex argument %s\n", a);
    exit(2);
  }
  b[n] = 0;
  return (xstr){(const char *)b, n};
}

int main(int argc, char **argv) {
  if ((argc == 3 || argc == 4) && !strcmp(argv[1], "stat")) {
    struct stat st;
    if (stat(argv[2], &st) != 0) {
      fprintf(stderr, "xlac-pjrt-key: cannot stat %s\n", argv[2]);
      return 2;
    }
    printf("%lld:%llu:%llu:%llu\n", (long long)st.st_size,
           (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec,
           (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    uint8_t digest[32];
    if (argc == 4) printf("%s\n", xplugin_sha_env_matches(argv[3], &st, digest) ? "match" : "mismatch");
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "host-cpu")) { /* this machine's lines, as a "cpu" platform's */
    char *lines = xhost_cpu_lines((xstr){"cpu", 3});
    printf("%s", lines ? lines : "");
    free(lines);
    return 0;
  }
  if (argc == 3 && !strcmp(argv[1], "xla-flags")) {
    char *keyed = xkeyed_xla_flags(argv[2]);
    printf("%s\n", keyed ? keyed : "");
    free(keyed);
    return 0;
  }
  if (argc >= 3 && !strcmp(argv[1], "canonical")) {
    for (int i = 2; i < argc; i++) { /* one line per file */
      size_t n, cn;
      uint8_t *o = slurp(argv[i], &n);
      uint8_t *c = xcanonical_options(o, n, &cn);
      char *hex = malloc(2 * cn + 1);
      xhex(c, cn, hex);
      printf("%s\n", hex);
      free(hex);
      free(c);
      free(o);
    }
    return 0;
  }
  if (argc >= 3 && !strcmp(argv[1], "program")) {
    for (int i = 2; i < argc; i++) {
      size_t n, cn;
      uint8_t *p = slurp(argv[i], &n);
      uint8_t *c = xcanonical_hlo(p, n, &cn);
      char *hex = malloc(2 * cn + 1);
      if (c) xhex(c, cn, hex);
      printf("%s\n", c ? hex : "raw");
      free(hex);
      free(c);
      free(p);
    }
    return 0;
  }
  if (argc == 6 && !strcmp(argv[1], "key")) {
    size_t pn, on, in, cn;
    uint8_t *program = slurp(argv[3], &pn), *options = slurp(argv[4], &on), *ident = slurp(argv[5], &in);
    uint8_t *c = xcanonical_options(options, on, &cn);
    uint8_t key[32];
    xrequest_key((const uint8_t *)argv[2], strlen(argv[2]), program, pn, c, cn, (const char *)ident, in, key);
    char hex[65];
    xhex(key, 32, hex);
    printf("pjrt1:%s\n", hex);
    return 0;
  }
  if (argc >= 10 && !strcmp(argv[1], "identity")) {
    int devices = atoi(argv[9]);
    int first = 10 + devices;
    if (devices < 0 || argc < first || (argc - first) % 3 != 0) goto usage;
    xstr *kinds = calloc((size_t)devices + 1, sizeof *kinds);
    for (int i = 0; i < devices; i++) kinds[i] = arg(argv[10 + i]);
    size_t count = (size_t)(argc - first) / 3;
    xp_named_value *v = calloc(count + 1, sizeof *v);
    for (size_t i = 0; i < count; i++) {
      const char *type = argv[first + 3 * i];
      xstr name = arg(argv[first + 1 + 3 * i]), value = arg(argv[first + 2 + 3 * i]);
      v[i].struct_size = sizeof v[i];
      v[i].name = name.data;
      v[i].name_size = name.size;
      v[i].value_size = 1;
      switch (type[0]) {
        case 's':
          v[i].type = XP_NV_STRING;
          v[i].value.string_value = value.data;
          v[i].value_size = value.size;
          break;
        case 'i':
          v[i].type = XP_NV_INT64;
          v[i].value.int64_value = strtoll(value.data, NULL, 10);
          break;
        case 'l': {
          v[i].type = XP_NV_INT64_LIST;
          int64_t *list = calloc(value.size + 1, sizeof *list);
          size_t k = 0;
          for (char *p = (char *)value.data; *p;) {
            list[k++] = strtoll(p, &p, 10);
            if (*p == ',') p++;
          }
          v[i].value.int64_array_value = list;
          v[i].value_size = k;
          break;
        }
        case 'f':
          v[i].type = XP_NV_FLOAT;
          v[i].value.float_value = strtof(value.data, NULL);
          break;
        default:
          v[i].type = XP_NV_BOOL;
          v[i].value.bool_value = !strcmp(value.data, "true");
      }
    }
    char *attrs = xidentity_attributes(v, count);
    xidentity_parts parts = {
        .platform_name = arg(argv[2]),
        .platform_version = arg(argv[3]),
        .api_major = atoi(argv[4]),
        .api_minor = atoi(argv[5]),
        .plugin_sha256_hex = argv[6],
        .xla_flags = arg(argv[7]),
        .libtpu_init_args = arg(argv[8]),
        .device_count = (size_t)devices,
        .device_kinds = kinds,
        .host_cpu_lines = xhost_cpu_lines(arg(argv[2])), /* this machine's, as the proxy's */
        .attribute_lines = attrs,
    };
    size_t size;
    char *text = xidentity_text(&parts, &size);
    fwrite(text, 1, size, stdout);
    return 0;
  }
usage:
  fprintf(stderr, "usage: xlac-pjrt-key canonical FILE | key FORMAT PROGRAM OPTIONS IDENTITY | "
                  "identity NAME VERSION MAJOR MINOR SHA XLA_FLAGS LIBTPU_INIT_ARGS COUNT KIND... "
                  "[TYPE NAME VALUE]... | stat FILE [ENV]\n");
  return 2;
}
