/* The canonical form of a serialized CompileOptionsProto (runtime/README.md, "Canonical compile
 * options"): fields in field-number order, map entries in key order, so that two serializations of
 * the same options (JAX writes map entries in a different order each run) give the same bytes. */
#ifndef XLAC_OPTIONS_H
#define XLAC_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

/* Returns a malloc'd buffer with the canonical form of `options` (its size in *out_size), or NULL
 * when out of memory. Never fails on bad input: unparseable bytes give 0xff + the raw bytes. */
uint8_t *xcanonical_options(const uint8_t *options, size_t size, size_t *out_size);

#endif
