/* xbridge_execute_options (bridge.h): which PJRT_ExecuteOptions are enlarged, and how. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bridge.h"
#include "testlib.h"

int main(void) {
  _Alignas(16) unsigned char framework[256], buffer[XBRIDGE_EXECUTE_OPTIONS_SIZE];

  /* torch_xla 2.9's 80-byte struct: a copy, its bytes kept, zeros after them, struct_size 112 */
  for (size_t i = 0; i < sizeof framework; i++) framework[i] = (unsigned char)(i * 7 + 1);
  size_t given = 80;
  memcpy(framework, &given, sizeof given);
  unsigned char before[sizeof framework];
  memcpy(before, framework, sizeof framework);
  memset(buffer, 0xAB, sizeof buffer);
  const unsigned char *out = xbridge_execute_options(framework, buffer, sizeof buffer);
  CHECK(out == buffer, "an 80-byte struct is enlarged");
  size_t size;
  memcpy(&size, out, sizeof size);
  CHECK(size == 112, "struct_size %zu", size);
  CHECK(!memcmp(out + 8, framework + 8, 72), "the framework's fields are copied");
  int zeros = 1;
  for (size_t i = 80; i < 112; i++) zeros &= out[i] == 0;
  CHECK(zeros, "the fields the framework does not know are zero (not given)");
  CHECK(!memcmp(before, framework, sizeof framework), "the framework's struct is not touched");

  /* every size from the smallest plausible one up to 111 is enlarged; 112 and more pass as they are */
  for (given = 0; given <= 200; given++) {
    memcpy(framework, &given, sizeof given);
    out = xbridge_execute_options(framework, buffer, sizeof buffer);
    int enlarged = given >= XBRIDGE_EXECUTE_OPTIONS_MIN && given < XBRIDGE_EXECUTE_OPTIONS_SIZE;
    CHECK((out == buffer) == enlarged, "struct_size %zu: enlarged %d", given, out == buffer);
    if (!enlarged) CHECK(out == framework, "struct_size %zu passes as it is", given);
  }

  /* no options, or a buffer too small for the enlarged struct: nothing to do */
  CHECK(xbridge_execute_options(NULL, buffer, sizeof buffer) == NULL, "NULL options");
  given = 80;
  memcpy(framework, &given, sizeof given);
  CHECK(xbridge_execute_options(framework, buffer, XBRIDGE_EXECUTE_OPTIONS_SIZE - 1) == framework,
        "a short buffer");

  return test_summary("test_bridge");
}
