/* Canonical compile options and the request key: map entries in any order give one key, any change
 * of a value gives another, unparseable options still get a key, and a JAX-like request's key is
 * pinned (RequestKeyTest pins the same). Also the identity text's attribute lines. */
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "key.h"
#include "options.h"
#include "sha256.h"
#include "testlib.h"

typedef struct {
  uint8_t b[4096];
  size_t n;
} msg;

static void raw(msg *m, const void *p, size_t n) {
  memcpy(m->b + m->n, p, n);
  m->n += n;
}
static void varint(msg *m, uint64_t v) {
  do {
    m->b[m->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
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

/* A map<string,string> entry, key first or value first. */
static void str_entry(msg *m, uint32_t f, const char *k, const char *v, int value_first) {
  msg e = {0};
  if (value_first) sfield(&e, 2, v);
  sfield(&e, 1, k);
  if (!value_first) sfield(&e, 2, v);
  lfield(m, f, e.b, e.n);
}

/* A JAX-like CompileOptionsProto; `order` permutes the map entries and the fields' order. */
static void jax_like(msg *out, int order) {
  msg debug = {0};
  const char *k357[3] = {"nccl_op_launch_us", "nic_speed_gbps", "chunk_prep_us"};
  const char *v357[3] = {"55", "40", "1"};
  if (order) vfield(&debug, 2, 0); /* scalar fields in another order */
  sfield(&debug, 109, "");
  vfield(&debug, 31, 3);
  for (int i = 0; i < 3; i++) {
    int j = order ? 2 - i : i;
    str_entry(&debug, 357, k357[j], v357[j], order && j == 1);
  }
  str_entry(&debug, 500, order ? "xla_b" : "xla_a", order ? "2" : "1", 0);
  str_entry(&debug, 500, order ? "xla_a" : "xla_b", order ? "1" : "2", 0);
  if (!order) vfield(&debug, 2, 0);
  vfield(&debug, 140, 1);
  msg build = {0};
  if (order) vfield(&build, 4, 1);
  vfield(&build, 1, (uint64_t)-1);
  lfield(&build, 3, debug.b, debug.n);
  if (!order) vfield(&build, 4, 1);
  vfield(&build, 5, 1);
  msg o1 = {0}, o2 = {0}, e1 = {0}, e2 = {0};
  sfield(&o1, 1, "x");   /* OptionOverrideProto.string_field */
  vfield(&o2, 2, 1);     /* bool_field */
  sfield(&e1, 1, "xla_cpu_flag");
  lfield(&e1, 2, o1.b, o1.n);
  sfield(&e2, 1, "xla_gpu_flag");
  lfield(&e2, 2, o2.b, o2.n);
  if (order) lfield(out, 7, e2.b, e2.n);
  lfield(out, 3, build.b, build.n);
  lfield(out, 7, e1.b, e1.n);
  if (!order) lfield(out, 7, e2.b, e2.n);
  vfield(out, 4, 0);
}

static const char IDENTITY[] =
    "xlac-pjrt-plugin/2\nplatform_name=cpu\nplatform_version=cpu\napi_version=0.115\n"
    "plugin_sha256=0000000000000000000000000000000000000000000000000000000000000000\n"
    "device_kind=cpu\nxla_flags=\nlibtpu_init_args=\nattribute=xla_version=i:2\n";

static void key_hex(const msg *options, char out[65]) {
  size_t cn;
  uint8_t *c = xcanonical_options(options->b, options->n, &cn);
  uint8_t key[32];
  static const char program[] = "module @m {}";
  xrequest_key((const uint8_t *)"mlir", 4, (const uint8_t *)program, strlen(program), c, cn, IDENTITY,
               strlen(IDENTITY), key);
  free(c);
  xhex(key, 32, out);
}

static int count_newlines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

static int same_canonical(const msg *a, const msg *b) {
  size_t an, bn;
  uint8_t *ca = xcanonical_options(a->b, a->n, &an), *cb = xcanonical_options(b->b, b->n, &bn);
  int same = an == bn && !memcmp(ca, cb, an);
  free(ca);
  free(cb);
  return same;
}

int main(void) {
  msg a = {0}, b = {0};
  jax_like(&a, 0);
  jax_like(&b, 1);
  CHECK(a.n == b.n && memcmp(a.b, b.b, a.n) != 0, "the two serializations differ in bytes");
  char ka[65], kb[65];
  key_hex(&a, ka);
  key_hex(&b, kb);
  CHECK(!strcmp(ka, kb), "map entries in two orders give one key: %s %s", ka, kb);
  /* pinned: RequestKeyTest.jaxLikeKeyIsPinned expects the same */
  CHECK(!strcmp(ka, "62f800a3fc7afbca85119dd88e7e4306a1dee7b02b5de8bd1cb045b9310a8736"), "JAX-like key is %s", ka);

  /* two real JAX runs: the same options in different bytes, one canonical form */
  {
    msg r1 = {0}, r2 = {0};
    FILE *f1 = fopen("src/test/resources/jax-options/run1.bin", "rb");
    FILE *f2 = fopen("src/test/resources/jax-options/run2.bin", "rb");
    REQUIRE(f1 && f2, "the JAX option fixtures (run from runtime/)");
    r1.n = fread(r1.b, 1, sizeof r1.b, f1);
    r2.n = fread(r2.b, 1, sizeof r2.b, f2);
    fclose(f1);
    fclose(f2);
    CHECK(r1.n == 991 && r2.n == 991 && memcmp(r1.b, r2.b, r1.n) != 0, "two serializations");
    CHECK(same_canonical(&r1, &r2), "one canonical form");
    size_t cn;
    uint8_t *c = xcanonical_options(r1.b, r1.n, &cn);
    uint8_t d[32];
    char h[65];
    xsha256_buffer(c, cn, d);
    xhex(d, 32, h);
    CHECK(c[0] != 0xff && !strcmp(h, "1183e113316cab6f27350669d865c6c0a4570e934abfe87e02de97763f6a73e9"), "canonical JAX options: %s", h);
    free(c);
  }

  /* dump-only DebugOptions are not part of the key: the options of a JAX process started with
   * XLA_FLAGS=--xla_dump_to=... (as under xlac dump) and of one without it have one canonical form */
  {
    msg r1 = {0}, r2 = {0};
    FILE *f1 = fopen("src/test/resources/jax-options/dumping.bin", "rb");
    FILE *f2 = fopen("src/test/resources/jax-options/not-dumping.bin", "rb");
    REQUIRE(f1 && f2, "the JAX option fixtures (run from runtime/)");
    r1.n = fread(r1.b, 1, sizeof r1.b, f1);
    r2.n = fread(r2.b, 1, sizeof r2.b, f2);
    fclose(f1);
    fclose(f2);
    CHECK(r1.n != r2.n, "the dumping options are longer (they name the dump directory)");
    CHECK(same_canonical(&r1, &r2), "dumping or not, one canonical form");
  }
  /* a dropped field's value does not matter; a kept one's does */
  {
    msg d1 = {0}, d2 = {0}, d3 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
    sfield(&d1, 109, "/tmp/one");
    vfield(&d1, 113, 1);
    sfield(&d2, 109, "/tmp/two");
    vfield(&d3, 252, 1); /* xla_detailed_logging: kept */
    lfield(&b1, 3, d1.b, d1.n);
    lfield(&b2, 3, d2.b, d2.n);
    lfield(&b3, 3, d3.b, d3.n);
    msg o1 = {0}, o2 = {0}, o3 = {0};
    lfield(&o1, 3, b1.b, b1.n);
    lfield(&o2, 3, b2.b, b2.n);
    lfield(&o3, 3, b3.b, b3.n);
    CHECK(same_canonical(&o1, &o2), "xla_dump_to and xla_dump_hlo_as_proto are dropped");
    CHECK(!same_canonical(&o1, &o3), "xla_detailed_logging is kept");
  }

  /* never a crash, whatever the bytes: random mutations of the JAX-like options and random bytes */
  {
    uint64_t seed = 0x9e3779b97f4a7c15u;
    for (int round = 0; round < 20000; round++) {
      msg m = a;
      seed = seed * 6364136223846793005u + 1442695040888963407u;
      if (round % 4 == 0) { /* random bytes of a random length */
        m.n = (size_t)(seed >> 33) % 300;
        for (size_t i = 0; i < m.n; i++) {
          seed = seed * 6364136223846793005u + 1442695040888963407u;
          m.b[i] = (uint8_t)(seed >> 56);
        }
      } else { /* a few bytes of the real thing changed, maybe cut short */
        for (int k = 0; k < 1 + round % 3; k++) {
          seed = seed * 6364136223846793005u + 1442695040888963407u;
          m.b[(seed >> 33) % m.n] = (uint8_t)(seed >> 20);
        }
        if (round % 5 == 0) m.n = (size_t)(seed >> 40) % m.n;
      }
      size_t cn;
      uint8_t *c = xcanonical_options(m.b, m.n, &cn);
      CHECK(c != NULL, "round %d", round);
      if (c && c[0] == 0xff) CHECK(cn == m.n + 1 && !memcmp(c + 1, m.b, m.n), "raw form, round %d", round);
      free(c);
    }
  }

  /* every single-byte change of the options changes the key */
  for (size_t i = 0; i < a.n; i++) {
    for (int bit = 0; bit < 8; bit += 7) {
      msg c = a;
      c.b[i] ^= (uint8_t)(1 << bit);
      char kc[65];
      key_hex(&c, kc);
      CHECK(strcmp(kc, ka) != 0, "flipping bit %d of byte %zu kept the key", bit, i);
    }
  }

  /* a repeated map key: the last entry wins, wherever it sits */
  msg d1 = {0}, d2 = {0}, d3 = {0}, old = {0}, new = {0}, other = {0};
  sfield(&old, 1, "old");
  sfield(&new, 1, "new");
  msg e_old = {0}, e_new = {0}, e_other = {0};
  sfield(&e_old, 1, "k");
  lfield(&e_old, 2, old.b, old.n);
  sfield(&e_new, 1, "k");
  lfield(&e_new, 2, new.b, new.n);
  sfield(&other, 1, "v");
  sfield(&e_other, 1, "j");
  lfield(&e_other, 2, other.b, other.n);
  lfield(&d1, 7, e_old.b, e_old.n);
  lfield(&d1, 7, e_other.b, e_other.n);
  lfield(&d1, 7, e_new.b, e_new.n);
  lfield(&d2, 7, e_new.b, e_new.n);
  lfield(&d2, 7, e_other.b, e_other.n);
  lfield(&d3, 7, e_new.b, e_new.n);
  lfield(&d3, 7, e_other.b, e_other.n);
  lfield(&d3, 7, e_old.b, e_old.n);
  CHECK(same_canonical(&d1, &d2), "the last entry of a key wins");
  CHECK(!same_canonical(&d1, &d3), "the last entry of a key wins, not the first");

  /* a map key of another wire type than a string's is unparseable, never the string of its bytes
   * (mapKeyOfAnotherWireType_doesNotStandForAStringKey): [key varint 1 -> x, key "\x01" -> y] and
   * [key "\x01" -> y] are different messages */
  {
    msg varint_key = {0}, string_key = {0}, both = {0}, only_string = {0}, x = {0}, y = {0};
    sfield(&x, 1, "x"); /* OptionOverrideProto values */
    sfield(&y, 1, "y");
    vfield(&varint_key, 1, 1);
    lfield(&varint_key, 2, x.b, x.n);
    lfield(&string_key, 1, "\x01", 1);
    lfield(&string_key, 2, y.b, y.n);
    lfield(&both, 7, varint_key.b, varint_key.n);
    lfield(&both, 7, string_key.b, string_key.n);
    lfield(&only_string, 7, string_key.b, string_key.n);
    CHECK(!same_canonical(&both, &only_string), "a varint map key does not stand for a string key");
    size_t n;
    uint8_t *c = xcanonical_options(both.b, both.n, &n);
    CHECK(c && n == both.n + 1 && c[0] == 0xff, "a varint map key makes the options unparseable");
    free(c);
  }

  /* OptionOverrideProto's oneof: the member written last wins, as protobuf has it
   * (oneofMemberWrittenLastWins) */
  {
    msg bool_then_string = {0}, string_then_bool = {0}, just_string = {0};
    vfield(&bool_then_string, 2, 1);
    sfield(&bool_then_string, 1, "x");
    sfield(&string_then_bool, 1, "x");
    vfield(&string_then_bool, 2, 1);
    sfield(&just_string, 1, "x");
    msg o[3];
    memset(o, 0, sizeof o);
    const msg *values[3] = {&bool_then_string, &string_then_bool, &just_string};
    for (int i = 0; i < 3; i++) {
      msg e = {0};
      sfield(&e, 1, "k");
      lfield(&e, 2, values[i]->b, values[i]->n);
      lfield(&o[i], 7, e.b, e.n);
    }
    CHECK(!same_canonical(&o[0], &o[1]), "string last and bool last are different options");
    CHECK(same_canonical(&o[0], &o[2]), "bool then string is just the string");
  }

  /* the empty options, and options that are not protobuf */
  msg empty = {0};
  size_t n;
  uint8_t *c = xcanonical_options(empty.b, 0, &n);
  CHECK(c && n == 0, "empty options: empty canonical form");
  free(c);
  const uint8_t bad[] = {0x1a, 0x7f, 0x08}; /* a length past the end */
  c = xcanonical_options(bad, sizeof bad, &n);
  CHECK(c && n == 4 && c[0] == 0xff && !memcmp(c + 1, bad, 3), "0xff + raw bytes");
  free(c);
  const uint8_t group[] = {0x0b, 0x0c}; /* a group */
  c = xcanonical_options(group, sizeof group, &n);
  CHECK(c && n == 3 && c[0] == 0xff, "groups are not canonicalised");
  free(c);
  /* non-minimal tags and lengths are re-encoded minimally */
  const uint8_t long_tag[] = {0xa0, 0x80, 0x00, 0x01}; /* field 4 varint, tag in 3 bytes */
  c = xcanonical_options(long_tag, sizeof long_tag, &n);
  CHECK(c && n == 2 && c[0] == 0x20 && c[1] == 0x01, "minimal tag");
  free(c);

  /* the identity's attribute lines: sorted by name, typed, escaped */
  static const int64_t list[3] = {1, 20, 0};
  xp_named_value v[5];
  memset(v, 0, sizeof v);
  for (int i = 0; i < 5; i++) v[i].struct_size = sizeof v[i], v[i].value_size = 1;
  v[0].name = "xla_version", v[0].name_size = 11, v[0].type = XP_NV_INT64, v[0].value.int64_value = -2;
  v[1].name = "b\\n", v[1].name_size = 3, v[1].type = XP_NV_STRING, v[1].value.string_value = "x\ny",
  v[1].value_size = 3;
  v[2].name = "list", v[2].name_size = 4, v[2].type = XP_NV_INT64_LIST, v[2].value.int64_array_value = list,
  v[2].value_size = 3;
  v[3].name = "f", v[3].name_size = 1, v[3].type = XP_NV_FLOAT, v[3].value.float_value = 0.25f;
  v[4].name = "a", v[4].name_size = 1, v[4].type = XP_NV_BOOL, v[4].value.bool_value = false;
  char *lines = xidentity_attributes(v, 5);
  const char *want = "attribute=a=b:false\nattribute=b\\\\n=s:x\\ny\nattribute=f=f:0.25\n"
                     "attribute=list=l:1,20,0\nattribute=xla_version=i:-2\n";
  CHECK(lines && !strcmp(lines, want), "attribute lines:\n%s", lines);
  free(lines);
  v[0].struct_size = 40; /* a plugin whose named values are smaller than the fields read */
  CHECK(xidentity_attributes(v, 5) == NULL, "too-small named values are refused");

  /* a plugin built against a newer header, whose PJRT_NamedValue has grown by two fields: the
   * array is walked by its elements' size, not the proxy's (namedValuesOfANewerPlugin_areWalkedByTheirSize) */
  {
    typedef struct {
      xp_named_value known;
      int64_t newer_field;
      int32_t newest_field; /* struct_size ends here; the array's stride is rounded up to 8 */
    } wider;
    wider w[5];
    memset(w, 0xa5, sizeof w); /* the fields the proxy does not know hold junk */
    for (int i = 0; i < 5; i++) {
      w[i].known = v[i];
      w[i].known.struct_size = offsetof(wider, newest_field) + sizeof(int32_t);
    }
    char *wide = xidentity_attributes((const void *)w, 5);
    CHECK(wide && !strcmp(wide, want), "the wider plugin's lines are the same:\n%s", wide);
    free(wide);
    w[3].known.struct_size += 8; /* elements of one array must agree on their size */
    CHECK(xidentity_attributes((const void *)w, 5) == NULL, "mixed sizes are refused");
  }

  /* the whole text (v3): NULs escaped, not cut off (identityTextKeepsBytesAfterANul); device kinds
   * counted, distinct, sorted; XLA_FLAGS and LIBTPU_INIT_ARGS lines (identityCoversXlaFlags) */
  {
    xstr kinds[3] = {{"b", 1}, {"a\0z", 3}, {"b", 1}};
    xidentity_parts p = {
        .platform_name = {"c\0pu", 4},
        .platform_version = {"v\\1\n", 4},
        .api_major = 0,
        .api_minor = 115,
        .plugin_sha256_hex = "ab",
        .device_count = 3,
        .device_kinds = kinds,
        .host_cpu_lines = "host_cpu=x\ncpu_features=y\n",
        .xla_flags = {"--xla_cpu_enable_fast_math=true", 31},
        .libtpu_init_args = {"", 0},
        .attribute_lines = "attribute=x=b:true\n",
    };
    size_t size = 0;
    char *text = xidentity_text(&p, &size);
    const char *want = "xlac-pjrt-plugin/3\nplatform_name=c\\0pu\nplatform_version=v\\\\1\\n\n"
                       "api_version=0.115\nplugin_sha256=ab\ndevice_kind=a\\0z\n"
                       "device_kind=b\nhost_cpu=x\ncpu_features=y\nxla_flags=--xla_cpu_enable_fast_math=true\nlibtpu_init_args=\n"
                       "attribute=x=b:true\n";
    CHECK(text && size == strlen(want) && !strcmp(text, want), "identity text:\n%s", text);
    free(text);
    p.xla_flags = (xstr){"", 0};
    char *other = xidentity_text(&p, &size);
    CHECK(other && !strstr(other, "fast_math"), "another XLA_FLAGS, another text");
    free(other);
  }

  /* the host CPU lines: this machine's for a "cpu" platform, none for another */
  {
    char *cpu = xhost_cpu_lines((xstr){"cpu", 3}), *gpu = xhost_cpu_lines((xstr){"cuda", 4});
    CHECK(cpu && !strncmp(cpu, "host_cpu=", 9) && strstr(cpu, "\ncpu_features=") && cpu[strlen(cpu) - 1] == '\n' &&
              count_newlines(cpu) == 2, "cpu lines: %s", cpu);
    CHECK(gpu && !*gpu, "no lines for another platform: %s", gpu);
    free(cpu);
    free(gpu);
  }

  /* XLA_FLAGS split as XLA splits them (quotedXlaFlagsValues_keepTheirSpaces,
   * droppedDumpWord_isNeverFoundInsideAQuotedValue), and read from the file it names
   * (xlaFlagsNamingAFile_keyTheFlagsInTheFile) */
  {
    struct {
      const char *value, *want;
    } cases[] = {
        {"--f=\"a  b\"", "--f=a\\s\\sb"},
        {"--f=\"a b\"", "--f=a\\sb"},
        {"--f='ab' --g=\"c\"", "--f=ab --g=c"},
        {"--f=\"x --xla_dump_to=y\" --xla_dump_to=/d", "--f=x\\s--xla_dump_to=y"},
        {" --a=1\t--b=\"p\\\"q\\\\r\" -c='s\\ t' word --d=2", "--a=1 --b=p\"q\\\\r -c=s\\\\\\st"},
        {"--f=\"unterminated  ", "--f=unterminated\\s\\s"},
        {"--xla_dump_to=/x --xla_force_host_platform_device_count=8", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      char *k = xkeyed_xla_flags(cases[i].value);
      CHECK(k && !strcmp(k, cases[i].want), "XLA_FLAGS %s: %s, not %s", cases[i].value, k, cases[i].want);
      free(k);
    }
    CHECK(xkeyed_xla_flags(NULL) == NULL && xkeyed_xla_flags("") == NULL, "unset and empty");
    const char *tmp_dir = getenv("XLAC_TEST_TMP");
    char file[600];
    snprintf(file, sizeof file, "%s/xla-flags-file", tmp_dir ? tmp_dir : "/tmp");
    mkdir(tmp_dir ? tmp_dir : "/tmp", 0700);
    FILE *f = fopen(file, "w");
    REQUIRE(f, "cannot write %s", file);
    fputs("--xla_backend_optimization_level=2\n--xla_dump_to=/d\n", f);
    fclose(f);
    char *from_file = xkeyed_xla_flags(file);
    CHECK(from_file && !strcmp(from_file, "--xla_backend_optimization_level=2"), "from the file: %s", from_file);
    f = fopen(file, "w");
    fputs("--xla_backend_optimization_level=1\n", f);
    fclose(f);
    char *edited = xkeyed_xla_flags(file);
    CHECK(edited && !strcmp(edited, "--xla_backend_optimization_level=1"), "an edited file: %s", edited);
    free(from_file);
    free(edited);
    unlink(file);
    char *missing = xkeyed_xla_flags(file);
    CHECK(missing && !strncmp(missing, "?unreadable flags file ", 23), "a missing file: %s", missing);
    free(missing);
    /* a pipe is not read (xlaFlagsNamingAPipe_isNotRead_andKeysForThisProcessOnly): it would hang
     * without a writer, and with one take the flags from XLA; its key is this call's own */
    REQUIRE(mkfifo(file, 0600) == 0, "mkfifo %s", file);
    char *pipe1 = xkeyed_xla_flags(file), *pipe2 = xkeyed_xla_flags(file);
    CHECK(pipe1 && pipe2 && !strncmp(pipe1, "?flags file that is not a regular file ", 39) && strcmp(pipe1, pipe2),
          "a pipe: %s, %s", pipe1, pipe2);
    free(pipe1);
    free(pipe2);
    unlink(file);
  }

  /* XLAC_PJRT_PLUGIN_SHA256: trusted only with the file's stat, and only when well formed */
  {
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_size = 6;
    st.st_mtim.tv_sec = 2;
    st.st_mtim.tv_nsec = 5;
    st.st_dev = 7;
    st.st_ino = 9;
    char hex[65];
    memset(hex, 'a', 64);
    hex[64] = 0;
    char env[200];
    uint8_t d[32];
    snprintf(env, sizeof env, "%s:6:2000000005:7:9", hex);
    CHECK(xplugin_sha_env_matches(env, &st, d) == 1 && d[0] == 0xaa, "matching stat");
    snprintf(env, sizeof env, "%s:6:2000000006:7:9", hex);
    CHECK(xplugin_sha_env_matches(env, &st, d) == 0, "stale mtime");
    snprintf(env, sizeof env, "%s:6:2000000005:7:8", hex);
    CHECK(xplugin_sha_env_matches(env, &st, d) == 0, "another inode");
    snprintf(env, sizeof env, "%s:6:2000000005:7", hex);
    CHECK(xplugin_sha_env_matches(env, &st, d) == 0, "a field short");
    snprintf(env, sizeof env, "%s:6:2000000005:7:9:1", hex);
    CHECK(xplugin_sha_env_matches(env, &st, d) == 0, "a field too many");
    snprintf(env, sizeof env, "%s:+6:2000000005:7:9", hex);
    CHECK(xplugin_sha_env_matches(env, &st, d) == 0, "a sign");
    snprintf(env, sizeof env, "%.63s:6:2000000005:7:9", hex);
    CHECK(xplugin_sha_env_matches(env, &st, d) == 0, "63 hex digits");
    snprintf(env, sizeof env, "%.63sg:6:2000000005:7:9", hex);
    CHECK(xplugin_sha_env_matches(env, &st, d) == 0, "not hex");
    CHECK(xplugin_sha_env_matches(NULL, &st, d) == 0 && xplugin_sha_env_matches("", &st, d) == 0, "unset");
  }
  /* unreadVariable_isNeverKeyedAsUnset: XLA_FLAGS set but not read (out of memory) keys for this
   * process alone, never as no flags (which would serve what was compiled without them) */
  {
    char a[160], b[160];
    char *keyed = strdup("--x=1");
    CHECK(xkeyed_or_unread(keyed, "--x=1", a, sizeof a, "XLA_FLAGS") == keyed, "a keyed text is kept");
    free(keyed);
    CHECK(xkeyed_or_unread(NULL, NULL, a, sizeof a, "XLA_FLAGS") == NULL, "unset stays unset");
    CHECK(xkeyed_or_unread(NULL, "", a, sizeof a, "XLA_FLAGS") == NULL, "empty is unset");
    char *one = xkeyed_or_unread(NULL, "--x=1", a, sizeof a, "XLA_FLAGS");
    struct timespec pause = {0, 1000};
    nanosleep(&pause, NULL);
    char *two = xkeyed_or_unread(NULL, "--x=1", b, sizeof b, "XLA_FLAGS");
    CHECK(one && !strncmp(one, "?XLA_FLAGS not read (out of memory), keyed for process ", 55), "%s", one);
    CHECK(one && two && strcmp(one, two), "two processes' or moments' texts differ: %s / %s", one, two);
  }

  return test_summary("test_options");
}
