/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cycles per retransmission against a fresh send, side by side in one run.
 *
 * No port: "transmit" is an enqueue to an SP/SC rte_ring standing in for a
 * TX queue, and TX completion is a dequeue plus rte_pktmbuf_free_bulk(),
 * so both paths pay what a PMD would make them pay for mbufs and nothing
 * for the wire. Bursts of 32.
 *
 * - fresh: allocate 32 mbufs, build each AGG frame (isthmus header and
 *   Ethernet/IPv4/UDP headers written, the aggregate's payload copied in
 *   from a slot buffer), push it into the resend ring (seq stamped,
 *   reference taken; in steady state the push also releases the oldest
 *   entry), transmit, complete.
 * - resend: one NACK of 32 consecutive sequences (rotating through the
 *   ring's window), served, transmitted, completed. The stored packets
 *   were completed, so a repair is marked in place once and is a refcnt
 *   bump from then on (the steady state).
 * - busy: the same against a ring whose packets are still held by someone
 *   else (as if the original TX or a fan-out had not completed): every
 *   repair is a header segment (82 bytes copied) chained to a clone.
 *
 * Each ring holds 4096 frames (about 9 MB of mbufs: past L2, so repairs
 * read cold mbufs, as they would minutes into a run). Repetitions
 * interleave the three modes; the median repetition is reported.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "isth_resend.h"
#include "isth_wire.h"
#include "isth_test_eal.h"

#define BURST 32
#define RING_SIZE 4096
#define BURSTS_PER_REP 128
#define REPS 101
#define NB_MBUF (3 * RING_SIZE + 4096)

static const unsigned int payloads[] = {256, 1024, 1432};

static struct rte_mempool *pool, *hdr_pool;
static struct rte_ring *txq;
static struct isth_wire_addr addr;
static uint8_t slot[2048]; /* the aggregate being emitted */
static uint64_t now_ns = 1;

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t
median(uint64_t *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

/* TX and its completion. */
static void
transmit(struct rte_mbuf **pkts, unsigned int n)
{
	struct rte_mbuf *done[BURST];
	unsigned int k;

	if (rte_ring_sp_enqueue_burst(txq, (void **)pkts, n, NULL) != n)
		rte_exit(1, "txq full\n");
	k = rte_ring_sc_dequeue_burst(txq, (void **)done, BURST, NULL);
	rte_pktmbuf_free_bulk(done, k);
}

static void
build(struct rte_mbuf *m, unsigned int bytes, uint32_t chunk)
{
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_AGG,
		.dtype = ISTH_WIRE_DTYPE_FP32,
		.sender = 1,
		.count = (uint16_t)(bytes / 4),
		.job = 7,
		.round = 3,
		.chunk = chunk,
		.bitmap = 0xff,
	};
	uint8_t *buf = rte_pktmbuf_mtod(m, uint8_t *);
	size_t fh = isth_wire_frame_hdr_size(&addr);
	int len, flen;

	len = isth_wire_build_msg(buf + fh, rte_pktmbuf_tailroom(m) - fh, &h, slot, bytes, NULL);
	flen = isth_wire_put_frame_hdr(buf, rte_pktmbuf_tailroom(m), &addr, (size_t)len);
	if (len < 0 || flen < 0)
		rte_exit(1, "build: %d %d\n", len, flen);
	m->data_len = (uint16_t)flen;
	m->pkt_len = (uint32_t)flen;
}

/* One fresh burst: allocate, build, push, transmit. */
static void
fresh_burst(struct isth_resend *r, unsigned int bytes)
{
	struct rte_mbuf *pkts[BURST];
	unsigned int i;

	if (rte_pktmbuf_alloc_bulk(pool, pkts, BURST) != 0)
		rte_exit(1, "pool empty\n");
	for (i = 0; i < BURST; i++) {
		build(pkts[i], bytes, i);
		isth_resend_push(r, pkts[i], now_ns, NULL);
	}
	transmit(pkts, BURST);
}

/* One NACK of BURST sequences starting @p off into the window. */
static void
resend_burst(struct isth_resend *r, uint64_t off)
{
	struct isth_wire_range rg, gone[4];
	struct isth_resend_cursor c;
	struct rte_mbuf *pkts[BURST];
	unsigned int n, ng;

	rg.first = isth_resend_oldest_seq(r) + off;
	rg.last = rg.first + BURST - 1;
	isth_resend_nack_begin(r, &c, &rg, 1);
	n = isth_resend_nack_serve(r, &c, now_ns, pkts, BURST, gone, 4, &ng);
	if (n != BURST || ng != 0)
		rte_exit(1, "served %u gone %u\n", n, ng);
	transmit(pkts, n);
}

static struct isth_resend *
mkring(void)
{
	struct isth_resend_conf c = {
		.socket_id = rte_socket_id(),
		.size = RING_SIZE,
		.window_ns = UINT64_MAX / 2,
		.linger_ns = 0,
		.hdr_off = (uint16_t)isth_wire_frame_hdr_size(&addr),
		.flags = ISTH_RESEND_F_STAMP,
		.hdr_pool = hdr_pool,
	};
	struct isth_resend *r = isth_resend_create(&c);

	if (r == NULL)
		rte_exit(1, "resend: %s\n", rte_strerror(rte_errno));
	return r;
}

int
main(int argc, char **argv)
{
	char prefix[64];
	char *eal[] = {
		argv[0],
		"-l",
		"0",
		"--no-huge",
		"-m",
		"512",
		"--no-pci",
		"--no-telemetry",
		prefix,
		"--log-level=*:error",
		NULL,
	};
	static struct rte_mbuf *held[RING_SIZE];
	unsigned int p, rep, i;

	(void)argc;
	/* what a run killed before its cleanup left (a second run
	 * beside this one keeps its own: its pid is alive) */
	isth_test_reap_stale("/var/run/dpdk", "isth-rsbench-");
	snprintf(prefix, sizeof(prefix), "--file-prefix=isth-rsbench-%d", (int)getpid());
	if (rte_eal_init((int)RTE_DIM(eal) - 1, eal) < 0)
		rte_exit(1, "EAL init failed\n");
	pool = rte_pktmbuf_pool_create(
		"pkt", NB_MBUF, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	hdr_pool = rte_pktmbuf_pool_create(
		"hdr", 4095, 256, 0, RTE_PKTMBUF_HEADROOM + 128, rte_socket_id());
	txq = rte_ring_create("txq", 1024, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (pool == NULL || hdr_pool == NULL || txq == NULL)
		rte_exit(1, "setup: %s\n", rte_strerror(rte_errno));
	memcpy(addr.dst_mac, "\x02\0\0\0\0\x02", 6);
	memcpy(addr.src_mac, "\x02\0\0\0\0\x01", 6);
	addr.src_ip = 0x0a000001;
	addr.dst_ip = 0x0a000002;
	addr.src_port = 40000;
	addr.dst_port = ISTH_WIRE_PORT;
	for (i = 0; i < sizeof(slot); i++)
		slot[i] = (uint8_t)i;

	printf("resend bench: cycles per packet, bursts of %u, rings of %u "
	       "frames, median of %u repetitions of %u bursts\n",
		BURST, RING_SIZE, REPS, BURSTS_PER_REP);
	printf("%8s %10s %10s %10s %14s %12s\n", "payload", "fresh", "resend", "busy",
		"fresh/resend", "fresh/busy");

	for (p = 0; p < RTE_DIM(payloads); p++) {
		uint64_t fresh[REPS], resend[REPS], busy[REPS];
		struct isth_resend *r = mkring(), *rb = mkring();
		uint64_t off = 0;

		/* fill both windows; rb's packets stay held ("in flight") */
		for (i = 0; i < RING_SIZE / BURST; i++)
			fresh_burst(r, payloads[p]);
		for (i = 0; i < RING_SIZE; i++) {
			held[i] = rte_pktmbuf_alloc(pool);
			if (held[i] == NULL)
				rte_exit(1, "pool empty\n");
			build(held[i], payloads[p], i);
			isth_resend_push(rb, held[i], now_ns, NULL);
		}

		for (rep = 0; rep < REPS; rep++) {
			uint64_t t0, t1, t2, t3;

			t0 = rte_rdtsc_precise();
			for (i = 0; i < BURSTS_PER_REP; i++)
				fresh_burst(r, payloads[p]);
			t1 = rte_rdtsc_precise();
			for (i = 0; i < BURSTS_PER_REP; i++) {
				resend_burst(r, off);
				off = (off + BURST) % (RING_SIZE - BURST);
			}
			t2 = rte_rdtsc_precise();
			for (i = 0; i < BURSTS_PER_REP; i++) {
				resend_burst(rb, off);
				off = (off + BURST) % (RING_SIZE - BURST);
			}
			t3 = rte_rdtsc_precise();
			fresh[rep] = (t1 - t0) / (BURSTS_PER_REP * BURST);
			resend[rep] = (t2 - t1) / (BURSTS_PER_REP * BURST);
			busy[rep] = (t3 - t2) / (BURSTS_PER_REP * BURST);
		}
		{
			uint64_t f = median(fresh, REPS), s = median(resend, REPS);
			uint64_t b = median(busy, REPS);
			struct isth_resend_stats st;

			isth_resend_stats(rb, &st);
			if (st.hdr_seg != st.served)
				rte_exit(1, "busy ring was not busy\n");
			printf("%6u B %10lu %10lu %10lu %14.2f %12.2f\n", payloads[p],
				(unsigned long)f, (unsigned long)s, (unsigned long)b,
				s ? (double)f / s : 0.0, b ? (double)f / b : 0.0);
		}
		isth_resend_destroy(r);
		isth_resend_destroy(rb);
		rte_pktmbuf_free_bulk(held, RING_SIZE);
	}
	if (rte_mempool_avail_count(pool) != NB_MBUF || rte_mempool_avail_count(hdr_pool) != 4095)
		rte_exit(1, "mbufs leaked\n");
	rte_ring_free(txq);
	rte_mempool_free(hdr_pool);
	rte_mempool_free(pool);
	isth_test_eal_cleanup();
	return 0;
}
