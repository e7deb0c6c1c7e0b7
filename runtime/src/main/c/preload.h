/*
 * Loading ahead (runtime/README.md, "Loading ahead"): when a client is created, a background thread
 * loads (PJRT_Executable_DeserializeAndLoad) the executables that the previous run of the same
 * command asked for, in its order, from the runtime layout, while the script is still starting. A
 * compile whose key was loaded ahead takes that executable; one whose key is being loaded waits for
 * it; anything else goes the usual way. A request whose key is not on the list means the program
 * changed: loading ahead stops. What nobody claimed is destroyed when the client is.
 *
 * No lock is ever held: every slot's state is an atomic, waits are futex waits with a timeout, and a
 * forked child (no loader thread there) never claims or waits.
 */
#ifndef XLAC_PRELOAD_H
#define XLAC_PRELOAD_H

#include <stddef.h>
#include <stdint.h>

#include "pjrt_abi.h"

typedef struct xpreload xpreload;

typedef struct {
  const void *api;    /* the real plugin's PJRT_Api */
  int api_minor;      /* its minor version (the DeserializeAndLoad Args size depends on it) */
  const char *layout; /* the runtime layout directory (lives as long as the process) */
  const char *stats;  /* the statistics directory, or NULL */
  xpjrt_client *client;
  uint64_t budget_bytes; /* at most this many bytes of executables loaded ahead and not yet claimed */
} xpreload_setup;

/* The most keys a list may hold, and its largest size in bytes. */
#define XPRELOAD_MAX_KEYS 4096
#define XPRELOAD_MAX_FILE (1u << 20)

/* Reads the list `list_path` (trusted as the layout is: its directories and the file belong to this
 * user or root and nobody else may write them; opened without following a link) and starts the
 * loader. NULL when nothing is loaded ahead: `reason` is empty when there is simply no list (a first
 * run), else it says why the list was refused. */
xpreload *xpreload_start(const char *list_path, const xpreload_setup *setup, char *reason, size_t size);

/* Parses a list's text into keys (malloc'd, duplicates dropped); -1 with `reason` when it is not a list. */
int xpreload_parse(const char *text, size_t size, uint8_t (**keys)[32], size_t *count, char *reason, size_t rsize);

/* The client it loads for. */
xpjrt_client *xpreload_client(const xpreload *p);

enum { XPRELOAD_NONE = 0, XPRELOAD_CLAIMED = 1 };

/* A compile of `key` on the preload's client: XPRELOAD_CLAIMED with the executable loaded ahead
 * (*waited_ns: how long this call waited for its load; *hidden_ns: the load time the caller did not
 * wait; *compile_ns: the entry's original compile time), else XPRELOAD_NONE (the caller serves or
 * compiles as usual). A key that is not on the list stops loading ahead. */
int xpreload_claim(xpreload *p, const uint8_t key[32], xpjrt_loaded **executable, uint64_t *waited_ns,
                   uint64_t *hidden_ns, uint64_t *compile_ns);

/* Stops loading ahead, waits for the loader and destroys every executable nobody claimed; returns
 * how many. Before the client is destroyed. Nothing in a forked child (its executables are the
 * parent's). */
uint64_t xpreload_stop(xpreload *p);

/* Frees a stopped preload (tests; the proxy keeps every preload, as a claim may still read one). */
void xpreload_free(xpreload *p);

/* Loaded ahead, claimed, destroyed unclaimed, failed loads (this preload). */
void xpreload_counts(const xpreload *p, uint64_t out[4]);

#endif
