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
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>

/* rte_eal_cleanup(), then remove the runtime directory it leaves. */
static inline void
isth_test_eal_cleanup(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 256];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	if (dir[0] == '\0' || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

#endif
