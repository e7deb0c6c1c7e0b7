/* xlac-pjrt-key: the proxy's key functions on the command line, so that the Java tests can check
 * that RequestKey, CanonicalOptions and PluginIdentityText compute what the proxy computes.
 * Test-only; built under target/native-test.
 *
 *   xlac-pjrt-key canonical OPTIONS_FILE...              hex of the canonical options, one line each
 *   xlac-pjrt-key key FORMAT PROGRAM_FILE OPTIONS_FILE IDENTITY_FILE     pjrt1:<hex>
 *   xlac-pjrt-key identity NAME VERSION MAJOR MINOR SHA [TYPE NAME VALUE]...  the identity text
 *       TYPE: s (string), i (int64), l (comma-separated int64s), f (float), b (true/false)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "key.h"
#include "options.h"
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

int main(int argc, char **argv) {
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
  if (argc >= 7 && (argc - 7) % 3 == 0 && !strcmp(argv[1], "identity")) {
    size_t count = (size_t)(argc - 7) / 3;
    xp_named_value *v = calloc(count + 1, sizeof *v);
    for (size_t i = 0; i < count; i++) {
      const char *type = argv[7 + 3 * i], *name = argv[8 + 3 * i], *value = argv[9 + 3 * i];
      v[i].struct_size = sizeof v[i];
      v[i].name = name;
      v[i].name_size = strlen(name);
      v[i].value_size = 1;
      switch (type[0]) {
        case 's':
          v[i].type = XP_NV_STRING;
          v[i].value.string_value = value;
          v[i].value_size = strlen(value);
          break;
        case 'i':
          v[i].type = XP_NV_INT64;
          v[i].value.int64_value = strtoll(value, NULL, 10);
          break;
        case 'l': {
          v[i].type = XP_NV_INT64_LIST;
          int64_t *list = calloc(strlen(value) + 1, sizeof *list);
          size_t k = 0;
          for (char *p = (char *)value; *p;) {
            list[k++] = strtoll(p, &p, 10);
            if (*p == ',') p++;
          }
          v[i].value.int64_array_value = list;
          v[i].value_size = k;
          break;
        }
        case 'f':
          v[i].type = XP_NV_FLOAT;
          v[i].value.float_value = strtof(value, NULL);
          break;
        default:
          v[i].type = XP_NV_BOOL;
          v[i].value.bool_value = !strcmp(value, "true");
      }
    }
    char *attrs = xidentity_attributes(v, count);
    char *text = xidentity_text(argv[2], strlen(argv[2]), argv[3], strlen(argv[3]), atoi(argv[4]),
                                atoi(argv[5]), argv[6], attrs);
    fputs(text, stdout);
    return 0;
  }
  fprintf(stderr, "usage: xlac-pjrt-key canonical FILE | key FORMAT PROGRAM OPTIONS IDENTITY | "
                  "identity NAME VERSION MAJOR MINOR SHA [TYPE NAME VALUE]...\n");
  return 2;
}
