/* SPDX-License-Identifier: BSD-3-Clause */
/* What the lib/island tests share: island_fix.h. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <criterion/criterion.h>

#include "isth_wire.h"

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

float
val_f32(unsigned int k, uint32_t r, uint32_t i)
{
	int v = (int)(((k + 1) * 131u + r * 17u + i * 7u) % 1024u) - 512;

	return (float)v / 16.0f;
}

float
sum_f32(uint64_t set, uint32_t r, uint32_t i)
{
	int s = 0; /* in sixteenths: an exact reference */

	for (unsigned int k = 0; k < 64; k++)
		if (set & (1ull << k))
			s += (int)(((k + 1) * 131u + r * 17u + i * 7u) % 1024u) - 512;
	return (float)s / 16.0f;
}

uint32_t
fix_clen(const struct fix_shape *sh, uint32_t c)
{
	return c + 1 < sh->n_chunks ? sh->ce : sh->elems - (sh->n_chunks - 1) * sh->ce;
}

size_t
fix_round(uint8_t *buf, const struct fix_shape *sh, uint32_t round, uint64_t seq, uint64_t expected,
	uint64_t clique, uint64_t deadline)
{
	struct isth_wire_round b = {
		.start_ns = FIX_T0,
		.deadline_ns = deadline,
		.period_ns = 100 * 1000000ull,
		.clique = clique,
		.n_chunks = sh->n_chunks,
		.chunk_elems = sh->ce,
	};
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_ROUND,
		.sender = (uint8_t)sh->self,
		.job = FIX_JOB,
		.round = round,
		.seq = seq,
		.bitmap = expected,
	};
	uint8_t body[ISTH_WIRE_ROUND_SIZE];
	int n;

	isth_wire_put_round(body, sizeof(body), &b);
	n = isth_wire_build_msg(buf, 2048, &h, body, sizeof(body), NULL);
	cr_assert_gt(n, 0);
	return (size_t)n;
}

size_t
fix_agg(uint8_t *buf, const struct fix_shape *sh, uint8_t dtype, uint32_t round, uint32_t c,
	uint64_t set, uint64_t seq, uint16_t flags)
{
	uint32_t len = fix_clen(sh, c);
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_AGG,
		.dtype = dtype,
		.flags = flags,
		.sender = (uint8_t)sh->self,
		.count = (uint16_t)len,
		.job = FIX_JOB,
		.round = round,
		.chunk = c,
		.seq = seq,
		.bitmap = set,
	};
	uint8_t body[2048];
	int n;

	cr_assert_leq((size_t)len * 4, sizeof(body));
	for (uint32_t i = 0; i < len; i++) {
		uint32_t v;

		if (dtype == ISTH_WIRE_DTYPE_FP32) {
			float f = sum_f32(set, round, c * sh->ce + i);

			memcpy(&v, &f, 4);
		} else {
			v = sum_i32(set, round, c * sh->ce + i);
		}
		/* little-endian by hand */
		body[4 * i] = (uint8_t)v;
		body[4 * i + 1] = (uint8_t)(v >> 8);
		body[4 * i + 2] = (uint8_t)(v >> 16);
		body[4 * i + 3] = (uint8_t)(v >> 24);
	}
	n = isth_wire_build_msg(buf, 2048, &h, body, (size_t)len * 4, NULL);
	cr_assert_gt(n, 0);
	return (size_t)n;
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

int
fix_udp_socket(uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	cr_assert_geq(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}
