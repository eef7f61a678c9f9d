/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the Criterion tests of lib/island against a fake edge share (one
 * way to do each thing): the closed-form tensor the expected sums come
 * from, the injected clock, and key files with the fake edge's lib/auth
 * engine, and the ROUND and AGG messages a fake edge sends. Used by
 * island_test.c, island_auth_test.c and island_rx_test.c.
 */
#ifndef ISLAND_FIX_H
#define ISLAND_FIX_H

#include <stddef.h>
#include <stdint.h>

#include "isth_auth.h"

#define FIX_JOB 7u /* the job of every key file written here */
#define FIX_N_ISLANDS 4u
#define FIX_T0 (1000ull * 1000000000ull) /* fake clock origin */

/* ---- closed form ---------------------------------------------------------- */

/* Element @i of island @k's int32 tensor in round @r. */
uint32_t val_i32(unsigned int k, uint32_t r, uint32_t i);
/* The sum of element @i over the islands of @set, modulo 2^32. */
uint32_t sum_i32(uint64_t set, uint32_t r, uint32_t i);
/* Element @i of island @k's fp32 tensor in round @r: sixteenths in
 * [-512, 511]/16, so sums of up to 64 islands are exact in binary32. */
float val_f32(unsigned int k, uint32_t r, uint32_t i);
/* The sum of element @i over @set, computed exactly in integers. */
float sum_f32(uint64_t set, uint32_t r, uint32_t i);

/* ---- messages of a fake edge (unsealed: the caller seals if it wants) ---- */

/* A test session's tensor: @n_chunks chunks of @ce elements, the last one
 * of @elems - (n_chunks - 1) * ce; its edge sends as island @self. */
struct fix_shape {
	uint32_t n_chunks;
	uint32_t ce;
	uint32_t elems;
	unsigned int self;
};

/* Elements in chunk @c. */
uint32_t fix_clen(const struct fix_shape *sh, uint32_t c);
/* A ROUND of @round into @buf (2048 bytes): start FIX_T0, period 100 ms,
 * @deadline, the clique @clique, the expected senders @expected, @seq. */
size_t fix_round(uint8_t *buf, const struct fix_shape *sh, uint32_t round, uint64_t seq,
	uint64_t expected, uint64_t clique, uint64_t deadline);
/* An AGG of chunk @c into @buf (2048 bytes): the closed-form sum over
 * @set, int32 or fp32 (@dtype), little-endian, with @seq and @flags. */
size_t fix_agg(uint8_t *buf, const struct fix_shape *sh, uint8_t dtype, uint32_t round, uint32_t c,
	uint64_t set, uint64_t seq, uint16_t flags);

/* A UDP socket bound to 127.0.0.1 on an ephemeral port (in @port): a fake
 * edge's. */
int fix_udp_socket(uint16_t *port);

/* ---- the injected clock (conf.clock) ----------------------------------------- */

extern uint64_t fake_now; /* read and moved with __atomic builtins */
uint64_t fake_clock(void *arg);

/* ---- key files ------------------------------------------------------------- */

struct keys {
	char path[64];
	struct isth_auth *a;
	struct isth_auth_engine *e; /* OpenSSL: the fake edge seals with it */
};

/* A mode-0600 key file with @text, its path in @path; removed by
 * keys_free() or, if a test ended early, key_files_remove(). */
void key_file(char *path, size_t size, const char *text);
/* A key file with @text for FIX_JOB and FIX_N_ISLANDS, loaded, with an
 * engine. */
void keys_load(struct keys *k, const char *text);
void keys_free(struct keys *k);
/* Unlink a key file of key_file() (and forget it). */
void key_file_remove(const char *path);
/* A suite's fini: unlink the key files a failed test left behind. */
void key_files_remove(void);

/*
 * Drive session @s (no receive threads: the caller reads) until @cond,
 * over the caller's `struct isth_island_stats st`, holds; ~20 s at most
 * (a loaded host: the bound is reached only when the test fails), then
 * assert it (Criterion).
 */
#define POLL_UNTIL(s, cond) \
	do { \
		for (int i_ = 0; i_ < 4000; i_++) { \
			isth_island_stats((s), &st); \
			if (cond) \
				break; \
			isth_island_poll((s), 5000000ull); /* 5 ms */ \
		} \
		isth_island_stats((s), &st); \
		cr_assert(cond, "condition never held: %s", #cond); \
	} while (0)

#endif
