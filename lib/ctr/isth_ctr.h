/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_CTR_H
#define ISTH_CTR_H

/**
 * @file
 * Counters: one single-writer increment and one way to declare a list.
 *
 * Every isthmus counter has exactly one writer (the lcore or thread that
 * owns the object) and any number of readers (telemetry, the controller,
 * a final print). The writer adds with a relaxed load and a relaxed store,
 * not an atomic read-modify-write: with one writer no increment can be
 * lost, and a plain store costs nothing, where a locked add would stall
 * the data path on every packet (OVS does the same in
 * pmd_perf_update_counter). A 64-bit aligned relaxed store is never torn,
 * so readers see an old or a new value, never a mix.
 *
 * A counter list is an X-macro of (field, "help") pairs:
 *
 *     #define FOO_COUNTERS(X) \
 *             X(rx, "frames received") \
 *             X(drops, "frames dropped")
 *
 *     struct foo_stats { FOO_COUNTERS(ISTH_CTR_FIELD) };
 *     static const char *const foo_names[] = { FOO_COUNTERS(ISTH_CTR_NAME) };
 *     enum { FOO_N = 0 FOO_COUNTERS(ISTH_CTR_ONE) };
 *
 * so the struct, the names printed and exported, and their help text come
 * from the same list and cannot drift apart. A struct made only of such
 * fields is an array of uint64_t (ISTH_CTR_ASSERT_ARRAY checks it), which
 * isth_ctr_at() indexes in list order.
 */
#include <stddef.h>
#include <stdint.h>

/** Add @p n to counter @p c. Only the counter's single writer calls this. */
static inline void
isth_ctr_add(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/** Set gauge @p c to @p v (single writer). */
static inline void
isth_ctr_set(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, v, __ATOMIC_RELAXED);
}

/** Read counter @p c from any thread. */
static inline uint64_t
isth_ctr_get(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/** Counter @p i (list order) of a struct made of one counter list. */
static inline uint64_t
isth_ctr_at(const void *stats, unsigned int i)
{
	return isth_ctr_get((const uint64_t *)stats + i);
}

/* X-macro expanders for a counter list (see the file comment). */
#define ISTH_CTR_FIELD(name, help) uint64_t name;
#define ISTH_CTR_NAME(name, help) #name,
#define ISTH_CTR_HELP(name, help) help,
#define ISTH_CTR_ONE(name, help) +1

/** Compile-time check that @p type is exactly the @p n counters of a list. */
#define ISTH_CTR_ASSERT_ARRAY(type, n) \
	_Static_assert( \
		sizeof(type) == (n) * sizeof(uint64_t), #type " is not an array of its counters")

#endif
