/*
 * Struct-size bridging between the framework and the real plugin: the one place where the proxy
 * changes an Args struct on its way from one to the other (runtime/README.md, "Bridging struct
 * sizes").
 *
 * A PJRT plugin refuses an Args struct whose struct_size is smaller than its own header's (it
 * accepts a larger one and ignores the fields it does not know). torch_xla 2.9 sends a
 * PJRT_ExecuteOptions of 80 bytes; the XLA CPU plugins at PJRT C API 0.81 and 0.115 demand 112
 * and fail every execute ("Unexpected PJRT_ExecuteOptions size: expected 112, got 80"). The
 * fields in between (call_location, num_tasks, task_ids, incarnation_ids) all mean "not given"
 * when zero, so the proxy hands the plugin a zeroed copy of the framework's struct, enlarged to
 * the size it knows.
 */
#ifndef XLAC_BRIDGE_H
#define XLAC_BRIDGE_H

#include <stddef.h>

/* PJRT_ExecuteOptions up to its last field known to the proxy (incarnation_ids, PJRT C API 0.81
 * to at least 0.115): the size a framework's struct is enlarged to. */
#define XBRIDGE_EXECUTE_OPTIONS_SIZE 112u
/* The smallest PJRT_ExecuteOptions the proxy enlarges: struct_size and extension_start. A smaller
 * struct_size is nonsense and goes to the plugin as it is (the plugin says what is wrong). */
#define XBRIDGE_EXECUTE_OPTIONS_MIN 16u

/*
 * What to give the real plugin for the framework's PJRT_ExecuteOptions `options`: `options`
 * itself when it is NULL or already at least XBRIDGE_EXECUTE_OPTIONS_SIZE bytes (or implausibly
 * small), else `buffer` (at least XBRIDGE_EXECUTE_OPTIONS_SIZE bytes, 8-aligned), filled with the
 * framework's struct_size bytes, zeros after them, and struct_size XBRIDGE_EXECUTE_OPTIONS_SIZE.
 * The copy is shallow: pointers in it still point to the framework's data, which lives for the
 * call as the header requires.
 */
const void *xbridge_execute_options(const void *options, void *buffer, size_t buffer_size);

#endif
