#include "reason.h"

#include <stdarg.h>
#include <stdio.h>

int xreason(char *reason, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, size, fmt, ap);
  va_end(ap);
  return -1;
}
