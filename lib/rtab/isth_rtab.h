/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_RTAB_H
#define ISTH_RTAB_H

/**
 * @file
 * Round tables: the one way a control thread hands "round r's table" to
 * the data-path workers (doc/isthmusd.md, "Round tables").
 *
 * A table set has n_slots published slots (a user maps a round, or a
 * (job, round) pair, to a slot) and n_slots + n_spare buffers of `size`
 * bytes. Buffers are reclaimed with DPDK's quiescent-state-based RCU
 * (rte_rcu_qsbr), as the LPM and hash libraries do:
 *
 * - the *writer* (one control thread) takes a buffer no reader can see
 *   with isth_rtab_prepare(), fills it, and publishes it in a slot with
 *   isth_rtab_publish(): a release store of the pointer. The buffer the
 *   slot held is retired with an rte_rcu_qsbr_start() token;
 * - a *reader* (a worker lcore registered on the qsbr variable) loads a
 *   slot with isth_rtab_get() (an acquire load) and may use the table
 *   until its next rte_rcu_qsbr_quiescent() report. Workers report once
 *   per poll-loop iteration and go offline around an idle sleep, so an
 *   idle worker never holds the writer up;
 * - a retired buffer becomes free again only when rte_rcu_qsbr_check()
 *   says every online reader reported since it was retired. The writer
 *   never waits: when no buffer is free, isth_rtab_prepare() fails with
 *   EAGAIN, counts it in reuse_waits, and the writer tries again at its
 *   next tick.
 *
 * Reader side: one acquire load, no lock, allocation or syscall.
 * Any thread may call isth_rtab_stats_get().
 */
#include <stdbool.h>
#include <stdint.h>

#include <rte_rcu_qsbr.h>

#include "isth_ctr.h"

#ifdef __cplusplus
extern "C" {
#endif

struct isth_rtab;

/** Creation parameters. */
struct isth_rtab_params {
	uint32_t n_slots; /**< tables published at once, 1..2^20 */
	uint32_t n_spare; /**< buffers beyond n_slots: retired tables wait here, >= 1 */
	uint32_t size; /**< bytes per table, 1..2^24 */
	/**
	 * The readers. NULL: the writer is the only reader (one thread
	 * does both, as in single-threaded tests): a retired buffer is free
	 * at once.
	 */
	struct rte_rcu_qsbr *qs;
};

/* Writer's counters (written by the writer only; any thread reads). */
#define ISTH_RTAB_STATS(X) \
	X(published, "tables published") \
	X(reclaimed, "retired buffers free again after every reader's quiescent state") \
	X(reuse_waits, \
		"prepare found no free buffer: a reader had not yet passed a quiescent state") \
	X(retired, "gauge: retired buffers waiting for their grace period")

/** Counters, list order: see ISTH_RTAB_STATS. */
struct isth_rtab_stats {
	ISTH_RTAB_STATS(ISTH_CTR_FIELD)
};

enum { ISTH_RTAB_STATS_N = 0 ISTH_RTAB_STATS(ISTH_CTR_ONE) };

/** Name of counter @p i (list order), "unknown" out of range. */
const char *isth_rtab_stats_name(unsigned int i);

/*
 * The reader's view: the first member of the handle (opaque otherwise),
 * so that isth_rtab_get() is an inline acquire load.
 */
struct isth_rtab_rd {
	void **slot; /* written by: the writer (release); read by: readers (acquire) */
	uint32_t n_slots;
};

/**
 * Create a table set. Buffers are zeroed, every slot is empty (NULL).
 * @return the handle, or NULL with errno EINVAL or ENOMEM.
 */
struct isth_rtab *isth_rtab_create(const struct isth_rtab_params *p);

/** Free @p t (NULL is fine). No reader may use it any more. */
void isth_rtab_destroy(struct isth_rtab *t);

/**
 * Writer: a buffer no reader can see, to fill before isth_rtab_publish().
 * Its content is whatever it last held (the writer rewrites all of it).
 * Calling it again before publishing returns the same buffer.
 * @return the buffer, or NULL with errno EAGAIN when every spare buffer
 *         still waits for a reader's quiescent state (counted in
 *         reuse_waits; call again later, never spin on it).
 */
void *isth_rtab_prepare(struct isth_rtab *t);

/**
 * Writer: publish @p buf (the buffer isth_rtab_prepare() returned, or NULL
 * to empty the slot) in @p slot with a release store, and retire the
 * buffer the slot held.
 * @return 0, or -EINVAL for a slot out of range or a buffer that is not
 *         the prepared one.
 */
int isth_rtab_publish(struct isth_rtab *t, uint32_t slot, void *buf);

/**
 * Writer: free the retired buffers whose grace period is over (prepare
 * does this too). @return how many became free.
 */
unsigned int isth_rtab_reclaim(struct isth_rtab *t);

/**
 * Reader: the table published in @p slot (NULL if none), valid until the
 * caller's next quiescent-state report. @p slot < n_slots.
 */
static inline const void *
isth_rtab_get(const struct isth_rtab *t, uint32_t slot)
{
	const struct isth_rtab_rd *rd = (const struct isth_rtab_rd *)t;

	return __atomic_load_n(&rd->slot[slot], __ATOMIC_ACQUIRE);
}

/** Any thread: the writer's counters. */
void isth_rtab_stats_get(const struct isth_rtab *t, struct isth_rtab_stats *st);

/**
 * A qsbr variable for up to @p max_readers reader ids (0..max_readers-1),
 * cache-aligned and initialised; free it with isth_rtab_qs_free().
 * @return NULL with errno EINVAL or ENOMEM on failure.
 */
struct rte_rcu_qsbr *isth_rtab_qs_create(uint32_t max_readers);

/** Free a qsbr variable from isth_rtab_qs_create() (NULL is fine). */
void isth_rtab_qs_free(struct rte_rcu_qsbr *qs);

/**
 * Tests only: @p on makes the writer reuse retired buffers without
 * asking rte_rcu_qsbr_check(), i.e. too early. Exists so that a test can
 * show its consistency check catches early reuse.
 */
void isth_rtab_test_unsafe_reuse(struct isth_rtab *t, bool on);

#ifdef __cplusplus
}
#endif

#endif
