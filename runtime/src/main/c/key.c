#include "key.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "program.h"
#include "sha256.h"

static void put_u64be(xsha256 *s, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (56 - 8 * i));
  xsha256_update(s, b, 8);
}

void xrequest_key(const uint8_t *format, size_t format_size, const uint8_t *program,
                  size_t program_size, const uint8_t *canonical_options, size_t options_size,
                  const char *identity, size_t identity_size, uint8_t key[32]) {
  static const char tag[] = "xlac-pjrt-request/2"; /* followed by its NUL, as specified */
  static const uint8_t raw_marker = 0xff;
  size_t canonical_size = 0;
  uint8_t *canonical =
      xprogram_is_hlo(format, format_size) ? xcanonical_hlo(program, program_size, &canonical_size) : NULL;
  xsha256 s;
  xsha256_init(&s);
  xsha256_update(&s, tag, sizeof tag);
  put_u64be(&s, format_size);
  xsha256_update(&s, format, format_size);
  if (canonical) {
    put_u64be(&s, canonical_size);
    xsha256_update(&s, canonical, canonical_size);
    free(canonical);
  } else if (xprogram_is_hlo(format, format_size)) {
    /* not an HloModuleProto (or out of memory): its exact bytes behind a marker that no canonical
     * form starts with, so a miss and never another program's key */
    put_u64be(&s, program_size + 1);
    xsha256_update(&s, &raw_marker, 1);
    xsha256_update(&s, program, program_size);
  } else {
    put_u64be(&s, program_size);
    xsha256_update(&s, program, program_size);
  }
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

/* ---------------------------------------------------------------- the host CPU */

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static void cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
  r[0] = r[1] = r[2] = r[3] = 0;
  __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}

/*
 * XLA:CPU compiles for LLVM's host CPU name and host features (DetectMachineAttributes in
 * xla/backends/cpu/codegen), which LLVM derives from these CPUID words and XCR0 (the vector state
 * the OS saves). The words are written as they are, less the bits that name no instructions, so
 * that any change in what LLVM sees changes the line while what a hypervisor or a microcode update
 * flips does not: in leaf 1 ECX debug, virtualisation, power and APIC bits and the hypervisor bit,
 * in leaf 7 EDX the mitigations (10, 11, 13, 26-31), in leaves 1 EDX and 0x80000001 all but the
 * instruction sets.
 */
#define LEAF1_ECX_NOT_ISA 0x8126cdf4u /* bits 2, 4-8, 10, 11, 14, 15, 17, 18, 21, 24, 31 */
#define LEAF1_EDX_ISA 0x07888911u     /* fpu, tsc, cx8, sep, cmov, clflush, mmx, fxsr, sse, sse2 */
#define LEAF7_EDX_NOT_ISA 0xfc002c00u /* bits 10, 11, 13, 26-31 */
/* lahf, lzcnt, sse4a, misalignsse, prfchw, xop, lwp, fma4, tbm, mwaitx */
#define EXT1_ECX_ISA 0x202189e1u
/* syscall, mmxext, mmx, fxsr, ffxsr, rdtscp, lm, 3dnowext, 3dnow */
#define EXT1_EDX_ISA 0xebc00800u
static void add_host_cpu(str *s) {
  unsigned r[4], max, ext, l1[4], l7[4] = {0}, l71[4] = {0}, d1[4] = {0}, e1[4] = {0}, pt = 0, kl = 0,
                            avx10 = 0, xcr0 = 0;
  cpuid(0, 0, r);
  max = r[0];
  char vendor[13];
  memcpy(vendor, &r[1], 4);
  memcpy(vendor + 4, &r[3], 4);
  memcpy(vendor + 8, &r[2], 4);
  vendor[12] = 0;
  for (char *c = vendor; *c; c++)
    if (*c == '\n' || *c == '\\') *c = '?'; /* the text stays line-based */
  cpuid(1, 0, l1);
  if (max >= 7) {
    cpuid(7, 0, l7);
    if (l7[0] >= 1) cpuid(7, 1, l71);
  }
  if (max >= 0xd) cpuid(0xd, 1, d1);
  if (max >= 0x14) pt = (cpuid(0x14, 0, r), r[1] & 0x10u);           /* ptwrite */
  if (max >= 0x19) kl = (cpuid(0x19, 0, r), r[1] & 0x4u);            /* widekl */
  if (max >= 0x24) avx10 = (cpuid(0x24, 0, r), r[1] & 0x700ffu);     /* AVX10 version, lengths */
  cpuid(0x80000000u, 0, r);
  ext = r[0];
  if (ext >= 0x80000001u) cpuid(0x80000001u, 0, e1);
  if (l1[2] & (1u << 27)) { /* OSXSAVE: xgetbv is allowed */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = lo;
  }
  unsigned eax = l1[0], family = (eax >> 8) & 0xf, model = (eax >> 4) & 0xf;
  if (family == 0xf) family += (eax >> 20) & 0xff;
  if (family == 6 || family >= 0xf) model += ((eax >> 16) & 0xf) << 4;
  char line[512];
  snprintf(line, sizeof line, "host_cpu=x86 %s family %u model %u\n", vendor, family, model);
  adds(s, line);
  snprintf(line, sizeof line,
           "cpu_features=1.ecx:%08x 1.edx:%08x 7.ebx:%08x 7.ecx:%08x 7.edx:%08x 7.1.eax:%08x 7.1.edx:%08x "
           "d.1.eax:%08x 14.ebx:%08x 19.ebx:%08x 24.ebx:%08x 80000001.ecx:%08x 80000001.edx:%08x "
           "xcr0:%08x\n",
           l1[2] & ~LEAF1_ECX_NOT_ISA, l1[3] & LEAF1_EDX_ISA, l7[1], l7[2], l7[3] & ~LEAF7_EDX_NOT_ISA,
           l71[0], l71[3], d1[0], pt, kl,
           avx10, e1[2] & EXT1_ECX_ISA, e1[3] & EXT1_EDX_ISA, xcr0);
  adds(s, line);
}
#elif defined(__aarch64__)
#include <sys/auxv.h>

/*
 * On AArch64 LLVM takes the host CPU's name from /proc/cpuinfo's implementer and part, and its
 * features from the kernel's hardware capabilities, which getauxval gives as bits.
 */
static void add_host_cpu(str *s) {
  str parts = {0};
  adds(&parts, "");
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, "CPU implementer", 15) && strncmp(line, "CPU part", 8)) continue;
    char *v = strchr(line, ':');
    if (!v) continue;
    v++;
    while (*v == ' ' || *v == '\t') v++;
    v[strcspn(v, "\n")] = 0;
    char word[80];
    snprintf(word, sizeof word, " %s %s", line[4] == 'i' ? "implementer" : "part", v);
    if (parts.p && !strstr(parts.p, word)) adds(&parts, word); /* each distinct one, in file order */
  }
  if (f) fclose(f);
  adds(s, "host_cpu=aarch64");
  adds(s, parts.p ? parts.p : " ?");
  free(parts.p);
  snprintf(line, sizeof line, "\ncpu_features=hwcap:%lx hwcap2:%lx\n", getauxval(AT_HWCAP), getauxval(AT_HWCAP2));
  adds(s, line);
}
#else
#include <sys/utsname.h>

/* Another machine: only its name (a layout must then not be shared between different CPUs). */
static void add_host_cpu(str *s) {
  struct utsname u;
  const char *machine = uname(&u) == 0 ? u.machine : "?";
  adds(s, "host_cpu=");
  add_escaped(s, machine, strlen(machine));
  adds(s, "\ncpu_features=?\n");
}
#endif

char *xhost_cpu_lines(xstr platform_name) {
  str s = {0};
  adds(&s, "");
  if (platform_name.size == 3 && !memcmp(platform_name.data, "cpu", 3)) add_host_cpu(&s);
  return s.p;
}

/* ---------------------------------------------------------------- XLA_FLAGS as XLA reads it */

static int flag_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* XLA's flag-name characters. A NUL counts too: XLA tests them with strchr, which finds the NUL. */
static int flag_name_char(char c) {
  return c == 0 || c == '-' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
         (c >= 'A' && c <= 'Z');
}

/* Whether an XLA_FLAGS word only steers dumping or names a local path (see xkeyed_xla_flags). */
static int dump_only_flag(const char *t, size_t n) {
  while (n && *t == '-') t++, n--;
  static const char *const EXACT[] = {"xla_force_host_platform_device_count", "xla_gpu_cuda_data_dir"};
  size_t name = 0;
  while (name < n && t[name] != '=') name++;
  if (name >= 9 && !strncmp(t, "xla_dump_", 9)) return 1;
  for (size_t i = 0; i < sizeof EXACT / sizeof EXACT[0]; i++)
    if (name == strlen(EXACT[i]) && !strncmp(t, EXACT[i], name)) return 1;
  return 0;
}

/* Appends one word to the keyed flags: after a space when not the first, `\` as `\\`, a space as
 * `\s` (so that the words can be told apart), cut at a NUL as XLA's strdup cuts it. */
static void add_word(str *out, const char *word, size_t n) {
  size_t len = 0;
  while (len < n && word[len]) len++;
  if (dump_only_flag(word, len)) return;
  if (out->n) adds(out, " ");
  for (size_t i = 0; i < len; i++) {
    if (word[i] == '\\') adds(out, "\\\\");
    else if (word[i] == ' ') adds(out, "\\s");
    else add(out, word + i, 1);
  }
}

/*
 * Splits flags into words as XLA's ParseArgvFromString does (xla/parse_flags_from_env.cc): a word
 * starts at a `-`; `--name="..."` or `--name='...'` is one word with the quotes removed (in double
 * quotes a backslash takes the next character literally), any other word ends at whitespace
 * (space, tab, CR, LF); XLA stops at the first word that does not start with `-`, and so does this.
 */
static void split_flags(str *out, const char *f, size_t n) {
  size_t b = 0;
  while (b < n && flag_space(f[b])) b++;
  while (b < n && f[b] == '-') {
    size_t e = b;
    while (e < n && flag_name_char(f[e])) e++;
    if (e + 1 < n && f[e] == '=' && (f[e + 1] == '"' || f[e + 1] == '\'' || f[e + 1] == 0)) {
      char quote = f[e + 1];
      str word = {0};
      add(&word, f + b, e + 1 - b); /* the name and its '=' */
      for (e += 2; e < n && f[e] != quote; e++) {
        if (quote == '"' && f[e] == '\\' && e + 1 < n) e++;
        add(&word, f + e, 1);
      }
      if (e < n) e++; /* the closing quote */
      if (!word.p) { /* out of memory: make the whole result fail */
        free(out->p);
        out->p = NULL;
        out->cap = 1;
        return;
      }
      add_word(out, word.p, word.n);
      free(word.p);
    } else {
      while (e < n && !flag_space(f[e])) e++;
      add_word(out, f + b, e - b);
    }
    while (e < n && flag_space(f[e])) e++;
    b = e;
  }
}

char *xkeyed_xla_flags(const char *value) {
  if (!value || !*value) return NULL;
  str out = {0};
  adds(&out, ""); /* an empty result is "", not NULL */
  size_t lead = 0;
  while (flag_space(value[lead])) lead++;
  if (value[lead] == '-') {
    split_flags(&out, value, strlen(value));
    return out.p;
  }
  /* XLA takes any other value as the name of a file of flags, as it is (spaces too), and dies when
   * it cannot read it; the key covers the flags in the file, not its name */
  int fd = open(value, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    /* A pipe (XLA_FLAGS=<(...)) or a device: reading it would take the flags from XLA. What it holds
     * is unknown, so the key is this process's own: a miss, never another run's executable. */
    close(fd);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char unique[96];
    snprintf(unique, sizeof unique, " not read, keyed for process %ld at %lld.%09ld", (long)getpid(),
             (long long)now.tv_sec, (long)now.tv_nsec);
    adds(&out, "?flags file that is not a regular file ");
    adds(&out, value);
    adds(&out, unique);
    return out.p;
  }
  str text = {0};
  char chunk[4096];
  ssize_t r = -1;
  while (fd >= 0 && ((r = read(fd, chunk, sizeof chunk)) > 0 || (r < 0 && errno == EINTR)))
    if (r > 0) add(&text, chunk, (size_t)r);
  int failed = fd < 0 || r < 0 || (text.cap && !text.p);
  if (fd >= 0) close(fd);
  if (failed) {
    /* not a flag: a word XLA would produce always starts with '-' */
    adds(&out, "?unreadable flags file ");
    adds(&out, value);
  } else if (text.p) {
    split_flags(&out, text.p, text.n);
  }
  free(text.p);
  return out.p;
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
  adds(&s, "xlac-pjrt-plugin/3\nplatform_name=");
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
  if (p->host_cpu_lines) adds(&s, p->host_cpu_lines);
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

char *xkeyed_or_unread(char *keyed, const char *value, char *buffer, size_t size, const char *name) {
  if (keyed || !value || !*value) return keyed;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  snprintf(buffer, size, "?%s not read (out of memory), keyed for process %ld at %lld.%09ld", name,
           (long)getpid(), (long long)now.tv_sec, now.tv_nsec);
  return buffer;
}
