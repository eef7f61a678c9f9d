/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_VERSION_H
#define ISTH_VERSION_H

/**
 * @file
 * The version every binary prints for --version and the Python package
 * gives as isthmus.__version__ (header only): meson's project version,
 * and in a git checkout the commit it was built from,
 * "0.1.0 (git 0123456789ab)" ("-dirty" after the commit when the tree had
 * uncommitted changes). Generated at every build (scripts/version.sh), so
 * a rebuild after a commit reports the new one.
 */
#include <stdio.h>
#include <string.h>

#include "isth_version_gen.h"

/**
 * If any argument of @p argv is "--version", print "@p prog VERSION" on
 * one line to stdout and return 1 (the caller exits 0); else 0. Every
 * binary calls it first thing in main(), so that --version answers
 * before anything else reads the command line (isthmusd: before the EAL
 * parses it) and whatever else is on it.
 */
static inline int
isth_version_args(const char *prog, int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--version") == 0) {
			printf("%s %s\n", prog, ISTH_VERSION);
			return 1;
		}
	return 0;
}

#endif /* ISTH_VERSION_H */
