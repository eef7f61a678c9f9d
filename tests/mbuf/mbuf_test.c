/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/mbuf: isth_mbuf_free() and isth_mbuf_free_bulk() against what
 * rte_pktmbuf_free() would do, counted on cache-less pools (so that
 * rte_mempool_avail_count() is exact): every mbuf whose last reference
 * is dropped is back in its own pool, in the state a free mbuf keeps
 * (refcnt 1, one segment, no next), and nothing else is.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "isth_mbuf.h"
#include "isth_test_eal.h"

#define NB 511u

static struct rte_mempool *pa, *pb;

static void
eal_up(void)
{
	char prefix[64];
	char *argv[] = {
		"test_mbuf",
		"-l",
		"0",
		"--no-huge",
		"-m",
		"64",
		"--no-pci",
		"--no-telemetry",
		prefix,
		"--log-level=*:error",
		NULL,
	};

	/* a crashed test (Criterion forks one per test) leaves its folder */
	isth_test_reap_stale("/var/run/dpdk", "isth-mbuf-");
	snprintf(prefix, sizeof(prefix), "--file-prefix=isth-mbuf-%d", (int)getpid());
	cr_assert_geq(rte_eal_init((int)RTE_DIM(argv) - 1, argv), 0, "EAL init failed");
	pa = rte_pktmbuf_pool_create("a", NB, 0, 0, 256, SOCKET_ID_ANY);
	pb = rte_pktmbuf_pool_create("b", NB, 0, 0, 256, SOCKET_ID_ANY);
	cr_assert(pa != NULL && pb != NULL, "pools: %s", rte_strerror(rte_errno));
}

static void
eal_down(void)
{
	rte_mempool_free(pa);
	rte_mempool_free(pb);
	isth_test_eal_cleanup();
}

TestSuite(mbuf, .init = eal_up, .fini = eal_down, .timeout = 60);

/* Every mbuf of @p back, each as a free mbuf must be. */
static void
check_all_back(struct rte_mempool *p)
{
	struct rte_mbuf *m[NB];
	unsigned int i;

	cr_assert_eq(rte_mempool_avail_count(p), NB, "%s: %u of %u back", p->name,
		rte_mempool_avail_count(p), NB);
	/* raw: rte_pktmbuf_alloc() would reset what the free must leave */
	cr_assert_eq(rte_mempool_get_bulk(p, (void **)m, NB), 0);
	for (i = 0; i < NB; i++) {
		cr_assert_eq(
			rte_mbuf_refcnt_read(m[i]), 1, "refcnt %u", rte_mbuf_refcnt_read(m[i]));
		cr_assert_eq(m[i]->nb_segs, 1);
		cr_assert_null(m[i]->next);
	}
	rte_mempool_put_bulk(p, (void **)m, NB);
}

Test(mbuf, single_segments_go_back_to_their_pool)
{
	struct rte_mbuf *m[200];
	unsigned int i, na = 0;

	/* more than a batch (ISTH_MBUF_FREE_BATCH), the pools taking turns
	 * in runs of 3 */
	for (i = 0; i < RTE_DIM(m); i++) {
		m[i] = rte_pktmbuf_alloc(i % 6 < 3 ? pa : pb);
		cr_assert_not_null(m[i]);
		na += i % 6 < 3;
	}
	isth_mbuf_free_bulk(m, 7);
	/* 0, 1, 2 and 6 are pool a's */
	cr_assert_eq(rte_mempool_avail_count(pa), NB - na + 4);
	cr_assert_eq(rte_mempool_avail_count(pb), NB - (RTE_DIM(m) - na) + 3);
	isth_mbuf_free_bulk(m + 7, RTE_DIM(m) - 7);
	check_all_back(pa);
	check_all_back(pb);
}

Test(mbuf, null_and_empty)
{
	struct rte_mbuf *m[4] = {NULL, NULL, NULL, NULL};

	m[1] = rte_pktmbuf_alloc(pa);
	cr_assert_not_null(m[1]);
	isth_mbuf_free_bulk(m, 0);
	cr_assert_eq(rte_mempool_avail_count(pa), NB - 1, "n = 0 freed something");
	isth_mbuf_free(NULL);
	isth_mbuf_free_bulk(m, 4);
	check_all_back(pa);
}

/* A reference held elsewhere (the resend ring, a fan-out copy): only the
 * last free returns the mbuf, and its refcnt is back to 1. */
Test(mbuf, shared_mbufs_stay_until_the_last_reference)
{
	struct rte_mbuf *m[8];
	unsigned int i;

	for (i = 0; i < RTE_DIM(m); i++) {
		m[i] = rte_pktmbuf_alloc(pa);
		cr_assert_not_null(m[i]);
		rte_mbuf_refcnt_set(m[i], (uint16_t)(1 + i % 3));
	}
	isth_mbuf_free_bulk(m, RTE_DIM(m));
	/* refcnts 1,2,3,1,2,3,1,2: three were last references */
	cr_assert_eq(rte_mempool_avail_count(pa), NB - 5);
	for (i = 0; i < RTE_DIM(m); i++)
		if (i % 3 != 0)
			cr_assert_eq(rte_mbuf_refcnt_read(m[i]), i % 3, "mbuf %u", i);
	isth_mbuf_free(m[1]);
	cr_assert_eq(rte_mempool_avail_count(pa), NB - 4);
	isth_mbuf_free_bulk((struct rte_mbuf *[]){m[2], m[4], m[5], m[7]}, 4);
	cr_assert_eq(rte_mempool_avail_count(pa), NB - 2, "m[4], m[7] back");
	isth_mbuf_free_bulk((struct rte_mbuf *[]){m[2], m[5]}, 2);
	check_all_back(pa);
}

/* A chain: every segment back, each reset (next NULL, nb_segs 1). */
Test(mbuf, chains_are_freed_whole)
{
	struct rte_mbuf *h = rte_pktmbuf_alloc(pa), *s1 = rte_pktmbuf_alloc(pb),
			*s2 = rte_pktmbuf_alloc(pa), *one = rte_pktmbuf_alloc(pb);

	cr_assert(h && s1 && s2 && one);
	cr_assert_eq(rte_pktmbuf_chain(h, s1), 0);
	cr_assert_eq(rte_pktmbuf_chain(h, s2), 0);
	cr_assert_eq(h->nb_segs, 3);
	isth_mbuf_free_bulk((struct rte_mbuf *[]){one, h}, 2);
	check_all_back(pa);
	check_all_back(pb);
}

/* A clone: its own mbuf back to the clone's pool, the reference on the
 * direct mbuf dropped, the direct one back only with its last. */
Test(mbuf, clones_detach)
{
	struct rte_mbuf *d = rte_pktmbuf_alloc(pa), *c;

	cr_assert_not_null(d);
	c = rte_pktmbuf_clone(d, pb);
	cr_assert_not_null(c);
	cr_assert_eq(rte_mbuf_refcnt_read(d), 2);
	isth_mbuf_free_bulk(&c, 1);
	check_all_back(pb);
	cr_assert_eq(rte_mbuf_refcnt_read(d), 1, "the clone's reference on its data");
	cr_assert_eq(rte_mempool_avail_count(pa), NB - 1);
	isth_mbuf_free(d);
	check_all_back(pa);
}

static unsigned int ext_freed;

static void
ext_free_cb(void *addr, void *opaque)
{
	RTE_SET_USED(addr);
	RTE_SET_USED(opaque);
	ext_freed++;
}

/* An external buffer: the mbuf back, the buffer's owner called. */
Test(mbuf, external_buffers_are_released)
{
	static uint8_t buf[1024 + sizeof(struct rte_mbuf_ext_shared_info)];
	struct rte_mbuf_ext_shared_info *sh;
	uint16_t len = sizeof(buf);
	struct rte_mbuf *m = rte_pktmbuf_alloc(pa);

	cr_assert_not_null(m);
	sh = rte_pktmbuf_ext_shinfo_init_helper(buf, &len, ext_free_cb, NULL);
	cr_assert_not_null(sh);
	rte_pktmbuf_attach_extbuf(m, buf, 0, len, sh);
	ext_freed = 0;
	isth_mbuf_free_bulk(&m, 1);
	cr_assert_eq(ext_freed, 1, "the external buffer's free callback ran %u times", ext_freed);
	check_all_back(pa);
}
