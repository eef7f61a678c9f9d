/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/mcast unit tests. Each test runs in its own process (Criterion) and
 * starts its own EAL (--no-huge) with its own mempools; every test ends by
 * checking that each pool's available count is back to where it started.
 * Frames are checked by lib/wire's parser, which validates the IPv4
 * checksum and the IPv4/UDP lengths independently of lib/mcast.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_pause.h>

#include "isth_mcast.h"
#include "isth_wire.h"
#include "mcast_priv.h"
#include "isth_test_eal.h"

#define LOCAL_ISLAND 5
#define SRC_IP 0x0a000005u /* 10.0.0.5 */
#define SRC_PORT 40000
#define NB_MBUF 1024

static const uint8_t src_mac[6] = {0x02, 0, 0, 0, 0, 0x05};

static struct rte_mempool *pkt_pool, *hdr_pool, *clone_pool, *copy_pool;
static unsigned int avail0[4];

static struct rte_mempool *
mkpool(const char *name, unsigned int n, unsigned int cache, uint16_t room)
{
	struct rte_mempool *mp;

	mp = rte_pktmbuf_pool_create(name, n, cache, 0, room, SOCKET_ID_ANY);
	cr_assert_not_null(mp, "pool %s: %s", name, rte_strerror(rte_errno));
	return mp;
}

static void
eal_up(void)
{
	char prefix[64];
	char *argv[] = {
		"test_mcast",
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
	int argc = (int)RTE_DIM(argv) - 1;

	snprintf(prefix, sizeof(prefix), "--file-prefix=isth-mcast-%d", (int)getpid());
	cr_assert_geq(rte_eal_init(argc, argv), 0, "EAL init failed");
	pkt_pool = mkpool("pkt", NB_MBUF, 32, RTE_MBUF_DEFAULT_BUF_SIZE);
	hdr_pool = mkpool("hdr", NB_MBUF, 32, RTE_PKTMBUF_HEADROOM + 64);
	clone_pool = mkpool("clone", NB_MBUF, 32, 0);
	copy_pool = mkpool("copy", NB_MBUF, 32, RTE_MBUF_DEFAULT_BUF_SIZE);
	avail0[0] = rte_mempool_avail_count(pkt_pool);
	avail0[1] = rte_mempool_avail_count(hdr_pool);
	avail0[2] = rte_mempool_avail_count(clone_pool);
	avail0[3] = rte_mempool_avail_count(copy_pool);
}

static void
check_no_leak(void)
{
	cr_assert_eq(rte_mempool_avail_count(pkt_pool), avail0[0], "pkt pool");
	cr_assert_eq(rte_mempool_avail_count(hdr_pool), avail0[1], "hdr pool");
	cr_assert_eq(rte_mempool_avail_count(clone_pool), avail0[2], "clone pool");
	cr_assert_eq(rte_mempool_avail_count(copy_pool), avail0[3], "copy pool");
}

static void
eal_down(void)
{
	rte_mempool_free(pkt_pool);
	rte_mempool_free(hdr_pool);
	rte_mempool_free(clone_pool);
	rte_mempool_free(copy_pool);
	isth_test_eal_cleanup();
}

TestSuite(mcast, .init = eal_up, .fini = eal_down);

static struct isth_mcast_conf
base_conf(enum isth_mcast_mode mode)
{
	struct isth_mcast_conf c;

	memset(&c, 0, sizeof(c));
	c.socket_id = SOCKET_ID_ANY;
	c.island = LOCAL_ISLAND;
	memcpy(c.src_mac, src_mac, 6);
	c.src_ip = SRC_IP;
	c.src_port = SRC_PORT;
	c.mode = mode;
	c.hdr_pool = hdr_pool;
	c.clone_pool = clone_pool;
	c.copy_pool = copy_pool;
	return c;
}

static struct isth_mcast *
mk(enum isth_mcast_mode mode)
{
	struct isth_mcast_conf c = base_conf(mode);
	struct isth_mcast *mc = isth_mcast_create(&c);

	cr_assert_not_null(mc, "create: %s", rte_strerror(rte_errno));
	return mc;
}

/* Peer i of a table: island ids skip the local island. */
static void
mkpeers(struct isth_mcast_peer *p, unsigned int n, uint8_t local, uint16_t port_base)
{
	unsigned int i, isl = 0;

	for (i = 0; i < n; i++, isl++) {
		if (isl == local)
			isl++;
		memset(&p[i], 0, sizeof(p[i]));
		p[i].island = (uint8_t)isl;
		p[i].mac[0] = 0x02;
		p[i].mac[3] = 0xaa;
		p[i].mac[4] = (uint8_t)(port_base >> 8);
		p[i].mac[5] = (uint8_t)isl;
		p[i].ip = 0x0a010000u | (uint32_t)(isl + 1); /* 10.1.0.x */
		p[i].port = (uint16_t)(port_base + i);
	}
}

/*
 * An isthmus DATA message of @count int32 elements, split over @nseg
 * segments. The bytes are also returned in @bytes for comparison.
 */
static struct rte_mbuf *
mkmsg_t(uint16_t count, uint8_t trailer_len, unsigned int nseg, uint8_t *bytes, size_t *size)
{
	static const uint8_t trailer[255] = {0xa5, 0x5a, 0xc3};
	struct rte_mbuf *head = NULL, *prev = NULL;
	struct isth_wire_hdr h;
	uint32_t el[4096];
	size_t off = 0, part;
	unsigned int i;
	int n;

	cr_assert_leq(count, RTE_DIM(el));
	memset(&h, 0, sizeof(h));
	h.type = ISTH_WIRE_DATA;
	h.dtype = ISTH_WIRE_DTYPE_INT32;
	h.sender = LOCAL_ISLAND;
	h.count = count;
	h.job = 7;
	h.round = 3;
	h.chunk = 11;
	h.seq = 99;
	h.bitmap = UINT64_C(1) << LOCAL_ISLAND;
	if (trailer_len) {
		h.flags = ISTH_WIRE_F_AUTH;
		h.trailer_len = trailer_len;
	}
	for (i = 0; i < count; i++)
		el[i] = 0x01020304u * (i + 1);
	n = isth_wire_build_msg(bytes, 65536, &h, el, (size_t)count * 4, trailer);
	cr_assert_gt(n, 0);
	*size = (size_t)n;

	part = (*size + nseg - 1) / nseg;
	for (i = 0; i < nseg; i++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(pkt_pool);
		size_t len = RTE_MIN(part, *size - off);
		char *p;

		cr_assert_not_null(m);
		p = rte_pktmbuf_append(m, (uint16_t)len);
		cr_assert_not_null(p);
		memcpy(p, bytes + off, len);
		off += len;
		if (head == NULL) {
			head = m;
		} else {
			prev->next = m;
			head->nb_segs++;
			head->pkt_len += (uint32_t)len;
		}
		prev = m;
	}
	cr_assert_eq(head->pkt_len, *size);
	return head;
}

static struct rte_mbuf *
mkmsg(uint16_t count, unsigned int nseg, uint8_t *bytes, size_t *size)
{
	return mkmsg_t(count, 0, nseg, bytes, size);
}

static struct isth_wire_limits
limits(uint16_t port)
{
	struct isth_wire_limits lim = {
		.n_islands = 64,
		.max_elems = 16000,
		.max_ranges = 64,
		.udp_port = port,
		.check_udp_csum = true,
	};
	return lim;
}

/*
 * Check one output frame against the peer it is for: the parser accepts
 * it (checksum, lengths, port), the addresses are the peer's and ours,
 * and the message is byte for byte the input.
 */
static void
check_frame(struct rte_mbuf *f, const struct isth_mcast_peer *peer, const uint8_t *msg,
	size_t msg_size, uint16_t vlan)
{
	static uint8_t buf[70000];
	struct isth_wire_limits lim = limits(peer->port);
	const char *reason = NULL;
	enum isth_wire_reason r;
	struct isth_wire_pkt pkt;
	const uint8_t *p;
	size_t l3 = vlan ? 18 : 14;

	cr_assert_eq(rte_mbuf_check(f, 1, &reason), 0, "mbuf: %s", reason);
	cr_assert_eq(f->pkt_len, l3 + 28 + msg_size);
	p = rte_pktmbuf_read(f, 0, f->pkt_len, buf);
	cr_assert_not_null(p);
	r = isth_wire_parse_frame(p, f->pkt_len, &lim, &pkt);
	cr_assert_eq(r, ISTH_WIRE_OK, "parse: %s", isth_wire_reason_name(r));
	cr_assert_arr_eq(pkt.addr.dst_mac, peer->mac, 6);
	cr_assert_arr_eq(pkt.addr.src_mac, src_mac, 6);
	cr_assert_eq(pkt.addr.dst_ip, peer->ip);
	cr_assert_eq(pkt.addr.src_ip, SRC_IP);
	cr_assert_eq(pkt.addr.dst_port, peer->port);
	cr_assert_eq(pkt.addr.src_port, SRC_PORT);
	cr_assert_eq(pkt.addr.vlan, vlan);
	cr_assert_eq(pkt.addr.ttl, 64);
	/* Independent of the parser: total length and header checksum. */
	cr_assert_eq((size_t)(p[l3 + 2] << 8 | p[l3 + 3]), 28 + msg_size);
	cr_assert_eq(isth_wire_cksum(p + l3, 20), 0);
	cr_assert_eq(pkt.msg_size, msg_size);
	cr_assert_eq(memcmp(pkt.msg, msg, msg_size), 0, "payload differs");
}

static void
free_all(struct rte_mbuf **m, unsigned int n)
{
	rte_pktmbuf_free_bulk(m, n);
}

/*
 * Fan one message out to @D peers and check everything; @nseg input
 * segments.
 */
static void
fanout_case_t(enum isth_mcast_mode mode, unsigned int D, unsigned int nseg, uint16_t count,
	uint8_t trailer_len)
{
	static uint8_t msg[65536];
	struct isth_mcast_peer peers[ISTH_MCAST_MAX_DESTS];
	struct rte_mbuf *out[ISTH_MCAST_MAX_DESTS];
	struct isth_mcast_conf c = base_conf(mode);
	struct isth_mcast_stats st;
	struct isth_mcast *mc;
	struct rte_mbuf *m;
	uint16_t n_out, done;
	size_t size;
	unsigned int i;

	/* 64 destinations need a handle that is no island's own. */
	if (D == ISTH_MCAST_MAX_DESTS)
		c.island = ISTH_MCAST_NO_ISLAND;
	mc = isth_mcast_create(&c);
	cr_assert_not_null(mc);
	mkpeers(peers, D, c.island, 5000);
	cr_assert_eq(isth_mcast_publish(mc, 1, peers, D), 0, "D=%u", D);

	m = mkmsg_t(count, trailer_len, nseg, msg, &size);
	done = isth_mcast_fanout_burst(mc, &m, 1, out, RTE_DIM(out), &n_out);
	cr_assert_eq(done, 1);
	cr_assert_eq(n_out, D, "D=%u n_out=%u", D, n_out);
	for (i = 0; i < D; i++) {
		check_frame(out[i], &peers[i], msg, size, 0);
		if (mode == ISTH_MCAST_ZEROCOPY) {
			cr_assert_eq(out[i]->nb_segs, 1 + nseg);
			cr_assert_eq(out[i]->data_len, 42);
			cr_assert(RTE_MBUF_DIRECT(out[i]));
			cr_assert(RTE_MBUF_CLONED(out[i]->next));
			/* The payload is shared, not copied. */
			cr_assert_eq(rte_pktmbuf_mtod(out[i]->next, void *),
				rte_pktmbuf_mtod(m, void *));
		} else {
			cr_assert_eq(out[i]->nb_segs, 1);
			cr_assert(RTE_MBUF_DIRECT(out[i]));
			cr_assert_eq(rte_mbuf_refcnt_read(out[i]), 1);
			cr_assert_neq(rte_pktmbuf_mtod(out[i], uint8_t *) + 42,
				rte_pktmbuf_mtod(m, uint8_t *));
		}
	}
	/* Each clone holds one reference on every input segment. */
	cr_assert_eq(rte_mbuf_refcnt_read(m), mode == ISTH_MCAST_ZEROCOPY ? 1 + D : 1);
	if (nseg > 1)
		cr_assert_eq(
			rte_mbuf_refcnt_read(m->next), mode == ISTH_MCAST_ZEROCOPY ? 1 + D : 1);

	isth_mcast_stats_get(mc, &st);
	cr_assert_eq(st.pkts, 1);
	cr_assert_eq(st.copies, D);
	cr_assert_eq(st.drop_hdr_alloc + st.drop_clone + st.drop_copy_alloc + st.drop_too_big +
			st.drop_len,
		0);

	free_all(out, n_out);
	cr_assert_eq(rte_mbuf_refcnt_read(m), 1);
	rte_pktmbuf_free(m);
	isth_mcast_destroy(mc);
	check_no_leak();
}

static void
fanout_case(enum isth_mcast_mode mode, unsigned int D, unsigned int nseg, uint16_t count)
{
	fanout_case_t(mode, D, nseg, count, 0);
}

Test(mcast, zerocopy_1_to_64_peers)
{
	unsigned int D;

	for (D = 1; D <= ISTH_MCAST_MAX_DESTS; D++)
		fanout_case(ISTH_MCAST_ZEROCOPY, D, 1, 256);
}

Test(mcast, copy_1_to_64_peers)
{
	unsigned int D;

	for (D = 1; D <= ISTH_MCAST_MAX_DESTS; D++)
		fanout_case(ISTH_MCAST_COPY, D, 1, 256);
}

Test(mcast, multi_segment_payload)
{
	/* 3 segments, 4000 + 40 bytes: clone walks every segment. */
	fanout_case(ISTH_MCAST_ZEROCOPY, 1, 3, 1000);
	fanout_case(ISTH_MCAST_ZEROCOPY, 7, 3, 1000);
	fanout_case(ISTH_MCAST_COPY, 1, 2, 400);
	fanout_case(ISTH_MCAST_COPY, 7, 2, 400);
}

Test(mcast, lengths_and_checksums_per_size)
{
	static const uint16_t counts[] = {1, 2, 3, 100, 255, 256, 300, 365};
	unsigned int i;

	/*
	 * Messages of 44..1500 bytes; a 1- or 3-byte auth trailer makes the
	 * length odd. Each frame's lengths and checksum are checked.
	 */
	for (i = 0; i < RTE_DIM(counts); i++) {
		fanout_case_t(ISTH_MCAST_ZEROCOPY, 3, 1, counts[i], 0);
		fanout_case_t(ISTH_MCAST_COPY, 3, 1, counts[i], 0);
		fanout_case_t(ISTH_MCAST_ZEROCOPY, 3, 1, counts[i], 1);
		fanout_case_t(ISTH_MCAST_COPY, 3, 1, counts[i], 3);
	}
}

Test(mcast, vlan_tagged_frames)
{
	static uint8_t msg[65536];
	struct isth_mcast_conf c;
	struct isth_mcast_peer peers[4];
	struct rte_mbuf *out[8], *m;
	struct isth_mcast *mc;
	enum isth_mcast_mode mode;
	uint16_t n_out;
	size_t size;
	unsigned int i;

	for (mode = ISTH_MCAST_ZEROCOPY; mode <= ISTH_MCAST_COPY; mode++) {
		c = base_conf(mode);
		c.vlan = 42;
		mc = isth_mcast_create(&c);
		cr_assert_not_null(mc);
		mkpeers(peers, 4, LOCAL_ISLAND, 6000);
		cr_assert_eq(isth_mcast_publish(mc, 1, peers, 4), 0);
		m = mkmsg(33, 1, msg, &size);
		cr_assert_eq(isth_mcast_fanout_burst(mc, &m, 1, out, 8, &n_out), 1);
		cr_assert_eq(n_out, 4);
		for (i = 0; i < 4; i++)
			check_frame(out[i], &peers[i], msg, size, 42);
		free_all(out, n_out);
		rte_pktmbuf_free(m);
		isth_mcast_destroy(mc);
	}
	check_no_leak();
}

Test(mcast, burst_of_packets_in_order)
{
	static uint8_t msgs[8][65536];
	struct isth_mcast_peer peers[5];
	struct rte_mbuf *in[8], *out[64];
	struct isth_mcast *mc = mk(ISTH_MCAST_ZEROCOPY);
	struct isth_mcast_stats st;
	size_t sizes[8];
	uint16_t n_out;
	unsigned int i, j;

	mkpeers(peers, 5, LOCAL_ISLAND, 7000);
	cr_assert_eq(isth_mcast_publish(mc, 1, peers, 5), 0);
	for (i = 0; i < 8; i++)
		in[i] = mkmsg((uint16_t)(10 + i * 37), 1, msgs[i], &sizes[i]);
	/* 8 packets x 5 copies = 40 frames, all fit. */
	cr_assert_eq(isth_mcast_fanout_burst(mc, in, 8, out, 64, &n_out), 8);
	cr_assert_eq(n_out, 40);
	for (i = 0; i < 8; i++)
		for (j = 0; j < 5; j++)
			check_frame(out[i * 5 + j], &peers[j], msgs[i], sizes[i], 0);
	isth_mcast_stats_get(mc, &st);
	cr_assert_eq(st.pkts, 8);
	cr_assert_eq(st.copies, 40);
	free_all(out, n_out);
	free_all(in, 8);
	isth_mcast_destroy(mc);
	check_no_leak();
}

Test(mcast, out_capacity_bounds_progress)
{
	static uint8_t msg[65536];
	struct isth_mcast_peer peers[4];
	struct rte_mbuf *in[3], *out[16];
	struct isth_mcast *mc = mk(ISTH_MCAST_ZEROCOPY);
	struct isth_mcast_stats st;
	uint16_t n_out;
	size_t size;
	unsigned int i;

	mkpeers(peers, 4, LOCAL_ISLAND, 7000);
	cr_assert_eq(isth_mcast_publish(mc, 1, peers, 4), 0);
	for (i = 0; i < 3; i++)
		in[i] = mkmsg(8, 1, msg, &size);
	/* Room for 10: two whole packets (8 frames), the third waits. */
	cr_assert_eq(isth_mcast_fanout_burst(mc, in, 3, out, 10, &n_out), 2);
	cr_assert_eq(n_out, 8);
	free_all(out, n_out);
	/* Room for 3 < 4 copies: no progress, nothing allocated. */
	cr_assert_eq(isth_mcast_fanout_burst(mc, in + 2, 1, out, 3, &n_out), 0);
	cr_assert_eq(n_out, 0);
	isth_mcast_stats_get(mc, &st);
	cr_assert_eq(st.pkts, 2);
	cr_assert_eq(st.copies, 8);
	free_all(in, 3);
	isth_mcast_destroy(mc);
	check_no_leak();
}

/* Fan out with a pool replaced by a tiny one that runs dry mid fan-out. */
static void
dry_pool_case(enum isth_mcast_mode mode, int which, unsigned int nseg)
{
	static uint8_t msg[65536];
	struct isth_mcast_peer peers[8];
	struct rte_mbuf *out[64], *m;
	struct isth_mcast_conf c = base_conf(mode);
	struct rte_mempool *tiny;
	struct isth_mcast_stats st;
	unsigned int tiny0, expect, i;
	struct isth_mcast *mc;
	uint16_t n_out, n_out2;
	uint64_t drops;
	size_t size;

	/* 5 mbufs, no cache: the 6th allocation fails. */
	tiny = rte_pktmbuf_pool_create(
		"tiny", 5, 0, 0, which == 1 ? 0 : RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	cr_assert_not_null(tiny);
	tiny0 = rte_mempool_avail_count(tiny);
	if (which == 0)
		c.hdr_pool = tiny;
	else if (which == 1)
		c.clone_pool = tiny;
	else
		c.copy_pool = tiny;
	mc = isth_mcast_create(&c);
	cr_assert_not_null(mc);
	mkpeers(peers, 8, LOCAL_ISLAND, 8000);
	cr_assert_eq(isth_mcast_publish(mc, 1, peers, 8), 0);

	m = mkmsg(64, nseg, msg, &size);
	/* A clone of an n-segment packet takes n indirect mbufs. */
	expect = which == 1 ? 5 / nseg : 5;
	cr_assert_eq(isth_mcast_fanout_burst(mc, &m, 1, out, 64, &n_out), 1);
	cr_assert_eq(n_out, expect, "n_out %u expect %u", n_out, expect);
	for (i = 0; i < n_out; i++)
		check_frame(out[i], &peers[i], msg, size, 0);
	/* Second packet while the first's copies are held: all 8 lost. */
	cr_assert_eq(isth_mcast_fanout_burst(mc, &m, 1, out + n_out, 64 - n_out, &n_out2), 1);
	cr_assert_eq(n_out2, 0);

	isth_mcast_stats_get(mc, &st);
	drops = which == 0 ? st.drop_hdr_alloc : which == 1 ? st.drop_clone : st.drop_copy_alloc;
	cr_assert_eq(st.pkts, 2);
	cr_assert_eq(st.copies, n_out + n_out2);
	cr_assert_eq(drops, 16 - n_out - n_out2);
	cr_assert_eq(st.drop_hdr_alloc + st.drop_clone + st.drop_copy_alloc + st.drop_too_big +
			st.drop_len,
		16 - st.copies, "every lost copy counted once");

	free_all(out, n_out + n_out2);
	cr_assert_eq(rte_mbuf_refcnt_read(m), 1);
	rte_pktmbuf_free(m);
	cr_assert_eq(rte_mempool_avail_count(tiny), tiny0, "tiny pool leaked");
	isth_mcast_destroy(mc);
	rte_mempool_free(tiny);
	check_no_leak();
}

Test(mcast, header_pool_runs_dry)
{
	dry_pool_case(ISTH_MCAST_ZEROCOPY, 0, 1);
}

Test(mcast, clone_pool_runs_dry)
{
	dry_pool_case(ISTH_MCAST_ZEROCOPY, 1, 1);
}

Test(mcast, clone_pool_runs_dry_multi_segment)
{
	/* 2 segments: 2 clones of 2 mbufs, the 3rd fails half-way. */
	dry_pool_case(ISTH_MCAST_ZEROCOPY, 1, 2);
}

Test(mcast, copy_pool_runs_dry)
{
	dry_pool_case(ISTH_MCAST_COPY, 2, 1);
}

Test(mcast, copy_frame_too_big)
{
	static uint8_t msg[65536];
	struct isth_mcast_peer peers[3];
	struct isth_mcast_conf c = base_conf(ISTH_MCAST_COPY);
	struct rte_mbuf *out[8], *m;
	struct isth_mcast_stats st;
	struct rte_mempool *small;
	struct isth_mcast *mc;
	uint16_t n_out;
	size_t size;

	small = rte_pktmbuf_pool_create(
		"small", 16, 0, 0, RTE_PKTMBUF_HEADROOM + 512, SOCKET_ID_ANY);
	cr_assert_not_null(small);
	c.copy_pool = small;
	mc = isth_mcast_create(&c);
	cr_assert_not_null(mc);
	mkpeers(peers, 3, LOCAL_ISLAND, 9000);
	cr_assert_eq(isth_mcast_publish(mc, 1, peers, 3), 0);
	/* 42 + 40 + 4 * 107 = 510 fits; one more element does not. */
	m = mkmsg(107, 1, msg, &size);
	cr_assert_eq(isth_mcast_fanout_burst(mc, &m, 1, out, 8, &n_out), 1);
	cr_assert_eq(n_out, 3);
	free_all(out, n_out);
	rte_pktmbuf_free(m);
	m = mkmsg(108, 1, msg, &size);
	cr_assert_eq(isth_mcast_fanout_burst(mc, &m, 1, out, 8, &n_out), 1);
	cr_assert_eq(n_out, 0);
	isth_mcast_stats_get(mc, &st);
	cr_assert_eq(st.drop_too_big, 3);
	cr_assert_eq(st.copies, 3);
	rte_pktmbuf_free(m);
	cr_assert_eq(rte_mempool_avail_count(small), 16);
	isth_mcast_destroy(mc);
	rte_mempool_free(small);
	check_no_leak();
}

Test(mcast, empty_message_dropped)
{
	struct isth_mcast_peer peers[2];
	struct isth_mcast *mc = mk(ISTH_MCAST_ZEROCOPY);
	struct rte_mbuf *out[4], *m;
	struct isth_mcast_stats st;
	uint16_t n_out;

	mkpeers(peers, 2, LOCAL_ISLAND, 9000);
	cr_assert_eq(isth_mcast_publish(mc, 1, peers, 2), 0);
	m = rte_pktmbuf_alloc(pkt_pool);
	cr_assert_eq(isth_mcast_fanout_burst(mc, &m, 1, out, 4, &n_out), 1);
	cr_assert_eq(n_out, 0);
	isth_mcast_stats_get(mc, &st);
	cr_assert_eq(st.drop_len, 2);
	rte_pktmbuf_free(m);
	isth_mcast_destroy(mc);
	check_no_leak();
}

Test(mcast, no_table_and_empty_table)
{
	static uint8_t msg[65536];
	struct isth_mcast *mc = mk(ISTH_MCAST_ZEROCOPY);
	struct rte_mbuf *out[4], *m;
	struct isth_mcast_stats st;
	uint16_t n_out = 123;
	uint32_t round;
	size_t size;

	m = mkmsg(4, 1, msg, &size);
	cr_assert_eq(isth_mcast_generation(mc), 0);
	cr_assert_eq(isth_mcast_table_get(mc, &round, NULL, 0), -ENOENT);
	cr_assert_eq(isth_mcast_fanout_burst(mc, &m, 1, out, 4, &n_out), 1);
	cr_assert_eq(n_out, 0);
	/* An island alone in its clique this round. */
	cr_assert_eq(isth_mcast_publish(mc, 9, NULL, 0), 0);
	cr_assert_eq(isth_mcast_fanout_burst(mc, &m, 1, out, 4, &n_out), 1);
	cr_assert_eq(n_out, 0);
	isth_mcast_stats_get(mc, &st);
	cr_assert_eq(st.pkts_no_table, 1);
	cr_assert_eq(st.pkts_no_peers, 1);
	cr_assert_eq(st.pkts, 1);
	cr_assert_eq(st.copies, 0);
	cr_assert_eq(isth_mcast_table_get(mc, &round, NULL, 0), 0);
	cr_assert_eq(round, 9);
	rte_pktmbuf_free(m);
	isth_mcast_destroy(mc);
	check_no_leak();
}

Test(mcast, group_mac_closed_form)
{
	static const struct {
		uint32_t ip;
		uint8_t mac[6];
	} cases[] = {
		{0xe0000001u, {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}},
		{0xeffffffFu, {0x01, 0x00, 0x5e, 0x7f, 0xff, 0xff}},
		/* 225.128.1.2: bit 23 is not mapped */
		{0xe1800102u, {0x01, 0x00, 0x5e, 0x00, 0x01, 0x02}},
		{0xe4a5c3e1u, {0x01, 0x00, 0x5e, 0x25, 0xc3, 0xe1}},
	};
	uint8_t mac[6];
	unsigned int i;

	for (i = 0; i < RTE_DIM(cases); i++) {
		isth_mcast_group_mac(cases[i].ip, mac);
		cr_assert_arr_eq(mac, cases[i].mac, 6, "case %u", i);
	}
}

Test(mcast, group_mode_emits_one_frame)
{
	static uint8_t msg[65536];
	enum isth_mcast_mode mode;
	struct isth_mcast_peer g, got;
	struct rte_mbuf *out[8], *m;
	struct isth_mcast_stats st;
	struct isth_mcast *mc;
	uint16_t n_out;
	uint32_t round;
	size_t size;

	memset(&g, 0, sizeof(g));
	g.ip = 0xef010203u; /* 239.1.2.3 */
	g.port = 4791;
	memcpy(g.mac, (uint8_t[6]){0x01, 0x00, 0x5e, 0x01, 0x02, 0x03}, 6);
	for (mode = ISTH_MCAST_ZEROCOPY; mode <= ISTH_MCAST_COPY; mode++) {
		mc = mk(mode);
		cr_assert_eq(isth_mcast_publish_group(mc, 4, g.ip, g.port), 0);
		cr_assert_eq(isth_mcast_table_get(mc, &round, &got, 1), 1);
		cr_assert_eq(round, 4);
		cr_assert_arr_eq(got.mac, g.mac, 6);
		m = mkmsg(256, 1, msg, &size);
		cr_assert_eq(isth_mcast_fanout_burst(mc, &m, 1, out, 8, &n_out), 1);
		cr_assert_eq(n_out, 1);
		check_frame(out[0], &g, msg, size, 0);
		isth_mcast_stats_get(mc, &st);
		cr_assert_eq(st.copies, 1);
		free_all(out, n_out);
		rte_pktmbuf_free(m);
		isth_mcast_destroy(mc);
	}
	check_no_leak();
}

Test(mcast, create_invalid)
{
	struct rte_mempool *nonpkt, *tinyroom;
	struct isth_mcast_conf c;
	struct isth_mcast *mc;
	unsigned int i;

	nonpkt = rte_mempool_create("raw", 64, 256, 0, 0, NULL, NULL, NULL, NULL, SOCKET_ID_ANY, 0);
	cr_assert_not_null(nonpkt);
	tinyroom = rte_pktmbuf_pool_create(
		"tinyroom", 64, 0, 0, RTE_PKTMBUF_HEADROOM + 16, SOCKET_ID_ANY);
	cr_assert_not_null(tinyroom);

	rte_errno = 0;
	cr_assert_null(isth_mcast_create(NULL));
	cr_assert_eq(rte_errno, EINVAL);
	for (i = 0; i < 12; i++) {
		c = base_conf(ISTH_MCAST_ZEROCOPY);
		switch (i) {
		case 0:
			c.island = 64;
			break;
		case 1:
			c.vlan = 4096;
			break;
		case 2:
			c.dscp = 64;
			break;
		case 3:
			c.mode = 2;
			break;
		case 4:
			c.hdr_pool = NULL;
			break;
		case 5:
			c.clone_pool = NULL;
			break;
		case 6:
			c.hdr_pool = nonpkt;
			break;
		case 7:
			c.hdr_pool = tinyroom;
			break;
		case 8:
			c.mode = ISTH_MCAST_COPY;
			c.copy_pool = NULL;
			break;
		case 9:
			c.mode = ISTH_MCAST_COPY;
			c.copy_pool = nonpkt;
			break;
		case 10:
			c.mode = ISTH_MCAST_COPY;
			c.copy_pool = tinyroom;
			break;
		case 11:
			c.n_rounds = 65;
			break;
		}
		rte_errno = 0;
		cr_assert_null(isth_mcast_create(&c), "case %u", i);
		cr_assert_eq(rte_errno, EINVAL, "case %u", i);
	}
	/* COPY mode does not need the zero-copy pools, and vice versa. */
	c = base_conf(ISTH_MCAST_COPY);
	c.hdr_pool = c.clone_pool = NULL;
	mc = isth_mcast_create(&c);
	cr_assert_not_null(mc);
	isth_mcast_destroy(mc);
	c = base_conf(ISTH_MCAST_ZEROCOPY);
	c.copy_pool = NULL;
	c.clone_pool = c.hdr_pool; /* one pool for both is allowed */
	mc = isth_mcast_create(&c);
	cr_assert_not_null(mc);
	isth_mcast_destroy(mc);
	isth_mcast_destroy(NULL);
	rte_mempool_free(nonpkt);
	rte_mempool_free(tinyroom);
}

Test(mcast, publish_invalid)
{
	struct isth_mcast *mc = mk(ISTH_MCAST_ZEROCOPY);
	struct isth_mcast_peer p[ISTH_MCAST_MAX_DESTS + 1];
	unsigned int i, n;

	for (i = 0; i < 7; i++) {
		n = 3;
		mkpeers(p, 3, LOCAL_ISLAND, 1000);
		switch (i) {
		case 0:
			p[1].island = 64;
			break;
		case 1:
			p[1].island = LOCAL_ISLAND;
			break;
		case 2:
			p[2].island = p[0].island;
			break;
		case 3:
			p[0].ip = 0;
			break;
		case 4:
			p[0].ip = 0xe0000001u;
			break;
		case 5:
			p[2].port = 0;
			break;
		case 6:
			n = 64;
			mkpeers(p, 63, LOCAL_ISLAND, 1000);
			p[63] = p[0];
			break;
		}
		cr_assert_eq(isth_mcast_publish(mc, 1, p, n), -EINVAL, "case %u", i);
	}
	cr_assert_eq(isth_mcast_publish(mc, 1, p, 65), -EINVAL);
	cr_assert_eq(isth_mcast_publish(mc, 1, NULL, 1), -EINVAL);
	cr_assert_eq(isth_mcast_publish(NULL, 1, p, 1), -EINVAL);
	cr_assert_eq(isth_mcast_publish_group(mc, 1, 0x0a000001u, 1), -EINVAL);
	cr_assert_eq(isth_mcast_publish_group(mc, 1, 0xf0000001u, 1), -EINVAL);
	cr_assert_eq(isth_mcast_publish_group(mc, 1, 0xe0000001u, 0), -EINVAL);
	/* Nothing was published by any refused call. */
	cr_assert_eq(isth_mcast_generation(mc), 0);
	isth_mcast_destroy(mc);
}

/* Fan one small message out and return the destination ports seen. */
static unsigned int
ports_seen(struct isth_mcast *mc, uint16_t *ports)
{
	static uint8_t msg[65536];
	struct rte_mbuf *out[64], *m;
	uint16_t n_out;
	unsigned int i;
	size_t size;

	m = mkmsg(4, 1, msg, &size);
	isth_mcast_fanout_burst(mc, &m, 1, out, 64, &n_out);
	for (i = 0; i < n_out; i++) {
		const uint8_t *udp = rte_pktmbuf_mtod(out[i], uint8_t *) + 34;

		ports[i] = (uint16_t)(udp[2] << 8 | udp[3]);
	}
	free_all(out, n_out);
	rte_pktmbuf_free(m);
	return n_out;
}

static struct isth_mcast *
mk_qs(enum isth_mcast_mode mode, uint32_t n_rounds, struct rte_rcu_qsbr *qs)
{
	struct isth_mcast_conf c = base_conf(mode);
	struct isth_mcast *mc;

	c.n_rounds = n_rounds;
	c.qs = qs;
	mc = isth_mcast_create(&c);
	cr_assert_not_null(mc, "create: %s", rte_strerror(rte_errno));
	return mc;
}

/*
 * The data path is reader 0 of a qsbr variable, driven from this thread:
 * a table it may still hold (no quiescent report since it was replaced)
 * is never rewritten; publishing asks for a retry instead.
 */
Test(mcast, table_swap_generations)
{
	struct rte_rcu_qsbr *qs = isth_rtab_qs_create(1);
	struct isth_mcast *mc;
	struct isth_mcast_peer a[2], b[3], got[4];
	const struct mcast_table *held;
	struct mcast_table snap;
	uint16_t ports[64];
	uint32_t round;

	cr_assert_not_null(qs);
	mc = mk_qs(ISTH_MCAST_ZEROCOPY, 1, qs);
	cr_assert_eq(rte_rcu_qsbr_thread_register(qs, 0), 0);
	rte_rcu_qsbr_thread_online(qs, 0);
	mkpeers(a, 2, LOCAL_ISLAND, 1000);
	mkpeers(b, 3, LOCAL_ISLAND, 2000);

	cr_assert_eq(isth_mcast_publish(mc, 1, a, 2), 0);
	cr_assert_eq(isth_mcast_generation(mc), 1);
	cr_assert_eq(ports_seen(mc, ports), 2);
	cr_assert_eq(ports[0], 1000);
	cr_assert_eq(ports[1], 1001);

	cr_assert_eq(isth_mcast_publish(mc, 2, b, 3), 0, "the spare table");
	cr_assert_eq(isth_mcast_generation(mc), 2);
	rte_rcu_qsbr_quiescent(qs, 0); /* round 1's table: nobody holds it */
	cr_assert_eq(ports_seen(mc, ports), 3);
	cr_assert_eq(ports[2], 2002);
	cr_assert_eq(isth_mcast_table_get(mc, &round, got, 4), 3);
	cr_assert_eq(round, 2);
	cr_assert_eq(got[1].port, 2001);

	/* The data path holds generation 2's table. */
	held = isth_rtab_get(mc->rtab, 0);
	cr_assert_eq(held->round, 2);
	snap = *held;
	/* Generation 3 goes to round 1's old table: allowed, held one intact. */
	cr_assert_eq(isth_mcast_publish(mc, 3, a, 2), 0);
	cr_assert_eq(memcmp(held, &snap, sizeof(snap)), 0);
	/* Generation 4 would overwrite the held table: refused, untouched. */
	cr_assert_eq(isth_mcast_publish(mc, 4, b, 3), -EBUSY);
	cr_assert_eq(isth_mcast_publish_group(mc, 4, 0xe0000001u, 9), -EBUSY);
	cr_assert_eq(memcmp(held, &snap, sizeof(snap)), 0);
	cr_assert_eq(isth_mcast_generation(mc), 3);
	rte_rcu_qsbr_quiescent(qs, 0);
	cr_assert_eq(isth_mcast_publish(mc, 4, b, 3), 0, "after the data path's report");

	/* A data path that is offline (asleep) holds nothing up. */
	rte_rcu_qsbr_thread_offline(qs, 0);
	cr_assert_eq(isth_mcast_publish(mc, 5, a, 2), 0);
	cr_assert_eq(isth_mcast_publish(mc, 6, a, 1), 0);
	cr_assert_eq(ports_seen(mc, ports), 1);
	cr_assert_eq(ports[0], 1000);
	isth_mcast_destroy(mc);
	isth_rtab_qs_free(qs);
	check_no_leak();
}

/*
 * n_rounds 2: round r + 1's table is published while round r's is still
 * used, each packet goes out with its own round's peers, and a round with
 * no table (or whose slot holds round r + 2) sends nothing.
 */
Test(mcast, tables_per_round_parity)
{
	static uint8_t msg[65536];
	struct isth_mcast *mc = mk_qs(ISTH_MCAST_ZEROCOPY, 2, NULL);
	struct isth_mcast_peer a[2], b[3];
	struct isth_mcast_stats st;
	struct rte_mbuf *out[64], *m;
	uint16_t n_out;
	size_t size;

	mkpeers(a, 2, LOCAL_ISLAND, 1000);
	mkpeers(b, 3, LOCAL_ISLAND, 2000);
	m = mkmsg(16, 1, msg, &size);
	cr_assert_eq(isth_mcast_publish(mc, 4, a, 2), 0);
	cr_assert_eq(isth_mcast_publish(mc, 5, b, 3), 0);
	cr_assert(isth_mcast_has_round(mc, 4));
	cr_assert(isth_mcast_has_round(mc, 5));
	cr_assert_not(isth_mcast_has_round(mc, 6));
	cr_assert_eq(isth_mcast_fanout_round(mc, 4, &m, 1, out, 64, &n_out), 1);
	cr_assert_eq(n_out, 2, "round 4: its two peers");
	free_all(out, n_out);
	cr_assert_eq(isth_mcast_fanout_round(mc, 5, &m, 1, out, 64, &n_out), 1);
	cr_assert_eq(n_out, 3, "round 5: its three peers");
	free_all(out, n_out);
	cr_assert_eq(isth_mcast_publish(mc, 6, b, 1), 0);
	cr_assert_not(isth_mcast_has_round(mc, 4), "round 6 took round 4's slot");
	cr_assert_eq(isth_mcast_fanout_round(mc, 4, &m, 1, out, 64, &n_out), 1);
	cr_assert_eq(n_out, 0);
	isth_mcast_stats_get(mc, &st);
	cr_assert_eq(st.pkts_no_table, 1);
	cr_assert_eq(st.copies, 5);
	rte_pktmbuf_free(m);
	isth_mcast_destroy(mc);
	check_no_leak();
}

/*
 * Two threads: a control thread publishes generation after generation;
 * the data path (this thread) fans out continuously. Table k has
 * 1 + k % 8 peers, all with MAC byte 4 == k % 251 and ports k-based, so a
 * frame set mixing two tables is detectable.
 */
#define SWAP_TABLES 50000u

struct swap_arg {
	struct isth_mcast *mc;
	uint64_t busy;
	uint32_t done; /* written by: control thread; read by: data path */
};

static void
swap_peers(struct isth_mcast_peer *p, uint32_t k, unsigned int *n)
{
	unsigned int j;

	*n = 1 + k % 8;
	for (j = 0; j < *n; j++) {
		memset(&p[j], 0, sizeof(p[j]));
		p[j].island = (uint8_t)(j + 10);
		p[j].mac[0] = 0x02;
		p[j].mac[4] = (uint8_t)(k % 251);
		p[j].mac[5] = (uint8_t)j;
		p[j].ip = 0x0a000000u | k;
		p[j].port = (uint16_t)(1 + (k % 8000) * 8 + j);
	}
}

static void *
swap_writer(void *varg)
{
	struct swap_arg *a = varg;
	struct isth_mcast_peer p[8];
	unsigned int n;
	uint32_t k;
	cpu_set_t cpus;
	int rc;

	/* Off the data path's core when there is another one. */
	CPU_ZERO(&cpus);
	for (k = 1; k < (uint32_t)sysconf(_SC_NPROCESSORS_ONLN); k++)
		CPU_SET(k, &cpus);
	if (CPU_COUNT(&cpus) > 0)
		pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);

	for (k = 1; k <= SWAP_TABLES; k++) {
		swap_peers(p, k, &n);
		while ((rc = isth_mcast_publish(a->mc, k, p, n)) == -EBUSY) {
			a->busy++;
			sched_yield(); /* the control thread's next tick */
		}
		if (rc != 0)
			break;
	}
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

Test(mcast, table_swap_two_threads_consistent)
{
	static uint8_t msg[65536];
	struct rte_rcu_qsbr *qs = isth_rtab_qs_create(1);
	struct isth_mcast *mc = mk_qs(ISTH_MCAST_ZEROCOPY, 1, qs);
	struct rte_mbuf *out[64], *m;
	struct swap_arg arg = {.mc = mc};
	struct isth_mcast_peer expect[8];
	uint64_t bursts = 0, mixed = 0, changes = 0;
	uint32_t last_k = 0, k;
	unsigned int i, n;
	pthread_t th;
	uint16_t n_out;
	size_t size;
	bool fin = false;

	m = mkmsg(16, 1, msg, &size);
	cr_assert_eq(rte_rcu_qsbr_thread_register(qs, 0), 0);
	rte_rcu_qsbr_thread_online(qs, 0);
	cr_assert_eq(pthread_create(&th, NULL, swap_writer, &arg), 0);
	while (!fin) {
		fin = __atomic_load_n(&arg.done, __ATOMIC_ACQUIRE);
		/* one read section per burst, as a worker's loop pass */
		rte_rcu_qsbr_quiescent(qs, 0);
		isth_mcast_fanout_burst(mc, &m, 1, out, 64, &n_out);
		bursts++;
		if (n_out == 0) {
			cr_assert_eq(isth_mcast_generation(mc) == 0 || last_k == 0, true);
			continue;
		}
		/* Identify the table from the first frame's IPv4 dst. */
		{
			const uint8_t *ip = rte_pktmbuf_mtod(out[0], uint8_t *) + 14;

			k = (uint32_t)(ip[17] << 16 | ip[18] << 8 | ip[19]);
		}
		if (k < last_k || k == 0 || k > SWAP_TABLES)
			mixed++;
		changes += k != last_k;
		last_k = k;
		swap_peers(expect, k, &n);
		if (n_out != n)
			mixed++;
		for (i = 0; i < n_out && i < n; i++) {
			const uint8_t *f = rte_pktmbuf_mtod(out[i], uint8_t *);

			if (memcmp(f, expect[i].mac, 6) != 0 ||
				(uint16_t)(f[36] << 8 | f[37]) != expect[i].port ||
				(uint32_t)(f[30] << 24 | f[31] << 16 | f[32] << 8 | f[33]) !=
					expect[i].ip)
				mixed++;
		}
		free_all(out, n_out);
	}
	rte_rcu_qsbr_thread_offline(qs, 0);
	pthread_join(th, NULL);
	cr_assert_eq(isth_mcast_generation(mc), SWAP_TABLES);
	cr_assert_eq(mixed, 0, "%lu inconsistent bursts of %lu", (unsigned long)mixed,
		(unsigned long)bursts);
	cr_assert_eq(last_k, SWAP_TABLES, "last burst saw table %u", last_k);
	/* The reader must have run across many generations. */
	cr_assert_gt(changes, 100, "only %lu table changes seen", (unsigned long)changes);
	cr_log_info("%lu bursts, %lu table changes seen, %lu EBUSY retries", (unsigned long)bursts,
		(unsigned long)changes, (unsigned long)arg.busy);
	rte_pktmbuf_free(m);
	isth_mcast_destroy(mc);
	isth_rtab_qs_free(qs);
	check_no_leak();
}

Test(mcast, port_mode)
{
	uint16_t port;

	cr_assert_eq(isth_mcast_port_mode(RTE_MAX_ETHPORTS - 1), -ENODEV);
	cr_assert_eq(rte_eal_hotplug_add("vdev", "net_null0", ""), 0);
	cr_assert_eq(rte_eth_dev_get_port_by_name("net_null0", &port), 0);
	cr_assert_eq(isth_mcast_port_mode(port), ISTH_MCAST_ZEROCOPY);
	rte_eal_hotplug_remove("vdev", "net_null0");
}

/*
 * With udp_csum every frame carries a UDP checksum that the parser
 * verifies (non-zero), in both modes, for single- and multi-segment and
 * odd-length messages; a flipped payload byte is then caught.
 */
Test(mcast, udp_checksum_per_destination)
{
	static uint8_t msg[65536], flat[70000];
	struct isth_mcast_peer peers[8];
	struct isth_wire_limits lim;
	struct rte_mbuf *out[8], *m;
	enum isth_mcast_mode mode;
	struct isth_mcast_conf c;
	struct isth_mcast *mc;
	struct isth_wire_pkt pkt;
	uint16_t n_out;
	size_t size;

	for (mode = ISTH_MCAST_ZEROCOPY; mode <= ISTH_MCAST_COPY; mode++) {
		for (unsigned int nseg = 1; nseg <= 2; nseg++) {
			c = base_conf(mode);
			c.udp_csum = true;
			mc = isth_mcast_create(&c);
			cr_assert_not_null(mc);
			mkpeers(peers, 8, LOCAL_ISLAND, 9000);
			cr_assert_eq(isth_mcast_publish(mc, 1, peers, 8), 0);
			m = mkmsg_t(257, 0, nseg, msg, &size);
			cr_assert_eq(isth_mcast_fanout_burst(mc, &m, 1, out, 8, &n_out), 1);
			cr_assert_eq(n_out, 8);
			for (unsigned int i = 0; i < n_out; i++) {
				uint32_t len = rte_pktmbuf_pkt_len(out[i]);
				const uint8_t *f = rte_pktmbuf_read(out[i], 0, len, flat);

				if (f != flat)
					memcpy(flat, f, len);
				lim = limits(peers[i].port);
				cr_expect_neq(flat[40] | flat[41], 0, "UDP checksum left 0");
				cr_expect_eq(isth_wire_parse_frame(flat, len, &lim, &pkt),
					ISTH_WIRE_OK, "mode %d nseg %u dest %u", mode, nseg, i);
				flat[len - 3] ^= 0x10;
				cr_expect_eq(isth_wire_parse_frame(flat, len, &lim, &pkt),
					ISTH_WIRE_E_UDP_CSUM);
			}
			free_all(out, n_out);
			rte_pktmbuf_free(m);
			isth_mcast_destroy(mc);
		}
	}
	check_no_leak();
}

/*
 * A message sum kept in the mbuf (isth_mcast_sum_attach, what isthmusd's
 * worker 0 does once for the workers that fan the island's DATA out):
 * frames byte for byte those of a message without it, in both modes and
 * for two segments; and the kept sum is what the handle uses (a wrong one
 * written into the field gives frames the parser refuses, so the message
 * was not summed again). A handle without udp_csum ignores it.
 */
Test(mcast, kept_message_sum_is_used_and_exact)
{
	static uint8_t msg[65536], flat_a[70000], flat_b[70000];
	struct isth_mcast_peer peers[4];
	struct isth_wire_limits lim;
	struct rte_mbuf *out_a[4], *out_b[4], *m;
	enum isth_mcast_mode mode;
	struct isth_mcast_conf c;
	struct isth_mcast *mc;
	struct isth_wire_pkt pkt;
	uint16_t n_a, n_b;
	size_t size;
	int off;

	for (mode = ISTH_MCAST_ZEROCOPY; mode <= ISTH_MCAST_COPY; mode++) {
		for (unsigned int nseg = 1; nseg <= 2; nseg++) {
			c = base_conf(mode);
			c.udp_csum = true;
			mc = isth_mcast_create(&c);
			cr_assert_not_null(mc);
			mkpeers(peers, 4, LOCAL_ISLAND, 9000);
			cr_assert_eq(isth_mcast_publish(mc, 1, peers, 4), 0);
			m = mkmsg_t(301, 0, nseg, msg, &size);
			cr_assert_eq(isth_mcast_fanout_burst(mc, &m, 1, out_a, 4, &n_a), 1);
			cr_assert_eq(isth_mcast_sum_attach(m), 0);
			cr_assert_eq(isth_mcast_fanout_burst(mc, &m, 1, out_b, 4, &n_b), 1);
			cr_assert_eq(n_a, 4);
			cr_assert_eq(n_b, 4);
			for (unsigned int i = 0; i < n_a; i++) {
				uint32_t len = rte_pktmbuf_pkt_len(out_a[i]);
				const uint8_t *fa = rte_pktmbuf_read(out_a[i], 0, len, flat_a);
				const uint8_t *fb;

				cr_assert_eq(rte_pktmbuf_pkt_len(out_b[i]), len);
				fb = rte_pktmbuf_read(out_b[i], 0, len, flat_b);
				cr_expect(memcmp(fa, fb, len) == 0,
					"mode %d nseg %u dest %u differs", mode, nseg, i);
			}
			free_all(out_a, n_a);
			free_all(out_b, n_b);
			/* a wrong kept sum: used as it is */
			off = rte_mbuf_dynfield_lookup("isth_mcast_msg_sum", NULL);
			cr_assert_geq(off, 0);
			*RTE_MBUF_DYNFIELD(m, off, uint32_t *) += 1;
			cr_assert_eq(isth_mcast_fanout_burst(mc, &m, 1, out_b, 4, &n_b), 1);
			for (unsigned int i = 0; i < n_b; i++) {
				uint32_t len = rte_pktmbuf_pkt_len(out_b[i]);
				const uint8_t *f = rte_pktmbuf_read(out_b[i], 0, len, flat_b);

				if (f != flat_b)
					memcpy(flat_b, f, len);
				lim = limits(peers[i].port);
				cr_expect_eq(isth_wire_parse_frame(flat_b, len, &lim, &pkt),
					ISTH_WIRE_E_UDP_CSUM, "the kept sum was not used");
			}
			free_all(out_b, n_b);
			isth_mcast_destroy(mc);
			/* without udp_csum: no checksum, whatever is kept */
			c.udp_csum = false;
			mc = isth_mcast_create(&c);
			cr_assert_not_null(mc);
			cr_assert_eq(isth_mcast_publish(mc, 1, peers, 4), 0);
			cr_assert_eq(isth_mcast_fanout_burst(mc, &m, 1, out_b, 4, &n_b), 1);
			for (unsigned int i = 0; i < n_b; i++) {
				uint32_t len = rte_pktmbuf_pkt_len(out_b[i]);
				const uint8_t *f = rte_pktmbuf_read(out_b[i], 0, len, flat_b);

				cr_expect_eq(f[40] | f[41], 0, "a checksum with udp_csum off");
			}
			free_all(out_b, n_b);
			rte_pktmbuf_free(m);
			isth_mcast_destroy(mc);
		}
	}
	check_no_leak();
}
