/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Round tables on rte_rcu_qsbr. Layout:
 *
 *   slot[]     n_slots published pointers (the readers' only access)
 *   mem        n_bufs buffers of `stride` bytes, cache-line aligned
 *   free_[]    stack of buffers no reader can see
 *   ret[]      FIFO of (buffer, token) retired by publish: tokens grow, so
 *              the head is always the first whose grace period ends
 *
 * Every field but slot[] and the counters is the writer's alone.
 *
 * Why ret[] is not DPDK's defer queue (rte_rcu_qsbr_dq), the usual home of
 * "free this after a grace period": it does not fit here.
 * - The buffers are never freed, only reused: a dq's free_fn would push
 *   the buffer back on free_[], and the dq would hold a copy of what ret[]
 *   holds now (buffer + token) in a ring sized to a power of two, to save
 *   the twenty lines of isth_rtab_reclaim() and the end of publish.
 * - A dq lives in EAL memory: rte_zmalloc() and an rte_ring memzone with a
 *   process-unique name, so a table set would need a running EAL and a
 *   name counter. lib/rtab runs on the plain heap, with or without EAL
 *   (tests/rtab has none), and its writer-only mode (qs == NULL) has no
 *   qsbr variable, which rte_rcu_qsbr_dq_create() requires.
 * - isth_rtab_destroy() must free everything; rte_rcu_qsbr_dq_delete()
 *   frees nothing (EAGAIN) while one entry's grace period is not over,
 *   e.g. when a worker stopped while still online.
 * - The dq API is experimental in DPDK 22.11, and it has no way to skip
 *   the check for isth_rtab_test_unsafe_reuse().
 * ret[] cannot overflow (n_bufs entries; every buffer is free, prepared,
 * published or retired) and is reclaimed with the same non-blocking
 * rte_rcu_qsbr_check() a dq would call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "isth_rtab.h"

#define RTAB_MAX_SLOTS (1u << 20)
#define RTAB_MAX_SIZE (1u << 24)

struct rtab_retired {
	void *buf;
	uint64_t token; /* rte_rcu_qsbr_start() when retired */
};

struct isth_rtab {
	struct isth_rtab_rd rd; /* first: isth_rtab_get() reads it */
	struct rte_rcu_qsbr *qs;
	uint32_t n_bufs;
	uint32_t stride;
	uint32_t n_free;
	uint32_t ret_head; /* next to reclaim */
	uint32_t ret_n;
	bool unsafe_reuse; /* test hook */
	void *prepared;
	uint8_t *mem;
	void **free_;
	struct rtab_retired *ret;
	struct isth_rtab_stats st; /* written by: the writer */
};

ISTH_CTR_ASSERT_ARRAY(struct isth_rtab_stats, ISTH_RTAB_STATS_N);

static const char *const stats_names[ISTH_RTAB_STATS_N] = {ISTH_RTAB_STATS(ISTH_CTR_NAME)};

const char *
isth_rtab_stats_name(unsigned int i)
{
	return i < ISTH_RTAB_STATS_N ? stats_names[i] : "unknown";
}

struct isth_rtab *
isth_rtab_create(const struct isth_rtab_params *p)
{
	struct isth_rtab *t;
	uint64_t bytes;
	uint32_t i;

	if (p == NULL || p->n_slots == 0 || p->n_slots > RTAB_MAX_SLOTS || p->n_spare == 0 ||
		p->n_spare > RTAB_MAX_SLOTS || p->size == 0 || p->size > RTAB_MAX_SIZE) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		goto nomem;
	t->qs = p->qs;
	t->rd.n_slots = p->n_slots;
	t->n_bufs = p->n_slots + p->n_spare;
	t->stride = RTE_ALIGN_CEIL(p->size, RTE_CACHE_LINE_SIZE);
	t->rd.slot = calloc(p->n_slots, sizeof(*t->rd.slot));
	t->free_ = calloc(t->n_bufs, sizeof(*t->free_));
	t->ret = calloc(t->n_bufs, sizeof(*t->ret));
	bytes = (uint64_t)t->n_bufs * t->stride;
	t->mem = aligned_alloc(RTE_CACHE_LINE_SIZE, bytes);
	if (t->rd.slot == NULL || t->free_ == NULL || t->ret == NULL || t->mem == NULL)
		goto nomem_t;
	memset(t->mem, 0, bytes);
	/* popped from the top: buffer 0 first */
	for (i = 0; i < t->n_bufs; i++)
		t->free_[i] = t->mem + (size_t)(t->n_bufs - 1 - i) * t->stride;
	t->n_free = t->n_bufs;
	return t;

nomem_t:
	isth_rtab_destroy(t);
nomem:
	errno = ENOMEM;
	return NULL;
}

void
isth_rtab_destroy(struct isth_rtab *t)
{
	if (t == NULL)
		return;
	free(t->mem);
	free(t->ret);
	free(t->free_);
	free(t->rd.slot);
	free(t);
}

unsigned int
isth_rtab_reclaim(struct isth_rtab *t)
{
	unsigned int n = 0;

	while (t->ret_n > 0) {
		struct rtab_retired *r = &t->ret[t->ret_head];

		/* never waits: a reader still inside its read section keeps
		 * this buffer and every later one (their tokens are newer) */
		if (!t->unsafe_reuse && t->qs != NULL &&
			!rte_rcu_qsbr_check(t->qs, r->token, false))
			break;
		t->free_[t->n_free++] = r->buf;
		t->ret_head = (t->ret_head + 1) % t->n_bufs;
		t->ret_n--;
		n++;
	}
	if (n) {
		isth_ctr_add(&t->st.reclaimed, n);
		isth_ctr_set(&t->st.retired, t->ret_n);
	}
	return n;
}

void *
isth_rtab_prepare(struct isth_rtab *t)
{
	if (t->prepared != NULL)
		return t->prepared;
	if (t->n_free == 0)
		isth_rtab_reclaim(t);
	if (t->n_free == 0) {
		isth_ctr_add(&t->st.reuse_waits, 1);
		errno = EAGAIN;
		return NULL;
	}
	t->prepared = t->free_[--t->n_free];
	return t->prepared;
}

int
isth_rtab_publish(struct isth_rtab *t, uint32_t slot, void *buf)
{
	struct rtab_retired *r;
	void *old;

	if (slot >= t->rd.n_slots || (buf != NULL && buf != t->prepared))
		return -EINVAL;
	old = t->rd.slot[slot];
	/* the table's content happens-before any reader's acquire load */
	__atomic_store_n(&t->rd.slot[slot], buf, __ATOMIC_RELEASE);
	if (buf != NULL) {
		t->prepared = NULL;
		isth_ctr_add(&t->st.published, 1);
	}
	if (old == NULL)
		return 0;
	/* n_bufs entries: every buffer is free, prepared, published or
	 * here, so the FIFO cannot overflow */
	r = &t->ret[(t->ret_head + t->ret_n) % t->n_bufs];
	r->buf = old;
	/* start() after the store: a reader that reports past this token
	 * can no longer be holding the old pointer */
	r->token = t->qs != NULL ? rte_rcu_qsbr_start(t->qs) : 0;
	t->ret_n++;
	isth_ctr_set(&t->st.retired, t->ret_n);
	return 0;
}

void
isth_rtab_stats_get(const struct isth_rtab *t, struct isth_rtab_stats *st)
{
	for (unsigned int i = 0; i < ISTH_RTAB_STATS_N; i++)
		((uint64_t *)st)[i] = isth_ctr_at(&t->st, i);
}

void
isth_rtab_test_unsafe_reuse(struct isth_rtab *t, bool on)
{
	t->unsafe_reuse = on;
}

struct rte_rcu_qsbr *
isth_rtab_qs_create(uint32_t max_readers)
{
	struct rte_rcu_qsbr *qs;
	size_t sz;

	if (max_readers == 0 || max_readers > RTE_MAX_LCORE * 4u) {
		errno = EINVAL;
		return NULL;
	}
	sz = rte_rcu_qsbr_get_memsize(max_readers);
	qs = aligned_alloc(RTE_CACHE_LINE_SIZE, RTE_ALIGN_CEIL(sz, RTE_CACHE_LINE_SIZE));
	if (qs == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (rte_rcu_qsbr_init(qs, max_readers) != 0) {
		free(qs);
		errno = EINVAL;
		return NULL;
	}
	return qs;
}

void
isth_rtab_qs_free(struct rte_rcu_qsbr *qs)
{
	free(qs);
}
