/* SPDX-License-Identifier: BSD-3-Clause */
/* Timestamped log lines with a level, isth_log.h. */
#include "isth_log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "isth_clock.h"

/* Set once by main() (init, --log-level) before other threads log. */
static const char *log_prog = "isthmus";
static int log_level = ISTH_LOG_LVL_INFO;
static bool log_journal;

static const char *const level_names[] = {
	[ISTH_LOG_LVL_ERR] = "error",
	[ISTH_LOG_LVL_WARNING] = "warning",
	[ISTH_LOG_LVL_NOTICE] = "notice",
	[ISTH_LOG_LVL_INFO] = "info",
	[ISTH_LOG_LVL_DEBUG] = "debug",
};

bool
isth_log_is_journal(const char *js, int fd)
{
	unsigned long long dev, ino;
	struct stat st;
	int n = 0;

	if (js == NULL || sscanf(js, "%llu:%llu%n", &dev, &ino, &n) != 2 || js[n] != '\0')
		return false;
	if (fstat(fd, &st) != 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void
isth_log_init(const char *prog)
{
	log_prog = prog;
	log_journal = isth_log_is_journal(getenv("JOURNAL_STREAM"), STDERR_FILENO);
}

int
isth_log_level_parse(const char *name, int *level)
{
	static const struct {
		const char *name;
		int level;
	} alias[] = {{"err", ISTH_LOG_LVL_ERR}, {"warn", ISTH_LOG_LVL_WARNING}};

	for (int l = ISTH_LOG_LVL_ERR; l <= ISTH_LOG_LVL_DEBUG; l++)
		if (strcasecmp(name, level_names[l]) == 0) {
			*level = l;
			return 0;
		}
	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
		if (strcasecmp(name, alias[i].name) == 0) {
			*level = alias[i].level;
			return 0;
		}
	return -EINVAL;
}

void
isth_log_set_level(int level)
{
	log_level = level;
}

int
isth_log_get_level(void)
{
	return log_level;
}

size_t
isth_log_format(char *buf, size_t size, int level, uint64_t real_ns, bool journal, const char *prog,
	const char *msg)
{
	time_t secs = (time_t)(real_ns / 1000000000ull);
	struct tm tm;
	int n;

	if (level < ISTH_LOG_LVL_ERR)
		level = ISTH_LOG_LVL_ERR;
	if (level > ISTH_LOG_LVL_DEBUG)
		level = ISTH_LOG_LVL_DEBUG;
	if (journal) {
		n = snprintf(buf, size, "<%d>%s\n", level, msg);
	} else {
		gmtime_r(&secs, &tm);
		n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ %s %s: %s\n",
			tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			tm.tm_sec, (unsigned int)(real_ns % 1000000000ull / 1000000u),
			level_names[level], prog, msg);
	}
	if (n < 0)
		return 0;
	if ((size_t)n >= size) {
		/* truncated: still one line */
		if (size >= 2)
			buf[size - 2] = '\n';
		return size ? size - 1 : 0;
	}
	return (size_t)n;
}

void
isth_log(int level, const char *fmt, ...)
{
	char msg[1024], line[1200];
	va_list ap;
	size_t n;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	n = (size_t)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* a caller's own newline: the line gets one below */
	if (n > 0 && n < sizeof(msg) && msg[n - 1] == '\n')
		msg[n - 1] = '\0';
	n = isth_log_format(
		line, sizeof(line), level, isth_clock_real_ns(), log_journal, log_prog, msg);
	/* one write: lines of several threads do not interleave */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}
