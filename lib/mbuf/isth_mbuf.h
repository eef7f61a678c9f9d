/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_MBUF_H
#define ISTH_MBUF_H

/*
 * Freeing mbufs on the data path, without their second cache line.
 *
 * rte_pktmbuf_free() and rte_pktmbuf_free_bulk() walk each chain by
 * m->next, which sits in the mbuf's second cache line. Nothing on the
 * receive path touches that line (a PMD rearms the first one; parsing
 * reads data_off and data_len, also in the first), so the free of a
 * received frame waits for a cache miss that only tells it what
 * nb_segs, in the first line, already says: an mbuf with nb_segs == 1
 * ends its chain, next is NULL (rte_mbuf_sanity_check's rule, which
 * rte_pktmbuf_reset() and every free keep). A single-segment direct
 * mbuf is therefore released here from its first line alone, as the
 * fast-free TX paths of DPDK's PMDs do; anything else (a chain, a clone,
 * an external buffer) goes to rte_pktmbuf_free() unchanged. Measured:
 * doc/notes/performance-log.md section 6, "Sixth pass".
 *
 * No lock, no allocation; a burst's mbufs of one pool go back in one
 * rte_mempool_put_bulk().
 */
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

/* mbufs handed back to their pool per rte_mempool_put_bulk() */
#define ISTH_MBUF_FREE_BATCH 64

/*
 * Drop one reference on @m. Returns @m when that was the last one and it
 * may go straight back to its pool (single segment, direct, refcnt reset
 * to 1 as a free mbuf keeps it), NULL when others still hold it or when
 * it was freed the general way.
 */
static inline struct rte_mbuf *
isth_mbuf_prefree(struct rte_mbuf *m)
{
	if (unlikely(m->nb_segs != 1 || !RTE_MBUF_DIRECT(m))) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	if (likely(rte_mbuf_refcnt_read(m) == 1))
		return m;
	if (rte_mbuf_refcnt_update(m, -1) != 0)
		return NULL;
	rte_mbuf_refcnt_set(m, 1);
	return m;
}

/* rte_pktmbuf_free() of one mbuf (NULL is ignored), as above. */
static inline void
isth_mbuf_free(struct rte_mbuf *m)
{
	if (m != NULL && (m = isth_mbuf_prefree(m)) != NULL)
		rte_mempool_put(m->pool, m);
}

/* rte_pktmbuf_free_bulk() of @m[0..n) (NULL entries are ignored), as
 * above: consecutive mbufs of one pool are put back together. */
static inline void
isth_mbuf_free_bulk(struct rte_mbuf **m, unsigned int n)
{
	void *put[ISTH_MBUF_FREE_BATCH];
	struct rte_mempool *pool = NULL;
	unsigned int i, k = 0;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *b = m[i];

		if (b == NULL || (b = isth_mbuf_prefree(b)) == NULL)
			continue;
		if (unlikely(b->pool != pool || k == ISTH_MBUF_FREE_BATCH)) {
			if (k != 0)
				rte_mempool_put_bulk(pool, put, k);
			pool = b->pool;
			k = 0;
		}
		put[k++] = b;
	}
	if (k != 0)
		rte_mempool_put_bulk(pool, put, k);
}

#endif /* ISTH_MBUF_H */
