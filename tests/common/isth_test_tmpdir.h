/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_TEST_TMPDIR_H
#define ISTH_TEST_TMPDIR_H

/*
 * A directory of files written by one test run: named after the test and
 * the process (unique per run), removed with everything in it at the end.
 * EAL-free. Include through test_eal_dep (tests/common).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Create "/tmp/isth-<tag>-<pid>-XXXXXX" in @p dir; 0 or -1. */
static inline int
isth_test_tmpdir_make(char *dir, size_t len, const char *tag)
{
	if ((size_t)snprintf(dir, len, "/tmp/isth-%s-%d-XXXXXX", tag, (int)getpid()) >= len)
		return -1;
	return mkdtemp(dir) != NULL ? 0 : -1;
}

/* Remove @p dir and what it holds; 0 or -1. */
static inline int
isth_test_tmpdir_remove(const char *dir)
{
	char cmd[512];

	if ((size_t)snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir) >= sizeof(cmd))
		return -1;
	return system(cmd) == 0 ? 0 : -1;
}

/* Write @p len bytes of @p data to @p dir/@p name; the path goes to @p path. 0 or -1. */
static inline int
isth_test_tmpdir_put(const char *dir, const char *name, const void *data, size_t len, char *path,
	size_t path_len)
{
	FILE *f;
	int ok;

	if ((size_t)snprintf(path, path_len, "%s/%s", dir, name) >= path_len)
		return -1;
	f = fopen(path, "wb");
	if (f == NULL)
		return -1;
	ok = fwrite(data, 1, len, f) == len;
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

#endif /* ISTH_TEST_TMPDIR_H */
