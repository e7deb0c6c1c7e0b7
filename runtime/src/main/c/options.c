#include "options.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/*
 * Which fields are sub-messages to canonicalise and which are maps. Everything else is copied byte
 * for byte (it needs no sorting inside: protobuf writers emit a message's own fields in a fixed
 * order, only map entries are unordered). Field numbers: xla/pjrt/proto/compile_options.proto and
 * xla/xla.proto (openxla/xla). The same table is in RequestKey.java (CanonicalOptions) and
 * runtime/README.md; change all three together, and the key's version with them.
 */
enum msg { M_PLAIN, M_COMPILE_OPTIONS, M_BUILD_OPTIONS, M_DEBUG_OPTIONS, M_OPTION_OVERRIDE };
enum kind { K_MESSAGE, K_MAP, K_DROP };

static const struct special {
  enum msg in;
  uint32_t field;
  enum kind kind;
  enum msg value; /* the sub-message, or the map value's message (M_PLAIN: a scalar value) */
} SPECIALS[] = {
    {M_COMPILE_OPTIONS, 3, K_MESSAGE, M_BUILD_OPTIONS},   /* executable_build_options */
    {M_COMPILE_OPTIONS, 7, K_MAP, M_OPTION_OVERRIDE},     /* env_option_overrides */
    {M_BUILD_OPTIONS, 3, K_MESSAGE, M_DEBUG_OPTIONS},     /* debug_options */
    {M_DEBUG_OPTIONS, 357, K_MAP, M_PLAIN},  /* xla_gpu_analytical_latency_estimator_options */
    {M_DEBUG_OPTIONS, 500, K_MAP, M_PLAIN},  /* xla_backend_extra_options */
    /*
     * Dropped: DebugOptions fields that steer only where and what XLA dumps, or name a local path,
     * and never the executable. xlac dump switches dumping on (through XLA_FLAGS, which JAX copies
     * into these fields), so without this a request recorded while dumping would never be served
     * to a run that does not dump. JAX's own cache key clears the same fields.
     */
    {M_DEBUG_OPTIONS, 61, K_DROP, M_PLAIN},  /* xla_gpu_cuda_data_dir */
    {M_DEBUG_OPTIONS, 102, K_DROP, M_PLAIN}, /* xla_force_host_platform_device_count (the options carry the replicas and partitions) */
    {M_DEBUG_OPTIONS, 109, K_DROP, M_PLAIN}, /* xla_dump_to */
    {M_DEBUG_OPTIONS, 110, K_DROP, M_PLAIN}, /* xla_dump_hlo_module_re */
    {M_DEBUG_OPTIONS, 111, K_DROP, M_PLAIN}, /* xla_dump_hlo_pass_re */
    {M_DEBUG_OPTIONS, 112, K_DROP, M_PLAIN}, /* xla_dump_hlo_as_text */
    {M_DEBUG_OPTIONS, 113, K_DROP, M_PLAIN}, /* xla_dump_hlo_as_proto */
    {M_DEBUG_OPTIONS, 114, K_DROP, M_PLAIN}, /* xla_dump_hlo_as_dot */
    {M_DEBUG_OPTIONS, 115, K_DROP, M_PLAIN}, /* xla_dump_hlo_as_url */
    {M_DEBUG_OPTIONS, 116, K_DROP, M_PLAIN}, /* xla_dump_hlo_as_html */
    {M_DEBUG_OPTIONS, 118, K_DROP, M_PLAIN}, /* xla_dump_hlo_snapshots */
    {M_DEBUG_OPTIONS, 132, K_DROP, M_PLAIN}, /* xla_dump_max_hlo_modules */
    {M_DEBUG_OPTIONS, 144, K_DROP, M_PLAIN}, /* xla_dump_module_metadata */
    {M_DEBUG_OPTIONS, 149, K_DROP, M_PLAIN}, /* xla_dump_fusion_visualization */
    {M_DEBUG_OPTIONS, 151, K_DROP, M_PLAIN}, /* xla_dump_compress_protos */
    {M_DEBUG_OPTIONS, 153, K_DROP, M_PLAIN}, /* xla_dump_disable_metadata */
    {M_DEBUG_OPTIONS, 154, K_DROP, M_PLAIN}, /* xla_dump_hlo_pipeline_re */
    {M_DEBUG_OPTIONS, 164, K_DROP, M_PLAIN}, /* xla_dump_hlo_as_long_text */
};

static const struct special *special_of(enum msg in, uint32_t field) {
  for (size_t i = 0; i < sizeof SPECIALS / sizeof SPECIALS[0]; i++)
    if (SPECIALS[i].in == in && SPECIALS[i].field == field) return &SPECIALS[i];
  return NULL;
}

typedef struct {
  uint8_t *p;
  size_t n, cap;
  bool oom;
} buf;

static void put(buf *b, const void *data, size_t n) {
  if (b->oom) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, data, n);
  b->n += n;
}

static void put_varint(buf *b, uint64_t v) {
  uint8_t tmp[10];
  size_t n = 0;
  do {
    tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  put(b, tmp, n);
}

/* One field occurrence as found on the wire. */
typedef struct {
  uint32_t number;
  uint8_t wire;
  size_t index;             /* position among the message's fields, for a stable sort */
  const uint8_t *value;     /* the payload: varint bytes, 8/4 fixed bytes, or LEN contents */
  size_t value_size;
} field;

/* Reads a varint; returns bytes consumed, 0 when truncated or longer than 10 bytes. */
static size_t get_varint(const uint8_t *p, size_t n, uint64_t *out) {
  uint64_t v = 0;
  for (size_t i = 0; i < n && i < 10; i++) {
    v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) {
      *out = v;
      return i + 1;
    }
  }
  return 0;
}

/* Splits a message into its fields; false when the bytes are not protobuf (rule 4). */
static bool parse(const uint8_t *p, size_t n, field **out, size_t *count) {
  size_t cap = 16, k = 0;
  field *f = malloc(cap * sizeof *f);
  if (!f) return false;
  size_t at = 0;
  while (at < n) {
    uint64_t tag, len;
    size_t used = get_varint(p + at, n - at, &tag);
    if (!used) goto bad;
    at += used;
    uint64_t number = tag >> 3;
    uint8_t wire = tag & 7;
    if (number == 0 || number > 0x1fffffff) goto bad;
    const uint8_t *value = p + at;
    size_t size;
    switch (wire) {
      case 0:
        if (!(size = get_varint(p + at, n - at, &len))) goto bad;
        break;
      case 1:
        size = 8;
        break;
      case 5:
        size = 4;
        break;
      case 2:
        if (!(used = get_varint(p + at, n - at, &len))) goto bad;
        at += used;
        value = p + at;
        if (len > n - at) goto bad;
        size = (size_t)len;
        break;
      default: /* groups (3, 4) and the undefined wire types 6, 7 */
        goto bad;
    }
    if (size > n - at) goto bad;
    at += size;
    if (k == cap) {
      field *g = realloc(f, 2 * cap * sizeof *f);
      if (!g) goto bad;
      f = g;
      cap *= 2;
    }
    f[k] = (field){(uint32_t)number, wire, k, value, size};
    k++;
  }
  *out = f;
  *count = k;
  return true;
bad:
  free(f);
  return false;
}

static int by_number(const void *a, const void *b) {
  const field *x = a, *y = b;
  if (x->number != y->number) return x->number < y->number ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index; /* stable: keeps repeated fields' order */
}

static bool canon(enum msg m, const uint8_t *p, size_t n, buf *out, int depth);

static void put_field(buf *out, uint32_t number, uint8_t wire, const uint8_t *v, size_t size) {
  put_varint(out, (uint64_t)number << 3 | wire);
  if (wire == 2) put_varint(out, size);
  put(out, v, size);
}

/* A map entry with its key (the payload of its last field 1) and its canonical bytes. */
typedef struct {
  const uint8_t *key;
  size_t key_size;
  size_t index;
  buf bytes;
} entry;

static int by_key(const void *a, const void *b) {
  const entry *x = a, *y = b;
  size_t n = x->key_size < y->key_size ? x->key_size : y->key_size;
  int c = n ? memcmp(x->key, y->key, n) : 0;
  if (c) return c;
  if (x->key_size != y->key_size) return x->key_size < y->key_size ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static bool same_key(const entry *a, const entry *b) {
  return a->key_size == b->key_size && (a->key_size == 0 || memcmp(a->key, b->key, a->key_size) == 0);
}

/* Writes the `count` occurrences of map field `number` in key order; of equal keys the last wins. */
static bool put_map(buf *out, uint32_t number, enum msg value_msg, const field *f, size_t count,
                    int depth) {
  entry *e = calloc(count ? count : 1, sizeof *e);
  if (!e) return false;
  bool ok = true;
  for (size_t i = 0; i < count && ok; i++) {
    field *inner;
    size_t k;
    if (f[i].wire != 2 || !parse(f[i].value, f[i].value_size, &inner, &k)) {
      ok = false;
      break;
    }
    e[i].index = i;
    qsort(inner, k, sizeof *inner, by_number);
    for (size_t j = 0; j < k && ok; j++) {
      if (inner[j].number == 1) {
        /* every map of the table has string keys: a key of another wire type is not one, and
         * comparing its payload bytes alone would let it stand for a string key (rule 4) */
        if (inner[j].wire != 2) ok = false;
        e[i].key = inner[j].value;
        e[i].key_size = inner[j].value_size;
        put_field(&e[i].bytes, 1, inner[j].wire, inner[j].value, inner[j].value_size);
      } else if (inner[j].number == 2 && value_msg != M_PLAIN) {
        if (inner[j].wire != 2) {
          ok = false;
          break;
        }
        buf sub = {0};
        ok = canon(value_msg, inner[j].value, inner[j].value_size, &sub, depth + 1);
        if (ok) put_field(&e[i].bytes, 2, 2, sub.p, sub.n);
        ok = ok && !sub.oom;
        free(sub.p);
      } else {
        put_field(&e[i].bytes, inner[j].number, inner[j].wire, inner[j].value, inner[j].value_size);
      }
    }
    free(inner);
    if (e[i].bytes.oom) ok = false;
  }
  if (ok) {
    qsort(e, count, sizeof *e, by_key);
    for (size_t i = 0; i < count; i++) {
      /* of equal keys the last occurrence wins: skip an entry when the next one has its key */
      if (i + 1 < count && same_key(&e[i], &e[i + 1])) continue;
      put_field(out, number, 2, e[i].bytes.p, e[i].bytes.n);
    }
  }
  for (size_t i = 0; i < count; i++) free(e[i].bytes.p);
  free(e);
  return ok;
}

static bool canon(enum msg m, const uint8_t *p, size_t n, buf *out, int depth) {
  if (depth > 8) return false;
  field *f;
  size_t k;
  if (!parse(p, n, &f, &k)) return false;
  if (m == M_OPTION_OVERRIDE) {
    /* its oneof `value` (fields 1-4, all scalars): protobuf keeps the member written last, so keep
     * only that one, or sorting by number would let another member win */
    size_t last = k, w = 0;
    for (size_t i = 0; i < k; i++)
      if (f[i].number >= 1 && f[i].number <= 4) last = i;
    for (size_t i = 0; i < k; i++)
      if (!(f[i].number >= 1 && f[i].number <= 4) || i == last) f[w++] = f[i];
    k = w;
  }
  qsort(f, k, sizeof *f, by_number);
  bool ok = true;
  for (size_t i = 0; i < k && ok;) {
    const struct special *s = special_of(m, f[i].number);
    size_t j = i;
    while (j < k && f[j].number == f[i].number) j++;
    if (s && s->kind == K_DROP) {
      /* not written: see SPECIALS */
    } else if (s && s->kind == K_MAP) {
      ok = put_map(out, f[i].number, s->value, f + i, j - i, depth);
    } else {
      for (size_t q = i; q < j && ok; q++) {
        if (s) { /* a sub-message: canonical too */
          if (f[q].wire != 2) {
            ok = false;
            break;
          }
          buf sub = {0};
          ok = canon(s->value, f[q].value, f[q].value_size, &sub, depth + 1) && !sub.oom;
          if (ok) put_field(out, f[q].number, 2, sub.p, sub.n);
          free(sub.p);
        } else {
          put_field(out, f[q].number, f[q].wire, f[q].value, f[q].value_size);
        }
      }
    }
    i = j;
  }
  free(f);
  return ok && !out->oom;
}

uint8_t *xcanonical_options(const uint8_t *options, size_t size, size_t *out_size) {
  buf out = {0};
  if (canon(M_COMPILE_OPTIONS, options, size, &out, 0) && !out.oom) {
    if (!out.p) out.p = malloc(1); /* empty options: empty canonical form */
    *out_size = out.n;
    return out.p;
  }
  free(out.p);
  /* Not protobuf: the raw bytes behind a 0xff marker (no parsed canonical form starts with 0xff,
   * since that would be a tag of wire type 7). */
  uint8_t *raw = malloc(size + 1);
  if (!raw) return NULL;
  raw[0] = 0xff;
  if (size) memcpy(raw + 1, options, size);
  *out_size = size + 1;
  return raw;
}
