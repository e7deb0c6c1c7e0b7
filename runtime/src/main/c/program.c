#include "program.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/*
 * The messages on the way from HloModuleProto to its map fields, and those maps: every `map` field
 * reachable from HloModuleProto in openxla/xla xla/service/hlo.proto and xla/xla_data.proto (read
 * in 2026). Everything else is copied byte for byte. The same table is in CanonicalProgram.java and
 * runtime/README.md; change all three together, and the key's version with them.
 */
enum msg { M_MODULE, M_COMPUTATION, M_INSTRUCTION, M_SCHEDULE, M_ATTRIBUTES };
enum kind { K_MESSAGE, K_STRING_MAP, K_INT64_MAP };

static const struct path {
  enum msg in;
  uint32_t field;
  enum kind kind;
  enum msg sub; /* for K_MESSAGE */
} PATHS[] = {
    {M_MODULE, 3, K_MESSAGE, M_COMPUTATION},      /* HloModuleProto.computations */
    {M_MODULE, 7, K_MESSAGE, M_SCHEDULE},         /* HloModuleProto.schedule */
    {M_MODULE, 19, K_MESSAGE, M_ATTRIBUTES},      /* HloModuleProto.frontend_attributes */
    {M_COMPUTATION, 2, K_MESSAGE, M_INSTRUCTION}, /* HloComputationProto.instructions */
    {M_INSTRUCTION, 68, K_MESSAGE, M_ATTRIBUTES}, /* HloInstructionProto.frontend_attributes */
    {M_SCHEDULE, 1, K_INT64_MAP, M_MODULE},       /* HloScheduleProto.sequences: int64 -> InstructionSequence */
    {M_ATTRIBUTES, 1, K_STRING_MAP, M_MODULE},    /* FrontendAttributes.map: string -> string */
};

/* The deepest message on the path is FrontendAttributes in an instruction: module 0, computation 1,
 * instruction 2, attributes 3. The schema bounds the recursion, whatever the bytes nest. */
#define LEVELS 4

static const struct path *path_of(enum msg in, uint32_t field) {
  for (size_t i = 0; i < sizeof PATHS / sizeof PATHS[0]; i++)
    if (PATHS[i].in == in && PATHS[i].field == field) return &PATHS[i];
  return NULL;
}

typedef struct {
  uint8_t *p;
  size_t n, cap;
  bool oom;
} buf;

static void put(buf *b, const void *data, size_t n) {
  if (b->oom || !n) return;
  if (n > b->cap - b->n) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->n < n) {
      if (cap > SIZE_MAX / 2) {
        b->oom = true;
        return;
      }
      cap *= 2;
    }
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, data, n);
  b->n += n;
}

static size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v > 0x7f) {
    v >>= 7;
    n++;
  }
  return n;
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

static void put_field(buf *out, uint32_t number, uint8_t wire, const uint8_t *v, size_t size) {
  put_varint(out, (uint64_t)number << 3 | wire);
  if (wire == 2) put_varint(out, size);
  put(out, v, size);
}

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

typedef struct {
  uint32_t number;
  uint8_t wire;
  size_t index;
  const uint8_t *start; /* its tag */
  const uint8_t *value; /* varint bytes, 8/4 fixed bytes, or LEN contents */
  size_t value_size;
} field;

/* A map entry: its key (string bytes, or an int64 as uint64) and its value's bytes. */
typedef struct {
  const uint8_t *key;
  size_t key_size;
  uint64_t int_key;
  size_t index;
  const uint8_t *value;
  size_t value_size;
  uint8_t *owned; /* the value when it came in several parts (a message value merged) */
} entry;

/* What one level of the recursion reuses from one message to the next, so that a module of a
 * hundred thousand instructions costs a few allocations, not one per instruction. */
typedef struct {
  field *f;
  size_t fcap;
  entry *e;
  size_t ecap;
  buf out; /* the canonical bytes of this level's message, before they go into its parent */
} level;

typedef struct {
  level lv[LEVELS];
} ctx;

/* Splits a message into its fields; false when the bytes are not protobuf. *minimal: whether every
 * tag and length is a minimal varint (as rule 3 writes them). */
static bool parse(level *L, const uint8_t *p, size_t n, size_t *count, bool *minimal) {
  size_t k = 0, at = 0;
  *minimal = true;
  while (at < n) {
    uint64_t tag, len;
    const uint8_t *start = p + at;
    size_t used = get_varint(p + at, n - at, &tag);
    if (!used) return false;
    if (used != varint_size(tag)) *minimal = false;
    at += used;
    uint64_t number = tag >> 3;
    uint8_t wire = tag & 7;
    if (number == 0 || number > 0x1fffffff) return false;
    const uint8_t *value = p + at;
    size_t size;
    switch (wire) {
      case 0:
        if (!(size = get_varint(p + at, n - at, &len))) return false;
        break;
      case 1:
        size = 8;
        break;
      case 5:
        size = 4;
        break;
      case 2:
        if (!(used = get_varint(p + at, n - at, &len))) return false;
        if (used != varint_size(len)) *minimal = false;
        at += used;
        value = p + at;
        if (len > n - at) return false;
        size = (size_t)len;
        break;
      default: /* groups (3, 4) and the undefined wire types 6, 7 */
        return false;
    }
    if (size > n - at) return false;
    at += size;
    if (k == L->fcap) {
      size_t cap = L->fcap ? 2 * L->fcap : 32;
      field *g = realloc(L->f, cap * sizeof *g);
      if (!g) return false;
      L->f = g;
      L->fcap = cap;
    }
    L->f[k] = (field){(uint32_t)number, wire, k, start, value, size};
    k++;
  }
  *count = k;
  return true;
}

static int by_number(const void *a, const void *b) {
  const field *x = a, *y = b;
  if (x->number != y->number) return x->number < y->number ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index; /* stable: keeps repeated fields' order */
}

static int by_string_key(const void *a, const void *b) {
  const entry *x = a, *y = b;
  size_t n = x->key_size < y->key_size ? x->key_size : y->key_size;
  int c = n ? memcmp(x->key, y->key, n) : 0;
  if (c) return c;
  if (x->key_size != y->key_size) return x->key_size < y->key_size ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static int by_int_key(const void *a, const void *b) {
  const entry *x = a, *y = b;
  if (x->int_key != y->int_key) return x->int_key < y->int_key ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static bool same_key(const entry *a, const entry *b, bool ints) {
  if (ints) return a->int_key == b->int_key;
  return a->key_size == b->key_size && (a->key_size == 0 || memcmp(a->key, b->key, a->key_size) == 0);
}

/*
 * Writes the `count` occurrences `f` of a map field as canonical entries: in key order, of equal
 * keys the last, each entry exactly `1: key, 2: value` (an absent key or value is written as its
 * default, other fields of an entry, which a protobuf parser ignores, are left out). A string value
 * written twice keeps the last; a message value (the schedule's) written twice is merged, which for
 * its one repeated field is the concatenation.
 */
static bool put_map(level *L, buf *out, uint32_t number, bool ints, const field *f, size_t count) {
  if (count > L->ecap) {
    entry *e = realloc(L->e, count * sizeof *e);
    if (!e) return false;
    L->e = e;
    L->ecap = count;
  }
  entry *e = L->e;
  memset(e, 0, count * sizeof *e);
  bool ok = true;
  for (size_t i = 0; i < count && ok; i++) {
    e[i].index = i;
    const uint8_t *p = f[i].value;
    size_t n = f[i].value_size, at = 0;
    if (f[i].wire != 2) ok = false;
    while (ok && at < n) { /* the entry's fields in wire order: the last key and value win */
      uint64_t tag, v = 0;
      size_t used = get_varint(p + at, n - at, &tag);
      if (!used) {
        ok = false;
        break;
      }
      at += used;
      uint64_t num = tag >> 3;
      uint8_t wire = tag & 7;
      const uint8_t *value = p + at;
      size_t size = 0;
      if (num == 0 || num > 0x1fffffff) ok = false;
      else if (wire == 0) ok = (size = get_varint(p + at, n - at, &v)) != 0;
      else if (wire == 1) size = 8;
      else if (wire == 5) size = 4;
      else if (wire == 2) {
        ok = (used = get_varint(p + at, n - at, &v)) != 0 && v <= n - at - used;
        at += used;
        value = p + at;
        size = (size_t)v;
      } else ok = false;
      if (!ok || size > n - at) {
        ok = false;
        break;
      }
      at += size;
      if (num == 1) {
        if (ints) {
          if (wire != 0) ok = false;
          e[i].int_key = v;
        } else {
          if (wire != 2) ok = false;
          e[i].key = value;
          e[i].key_size = size;
        }
      } else if (num == 2) {
        if (wire != 2) ok = false;
        else if (ints && e[i].value) { /* a message value again: merged */
          uint8_t *joined = malloc(e[i].value_size + size + 1);
          if (!joined) {
            ok = false;
            break;
          }
          memcpy(joined, e[i].value, e[i].value_size);
          memcpy(joined + e[i].value_size, value, size);
          free(e[i].owned);
          e[i].owned = joined;
          e[i].value = joined;
          e[i].value_size += size;
        } else {
          free(e[i].owned);
          e[i].owned = NULL;
          e[i].value = value;
          e[i].value_size = size;
        }
      }
    }
  }
  if (ok) {
    qsort(e, count, sizeof *e, ints ? by_int_key : by_string_key);
    for (size_t i = 0; i < count; i++) {
      if (i + 1 < count && same_key(&e[i], &e[i + 1], ints)) continue; /* the last one wins */
      size_t key_bytes = ints ? 1 + varint_size(e[i].int_key)
                              : 1 + varint_size(e[i].key_size) + e[i].key_size;
      size_t size = key_bytes + 1 + varint_size(e[i].value_size) + e[i].value_size;
      put_varint(out, (uint64_t)number << 3 | 2);
      put_varint(out, size);
      if (ints) {
        put_varint(out, 1 << 3); /* field 1, varint */
        put_varint(out, e[i].int_key);
      } else {
        put_field(out, 1, 2, e[i].key, e[i].key_size);
      }
      put_field(out, 2, 2, e[i].value, e[i].value_size);
    }
  }
  for (size_t i = 0; i < count; i++) free(e[i].owned);
  return ok && !out->oom;
}

/*
 * Writes message `m` (bytes p[0, n)) in canonical form to `out`, as field `number` of its parent
 * (number 0: the module itself, without a tag). A message that is canonical as it is (its fields in
 * order, minimal tags and lengths, none on the path: most instructions) is copied in one piece,
 * straight into the parent, so a large program costs one copy per level only where maps are.
 */
static bool put_message(ctx *c, enum msg m, uint32_t number, const uint8_t *p, size_t n, buf *out,
                        int depth) {
  if (depth >= LEVELS) return false; /* cannot happen with PATHS as they are */
  level *L = &c->lv[depth];
  size_t k;
  bool minimal;
  if (!parse(L, p, n, &k, &minimal)) return false;
  field *f = L->f;
  bool sorted = true, on_path = false;
  for (size_t i = 0; i < k; i++) {
    if (i && f[i - 1].number > f[i].number) sorted = false;
    if (path_of(m, f[i].number)) on_path = true;
  }
  if (sorted && minimal && !on_path) {
    if (number) put_field(out, number, 2, p, n);
    else put(out, p, n);
    return !out->oom;
  }
  buf *mine = number ? &L->out : out; /* the module writes the result itself */
  if (number) mine->n = 0;
  if (!sorted) qsort(f, k, sizeof *f, by_number);
  bool ok = true;
  for (size_t i = 0; i < k && ok;) {
    const struct path *s = path_of(m, f[i].number);
    size_t j = i;
    while (j < k && f[j].number == f[i].number) j++;
    if (!s && sorted && minimal) { /* as written: copy the run of fields up to the next on the path */
      while (j < k && !path_of(m, f[j].number)) j++;
      put(mine, f[i].start, (size_t)(f[j - 1].value + f[j - 1].value_size - f[i].start));
    } else if (!s) {
      for (size_t q = i; q < j; q++) put_field(mine, f[q].number, f[q].wire, f[q].value, f[q].value_size);
    } else if (s->kind != K_MESSAGE) {
      ok = put_map(L, mine, f[i].number, s->kind == K_INT64_MAP, f + i, j - i);
    } else {
      for (size_t q = i; q < j && ok; q++) {
        if (f[q].wire != 2) {
          ok = false;
          break;
        }
        ok = put_message(c, s->sub, f[q].number, f[q].value, f[q].value_size, mine, depth + 1);
      }
    }
    i = j;
  }
  if (ok && number) put_field(out, number, 2, mine->p, mine->n);
  return ok && !mine->oom && !out->oom;
}

int xprogram_is_hlo(const uint8_t *format, size_t format_size) {
  return format && format_size == 3 && memcmp(format, "hlo", 3) == 0;
}

uint8_t *xcanonical_hlo(const uint8_t *program, size_t size, size_t *out_size) {
  ctx c;
  memset(&c, 0, sizeof c);
  buf out = {0};
  bool ok = put_message(&c, M_MODULE, 0, program, size, &out, 0);
  uint8_t *result = out.p;
  *out_size = out.n;
  for (int d = 0; d < LEVELS; d++) {
    free(c.lv[d].f);
    free(c.lv[d].e);
    free(c.lv[d].out.p);
  }
  if (!ok) {
    free(result);
    return NULL;
  }
  return result ? result : malloc(1); /* an empty module: an empty canonical form */
}
