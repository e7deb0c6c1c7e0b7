/* The canonical program in the request key: protobuf map entries of an HloModuleProto in any order
 * give one key (torch_xla writes frontend attributes in a different order from run to run), any
 * change of a value gives another, an HLO program that does not parse keys its exact bytes, and
 * two real torch_xla recordings of one program (src/test/resources/torch-xla-program) share a key. */
#include "key.h"
#include "program.h"
#include "sha256.h"
#include "testlib.h"

typedef struct {
  uint8_t *b;
  size_t n, cap;
} msg;

static void raw(msg *m, const void *p, size_t n) {
  if (m->n + n > m->cap) {
    m->cap = (m->n + n) * 2 + 64;
    m->b = realloc(m->b, m->cap);
    REQUIRE(m->b, "out of memory");
  }
  if (n) memcpy(m->b + m->n, p, n);
  m->n += n;
}
static void varint(msg *m, uint64_t v) {
  do {
    uint8_t c = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    raw(m, &c, 1);
    v >>= 7;
  } while (v);
}
static void vfield(msg *m, uint32_t f, uint64_t v) {
  varint(m, (uint64_t)f << 3);
  varint(m, v);
}
static void lfield(msg *m, uint32_t f, const void *p, size_t n) {
  varint(m, (uint64_t)f << 3 | 2);
  varint(m, n);
  raw(m, p, n);
}
static void sfield(msg *m, uint32_t f, const char *s) { lfield(m, f, s, strlen(s)); }
static void mfield(msg *m, uint32_t f, msg *sub) {
  lfield(m, f, sub->b, sub->n);
  free(sub->b);
  *sub = (msg){0};
}

/* FrontendAttributes with the entries k[i]=v[i] in the given order. */
static msg attributes(const char *const *k, const char *const *v, size_t n) {
  msg a = {0};
  for (size_t i = 0; i < n; i++) {
    msg e = {0};
    sfield(&e, 1, k[i]);
    sfield(&e, 2, v[i]);
    mfield(&a, 1, &e);
  }
  return a;
}

/* An HloModuleProto of one computation, a dot with these frontend attributes, and module
 * attributes and a schedule in the given orders. */
static msg module(msg instruction_attributes, int module_attributes_reversed, int schedule_reversed) {
  msg ins = {0}, comp = {0}, mod = {0}, sched = {0};
  sfield(&ins, 1, "dot.3");
  sfield(&ins, 2, "dot");
  vfield(&ins, 35, 3);
  mfield(&ins, 68, &instruction_attributes);
  sfield(&comp, 1, "main.4");
  mfield(&comp, 2, &ins);
  vfield(&comp, 5, 4);
  sfield(&mod, 1, "SyncTensorsGraph.5");
  mfield(&mod, 3, &comp);
  for (int i = 0; i < 2; i++) {
    int id = (i ^ schedule_reversed) ? 9 : 4;
    msg e = {0}, seq = {0};
    vfield(&seq, 1, (uint64_t)id);
    vfield(&e, 1, (uint64_t)id);
    mfield(&e, 2, &seq);
    mfield(&sched, 1, &e);
  }
  mfield(&mod, 7, &sched);
  const char *k[] = {"_xla_compute_type", "_scheduling_group_id"}, *v[] = {"host", "1"};
  const char *rk[] = {k[1], k[0]}, *rv[] = {v[1], v[0]};
  msg a = module_attributes_reversed ? attributes(rk, rv, 2) : attributes(k, v, 2);
  mfield(&mod, 19, &a);
  return mod;
}

static void key_of(const char *format, const msg *program, uint8_t key[32]) {
  xrequest_key((const uint8_t *)format, strlen(format), program->b, program->n, (const uint8_t *)"", 0,
               "identity\n", 9, key);
}

static const char *const GX[] = {"grad_x", "grad_y"}, *const GY[] = {"grad_y", "grad_x"};
static const char *const FF[] = {"false", "false"};

static void frontendAttributesOrder_doesNotChangeTheKey(void) {
  uint8_t a[32], b[32], c[32], d[32];
  msg xy = module(attributes(GX, FF, 2), 0, 0), yx = module(attributes(GY, FF, 2), 0, 0);
  REQUIRE(xy.n == yx.n && memcmp(xy.b, yx.b, xy.n) != 0, "the two orders are other bytes");
  key_of("hlo", &xy, a);
  key_of("hlo", &yx, b);
  CHECK(memcmp(a, b, 32) == 0, "instruction attributes in another order: another key");
  msg mod_rev = module(attributes(GX, FF, 2), 1, 0), sched_rev = module(attributes(GX, FF, 2), 0, 1);
  key_of("hlo", &mod_rev, c);
  key_of("hlo", &sched_rev, d);
  CHECK(memcmp(a, c, 32) == 0, "module attributes in another order: another key");
  CHECK(memcmp(a, d, 32) == 0, "schedule entries in another order: another key");
  free(xy.b);
  free(yx.b);
  free(mod_rev.b);
  free(sched_rev.b);
}

static void changedAttributeValue_changesTheKey(void) {
  const char *tf[] = {"true", "false"};
  uint8_t a[32], b[32], c[32];
  msg same = module(attributes(GX, FF, 2), 0, 0), other = module(attributes(GX, tf, 2), 0, 0);
  msg fewer = module(attributes(GX, FF, 1), 0, 0);
  key_of("hlo", &same, a);
  key_of("hlo", &other, b);
  key_of("hlo", &fewer, c);
  CHECK(memcmp(a, b, 32) != 0, "another attribute value: the same key");
  CHECK(memcmp(a, c, 32) != 0, "an attribute less: the same key");
  free(same.b);
  free(other.b);
  free(fewer.b);
}

static void duplicateAttributeKeys_theLastWins(void) {
  const char *k[] = {"grad_x", "grad_x"}, *tf[] = {"true", "false"}, *ft[] = {"false", "true"};
  const char *one_k[] = {"grad_x"}, *one_f[] = {"false"};
  uint8_t a[32], b[32], c[32];
  msg true_then_false = module(attributes(k, tf, 2), 0, 0), false_then_true = module(attributes(k, ft, 2), 0, 0);
  msg just_false = module(attributes(one_k, one_f, 1), 0, 0);
  key_of("hlo", &true_then_false, a);
  key_of("hlo", &false_then_true, b);
  key_of("hlo", &just_false, c);
  CHECK(memcmp(a, c, 32) == 0, "a duplicate key's last value is the value: another key");
  CHECK(memcmp(a, b, 32) != 0, "the duplicates in the other order mean another value: the same key");
  free(true_then_false.b);
  free(false_then_true.b);
  free(just_false.b);
}

/* Raw-domain key: what xrequest_key must give for HLO bytes that do not parse. */
static void raw_key(const msg *program, uint8_t key[32]) {
  msg m = {0};
  raw(&m, "\xff", 1);
  raw(&m, program->b, program->n);
  xsha256 s;
  xsha256_init(&s);
  static const char tag[] = "xlac-pjrt-request/2";
  xsha256_update(&s, tag, sizeof tag);
  uint8_t len[8];
  for (uint64_t v = 3, i = 0; i < 8; i++) len[i] = (uint8_t)(v >> (56 - 8 * i));
  xsha256_update(&s, len, 8);
  xsha256_update(&s, "hlo", 3);
  for (uint64_t v = m.n, i = 0; i < 8; i++) len[i] = (uint8_t)(v >> (56 - 8 * i));
  xsha256_update(&s, len, 8);
  xsha256_update(&s, m.b, m.n);
  memset(len, 0, 8);
  xsha256_update(&s, len, 8);
  for (uint64_t v = 9, i = 0; i < 8; i++) len[i] = (uint8_t)(v >> (56 - 8 * i));
  xsha256_update(&s, len, 8);
  xsha256_update(&s, "identity\n", 9);
  xsha256_final(&s, key);
  free(m.b);
}

static void unparseableHlo_keysItsExactBytes(void) {
  msg good = module(attributes(GX, FF, 2), 0, 0);
  for (size_t cut = 1; cut < good.n; cut += 7) { /* every prefix that ends inside a field */
    msg truncated = {0};
    raw(&truncated, good.b, cut);
    size_t cn;
    uint8_t *c = xcanonical_hlo(truncated.b, truncated.n, &cn);
    if (c) { /* a cut between two top-level fields is a valid, smaller module */
      free(c);
      free(truncated.b);
      continue;
    }
    uint8_t k[32], expected[32];
    key_of("hlo", &truncated, k);
    raw_key(&truncated, expected);
    CHECK(memcmp(k, expected, 32) == 0, "cut at %zu: not the key of 0xff + the exact bytes", cut);
    free(truncated.b);
  }
  /* a wrong wire type on the path (frontend_attributes as a varint) and a group: raw too */
  msg wrong = {0}, group = {0};
  vfield(&wrong, 19, 1);
  varint(&group, 3 << 3 | 3);
  size_t cn;
  CHECK(xcanonical_hlo(wrong.b, wrong.n, &cn) == NULL, "frontend_attributes as a varint parsed");
  CHECK(xcanonical_hlo(group.b, group.n, &cn) == NULL, "a group parsed");
  /* a string key written as a varint, and an entry that is not a message */
  msg bad_key = {0}, e = {0}, a = {0};
  vfield(&e, 1, 7);
  mfield(&a, 1, &e);
  mfield(&bad_key, 19, &a);
  CHECK(xcanonical_hlo(bad_key.b, bad_key.n, &cn) == NULL, "a varint string key parsed");
  free(good.b);
  free(wrong.b);
  free(group.b);
  free(bad_key.b);
}

static void deepNestingOffThePath_isCopiedNotRecursed(void) {
  /* a literal (instruction field 8) nested a million deep: bytes the canonical form copies as they are,
   * without descending (the schema bounds the recursion, not the bytes) */
  enum { LEVELS_DEEP = 1000000, ROOM = 8 * LEVELS_DEEP };
  uint8_t *room = malloc(ROOM);
  REQUIRE(room, "out of memory");
  size_t at = ROOM; /* built from the inside out, each level prepended: tuple_literals (10) */
  for (int i = 0; i < LEVELS_DEEP; i++) {
    uint8_t len[10];
    size_t n = 0;
    for (uint64_t v = ROOM - at;; v >>= 7) {
      len[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
      if (v <= 0x7f) break;
    }
    at -= n;
    memcpy(room + at, len, n);
    room[--at] = 10 << 3 | 2;
  }
  msg deep = {0};
  raw(&deep, room + at, ROOM - at);
  free(room);
  msg ins = {0}, comp = {0}, mod = {0};
  mfield(&ins, 8, &deep);
  mfield(&comp, 2, &ins);
  mfield(&mod, 3, &comp);
  size_t cn;
  uint8_t *c = xcanonical_hlo(mod.b, mod.n, &cn);
  CHECK(c && cn == mod.n && memcmp(c, mod.b, cn) == 0, "a canonical module is itself");
  free(c);
  free(mod.b);
}

static int slurp(const char *path, msg *m) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  uint8_t chunk[65536];
  for (size_t r; (r = fread(chunk, 1, sizeof chunk, f)) > 0;) raw(m, chunk, r);
  fclose(f);
  return 1;
}

static void twoRealTorchXlaRuns_shareOneKey(void) {
  msg a = {0}, b = {0};
  REQUIRE(slurp("src/test/resources/torch-xla-program/run1.hlo.pb", &a) &&
              slurp("src/test/resources/torch-xla-program/run2.hlo.pb", &b),
          "the golden pair (run from runtime/)");
  CHECK(a.n == b.n && memcmp(a.b, b.b, a.n) != 0, "the two recordings are other bytes");
  uint8_t ka[32], kb[32];
  key_of("hlo", &a, ka);
  key_of("hlo", &b, kb);
  CHECK(memcmp(ka, kb, 32) == 0, "two runs of one torch_xla program: two keys");
  size_t cn;
  uint8_t *c = xcanonical_hlo(a.b, a.n, &cn);
  CHECK(c != NULL, "a real torch_xla module does not parse");
  free(c);
  free(a.b);
  free(b.b);
}

int main(void) {
  frontendAttributesOrder_doesNotChangeTheKey();
  changedAttributeValue_changesTheKey();
  duplicateAttributeKeys_theLastWins();
  unparseableHlo_keysItsExactBytes();
  deepNestingOffThePath_isCopiedNotRecursed();
  twoRealTorchXlaRuns_shareOneKey();
  return test_summary("test_program");
}
