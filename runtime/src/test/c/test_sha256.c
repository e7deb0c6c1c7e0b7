/* SHA-256 against the FIPS 180-4 / NIST example vectors, and split updates against one-shot. */
#include "sha256.h"
#include "testlib.h"

static void hex_of(const void *data, size_t n, char out[65]) {
  uint8_t d[32];
  xsha256_buffer(data, n, d);
  xhex(d, 32, out);
}

static void vectors(void) {
  char h[65];
  hex_of("", 0, h);
  CHECK(!strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "empty: %s", h);
  hex_of("abc", 3, h);
  CHECK(!strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "abc: %s", h);
  const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  hex_of(m448, strlen(m448), h);
  CHECK(!strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"), "448 bits: %s", h);
  const char *m896 =
      "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
  hex_of(m896, strlen(m896), h);
  CHECK(!strcmp(h, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"), "896 bits: %s", h);

  /* one million 'a', fed in uneven pieces */
  xsha256 s;
  xsha256_init(&s);
  char a[997];
  memset(a, 'a', sizeof a);
  size_t left = 1000000;
  for (size_t piece = 1; left > 0; piece = piece % 997 + 1) {
    size_t n = piece < left ? piece : left;
    xsha256_update(&s, a, n);
    left -= n;
  }
  uint8_t d[32];
  xsha256_final(&s, d);
  xhex(d, 32, h);
  CHECK(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "million a: %s", h);

  /* every split point of a 200-byte message gives the one-shot digest */
  uint8_t msg[200], whole[32];
  for (int i = 0; i < 200; i++) msg[i] = (uint8_t)(i * 37 + 11);
  xsha256_buffer(msg, sizeof msg, whole);
  for (size_t cut = 0; cut <= sizeof msg; cut++) {
    xsha256_init(&s);
    xsha256_update(&s, msg, cut);
    xsha256_update(&s, msg + cut, sizeof msg - cut);
    xsha256_final(&s, d);
    CHECK(!memcmp(d, whole, 32), "split at %zu", cut);
  }

  uint8_t back[32];
  CHECK(xunhex(h, 32, back) == 0 && !memcmp(back, d, 0), "unhex");
  CHECK(xunhex("zz", 1, back) != 0, "unhex rejects non-hex");
}

int main(void) {
  vectors(); /* the SHA-extensions path where the CPU has it */
  xsha256_portable_only(1);
  vectors();
  /* both paths agree on every length up to 3 blocks and a large buffer */
  static uint8_t data[1 << 20];
  for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 2654435761u >> 13);
  for (size_t n = 0; n <= sizeof data; n = n < 200 ? n + 1 : n * 2 + 1) {
    uint8_t fast[32], portable[32];
    xsha256_portable_only(0);
    xsha256_buffer(data, n, fast);
    xsha256_portable_only(1);
    xsha256_buffer(data, n, portable);
    CHECK(!memcmp(fast, portable, 32), "length %zu", n);
  }
  return test_summary("test_sha256");
}
