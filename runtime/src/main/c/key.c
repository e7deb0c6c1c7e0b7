#include "key.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"

static void put_u64be(xsha256 *s, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (56 - 8 * i));
  xsha256_update(s, b, 8);
}

void xrequest_key(const uint8_t *format, size_t format_size, const uint8_t *program,
                  size_t program_size, const uint8_t *canonical_options, size_t options_size,
                  const char *identity, size_t identity_size, uint8_t key[32]) {
  static const char tag[] = "xlac-pjrt-request/1"; /* followed by its NUL, as specified */
  xsha256 s;
  xsha256_init(&s);
  xsha256_update(&s, tag, sizeof tag);
  put_u64be(&s, format_size);
  xsha256_update(&s, format, format_size);
  put_u64be(&s, program_size);
  xsha256_update(&s, program, program_size);
  put_u64be(&s, options_size);
  xsha256_update(&s, canonical_options, options_size);
  put_u64be(&s, identity_size);
  xsha256_update(&s, identity, identity_size);
  xsha256_final(&s, key);
}

/* A growable string; on allocation failure it turns NULL and stays so. */
typedef struct {
  char *p;
  size_t n, cap;
} str;

static void add(str *s, const char *text, size_t n) {
  if (!s->p && s->cap) return; /* failed before */
  if (s->n + n + 1 > s->cap) {
    size_t cap = s->cap ? s->cap : 128;
    while (cap < s->n + n + 1) cap *= 2;
    char *p = realloc(s->p, cap);
    if (!p) {
      free(s->p);
      s->p = NULL;
      s->cap = 1;
      return;
    }
    s->p = p;
    s->cap = cap;
  }
  memcpy(s->p + s->n, text, n);
  s->n += n;
  s->p[s->n] = 0;
}

static void adds(str *s, const char *text) { add(s, text, strlen(text)); }

/* Writes `\` as `\\` and a newline as `\n`, so that every value stays on its line. */
static void add_escaped(str *s, const char *text, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (text[i] == '\\') adds(s, "\\\\");
    else if (text[i] == '\n') adds(s, "\\n");
    else add(s, text + i, 1);
  }
}

static int by_name(const void *a, const void *b) {
  const xp_named_value *x = *(const xp_named_value *const *)a, *y = *(const xp_named_value *const *)b;
  size_t n = x->name_size < y->name_size ? x->name_size : y->name_size;
  int c = n ? memcmp(x->name, y->name, n) : 0;
  if (c) return c;
  if (x->name_size != y->name_size) return x->name_size < y->name_size ? -1 : 1;
  return x < y ? -1 : x > y; /* same name: keep the plugin's order */
}

char *xidentity_attributes(const xp_named_value *attributes, size_t count) {
  const xp_named_value **sorted = calloc(count ? count : 1, sizeof *sorted);
  if (!sorted) return NULL;
  for (size_t i = 0; i < count; i++) {
    if (attributes[i].struct_size < XP_SIZE(xp_named_value, value_size)) {
      free(sorted);
      return NULL;
    }
    sorted[i] = &attributes[i];
  }
  qsort(sorted, count, sizeof *sorted, by_name);
  str s = {0};
  adds(&s, "");
  char num[64];
  for (size_t i = 0; i < count; i++) {
    const xp_named_value *a = sorted[i];
    adds(&s, "attribute=");
    add_escaped(&s, a->name, a->name_size);
    adds(&s, "=");
    switch (a->type) {
      case XP_NV_STRING:
        adds(&s, "s:");
        add_escaped(&s, a->value.string_value, a->value_size);
        break;
      case XP_NV_INT64:
        snprintf(num, sizeof num, "i:%lld", (long long)a->value.int64_value);
        adds(&s, num);
        break;
      case XP_NV_INT64_LIST:
        adds(&s, "l:");
        for (size_t k = 0; k < a->value_size; k++) {
          snprintf(num, sizeof num, k ? ",%lld" : "%lld", (long long)a->value.int64_array_value[k]);
          adds(&s, num);
        }
        break;
      case XP_NV_FLOAT:
        snprintf(num, sizeof num, "f:%.9g", (double)a->value.float_value);
        /* a host program may have set LC_NUMERIC to a locale with a decimal comma */
        for (char *c = num; *c; c++)
          if (*c == ',') *c = '.';
        adds(&s, num);
        break;
      case XP_NV_BOOL:
        adds(&s, a->value.bool_value ? "b:true" : "b:false");
        break;
      default:
        snprintf(num, sizeof num, "?%d:", (int)a->type);
        adds(&s, num);
    }
    adds(&s, "\n");
  }
  free(sorted);
  return s.p;
}

char *xidentity_text(const char *platform_name, size_t name_size, const char *platform_version,
                     size_t version_size, int api_major, int api_minor, const char *plugin_sha256_hex,
                     const char *attribute_lines) {
  str s = {0};
  char num[64];
  adds(&s, "xlac-pjrt-plugin/1\nplatform_name=");
  add_escaped(&s, platform_name, name_size);
  adds(&s, "\nplatform_version=");
  add_escaped(&s, platform_version, version_size);
  snprintf(num, sizeof num, "\napi_version=%d.%d\nplugin_sha256=", api_major, api_minor);
  adds(&s, num);
  adds(&s, plugin_sha256_hex);
  adds(&s, "\n");
  adds(&s, attribute_lines);
  return s.p;
}
