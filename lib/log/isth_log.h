/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Log lines on stderr, one write(2) each:
 *
 *   2026-12-06T02:43:59.123Z info isthmusd: joining at round 7 (...)
 *
 * an RFC 3339 UTC timestamp with milliseconds, the level, the program and
 * the message. When stderr is the systemd journal ($JOURNAL_STREAM names
 * stderr's device:inode, as systemd sets it for a service) the line is
 * "<6>message" instead: the journal stamps the time and the program and
 * reads the syslog priority from the prefix (sd-daemon(3)).
 *
 * Levels are syslog's priorities; lines above the set level (default
 * info) are dropped. Any thread but a data-path lcore's (a syscall).
 */
#ifndef ISTH_LOG_H
#define ISTH_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum isth_log_level {
	ISTH_LOG_LVL_ERR = 3,
	ISTH_LOG_LVL_WARNING = 4,
	ISTH_LOG_LVL_NOTICE = 5,
	ISTH_LOG_LVL_INFO = 6,
	ISTH_LOG_LVL_DEBUG = 7,
};

/* The program named in each line; whether stderr is the journal is
 * decided here, from $JOURNAL_STREAM. Before the first line. */
void isth_log_init(const char *prog);

/* "err"/"error", "warning"/"warn", "notice", "info", "debug" -> @level.
 * -EINVAL for anything else. */
int isth_log_level_parse(const char *name, int *level);
void isth_log_set_level(int level);
int isth_log_get_level(void);
/* The names isth_log_level_parse() takes, for --help and errors. */
#define ISTH_LOG_LEVEL_NAMES "err, warning, notice, info, debug"

void isth_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ISTH_LOG_ERR(...) isth_log(ISTH_LOG_LVL_ERR, __VA_ARGS__)
#define ISTH_LOG_WARN(...) isth_log(ISTH_LOG_LVL_WARNING, __VA_ARGS__)
#define ISTH_LOG_NOTICE(...) isth_log(ISTH_LOG_LVL_NOTICE, __VA_ARGS__)
#define ISTH_LOG_INFO(...) isth_log(ISTH_LOG_LVL_INFO, __VA_ARGS__)
#define ISTH_LOG_DEBUG(...) isth_log(ISTH_LOG_LVL_DEBUG, __VA_ARGS__)

/* One line of @msg (no newline of its own) in @buf, newline-terminated,
 * as isth_log() writes it at wall-clock time @real_ns; its length
 * (truncated to @size - 1). */
size_t isth_log_format(char *buf, size_t size, int level, uint64_t real_ns, bool journal,
	const char *prog, const char *msg);

/* Whether $JOURNAL_STREAM's "DEV:INO" value @js names the file open on @fd. */
bool isth_log_is_journal(const char *js, int fd);

#endif
