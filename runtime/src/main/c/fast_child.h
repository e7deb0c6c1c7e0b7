/* The process side of xlac run's native fast start (runtime/README.md, "The fast start"): how the
 * command's process is set up before its exec, and how a signal reaches it, so that the command
 * starts as on xlac run's JVM path (util-linux setsid, started by the JVM). */
#ifndef XLAC_FAST_CHILD_H
#define XLAC_FAST_CHILD_H

#include <sys/types.h>

/* In the forked child, with the signals the parent forwards still blocked (so that one sent to
 * the child before it has its own session stays pending): a new session, every descriptor from 3
 * up closed, SIGPIPE, SIGXFSZ, SIGQUIT and SIGCHLD back to their defaults (the JVM handles or
 * resets them, so its children get the defaults), the other dispositions left as inherited (the
 * JVM leaves an ignored SIGINT, SIGTERM or SIGHUP ignored), and an empty signal mask, as the JVM's
 * children get. Async-signal-safe. */
void xfast_child_setup(void);

/* Sends `sig` to the command's process group `pid`; while the child has no group of its own yet
 * (before its setsid), to the child itself, where it stays pending until the set-up above.
 * Async-signal-safe. */
void xfast_forward(pid_t pid, int sig);

/* Waits until the child `pid` has ended, without reaping it: until xfast_reap, its pid stays taken
 * (by the zombie), so a signal forwarded to it or its group meanwhile can reach no process that
 * took the pid over. The caller stops forwarding in between. 0, or -1 with errno (EINTR retried). */
int xfast_wait_ended(pid_t pid);

/* Reaps the ended child `pid`: its wait status in *status. 0, or -1 with errno (EINTR retried). */
int xfast_reap(pid_t pid, int *status);

#endif
