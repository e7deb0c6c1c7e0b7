/**
 * The Java side of the PJRT runtime proxy: the request key, the record spool, the runtime layout and
 * the run statistics (formats in runtime/README.md), and the packed proxy library.
 */
package dev.xlac.runtime;
