/* The launch plan of xlac run's native fast start (runtime/README.md, "The fast start"): what the
 * JVM's pre-start decision rested on, written by the JVM (pipeline FastStart) after a run, and
 * checked here, condition by condition, before the next identical `xlac run` starts its command
 * without a JVM. Any mismatch, and any plan that cannot be read or parsed, means "no plan". */
#ifndef XLAC_LAUNCH_PLAN_H
#define XLAC_LAUNCH_PLAN_H

#include <stddef.h>

#define XPLAN_FORMAT "xlac-run-plan 2"
#define XPLAN_MAX_BYTES (4u << 20)

/* One change to the user's environment: set (value), set to the stats directory (to_stats), or
 * removed (value NULL, to_stats 0). */
typedef struct {
  char *name;
  char *value;
  int to_stats;
} xplan_change;

typedef struct {
  char *stats_parent; /* the run's statistics directory is made from xplan_stats_template */
  char *stats_prefix;
  char *db_dir;       /* the cache's database directory the plan's conditions name */
  xplan_change *changes;
  size_t n_changes;
  char *plugin_given; /* the realpath line's path as given (--plugin, $XLAC_PJRT_PLUGIN, ...) */
  char *plugin_real;  /* and the file it resolved to: the plugin the plan was made for */
  /* The finish without a JVM (fast_finish.h); finish_flags NULL: the JVM finishes every run. */
  char *finish_flags; /* the words "quiet" and "require-hits", space-separated, as the run's options */
  char *pending_dir;  /* where the hits of a run finished here wait to be counted */
  /* --report: its file, and the plugin, plugin_sha256 and layout fields as the JVM writes them (else NULL) */
  char *report_path, *report_plugin, *report_sha256, *report_layout;
} xplan;

/* The plan's file name for this invocation: lowercase hex SHA-256 of cwd and each option word
 * (those between `run` and `--`), each followed by one NUL byte; out holds 65 bytes. */
void xplan_key(const char *cwd, char *const *options, size_t n_options, char out[65]);

/* Parses plan `text` (len bytes) and checks every condition in it against cwd, the options, the
 * environment envp and the files named: 0 and *plan filled (free it with xplan_free) when all
 * hold, -1 and a one-line `reason` when not. */
int xplan_check(const char *text, size_t len, const char *cwd, char *const *options, size_t n_options,
                char *const *envp, xplan *plan, char *reason, size_t reason_size);

/* Reads PLAN_DIR/<key>.plan and checks it as xplan_check does. */
int xplan_load(const char *plan_dir, const char *cwd, char *const *options, size_t n_options,
               char *const *envp, xplan *plan, char *reason, size_t reason_size);

/* envp with the plan's changes applied, stats_dir for the variables set to the stats directory; a
 * malloc'd NULL-terminated array (its strings malloc'd too), or NULL when out of memory. */
char **xplan_environment(const xplan *plan, char *const *envp, const char *stats_dir);

/* The value the plan sets `name` to (NULL when it sets none). */
const char *xplan_set_value(const xplan *plan, const char *name);

/* The mkdtemp template of the run's statistics directory, stats_parent/stats_prefix<host>-<pid>-<start>-XXXXXX:
 * this host's name (each byte outside [A-Za-z0-9.] made '_'), this process's pid and its start time in clock
 * ticks since boot (/proc/self/stat), so that a later run can tell a killed run's directory (pipeline
 * StatsDirectories). 0, or -1 when it does not fit in size bytes. */
int xplan_stats_template(const xplan *plan, char *out, size_t size);

/* This host's name as the files of a run are named after it: each byte outside [A-Za-z0-9.] made '_', "localhost"
 * when there is none. */
void xplan_host_name(char out[256]);

void xplan_free(xplan *plan);

#endif
