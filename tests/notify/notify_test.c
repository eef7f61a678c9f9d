/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/notify against a real AF_UNIX datagram socket, bound at a path and
 * at an abstract name, as systemd binds $NOTIFY_SOCKET; malformed values
 * give -EINVAL (or -EAFNOSUPPORT) and a reason, never a send.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "isth_notify.h"

static int sock = -1;
static char dir[64];
static char path[128];

static void
teardown(void)
{
	if (sock >= 0)
		close(sock);
	sock = -1;
	if (path[0])
		unlink(path);
	if (dir[0])
		rmdir(dir);
	path[0] = dir[0] = '\0';
	unsetenv("NOTIFY_SOCKET");
}

/* A listener bound to @name ("/path" or "@abstract"), as NOTIFY_SOCKET. */
static void
listen_at(const char *name)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	socklen_t len;
	struct timeval tv = {.tv_sec = 5};

	sock = socket(AF_UNIX, SOCK_DGRAM, 0);
	cr_assert(sock >= 0);
	/* independent of isth_notify_addr(): the layout unix(7) describes */
	strcpy(sa.sun_path, name);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	else
		len++;
	cr_assert_eq(
		bind(sock, (struct sockaddr *)&sa, len), 0, "bind %s: %s", name, strerror(errno));
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	cr_assert_eq(setenv("NOTIFY_SOCKET", name, 1), 0);
}

static void
listen_path(void)
{
	snprintf(dir, sizeof(dir), "/tmp/isth-notify-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify", dir);
	listen_at(path);
}

static void
expect(const char *want)
{
	char buf[512];
	ssize_t n = recv(sock, buf, sizeof(buf) - 1, 0);

	cr_assert(n >= 0, "nothing received (want '%s'): %s", want, strerror(errno));
	buf[n] = '\0';
	cr_assert_str_eq(buf, want);
}

TestSuite(notify, .fini = teardown);

Test(notify, unset_is_a_no_op)
{
	uint64_t us = 1;

	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	cr_assert_eq(isth_notify_ready(), 0);
	cr_assert_eq(isth_notify_status("round %d", 3), 0);
	cr_assert_eq(isth_notify_watchdog_usec(&us), 0);
	cr_assert_eq(us, 0);
}

Test(notify, path_socket)
{
	listen_path();
	cr_assert_eq(isth_notify_ready(), 0);
	expect("READY=1");
	cr_assert_eq(isth_notify_watchdog(), 0);
	expect("WATCHDOG=1");
	cr_assert_eq(isth_notify_reloading(), 0);
	expect("RELOADING=1");
	cr_assert_eq(isth_notify_stopping(), 0);
	expect("STOPPING=1");
	/* a newline would start a second KEY=VALUE line */
	cr_assert_eq(isth_notify_status("round %u of %s\nREADY=1", 42u, "ten"), 0);
	expect("STATUS=round 42 of ten READY=1");
}

Test(notify, abstract_socket)
{
	char name[64];

	snprintf(name, sizeof(name), "@isth-notify-test-%d", (int)getpid());
	listen_at(name);
	cr_assert_eq(isth_notify_ready(), 0);
	expect("READY=1");
	cr_assert_eq(isth_notify_status("ok"), 0);
	expect("STATUS=ok");
}

Test(notify, nobody_listening)
{
	char long_ok[100];

	snprintf(long_ok, sizeof(long_ok), "/tmp/isth-notify-none-%d", (int)getpid());
	setenv("NOTIFY_SOCKET", long_ok, 1);
	cr_assert_eq(isth_notify_ready(), -ENOENT);
}

Test(notify, malformed)
{
	static const struct {
		const char *v;
		int err;
		const char *why;
	} cases[] = {
		{"", -EINVAL, "empty"},
		{"relative/notify", -EINVAL, "absolute path"},
		{"@", -EINVAL, "empty or too long"},
		{"/", -EINVAL, "empty or too long"},
		{"vsock:2:1234", -EAFNOSUPPORT, "vsock"},
	};
	char longp[200];
	struct sockaddr_un sa;
	socklen_t len;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv("NOTIFY_SOCKET", cases[i].v, 1);
		cr_assert_eq(isth_notify_ready(), cases[i].err, "'%s'", cases[i].v);
		cr_assert_not_null(strstr(isth_notify_error(), cases[i].why), "'%s': '%s'",
			cases[i].v, isth_notify_error());
	}
	/* sun_path holds 108 bytes: a path of 107 fits with its NUL, 108 not */
	memset(longp, 'a', sizeof(longp));
	longp[0] = '/';
	longp[107] = '\0';
	cr_assert_eq(isth_notify_addr(longp, &sa, &len), 0);
	cr_assert_eq(len, offsetof(struct sockaddr_un, sun_path) + 108);
	longp[107] = 'a';
	longp[108] = '\0';
	cr_assert_eq(isth_notify_addr(longp, &sa, &len), -EINVAL);
	/* an abstract name needs no NUL: 108 bytes fit, 109 not */
	longp[0] = '@';
	cr_assert_eq(isth_notify_addr(longp, &sa, &len), 0);
	cr_assert_eq(len, offsetof(struct sockaddr_un, sun_path) + 108);
	longp[108] = 'a';
	longp[109] = '\0';
	cr_assert_eq(isth_notify_addr(longp, &sa, &len), -EINVAL);
}

Test(notify, watchdog_usec)
{
	static const char *const bad[] = {
		"", "abc", "-5", "+5", "0", "12x", "99999999999999999999"};
	char pid[32];
	uint64_t us;

	unsetenv("WATCHDOG_PID");
	setenv("WATCHDOG_USEC", "5000000", 1);
	cr_assert_eq(isth_notify_watchdog_usec(&us), 0);
	cr_assert_eq(us, 5000000);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	cr_assert_eq(isth_notify_watchdog_usec(&us), 0);
	cr_assert_eq(us, 5000000);
	/* inherited from a parent the watchdog was meant for */
	snprintf(pid, sizeof(pid), "%d", (int)getppid());
	setenv("WATCHDOG_PID", pid, 1);
	cr_assert_eq(isth_notify_watchdog_usec(&us), 0);
	cr_assert_eq(us, 0);
	setenv("WATCHDOG_PID", "x1", 1);
	cr_assert_eq(isth_notify_watchdog_usec(&us), -EINVAL);
	cr_assert_not_null(strstr(isth_notify_error(), "WATCHDOG_PID"));
	unsetenv("WATCHDOG_PID");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("WATCHDOG_USEC", bad[i], 1);
		cr_assert_eq(isth_notify_watchdog_usec(&us), -EINVAL, "'%s'", bad[i]);
		cr_assert_not_null(strstr(isth_notify_error(), "WATCHDOG_USEC"));
		cr_assert_eq(us, 0);
	}
	unsetenv("WATCHDOG_USEC");
}

/* In a child (the prctl would stay with this process): what
 * isth_notify_die_with_parent() does, as the child's exit code. */
static int
in_child(bool asked, const char *testbed, const char *env, bool wrong_ppid)
{
	pid_t pid = fork();
	int st, sig = -1;

	cr_assert(pid >= 0);
	if (pid == 0) {
		int rc;

		unsetenv("ISTH_TESTBED");
		unsetenv("ISTH_DIE_WITH_PARENT");
		if (testbed)
			setenv("ISTH_TESTBED", testbed, 1);
		if (env)
			setenv("ISTH_DIE_WITH_PARENT", env, 1);
		rc = isth_notify_die_with_parent(asked, wrong_ppid ? getppid() + 1 : getppid());
		prctl(PR_GET_PDEATHSIG, &sig);
		/* rc + 1 in the high nibble, the signal armed in the low one */
		_exit(((rc + 1) & 0xf) << 4 | (sig == SIGTERM ? 1 : sig == 0 ? 0 : 2));
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

Test(notify, die_with_parent)
{
	/* not asked: no signal, the process outlives its parent */
	cr_assert_eq(in_child(false, NULL, NULL, false), 0x10);
	cr_assert_eq(in_child(false, NULL, "0", false), 0x10);
	/* asked by the option, the testbed, or the variable: SIGTERM armed */
	cr_assert_eq(in_child(true, NULL, NULL, false), 0x21);
	cr_assert_eq(in_child(false, "ab12", NULL, false), 0x21);
	cr_assert_eq(in_child(false, NULL, "1", false), 0x21);
	/* the parent went before the prctl: -ESRCH, the caller leaves */
	cr_assert_eq(in_child(true, NULL, NULL, true), ((-ESRCH + 1) & 0xf) << 4 | 1);
}
