/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/log: the line format (timestamps checked against `date -u`'s
 * figures), levels, the journal's <N> form and its detection, and that
 * isth_log() writes one line to stderr only at or below the set level.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isth_log.h"

/* date -u -d 2026-12-06T02:43:59Z +%s */
#define T_2026 1796525039ull
/* date -u -d 2000-02-29T23:59:59Z +%s */
#define T_LEAP 951868799ull

Test(log, format)
{
	char buf[256];
	size_t n;

	n = isth_log_format(buf, sizeof(buf), ISTH_LOG_LVL_INFO, T_2026 * 1000000000ull + 123456789,
		false, "isthmusd", "joining at round 7");
	cr_assert_str_eq(buf, "2026-12-06T02:43:59.123Z info isthmusd: joining at round 7\n");
	cr_assert_eq(n, strlen(buf));
	isth_log_format(buf, sizeof(buf), ISTH_LOG_LVL_ERR, T_LEAP * 1000000000ull + 999999999,
		false, "isthmus-island", "x");
	cr_assert_str_eq(buf, "2000-02-29T23:59:59.999Z error isthmus-island: x\n");
	isth_log_format(buf, sizeof(buf), ISTH_LOG_LVL_WARNING, 0, false, "p", "m");
	cr_assert_str_eq(buf, "1970-01-01T00:00:00.000Z warning p: m\n");
	/* the journal: no time, no program, the syslog priority */
	isth_log_format(buf, sizeof(buf), ISTH_LOG_LVL_ERR, T_2026, true, "isthmusd", "bad");
	cr_assert_str_eq(buf, "<3>bad\n");
	isth_log_format(buf, sizeof(buf), ISTH_LOG_LVL_DEBUG, T_2026, true, "isthmusd", "d");
	cr_assert_str_eq(buf, "<7>d\n");
	/* truncated: still one line */
	n = isth_log_format(buf, 8, ISTH_LOG_LVL_ERR, T_2026, true, "isthmusd", "long message");
	cr_assert_eq(n, 7);
	cr_assert_str_eq(buf, "<3>lon\n");
}

Test(log, level_names)
{
	static const struct {
		const char *name;
		int level;
	} ok[] = {{"err", 3}, {"error", 3}, {"warning", 4}, {"warn", 4}, {"WARN", 4}, {"notice", 5},
		{"info", 6}, {"debug", 7}};
	int l;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_assert_eq(isth_log_level_parse(ok[i].name, &l), 0, "%s", ok[i].name);
		cr_assert_eq(l, ok[i].level, "%s", ok[i].name);
	}
	cr_assert_eq(isth_log_level_parse("", &l), -EINVAL);
	cr_assert_eq(isth_log_level_parse("6", &l), -EINVAL);
	cr_assert_eq(isth_log_level_parse("verbose", &l), -EINVAL);
}

Test(log, journal_detection)
{
	char tmpl[] = "/tmp/isth-log-XXXXXX", js[64];
	int fd = mkstemp(tmpl), other;
	struct stat st;

	cr_assert(fd >= 0);
	unlink(tmpl);
	cr_assert_eq(fstat(fd, &st), 0);
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		(unsigned long long)st.st_ino);
	cr_assert(isth_log_is_journal(js, fd));
	other = dup(fd); /* the same open file: still the journal */
	cr_assert(isth_log_is_journal(js, other));
	close(other);
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		(unsigned long long)st.st_ino + 1);
	cr_assert_not(isth_log_is_journal(js, fd));
	cr_assert_not(isth_log_is_journal(NULL, fd));
	cr_assert_not(isth_log_is_journal("", fd));
	cr_assert_not(isth_log_is_journal("12", fd));
	snprintf(js, sizeof(js), "%llu:%llux", (unsigned long long)st.st_dev,
		(unsigned long long)st.st_ino);
	cr_assert_not(isth_log_is_journal(js, fd));
	close(fd);
}

/* What isth_log() wrote to stderr while @fn ran. */
static void
capture(void (*fn)(void), char *out, size_t size)
{
	char tmpl[] = "/tmp/isth-log-XXXXXX";
	int fd = mkstemp(tmpl), saved = dup(STDERR_FILENO);
	ssize_t n;

	cr_assert(fd >= 0 && saved >= 0);
	unlink(tmpl);
	dup2(fd, STDERR_FILENO);
	fn();
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, out, size - 1, 0);
	close(fd);
	cr_assert(n >= 0);
	out[n] = '\0';
}

static void
log_some(void)
{
	unsetenv("JOURNAL_STREAM");
	isth_log_init("tprog");
	isth_log_set_level(ISTH_LOG_LVL_INFO);
	ISTH_LOG_DEBUG("hidden %d", 1);
	ISTH_LOG_INFO("shown %d\n", 2); /* a caller's newline is not doubled */
	isth_log_set_level(ISTH_LOG_LVL_ERR);
	ISTH_LOG_WARN("hidden %d", 3);
	ISTH_LOG_ERR("shown %d", 4);
}

Test(log, levels_filter)
{
	char out[1024], *second;

	capture(log_some, out, sizeof(out));
	cr_assert_null(strstr(out, "hidden"), "%s", out);
	second = strchr(out, '\n');
	cr_assert_not_null(second, "%s", out);
	second++;
	/* YYYY-MM-DDTHH:MM:SS.mmmZ is 24 characters */
	cr_assert_eq(strlen(out),
		2 * 24 + strlen(" info tprog: shown 2\n") + strlen(" error tprog: shown 4\n"), "%s",
		out);
	cr_assert_eq(out[10], 'T');
	cr_assert_eq(out[23], 'Z');
	cr_assert_eq(strncmp(out + 24, " info tprog: shown 2\n", 21), 0, "%s", out);
	cr_assert_str_eq(second + 24, " error tprog: shown 4\n");
}
