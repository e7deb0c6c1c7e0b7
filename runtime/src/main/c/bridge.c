#include "bridge.h"

#include <string.h>

const void *xbridge_execute_options(const void *options, void *buffer, size_t buffer_size) {
  if (!options || buffer_size < XBRIDGE_EXECUTE_OPTIONS_SIZE) return options;
  size_t given;
  memcpy(&given, options, sizeof given); /* struct_size, the first field of every PJRT struct */
  if (given >= XBRIDGE_EXECUTE_OPTIONS_SIZE || given < XBRIDGE_EXECUTE_OPTIONS_MIN) return options;
  memset(buffer, 0, XBRIDGE_EXECUTE_OPTIONS_SIZE);
  memcpy(buffer, options, given);
  size_t size = XBRIDGE_EXECUTE_OPTIONS_SIZE;
  memcpy(buffer, &size, sizeof size);
  return buffer;
}
