/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_TEST_EAL_H
#define ISTH_TEST_EAL_H

/*
 * For every test and benchmark that starts the EAL: rte_eal_cleanup() in
 * 22.11 leaves the process's runtime directory (/var/run/dpdk/<prefix>:
 * config, fbarrays, sockets) behind, and each test has a prefix of its own,
 * so without this they pile up, one folder per run.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>

/* Remove directory @dir's files, then @dir (one level: what EAL and the
 * tests create). */
static inline void
isth_test_rm_dir(const char *dir)
{
	char path[PATH_MAX + 256];
	struct dirent *de;
	DIR *d;

	if (dir[0] == '\0' || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

/* rte_eal_cleanup(), then remove the runtime directory it leaves. */
static inline void
isth_test_eal_cleanup(void)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	isth_test_rm_dir(dir);
}

/*
 * Remove what an earlier run killed before its cleanup (a timeout sends
 * SIGKILL) left in @parent: entries named @prefix<pid> whose process is
 * gone. A live pid's entry, a second run beside this one, is kept.
 */
static inline void
isth_test_reap_stale(const char *parent, const char *prefix)
{
	char path[PATH_MAX + 256];
	size_t plen = strlen(prefix);
	struct dirent *de;
	DIR *d;

	if ((d = opendir(parent)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long pid;

		if (strncmp(de->d_name, prefix, plen) != 0)
			continue;
		errno = 0;
		pid = strtol(de->d_name + plen, &end, 10);
		if (errno || *end != '\0' || pid <= 0 || pid == (long)getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", parent, de->d_name) >= (int)sizeof(path))
			continue;
		if (unlink(path) != 0)
			isth_test_rm_dir(path);
	}
	closedir(d);
}

#endif
