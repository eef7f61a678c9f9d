/* SPDX-License-Identifier: BSD-3-Clause */
/* What the lib/island tests share: island_fix.h. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "island_fix.h"

uint32_t
val_i32(unsigned int k, uint32_t r, uint32_t i)
{
	return (uint32_t)(k + 1) * 1000003u + r * 7919u + i * 31u;
}

uint32_t
sum_i32(uint64_t set, uint32_t r, uint32_t i)
{
	uint32_t s = 0;

	for (unsigned int k = 0; k < 64; k++)
		if (set & (1ull << k))
			s += val_i32(k, r, i);
	return s;
}

uint64_t fake_now = FIX_T0;

uint64_t
fake_clock(void *arg)
{
	(void)arg;
	return __atomic_load_n(&fake_now, __ATOMIC_SEQ_CST);
}

/* Key files written and not removed yet (a test makes at most a few). */
#define MAX_KEY_FILES 8
static char key_files[MAX_KEY_FILES][64];

void
key_file(char *path, size_t size, const char *text)
{
	unsigned int i;
	int fd;

	snprintf(path, size, "/tmp/isth_island_test.XXXXXX");
	fd = mkstemp(path); /* mode 0600 */
	cr_assert_geq(fd, 0);
	for (i = 0; i < MAX_KEY_FILES && key_files[i][0] != '\0'; i++)
		;
	cr_assert_lt(i, MAX_KEY_FILES, "more than %d key files at once", MAX_KEY_FILES);
	snprintf(key_files[i], sizeof(key_files[i]), "%s", path);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

void
keys_load(struct keys *k, const char *text)
{
	struct isth_auth_conf ac = {.job = FIX_JOB, .n_islands = FIX_N_ISLANDS};
	char err[256];

	key_file(k->path, sizeof(k->path), text);
	ac.key_file = k->path;
	cr_assert_eq(isth_auth_create(&ac, &k->a, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(isth_auth_engine_create(k->a, ISTH_AUTH_OPENSSL, &k->e), 0);
}

void
keys_free(struct keys *k)
{
	isth_auth_engine_free(k->e);
	isth_auth_free(k->a);
	key_file_remove(k->path);
}

void
key_file_remove(const char *path)
{
	unlink(path);
	for (unsigned int i = 0; i < MAX_KEY_FILES; i++)
		if (strcmp(key_files[i], path) == 0)
			key_files[i][0] = '\0';
}

void
key_files_remove(void)
{
	for (unsigned int i = 0; i < MAX_KEY_FILES; i++)
		if (key_files[i][0] != '\0') {
			unlink(key_files[i]);
			key_files[i][0] = '\0';
		}
}
