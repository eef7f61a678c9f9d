/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Supervision of a long-running program.
 *
 * systemd's notify protocol without libsystemd: each message is one
 * datagram of "KEY=VALUE" lines sent to the AF_UNIX socket named by
 * $NOTIFY_SOCKET (a path, or "@name" for an abstract name). Without
 * $NOTIFY_SOCKET every call does nothing and returns 0, so a program calls
 * them unconditionally. The calls are syscalls: the controller's, never a
 * data-path lcore's.
 *
 * Errors are negative errno: -EINVAL for a malformed $NOTIFY_SOCKET or
 * $WATCHDOG_USEC (isth_notify_error() says which, for a log line),
 * -EAFNOSUPPORT for "vsock:" addresses, else the send's.
 */
#ifndef ISTH_NOTIFY_H
#define ISTH_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

/* Address of the socket named @s ("/path" or "@abstract") in @sa, its
 * length in @len. -EINVAL: empty, relative, or too long for sun_path. */
int isth_notify_addr(const char *s, struct sockaddr_un *sa, socklen_t *len);

/* Sends @msg (one or more "KEY=VALUE\n" lines) to $NOTIFY_SOCKET; 0 if
 * sent or if $NOTIFY_SOCKET is unset. */
int isth_notify_send(const char *msg);

int isth_notify_ready(void); /* READY=1: serving */
int isth_notify_reloading(void); /* RELOADING=1 (then READY=1 when done) */
int isth_notify_stopping(void); /* STOPPING=1: a clean stop has begun */
int isth_notify_watchdog(void); /* WATCHDOG=1: alive */
/* STATUS=<text>: one line for `systemctl status` (newlines become spaces) */
int isth_notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The watchdog interval systemd asks for ($WATCHDOG_USEC), in @usec: 0
 * when there is none, or when $WATCHDOG_PID names another process (the
 * variables were inherited, not meant for us). -EINVAL: malformed. */
int isth_notify_watchdog_usec(uint64_t *usec);

/* Why the last call returned -EINVAL or -EAFNOSUPPORT ("" otherwise). */
const char *isth_notify_error(void);

/*
 * Die with the parent (PR_SET_PDEATHSIG, SIGTERM) when @asked, or when the
 * environment asks: ISTH_DIE_WITH_PARENT=1, or ISTH_TESTBED set (a testbed
 * script: nothing it started may outlive a kill -9 of it). @ppid0 is
 * getppid() as main() began: a parent already gone before the prctl
 * (we were re-parented) cannot signal us any more, so that is -ESRCH:
 * the caller leaves. 1: armed; 0: not asked (the program outlives its
 * parent, as a daemon started with nohup must).
 */
int isth_notify_die_with_parent(bool asked, pid_t ppid0);

#endif
