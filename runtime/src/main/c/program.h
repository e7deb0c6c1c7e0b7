/* The canonical form of a program in the request key (runtime/README.md, "Canonical program"): for
 * format "hlo" (a serialized HloModuleProto) the same module with every protobuf map's entries in
 * key order, so that two serializations of one module (torch_xla writes frontend attributes in a
 * different order from run to run) give one key. */
#ifndef XLAC_PROGRAM_H
#define XLAC_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

/* Whether the key canonicalises programs of this format (only "hlo"). */
int xprogram_is_hlo(const uint8_t *format, size_t format_size);

/* The canonical form of a serialized HloModuleProto, malloc'd (its size in *out_size), or NULL when
 * the bytes do not parse as one along the canonicalised path, or when out of memory: the key then
 * hashes 0xff + the exact bytes, which no canonical form starts with. */
uint8_t *xcanonical_hlo(const uint8_t *program, size_t size, size_t *out_size);

#endif
