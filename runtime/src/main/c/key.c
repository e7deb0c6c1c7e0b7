#include "key.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* Writes `\` as `\\`, a newline as `\n` and a NUL as `\0`, so that every value stays on its line
 * and the text holds no NUL. */
static void add_escaped(str *s, const char *text, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (text[i] == '\\') adds(s, "\\\\");
    else if (text[i] == '\n') adds(s, "\\n");
    else if (text[i] == 0) adds(s, "\\0");
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

char *xidentity_attributes(const void *attributes, size_t count) {
  /*
   * A C array of the plugin's PJRT_NamedValue: its elements lie sizeof(the plugin's struct) apart,
   * which a plugin built against a newer header may have grown. That size is the elements'
   * struct_size (the offset past its last field) rounded up to the struct's alignment; every
   * element must say the same, and the proxy reads only the fields it knows.
   */
  size_t stride = count ? ((const xp_named_value *)attributes)->struct_size : 0;
  stride = (stride + _Alignof(xp_named_value) - 1) / _Alignof(xp_named_value) * _Alignof(xp_named_value);
  if (count && (stride < XP_SIZE(xp_named_value, value_size) || stride > XNAMED_VALUE_MAX_SIZE)) return NULL;
  const xp_named_value **sorted = calloc(count ? count : 1, sizeof *sorted);
  if (!sorted) return NULL;
  for (size_t i = 0; i < count; i++) {
    const xp_named_value *v = (const xp_named_value *)((const char *)attributes + i * stride);
    if (v->struct_size != ((const xp_named_value *)attributes)->struct_size) {
      free(sorted);
      return NULL;
    }
    sorted[i] = v;
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

static int by_bytes(const void *a, const void *b) {
  const xstr *x = a, *y = b;
  size_t n = x->size < y->size ? x->size : y->size;
  int c = n ? memcmp(x->data, y->data, n) : 0;
  if (c) return c;
  return x->size < y->size ? -1 : x->size > y->size;
}

char *xidentity_text(const xidentity_parts *p, size_t *size) {
  str s = {0};
  char num[96];
  adds(&s, "xlac-pjrt-plugin/2\nplatform_name=");
  add_escaped(&s, p->platform_name.data, p->platform_name.size);
  adds(&s, "\nplatform_version=");
  add_escaped(&s, p->platform_version.data, p->platform_version.size);
  snprintf(num, sizeof num, "\napi_version=%d.%d\nplugin_sha256=", p->api_major, p->api_minor);
  adds(&s, num);
  adds(&s, p->plugin_sha256_hex);
  adds(&s, "\n");
  /*
   * One line per distinct kind, sorted by its bytes; not the number of devices: an executable for a
   * given replica and partition count (in the options) does not depend on how many devices the host
   * has, and a CPU plugin's count follows the host's cores, so a CI machine and a fleet machine
   * would never share a key.
   */
  xstr *kinds = calloc(p->device_count ? p->device_count : 1, sizeof *kinds);
  if (!kinds) {
    free(s.p);
    return NULL;
  }
  if (p->device_count) memcpy(kinds, p->device_kinds, p->device_count * sizeof *kinds);
  qsort(kinds, p->device_count, sizeof *kinds, by_bytes);
  for (size_t i = 0; i < p->device_count; i++) {
    if (i && by_bytes(&kinds[i - 1], &kinds[i]) == 0) continue;
    adds(&s, "device_kind=");
    add_escaped(&s, kinds[i].data, kinds[i].size);
    adds(&s, "\n");
  }
  free(kinds);
  adds(&s, "xla_flags=");
  add_escaped(&s, p->xla_flags.data, p->xla_flags.size);
  adds(&s, "\nlibtpu_init_args=");
  add_escaped(&s, p->libtpu_init_args.data, p->libtpu_init_args.size);
  adds(&s, "\n");
  adds(&s, p->attribute_lines);
  if (s.p) *size = s.n;
  return s.p;
}

int xplugin_sha_env_matches(const char *e, const struct stat *st, uint8_t digest[32]) {
  if (!e || strlen(e) <= 65 || e[64] != ':' || xunhex(e, 32, digest) != 0) return 0;
  const char *p = e + 65;
  unsigned long long fields[4];
  for (int k = 0; k < 4; k++) {
    char *end;
    if (*p < '0' || *p > '9') return 0; /* strtoull would accept a sign or spaces */
    errno = 0;
    fields[k] = strtoull(p, &end, 10);
    if (errno || end == p || (k < 3 && *end != ':') || (k == 3 && *end)) return 0;
    p = end + 1;
  }
  unsigned long long mtime =
      (unsigned long long)st->st_mtim.tv_sec * 1000000000ull + (unsigned long long)st->st_mtim.tv_nsec;
  return fields[0] == (unsigned long long)st->st_size && fields[1] == mtime &&
         fields[2] == (unsigned long long)st->st_dev && fields[3] == (unsigned long long)st->st_ino;
}
