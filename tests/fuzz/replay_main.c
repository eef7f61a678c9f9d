/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Standalone driver for a libFuzzer harness: runs LLVMFuzzerTestOneInput()
 * once on every file named on the command line, or in every directory
 * named (names starting with '.' and README* skipped, sorted for a stable
 * order). Built with the normal compiler and ASan/UBSan where available,
 * it turns the corpus into a regression test: a crash or an invariant
 * violation kills the process, and the file being run was printed last.
 *
 * Fails when no input was found at all, so a missing corpus cannot pass.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

static unsigned int n_run;

static int
run_file(const char *path)
{
	uint8_t *data = NULL;
	size_t size = 0, cap = 0, n;
	FILE *f;

	f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (size == cap) {
			uint8_t *p;

			cap = cap ? 2 * cap : 4096;
			p = realloc(data, cap);
			if (p == NULL) {
				free(data);
				fclose(f);
				fprintf(stderr, "replay: out of memory\n");
				return -1;
			}
			data = p;
		}
		n = fread(data + size, 1, cap - size, f);
		if (n == 0)
			break;
		size += n;
	}
	if (ferror(f)) {
		fprintf(stderr, "replay: %s: read error\n", path);
		free(data);
		fclose(f);
		return -1;
	}
	fclose(f);
	printf("replay: %s (%zu bytes)\n", path, size);
	fflush(stdout);
	/* The harness copies into an exact-size buffer itself. */
	LLVMFuzzerTestOneInput(data, size);
	free(data);
	n_run++;
	return 0;
}

static int
skip_name(const char *name)
{
	return name[0] == '.' || strncmp(name, "README", 6) == 0;
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
run_dir(const char *dir)
{
	char **names = NULL, path[4096];
	size_t n = 0, cap = 0, i;
	struct dirent *e;
	int ret = 0;
	DIR *d;

	d = opendir(dir);
	if (d == NULL) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		if (skip_name(e->d_name))
			continue;
		if (n == cap) {
			char **p;

			cap = cap ? 2 * cap : 64;
			p = realloc(names, cap * sizeof(*names));
			if (p == NULL) {
				ret = -1;
				goto out;
			}
			names = p;
		}
		names[n] = strdup(e->d_name);
		if (names[n] == NULL) {
			ret = -1;
			goto out;
		}
		n++;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; i < n && ret == 0; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		ret = run_file(path);
	}
out:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	if (ret != 0)
		fprintf(stderr, "replay: %s: failed\n", dir);
	return ret;
}

int
main(int argc, char **argv)
{
	struct stat st;
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]))
			return 1;
	}
	if (n_run == 0) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	printf("replay: %u inputs, no crash, no invariant violated\n", n_run);
	return 0;
}
