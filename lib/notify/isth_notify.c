/* SPDX-License-Identifier: BSD-3-Clause */
/* systemd's notify protocol and parent-death, isth_notify.h. */
#include "isth_notify.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Written by the failing call, read by isth_notify_error() in its thread. */
static __thread char notify_err[160];

static int __attribute__((format(printf, 2, 3))) fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(notify_err, sizeof(notify_err), fmt, ap);
	va_end(ap);
	return err;
}

int
isth_notify_addr(const char *s, struct sockaddr_un *sa, socklen_t *len)
{
	size_t n = s ? strlen(s) : 0;

	notify_err[0] = '\0';
	if (n == 0)
		return fail(-EINVAL, "NOTIFY_SOCKET '': empty");
	if (strncmp(s, "vsock:", 6) == 0)
		return fail(-EAFNOSUPPORT, "NOTIFY_SOCKET '%s': vsock is not supported", s);
	if (s[0] != '/' && s[0] != '@')
		return fail(
			-EINVAL, "NOTIFY_SOCKET '%s': want an absolute path or @abstract-name", s);
	/* a path needs its NUL in sun_path; an abstract name does not */
	if (n == 1 || n > sizeof(sa->sun_path) - (s[0] == '/'))
		return fail(-EINVAL, "NOTIFY_SOCKET '%.100s': empty or too long a name", s);
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, s, n);
	if (s[0] == '@')
		sa->sun_path[0] = '\0'; /* abstract: the length says where it ends */
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (s[0] == '/'));
	return 0;
}

int
isth_notify_send(const char *msg)
{
	const char *s = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	socklen_t len;
	ssize_t n;
	int fd, rc;

	if (s == NULL)
		return 0;
	rc = isth_notify_addr(s, &sa, &len);
	if (rc < 0)
		return rc;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	n = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
	rc = n < 0 ? -errno : 0;
	close(fd);
	return rc;
}

int
isth_notify_ready(void)
{
	return isth_notify_send("READY=1");
}

int
isth_notify_reloading(void)
{
	return isth_notify_send("RELOADING=1");
}

int
isth_notify_stopping(void)
{
	return isth_notify_send("STOPPING=1");
}

int
isth_notify_watchdog(void)
{
	return isth_notify_send("WATCHDOG=1");
}

int
isth_notify_status(const char *fmt, ...)
{
	char msg[256] = "STATUS=";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg + 7, sizeof(msg) - 7, fmt, ap);
	va_end(ap);
	/* one message line: a newline would start another KEY=VALUE */
	for (char *p = msg; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return isth_notify_send(msg);
}

/* A decimal without sign or junk, like systemd's own parser wants. */
static int
parse_dec(const char *s, uint64_t *out)
{
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

int
isth_notify_watchdog_usec(uint64_t *usec)
{
	const char *u = getenv("WATCHDOG_USEC"), *p = getenv("WATCHDOG_PID");
	uint64_t v, pid;

	notify_err[0] = '\0';
	*usec = 0;
	if (u == NULL)
		return 0;
	if (parse_dec(u, &v) < 0 || v == 0)
		return fail(-EINVAL, "WATCHDOG_USEC '%.60s': want a positive decimal", u);
	if (p != NULL) {
		if (parse_dec(p, &pid) < 0 || pid == 0)
			return fail(-EINVAL, "WATCHDOG_PID '%.60s': want a process id", p);
		if (pid != (uint64_t)getpid())
			return 0;
	}
	*usec = v;
	return 0;
}

const char *
isth_notify_error(void)
{
	return notify_err;
}

int
isth_notify_die_with_parent(bool asked, pid_t ppid0)
{
	const char *e = getenv("ISTH_DIE_WITH_PARENT");

	if (!asked && getenv("ISTH_TESTBED") == NULL && (e == NULL || strcmp(e, "1") != 0))
		return 0;
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
		return -errno;
	/* gone between main() and here; or, for a testbed's child, gone even
	 * before main() (re-parented to init: nobody would stop us) */
	if (getppid() != ppid0 || (getenv("ISTH_TESTBED") != NULL && getppid() == 1))
		return -ESRCH;
	return 1;
}
