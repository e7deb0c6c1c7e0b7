/* A tiny test harness: CHECK records a failure and goes on, the test's exit status says whether
 * any check failed. */
#ifndef XLAC_TESTLIB_H
#define XLAC_TESTLIB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failures;

#define CHECK(cond, ...)                                                 \
  do {                                                                   \
    if (!(cond)) {                                                       \
      test_failures++;                                                   \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
      fprintf(stderr, __VA_ARGS__);                                      \
      fprintf(stderr, "\n");                                             \
    }                                                                    \
  } while (0)

#define REQUIRE(cond, ...)                                               \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "FATAL %s:%d: %s: ", __FILE__, __LINE__, #cond);   \
      fprintf(stderr, __VA_ARGS__);                                      \
      fprintf(stderr, "\n");                                             \
      exit(1);                                                           \
    }                                                                    \
  } while (0)

static int test_summary(const char *name) {
  if (test_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, test_failures);
    return 1;
  }
  printf("%s: ok\n", name);
  return 0;
}

#endif
