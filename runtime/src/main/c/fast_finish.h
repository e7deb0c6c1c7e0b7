/* The end of a run that xlac-fast-start started, without a JVM (runtime/README.md, "The finish without a
 * JVM"): when every compile was served and nothing else is to be done, the summary line, --report and
 * --require-hits as the JVM's finish gives them, and the hits left, durably, for the next JVM that opens
 * the cache for writing to count. In every other case the JVM finishes the run, as before. */
#ifndef XLAC_FAST_FINISH_H
#define XLAC_FAST_FINISH_H

#include <stddef.h>

#include "launch_plan.h"

/* The most runs whose hits may wait in the pending directory: past it, the JVM finishes (and counts them). */
#define XFINISH_MAX_PENDING 256

/* Finishes the run whose statistics are in `stats` (the command's exit status, 128+N for signal N, and its
 * wall time): 0 and *exit_out (what xlac run exits with) when it did; -1 and a one-line `reason` when the
 * JVM must finish it (nothing was written then that the JVM's finish would not write again, and no hit
 * was left to count). The statistics directory is left as it is. */
int xfinish_native(const xplan *plan, const char *stats, int exit_status, long long wall_ns, int *exit_out,
                   char *reason, size_t reason_size);

/* Java's Double.toString of v (the shortest decimal that reads back as v, in Java's notation), as the
 * JVM's report writes a number; out holds at least 32 bytes. */
void xfinish_java_double(double v, char *out, size_t size);

#endif
