/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Resend ring tests. Each test brings up its own EAL (Criterion forks per
 * test) with a cache-less mempool, so that rte_mempool_avail_count() is
 * exact and every test ends by checking that it is back to its start.
 * Expected results come from a per-sequence reference written here (what
 * was pushed when), never from the ring's arithmetic.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "isth_resend.h"
#include "isth_wire.h"
#include "isth_test_eal.h"

#define NB_MBUF 1023u
#define N_ELEMS 64u

static struct rte_mempool *pool;
static unsigned int avail0;
static struct isth_wire_addr addr;
static struct isth_wire_limits lim;

static void
eal_up(void)
{
	char prefix[64];
	char *argv[] = {
		"test_resend",
		"-l",
		"0",
		"--no-huge",
		"-m",
		"128",
		"--no-pci",
		"--no-telemetry",
		prefix,
		"--log-level=*:error",
		NULL,
	};

	snprintf(prefix, sizeof(prefix), "--file-prefix=isth-resend-%d", (int)getpid());
	cr_assert_geq(rte_eal_init((int)RTE_DIM(argv) - 1, argv), 0, "EAL init failed");
	pool = rte_pktmbuf_pool_create(
		"pkt", NB_MBUF, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	cr_assert_not_null(pool, "pool: %s", rte_strerror(rte_errno));
	avail0 = rte_mempool_avail_count(pool);
	memset(&addr, 0, sizeof(addr));
	memcpy(addr.dst_mac, "\x02\0\0\0\0\x02", 6);
	memcpy(addr.src_mac, "\x02\0\0\0\0\x01", 6);
	addr.src_ip = 0x0a000001;
	addr.dst_ip = 0x0a000002;
	addr.src_port = 40000;
	addr.dst_port = ISTH_WIRE_PORT;
	cr_assert_eq(isth_wire_limits_init(&lim, 4, 1500), 0);
}

static void
eal_down(void)
{
	rte_mempool_free(pool);
	isth_test_eal_cleanup();
}

TestSuite(resend, .init = eal_up, .fini = eal_down, .timeout = 60);

static void
check_no_leak(void)
{
	cr_assert_eq(rte_mempool_avail_count(pool), avail0, "leaked %d mbufs",
		(int)avail0 - (int)rte_mempool_avail_count(pool));
}

/* Independent UDP checksum over the pseudo-header and the datagram. */
static uint16_t
udp_csum_ref(const uint8_t *ip, const uint8_t *udp, size_t len)
{
	uint32_t s = 0;
	size_t i;

	for (i = 0; i < 8; i += 2) /* source and destination addresses */
		s += (uint32_t)ip[12 + i] << 8 | ip[13 + i];
	s += 17 + (uint32_t)len;
	for (i = 0; i + 1 < len; i += 2)
		if (i != 6) /* the checksum field itself */
			s += (uint32_t)udp[i] << 8 | udp[i + 1];
	if (len & 1)
		s += (uint32_t)udp[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	s = ~s & 0xffff;
	return s == 0 ? 0xffff : (uint16_t)s;
}

static size_t
fh(void)
{
	return isth_wire_frame_hdr_size(&addr);
}

/*
 * An AGG frame for island 1 whose chunk and elements derive from @p seq
 * and whose header says @p hdr_seq (a placeholder the ring must stamp).
 */
static struct rte_mbuf *
mk_agg(uint64_t seq, uint64_t hdr_seq, bool csum)
{
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_AGG,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.sender = 1,
		.count = N_ELEMS,
		.job = 7,
		.round = 3,
		.chunk = (uint32_t)seq,
		.seq = hdr_seq,
		.bitmap = 0x5,
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	int32_t el[N_ELEMS];
	uint8_t *buf;
	int len, flen;
	unsigned int i;

	cr_assert_not_null(m);
	for (i = 0; i < N_ELEMS; i++)
		el[i] = (int32_t)(seq * 1000 + i);
	buf = rte_pktmbuf_mtod(m, uint8_t *);
	len = isth_wire_build_msg(
		buf + fh(), rte_pktmbuf_tailroom(m) - fh(), &h, el, sizeof(el), NULL);
	cr_assert_gt(len, 0);
	flen = isth_wire_put_frame_hdr(buf, rte_pktmbuf_tailroom(m), &addr, (size_t)len);
	cr_assert_gt(flen, 0);
	m->data_len = (uint16_t)flen;
	m->pkt_len = (uint32_t)flen;
	if (csum) {
		uint8_t *udp = buf + fh() - ISTH_WIRE_UDP_HDR_SIZE;
		uint16_t c = udp_csum_ref(
			buf + ISTH_WIRE_ETH_HDR_SIZE, udp, (size_t)len + ISTH_WIRE_UDP_HDR_SIZE);

		udp[6] = (uint8_t)(c >> 8);
		udp[7] = (uint8_t)c;
	}
	return m;
}

/* Parse a (possibly chained) frame; check it is a valid AGG for @p seq. */
static void
check_frame(const struct rte_mbuf *m, uint64_t seq, bool resent)
{
	static uint8_t flat[RTE_MBUF_DEFAULT_BUF_SIZE];
	struct isth_wire_pkt pkt;
	int32_t el;
	enum isth_wire_reason rc;
	const void *d;
	unsigned int i;

	cr_assert_leq(m->pkt_len, sizeof(flat));
	d = rte_pktmbuf_read(m, 0, m->pkt_len, flat);
	cr_assert_not_null(d);
	if (d != flat)
		memcpy(flat, d, m->pkt_len);
	lim.check_udp_csum = true;
	rc = isth_wire_parse_frame(flat, m->pkt_len, &lim, &pkt);
	cr_assert_eq(rc, ISTH_WIRE_OK, "seq %lu: parse: %s", (unsigned long)seq,
		isth_wire_reason_name(rc));
	cr_assert_eq(pkt.hdr.seq, seq);
	cr_assert_eq(pkt.hdr.chunk, (uint32_t)seq);
	cr_assert_eq((pkt.hdr.flags & ISTH_WIRE_F_RESENT) != 0, resent, "seq %lu flags %#x",
		(unsigned long)seq, pkt.hdr.flags);
	for (i = 0; i < N_ELEMS; i++) {
		memcpy(&el, pkt.payload + 4 * i, 4); /* little-endian host */
		if (el != (int32_t)(seq * 1000 + i))
			cr_assert_fail("seq %lu element %u: %d", (unsigned long)seq, i, el);
	}
}

static struct isth_resend *
mk_ring(uint32_t size, uint64_t window, uint64_t linger, uint64_t first,
	struct rte_mempool *hdr_pool)
{
	struct isth_resend_conf c = {
		.socket_id = SOCKET_ID_ANY,
		.size = size,
		.window_ns = window,
		.linger_ns = linger,
		.hdr_off = (uint16_t)fh(),
		.flags = ISTH_RESEND_F_STAMP,
		.first_seq = first,
		.hdr_pool = hdr_pool,
	};
	struct isth_resend *r = isth_resend_create(&c);

	cr_assert_not_null(r, "create: %s", rte_strerror(rte_errno));
	return r;
}

/*
 * Push one packet as the data path does: build, push (the ring takes its
 * reference and stamps the seq), transmit. "Transmit" here means the PMD
 * completed at once: the test drops its reference, unless @p keep.
 */
static struct rte_mbuf *
send_one(struct isth_resend *r, uint64_t now, bool csum, bool keep)
{
	uint64_t want = isth_resend_next_seq(r), seq;
	struct rte_mbuf *m = mk_agg(want, 0xdeadbeefcafeull, csum);

	cr_assert_eq(isth_resend_push(r, m, now, &seq), 0);
	cr_assert_eq(seq, want);
	/* the stamped frame must still be valid, checksum included */
	if (csum)
		check_frame(m, seq, false);
	if (!keep)
		rte_pktmbuf_free(m);
	return m;
}

struct nack_out {
	struct rte_mbuf *pkts[1024];
	unsigned int n_pkts;
	struct isth_wire_range gone[256];
	unsigned int n_gone;
	unsigned int calls;
};

/* Run a NACK to completion in bursts of @p burst / @p gburst. */
static void
run_nack(struct isth_resend *r, const struct isth_wire_range *rg, unsigned int n, uint64_t now,
	unsigned int burst, unsigned int gburst, struct nack_out *o)
{
	struct isth_resend_cursor c;

	memset(o, 0, sizeof(*o));
	cr_assert_eq(isth_resend_nack_begin(r, &c, rg, n), 0);
	while (!isth_resend_nack_done(&c)) {
		unsigned int ng, k;

		cr_assert_leq(o->n_pkts + burst, RTE_DIM(o->pkts));
		cr_assert_leq(o->n_gone + gburst, RTE_DIM(o->gone));
		k = isth_resend_nack_serve(
			r, &c, now, o->pkts + o->n_pkts, burst, o->gone + o->n_gone, gburst, &ng);
		cr_assert_leq(k, burst);
		cr_assert_leq(ng, gburst);
		o->n_pkts += k;
		o->n_gone += ng;
		cr_assert_lt(++o->calls, 100000, "NACK does not finish");
	}
}

static void
free_out(struct nack_out *o)
{
	unsigned int i;

	for (i = 0; i < o->n_pkts; i++)
		rte_pktmbuf_free(o->pkts[i]);
	o->n_pkts = 0;
}

static void
check_gone(const struct nack_out *o, const struct isth_wire_range *want, unsigned int n)
{
	unsigned int i;

	cr_assert_eq(o->n_gone, n, "%u GONE ranges, want %u", o->n_gone, n);
	for (i = 0; i < n; i++)
		cr_assert(o->gone[i].first == want[i].first && o->gone[i].last == want[i].last,
			"GONE %u: [%lu,%lu], want [%lu,%lu]", i, (unsigned long)o->gone[i].first,
			(unsigned long)o->gone[i].last, (unsigned long)want[i].first,
			(unsigned long)want[i].last);
}

Test(resend, create_invalid)
{
	struct rte_mempool *tiny =
		rte_pktmbuf_pool_create("tiny", 15, 0, 0, RTE_PKTMBUF_HEADROOM + 64, SOCKET_ID_ANY);
	struct isth_resend_conf ok = {
		.socket_id = SOCKET_ID_ANY,
		.size = 16,
		.window_ns = 1000,
		.hdr_off = 42,
	};
	struct isth_resend_conf bad[8];
	unsigned int i;

	cr_assert_not_null(tiny);
	for (i = 0; i < RTE_DIM(bad); i++)
		bad[i] = ok;
	bad[0].size = 0;
	bad[1].size = 1;
	bad[2].size = 24;
	bad[3].size = ISTH_RESEND_MAX_SIZE * 2;
	bad[4].window_ns = 0;
	bad[5].flags = 0x80;
	bad[6].first_seq = UINT64_MAX - 5;
	bad[7].hdr_pool = tiny; /* 64 bytes cannot hold 42 + 40 */
	rte_errno = 0;
	cr_assert_null(isth_resend_create(NULL));
	cr_assert_eq(rte_errno, EINVAL);
	for (i = 0; i < RTE_DIM(bad); i++) {
		rte_errno = 0;
		cr_assert_null(isth_resend_create(&bad[i]), "case %u", i);
		cr_assert_eq(rte_errno, EINVAL, "case %u", i);
	}
	isth_resend_destroy(isth_resend_create(&ok));
	isth_resend_destroy(NULL);
	rte_mempool_free(tiny);
	check_no_leak();
}

/* Served ranges exact: the stored mbufs themselves, marked, valid. */
Test(resend, served_exact)
{
	static const struct isth_wire_range rg[] = {
		{103, 105},
		{110, 110},
	};
	struct isth_resend *r = mk_ring(32, 1000000, 0, 100, NULL);
	struct rte_mbuf *sent[16];
	struct isth_resend_stats st;
	struct nack_out o;
	unsigned int i;

	for (i = 0; i < 16; i++)
		sent[i] = send_one(r, 1000 + i, true, false);
	cr_assert_eq(isth_resend_next_seq(r), 116);
	cr_assert_eq(isth_resend_oldest_seq(r), 100);
	run_nack(r, rg, 2, 2000, 32, 8, &o);
	cr_assert_eq(o.n_pkts, 4);
	cr_assert_eq(o.n_gone, 0);
	cr_assert_eq(o.pkts[0], sent[3]);
	cr_assert_eq(o.pkts[1], sent[4]);
	cr_assert_eq(o.pkts[2], sent[5]);
	cr_assert_eq(o.pkts[3], sent[10]);
	check_frame(o.pkts[0], 103, true);
	check_frame(o.pkts[1], 104, true);
	check_frame(o.pkts[2], 105, true);
	check_frame(o.pkts[3], 110, true);
	/* the repair is a reference, not a copy */
	cr_assert_eq(rte_mbuf_refcnt_read(sent[3]), 2);
	free_out(&o);
	isth_resend_stats(r, &st);
	cr_assert_eq(st.stored, 16);
	cr_assert_eq(st.served, 4);
	cr_assert_eq(st.hdr_seg, 0);
	cr_assert_eq(st.gone, 0);
	cr_assert_eq(st.nacks, 1);
	cr_assert_eq(st.held, 16);
	isth_resend_destroy(r);
	check_no_leak();
}

/*
 * Window expiry: 0..4 pushed at t = 0, 5..9 at t = 500, window 1000.
 * At t = 1200 the first five are gone, the rest served.
 */
Test(resend, window_expiry_gone_exact)
{
	struct isth_resend *r = mk_ring(64, 1000, 0, 0, NULL);
	struct isth_resend_stats st;
	struct nack_out o;
	unsigned int i;

	for (i = 0; i < 10; i++)
		send_one(r, i < 5 ? 0 : 500, false, false);
	/* still all held at t = 999 */
	run_nack(r, (struct isth_wire_range[]){{0, 0}}, 1, 999, 8, 8, &o);
	cr_assert_eq(o.n_pkts, 1);
	free_out(&o);
	run_nack(r, (struct isth_wire_range[]){{2, 7}}, 1, 1200, 8, 8, &o);
	check_gone(&o, (struct isth_wire_range[]){{2, 4}}, 1);
	cr_assert_eq(o.n_pkts, 3);
	for (i = 0; i < 3; i++)
		check_frame(o.pkts[i], 5 + i, true);
	free_out(&o);
	/* coalescing: [0,1] and [2,3] touch, [4,4] too; [9] is held */
	run_nack(r, (struct isth_wire_range[]){{0, 1}, {2, 3}, {4, 4}, {9, 9}}, 4, 1200, 8, 8, &o);
	check_gone(&o, (struct isth_wire_range[]){{0, 4}}, 1);
	cr_assert_eq(o.n_pkts, 1);
	free_out(&o);
	/* disjoint gone parts stay apart */
	run_nack(r, (struct isth_wire_range[]){{0, 1}, {3, 3}}, 2, 1200, 8, 8, &o);
	check_gone(&o, (struct isth_wire_range[]){{0, 1}, {3, 3}}, 2);
	isth_resend_stats(r, &st);
	cr_assert_eq(st.expired, 5);
	cr_assert_eq(st.held, 5);
	/* t = 1500: everything expired; an explicit expire frees the mbufs */
	cr_assert_eq(isth_resend_expire(r, 1500), 5);
	cr_assert_eq(rte_mempool_avail_count(pool), avail0);
	run_nack(r, (struct isth_wire_range[]){{0, 9}}, 1, 1500, 8, 8, &o);
	check_gone(&o, (struct isth_wire_range[]){{0, 9}}, 1);
	cr_assert_eq(o.n_pkts, 0);
	isth_resend_destroy(r);
	check_no_leak();
}

/*
 * gone and future keep counting after a NACK that names 2^64 sequences:
 * each refused range counts at most the ring's size (16 here), so the
 * counters grow by the same amount at every such NACK instead of
 * saturating at 2^64 - 1 from the first one.
 */
Test(resend, huge_nack_counts_bounded_not_saturated)
{
	struct isth_resend *r = mk_ring(16, 1000000, 0, 1000, NULL);
	struct isth_resend_stats st;
	struct nack_out o;
	unsigned int i;

	for (i = 0; i < 10; i++) /* 1000..1009 */
		send_one(r, 10, false, false);
	for (i = 1; i <= 3; i++) {
		run_nack(r, (struct isth_wire_range[]){{0, UINT64_MAX}}, 1, 20 + i, 16, 8, &o);
		check_gone(&o, (struct isth_wire_range[]){{0, 999}, {1010, UINT64_MAX}}, 2);
		free_out(&o);
		isth_resend_stats(r, &st);
		/* [0, 999]: 1000 refused, counted 16; [1010, 2^64 - 1]: 16 */
		cr_assert_eq(st.gone, i * 32ull, "gone %" PRIu64 " after %u NACKs", st.gone, i);
		cr_assert_eq(
			st.future, i * 16ull, "future %" PRIu64 " after %u NACKs", st.future, i);
	}
	/* a small range still counts exactly */
	run_nack(r, (struct isth_wire_range[]){{1010, 1012}}, 1, 30, 16, 8, &o);
	free_out(&o);
	isth_resend_stats(r, &st);
	cr_assert_eq(st.future, 3 * 16ull + 3);
	cr_assert_eq(st.gone, 3 * 32ull + 3);
	isth_resend_destroy(r);
	check_no_leak();
}

/* Never sent: below first_seq and at or beyond the next sequence. */
Test(resend, never_sent_and_huge_ranges)
{
	struct isth_resend *r = mk_ring(16, 1000000, 0, 1000, NULL);
	struct isth_resend_stats st;
	struct nack_out o;
	unsigned int i;

	for (i = 0; i < 10; i++) /* 1000..1009 */
		send_one(r, 10, false, false);
	run_nack(r, (struct isth_wire_range[]){{1008, 1020}}, 1, 20, 8, 8, &o);
	cr_assert_eq(o.n_pkts, 2);
	check_frame(o.pkts[0], 1008, true);
	check_frame(o.pkts[1], 1009, true);
	check_gone(&o, (struct isth_wire_range[]){{1010, 1020}}, 1);
	free_out(&o);
	isth_resend_stats(r, &st);
	cr_assert_eq(st.future, 11);
	cr_assert_eq(st.gone, 11);

	/* 2^40 sequences: the window is served, the rest answered in O(1) */
	run_nack(r, (struct isth_wire_range[]){{0, UINT64_C(1) << 40}}, 1, 20, 4, 8, &o);
	cr_assert_eq(o.n_pkts, 10);
	for (i = 0; i < 10; i++)
		check_frame(o.pkts[i], 1000 + i, true);
	check_gone(&o, (struct isth_wire_range[]){{0, 999}, {1010, UINT64_C(1) << 40}}, 2);
	cr_assert_leq(o.calls, 4);
	free_out(&o);
	/* everything: [0, 2^64 - 1] */
	run_nack(r, (struct isth_wire_range[]){{0, UINT64_MAX}}, 1, 20, 16, 8, &o);
	cr_assert_eq(o.n_pkts, 10);
	check_gone(&o, (struct isth_wire_range[]){{0, 999}, {1010, UINT64_MAX}}, 2);
	free_out(&o);
	/* entirely in the future */
	run_nack(r, (struct isth_wire_range[]){{UINT64_MAX, UINT64_MAX}}, 1, 20, 16, 8, &o);
	check_gone(&o, (struct isth_wire_range[]){{UINT64_MAX, UINT64_MAX}}, 1);
	cr_assert_eq(o.n_pkts, 0);
	isth_resend_stats(r, &st);
	cr_assert_eq(st.served, 22);
	isth_resend_destroy(r);
	check_no_leak();
}

/*
 * Storm: a NACK for 0..3 every 100 ns for 10 us, linger 1 us: each
 * sequence is repaired at t = 0, 1000, ..., 9000 and nothing else, i.e.
 * floor((T - 1) / linger) + 1 = 10 times; every other request suppressed.
 */
Test(resend, linger_bounds_storm)
{
	const uint64_t linger = 1000, T = 10000, every = 100, t0 = 5000;
	struct isth_resend *r = mk_ring(16, 1000000000, linger, 0, NULL);
	struct isth_resend_stats st;
	uint64_t t, served = 0, nacks = 0;
	struct nack_out o;
	unsigned int i;

	for (i = 0; i < 4; i++)
		send_one(r, 0, false, false);
	for (t = 0; t < T; t += every) {
		run_nack(r, (struct isth_wire_range[]){{0, 3}}, 1, t0 + t, 8, 8, &o);
		if (t % linger == 0)
			cr_assert_eq(o.n_pkts, 4, "t=%lu", (unsigned long)t);
		else
			cr_assert_eq(o.n_pkts, 0, "t=%lu", (unsigned long)t);
		cr_assert_eq(o.n_gone, 0);
		served += o.n_pkts;
		nacks++;
		free_out(&o);
	}
	isth_resend_stats(r, &st);
	cr_assert_eq(served, 4 * ((T - 1) / linger + 1));
	cr_assert_eq(st.served, served);
	cr_assert_eq(st.suppressed, 4 * nacks - served);
	/* N identical NACKs at one instant: one repair each */
	for (i = 0; i < 50; i++) {
		run_nack(r, (struct isth_wire_range[]){{0, 3}}, 1, t0 + 2 * T, 8, 8, &o);
		cr_assert_eq(o.n_pkts, i == 0 ? 4 : 0);
		free_out(&o);
	}
	isth_resend_destroy(r);
	check_no_leak();
}

/*
 * Wrap: an 8-entry ring, sequence numbers from 2^32 - 3, 100 packets.
 * Only the last 8 are held (92 overwritten), each the very mbuf pushed
 * under its sequence; the ring index wraps 12 times.
 */
Test(resend, ring_wrap)
{
	const uint64_t s0 = (UINT64_C(1) << 32) - 3;
	struct isth_resend *r = mk_ring(8, 1000000000, 0, s0, NULL);
	struct rte_mbuf *sent[100];
	struct isth_resend_stats st;
	struct nack_out o;
	unsigned int i;

	for (i = 0; i < 100; i++)
		sent[i] = send_one(r, i, false, false);
	isth_resend_stats(r, &st);
	cr_assert_eq(st.overwritten, 92);
	cr_assert_eq(st.held, 8);
	cr_assert_eq(isth_resend_oldest_seq(r), s0 + 92);
	/* only 8 + the ring's 8 held mbufs are out of the pool */
	cr_assert_eq(rte_mempool_avail_count(pool), avail0 - 8);
	run_nack(r, (struct isth_wire_range[]){{s0, s0 + 99}}, 1, 200, 3, 8, &o);
	check_gone(&o, (struct isth_wire_range[]){{s0, s0 + 91}}, 1);
	cr_assert_eq(o.n_pkts, 8);
	for (i = 0; i < 8; i++) {
		cr_assert_eq(o.pkts[i], sent[92 + i]);
		check_frame(o.pkts[i], s0 + 92 + i, true);
	}
	free_out(&o);
	isth_resend_destroy(r);
	check_no_leak();
}

/* Bounded output: 10 held, bursts of 3: calls return 3, 3, 3, 1. */
Test(resend, bounded_bursts_and_gone_list)
{
	struct isth_resend *r = mk_ring(16, 1000000000, 0, 10, NULL);
	struct isth_wire_range g[1];
	struct rte_mbuf *p[3];
	struct isth_resend_cursor c;
	const struct isth_wire_range rg[] = {
		{0, 2},
		{10, 19},
		{30, 31},
		{40, 40},
	};
	unsigned int i, k, ng;

	for (i = 0; i < 10; i++)
		send_one(r, 0, false, false);
	cr_assert_eq(isth_resend_nack_begin(r, &c, rg, RTE_DIM(rg)), 0);
	/* one GONE slot per call: [0,2] first */
	k = isth_resend_nack_serve(r, &c, 1, p, 3, g, 1, &ng);
	cr_assert_eq(k, 3);
	cr_assert_eq(ng, 1);
	cr_assert(g[0].first == 0 && g[0].last == 2);
	for (i = 0; i < 3; i++) {
		check_frame(p[i], 10 + i, true);
		rte_pktmbuf_free(p[i]);
	}
	k = isth_resend_nack_serve(r, &c, 1, p, 3, g, 1, &ng);
	cr_assert_eq(k, 3);
	cr_assert_eq(ng, 0);
	for (i = 0; i < k; i++)
		rte_pktmbuf_free(p[i]);
	k = isth_resend_nack_serve(r, &c, 1, p, 3, g, 1, &ng);
	cr_assert_eq(k, 3);
	for (i = 0; i < k; i++)
		rte_pktmbuf_free(p[i]);
	/* the last repair, then [30,31] fills the GONE list */
	k = isth_resend_nack_serve(r, &c, 1, p, 3, g, 1, &ng);
	cr_assert_eq(k, 1);
	check_frame(p[0], 19, true);
	rte_pktmbuf_free(p[0]);
	cr_assert_eq(ng, 1);
	cr_assert(g[0].first == 30 && g[0].last == 31);
	cr_assert(!isth_resend_nack_done(&c));
	k = isth_resend_nack_serve(r, &c, 1, p, 3, g, 1, &ng);
	cr_assert_eq(k, 0);
	cr_assert_eq(ng, 1);
	cr_assert(g[0].first == 40 && g[0].last == 40);
	cr_assert(isth_resend_nack_done(&c));
	isth_resend_destroy(r);
	check_no_leak();
}

/*
 * Busy repair: while the original is still "in flight" (the test holds
 * its reference, as a PMD that has not completed the TX would), the
 * stored bytes are not touched: the repair is a header segment chained to
 * a clone. Once the original completes, repairs are marked in place and
 * from then on are bare reference bumps even while earlier ones fly.
 */
Test(resend, busy_repair_header_segment)
{
	struct rte_mempool *hp =
		rte_pktmbuf_pool_create("hdr", 63, 0, 0, RTE_PKTMBUF_HEADROOM + 128, SOCKET_ID_ANY);
	unsigned int havail = rte_mempool_avail_count(hp);
	struct isth_resend *r = mk_ring(16, 1000000000, 0, 0, hp);
	struct isth_resend_stats st;
	struct rte_mbuf *orig, *rep;
	struct nack_out o, o2;
	const uint8_t *msg;

	orig = send_one(r, 0, true, true); /* seq 0, still in flight */
	cr_assert_eq(rte_mbuf_refcnt_read(orig), 2);
	run_nack(r, (struct isth_wire_range[]){{0, 0}}, 1, 10, 4, 4, &o);
	cr_assert_eq(o.n_pkts, 1);
	rep = o.pkts[0];
	cr_assert_neq(rep, orig);
	cr_assert_eq(rep->pool, hp);
	cr_assert_eq(rep->nb_segs, 2);
	cr_assert_eq(rep->pkt_len, orig->pkt_len);
	check_frame(rep, 0, true);
	/* the original's bytes are unchanged: still a valid non-resent frame */
	check_frame(orig, 0, false);
	cr_assert_eq(rte_mbuf_refcnt_read(orig), 3); /* clone attached */
	free_out(&o);
	cr_assert_eq(rte_mempool_avail_count(hp), havail);

	rte_pktmbuf_free(orig); /* TX completed */
	run_nack(r, (struct isth_wire_range[]){{0, 0}}, 1, 20, 4, 4, &o);
	cr_assert_eq(o.n_pkts, 1);
	cr_assert_eq(o.pkts[0], orig); /* marked in place */
	check_frame(orig, 0, true);
	/* that repair still in flight: the next one is a refcnt bump too */
	run_nack(r, (struct isth_wire_range[]){{0, 0}}, 1, 30, 4, 4, &o2);
	cr_assert_eq(o2.pkts[0], orig);
	cr_assert_eq(rte_mbuf_refcnt_read(orig), 3);
	free_out(&o);
	free_out(&o2);
	isth_resend_stats(r, &st);
	cr_assert_eq(st.served, 3);
	cr_assert_eq(st.hdr_seg, 1);
	msg = rte_pktmbuf_mtod_offset(orig, const uint8_t *, fh());
	cr_assert(msg[5] & ISTH_WIRE_F_RESENT);
	isth_resend_destroy(r);
	cr_assert_eq(rte_mempool_avail_count(hp), havail);
	rte_mempool_free(hp);
	check_no_leak();
}

/* A packet whose first segment is exactly the headers, payload chained. */
Test(resend, busy_repair_chained_packet)
{
	struct isth_resend *r = mk_ring(16, 1000000000, 0, 0, NULL);
	const uint16_t hl = (uint16_t)(fh() + ISTH_WIRE_HDR_SIZE);
	struct rte_mbuf *m = mk_agg(0, 0xdeadbeefcafeull, true), *pay, *rep;
	struct nack_out o;

	/* split m into [headers][payload] */
	pay = rte_pktmbuf_alloc(pool);
	cr_assert_not_null(pay);
	memcpy(rte_pktmbuf_mtod(pay, uint8_t *), rte_pktmbuf_mtod_offset(m, uint8_t *, hl),
		m->data_len - hl);
	pay->data_len = m->data_len - hl;
	m->data_len = hl;
	cr_assert_eq(rte_pktmbuf_chain(m, pay), 0);
	cr_assert_eq(isth_resend_push(r, m, 0, NULL), 0);
	cr_assert_eq(rte_mbuf_refcnt_read(pay), 2); /* every segment */
	check_frame(m, 0, false);
	run_nack(r, (struct isth_wire_range[]){{0, 0}}, 1, 1, 4, 4, &o);
	cr_assert_eq(o.n_pkts, 1);
	rep = o.pkts[0];
	/* header segment + a clone of the payload segment, nothing empty */
	cr_assert_eq(rep->nb_segs, 2);
	cr_assert_eq(rep->data_len, hl);
	cr_assert_eq(rep->next->data_len, pay->data_len);
	cr_assert_eq(rep->next->next, NULL);
	check_frame(rep, 0, true);
	free_out(&o);
	rte_pktmbuf_free(m);
	isth_resend_destroy(r);
	check_no_leak();
}

/* Header pool exhausted: counted nomem, no repair, no leak, retried. */
Test(resend, busy_repair_nomem)
{
	/* one mbuf: the header fits, the clone does not */
	struct rte_mempool *hp =
		rte_pktmbuf_pool_create("hdr1", 1, 0, 0, RTE_PKTMBUF_HEADROOM + 128, SOCKET_ID_ANY);
	struct isth_resend *r = mk_ring(16, 1000000000, 1000, 0, hp);
	struct isth_resend_stats st;
	struct rte_mbuf *orig;
	struct nack_out o;

	cr_assert_not_null(hp);
	orig = send_one(r, 0, false, true);
	run_nack(r, (struct isth_wire_range[]){{0, 0}}, 1, 10, 4, 4, &o);
	cr_assert_eq(o.n_pkts, 0);
	cr_assert_eq(o.n_gone, 0);
	cr_assert_eq(rte_mempool_avail_count(hp), 1);
	isth_resend_stats(r, &st);
	cr_assert_eq(st.nomem, 1);
	cr_assert_eq(st.served, 0);
	/* not counted as a repair: linger does not hold the retry back */
	rte_pktmbuf_free(orig);
	run_nack(r, (struct isth_wire_range[]){{0, 0}}, 1, 11, 4, 4, &o);
	cr_assert_eq(o.n_pkts, 1);
	free_out(&o);
	isth_resend_destroy(r);
	rte_mempool_free(hp);
	check_no_leak();
}

/* Malformed NACKs are refused as a whole and counted. */
Test(resend, malformed_nacks)
{
	static const struct {
		struct isth_wire_range rg[3];
		unsigned int n;
	} bad[] = {
		{{{0, 0}}, 0}, /* no range */
		{{{5, 4}}, 1}, /* first > last */
		{{{0, 1}, {2, 3}, {UINT64_MAX, 0}}, 3},
	};
	struct isth_resend *r = mk_ring(16, 1000000000, 0, 0, NULL);
	struct isth_resend_cursor c;
	struct isth_resend_stats st;
	struct isth_wire_range g[4];
	struct rte_mbuf *p[4];
	unsigned int i, ng;

	for (i = 0; i < 4; i++)
		send_one(r, 0, false, false);
	for (i = 0; i < RTE_DIM(bad); i++) {
		cr_assert_eq(
			isth_resend_nack_begin(r, &c, bad[i].rg, bad[i].n), -EINVAL, "case %u", i);
		cr_assert(isth_resend_nack_done(&c));
		cr_assert_eq(isth_resend_nack_serve(r, &c, 1, p, 4, g, 4, &ng), 0);
		cr_assert_eq(ng, 0);
	}
	cr_assert_eq(isth_resend_nack_begin(r, &c, NULL, 1), -EINVAL);
	isth_resend_stats(r, &st);
	cr_assert_eq(st.bad_nack, RTE_DIM(bad) + 1);
	cr_assert_eq(st.nacks, 0);
	cr_assert_eq(st.served, 0);
	/* a short packet is refused by push, takes no reference or seq */
	{
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

		m->data_len = m->pkt_len = 60;
		cr_assert_eq(isth_resend_push(r, m, 0, NULL), -EINVAL);
		cr_assert_eq(rte_mbuf_refcnt_read(m), 1);
		cr_assert_eq(isth_resend_next_seq(r), 4);
		rte_pktmbuf_free(m);
		isth_resend_stats(r, &st);
		cr_assert_eq(st.push_bad, 1);
	}
	isth_resend_destroy(r);
	check_no_leak();
}

/*
 * Scan bound: 100 copies of the whole window in one NACK. At most `size`
 * in-window sequences are looked at per NACK; the rest is counted
 * truncated. Their out-of-window parts are still answered.
 */
Test(resend, hostile_overlapping_nack_bounded)
{
	static struct isth_wire_range rg[100];
	struct isth_resend *r = mk_ring(8, 1000000000, 0, 0, NULL);
	struct isth_resend_stats st;
	struct nack_out o;
	unsigned int i;

	for (i = 0; i < 8; i++)
		send_one(r, 0, false, false);
	for (i = 0; i < RTE_DIM(rg); i++) {
		rg[i].first = 0;
		rg[i].last = i == RTE_DIM(rg) - 1 ? 1000 : 7;
	}
	run_nack(r, rg, RTE_DIM(rg), 1, 64, 8, &o);
	cr_assert_eq(o.n_pkts, 8);
	check_gone(&o, (struct isth_wire_range[]){{8, 1000}}, 1);
	free_out(&o);
	isth_resend_stats(r, &st);
	cr_assert_eq(st.served, 8);
	cr_assert_eq(st.truncated, 99 * 8);
	isth_resend_destroy(r);
	check_no_leak();
}

/* A small deterministic generator. */
static uint64_t
lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/*
 * Differential: random pushes (times, counts) and random sorted NACKs over
 * a small sequence space, against a reference that classifies each
 * sequence from the push log alone: gone if never pushed, pushed more
 * than `size` packets ago, or pushed window_ns or more ago; else served.
 * GONE ranges must be the reference's gone sequences, coalesced.
 */
Test(resend, differential_random)
{
	enum { SIZE = 16, SPACE = 80, WINDOW = 1000 };
	uint64_t push_t[SPACE], seed = 7, now = 0, next = 0;
	struct isth_resend *r = mk_ring(SIZE, WINDOW, 0, 0, NULL);
	struct rte_mbuf *sent[SPACE];
	unsigned int round;

	for (round = 0; round < 300; round++) {
		struct isth_wire_range rg[6], want[12];
		unsigned int n_rg = 0, n_want = 0, i, k = 0;
		uint64_t s, pos;
		struct nack_out o;

		now += lcg(&seed) % 400;
		for (i = lcg(&seed) % 4; i > 0 && next < SPACE; i--) {
			push_t[next] = now;
			sent[next] = send_one(r, now, false, false);
			next++;
		}
		/* sorted, disjoint, non-adjacent ranges over [0, SPACE + 10) */
		pos = lcg(&seed) % 10;
		while (n_rg < RTE_DIM(rg) && pos < SPACE + 10) {
			rg[n_rg].first = pos;
			rg[n_rg].last = pos + lcg(&seed) % 12;
			pos = rg[n_rg].last + 2 + lcg(&seed) % 10;
			n_rg++;
		}
		if (n_rg == 0)
			continue;
		now += lcg(&seed) % 50;
		run_nack(r, rg, n_rg, now, 1 + lcg(&seed) % 5, 12, &o);
		for (i = 0; i < n_rg; i++) {
			for (s = rg[i].first; s <= rg[i].last; s++) {
				bool held =
					s < next && next - s <= SIZE && now - push_t[s] < WINDOW;

				if (held) {
					if (k >= o.n_pkts || o.pkts[k] != sent[s])
						cr_assert_fail("round %u seq %lu "
							       "not served",
							round, (unsigned long)s);
					k++;
					continue;
				}
				if (n_want > 0 && want[n_want - 1].last + 1 == s)
					want[n_want - 1].last = s;
				else
					want[n_want++] = (struct isth_wire_range){s, s};
			}
		}
		cr_assert_eq(k, o.n_pkts, "round %u", round);
		check_gone(&o, want, n_want);
		free_out(&o);
	}
	isth_resend_destroy(r);
	check_no_leak();
}

/* With TX checksum offload the UDP field holds the pseudo-header sum for
 * the NIC: marking must leave it alone. */
Test(resend, tx_csum_offload_untouched)
{
	struct isth_resend *r = mk_ring(16, 1000000000, 0, 0, NULL);
	struct rte_mbuf *m = mk_agg(0, 0, false), *rep;
	uint8_t *udp = rte_pktmbuf_mtod_offset(m, uint8_t *, fh() - ISTH_WIRE_UDP_HDR_SIZE);
	struct nack_out o;

	m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_UDP_CKSUM;
	udp[6] = 0x12;
	udp[7] = 0x34;
	cr_assert_eq(isth_resend_push(r, m, 0, NULL), 0);
	rte_pktmbuf_free(m);
	run_nack(r, (struct isth_wire_range[]){{0, 0}}, 1, 1, 4, 4, &o);
	cr_assert_eq(o.n_pkts, 1);
	rep = o.pkts[0];
	cr_assert_eq(rep, m);
	cr_assert(udp[6] == 0x12 && udp[7] == 0x34);
	cr_assert(rte_pktmbuf_mtod_offset(rep, uint8_t *, fh())[5] & ISTH_WIRE_F_RESENT);
	free_out(&o);
	isth_resend_destroy(r);
	check_no_leak();
}

/* Stream-agnostic: bare isthmus messages (hdr_off 0, no UDP header), as a
 * WAN DATA stream kept before per-peer headers are prepended. */
Test(resend, bare_message_stream)
{
	struct isth_resend_conf c = {
		.socket_id = SOCKET_ID_ANY,
		.size = 8,
		.window_ns = 1000000,
		.hdr_off = 0,
		.flags = ISTH_RESEND_F_STAMP,
		.first_seq = 50,
	};
	struct isth_resend *r = isth_resend_create(&c);
	struct rte_mbuf *held = NULL;
	struct nack_out o;
	unsigned int i, k;

	cr_assert_not_null(r);
	for (i = 0; i < 3; i++) {
		struct isth_wire_hdr h = {
			.type = ISTH_WIRE_DATA,
			.dtype = ISTH_WIRE_DTYPE_INT32,
			.sender = 2,
			.count = 4,
			.job = 7,
			.round = 3,
			.chunk = 50 + i,
			.bitmap = 1u << 2,
		};
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
		int32_t el[4] = {1, 2, 3, (int32_t)i};
		int len = isth_wire_build_msg(rte_pktmbuf_mtod(m, uint8_t *),
			rte_pktmbuf_tailroom(m), &h, el, sizeof(el), NULL);

		cr_assert_gt(len, 0);
		m->data_len = (uint16_t)len;
		m->pkt_len = (uint32_t)len;
		cr_assert_eq(isth_resend_push(r, m, 0, NULL), 0);
		if (i == 2)
			held = m; /* still being fanned out */
		else
			rte_pktmbuf_free(m);
	}
	run_nack(r, (struct isth_wire_range[]){{50, 52}}, 1, 1, 4, 4, &o);
	cr_assert_eq(o.n_pkts, 3);
	cr_assert_eq(o.pkts[2]->nb_segs, 2); /* header segment: busy */
	cr_assert_eq(o.pkts[2]->data_len, ISTH_WIRE_HDR_SIZE);
	for (k = 0; k < 3; k++) {
		static uint8_t flat[256];
		const struct rte_mbuf *m = o.pkts[k];
		const void *d = rte_pktmbuf_read(m, 0, m->pkt_len, flat);
		struct isth_wire_pkt pkt;

		cr_assert_not_null(d);
		cr_assert_eq(isth_wire_parse_msg(d, m->pkt_len, &lim, &pkt), ISTH_WIRE_OK);
		cr_assert_eq(pkt.hdr.seq, 50 + k);
		cr_assert_eq(pkt.hdr.chunk, 50 + k);
		cr_assert(pkt.hdr.flags & ISTH_WIRE_F_RESENT);
	}
	free_out(&o);
	rte_pktmbuf_free(held);
	isth_resend_destroy(r);
	check_no_leak();
}

/*
 * A cursor stays valid while the ring moves between calls: sequences
 * that expire meanwhile become GONE, new pushes do not disturb it.
 */
Test(resend, cursor_across_ring_changes)
{
	struct isth_resend *r = mk_ring(64, 1000, 0, 0, NULL);
	const struct isth_wire_range rg[] = {{0, 9}};
	struct isth_resend_cursor c;
	struct isth_wire_range g[4];
	struct rte_mbuf *p[2];
	unsigned int i, k, ng;

	for (i = 0; i < 10; i++)
		send_one(r, i < 5 ? 0 : 500, false, false);
	cr_assert_eq(isth_resend_nack_begin(r, &c, rg, 1), 0);
	k = isth_resend_nack_serve(r, &c, 10, p, 2, g, 4, &ng);
	cr_assert_eq(k, 2);
	cr_assert_eq(ng, 0);
	check_frame(p[0], 0, true);
	check_frame(p[1], 1, true);
	rte_pktmbuf_free_bulk(p, 2);
	/* 0..4 expire; two more packets are pushed */
	send_one(r, 1100, false, false);
	send_one(r, 1100, false, false);
	k = isth_resend_nack_serve(r, &c, 1100, p, 2, g, 4, &ng);
	cr_assert_eq(ng, 1);
	cr_assert(g[0].first == 2 && g[0].last == 4);
	cr_assert_eq(k, 2);
	check_frame(p[0], 5, true);
	check_frame(p[1], 6, true);
	rte_pktmbuf_free_bulk(p, 2);
	k = isth_resend_nack_serve(r, &c, 1100, p, 2, g, 4, &ng);
	cr_assert_eq(k, 2);
	rte_pktmbuf_free_bulk(p, 2);
	k = isth_resend_nack_serve(r, &c, 1100, p, 2, g, 4, &ng);
	cr_assert_eq(k, 1);
	check_frame(p[0], 9, true);
	rte_pktmbuf_free(p[0]);
	cr_assert(isth_resend_nack_done(&c));
	isth_resend_destroy(r);
	check_no_leak();
}
