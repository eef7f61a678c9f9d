/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/island against a fake edge on loopback: a UDP socket in the test that
 * sends ROUND and AGGs (sums computed here from the closed-form tensor
 * formula), reads the island's DATA and NACKs, drops, resends, answers
 * GONE, duplicates and corrupts. Time is an injected clock; waits are
 * poll()s on conditions with a bound, never sleeps.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <criterion/criterion.h>

#include "isth_island.h"
#include "isth_wire.h"

#include "island_fix.h"

#define JOB FIX_JOB
#define SELF 1u
#define N_ISLANDS FIX_N_ISLANDS
#define CE 358u /* elements per chunk at MTU 1500 */
#define ELEMS (2 * CE + 100) /* three chunks: 358, 358, 100 */
#define NCH 3u
#define LOOPBACK 0x7f000001u
#define MS 1000000ull
#define T0 FIX_T0

/* ---- the closed form and the fake clock -------------------------------- */

static void
advance(uint64_t ns)
{
	__atomic_add_fetch(&fake_now, ns, __ATOMIC_SEQ_CST);
}

/* ---- the fake edge ------------------------------------------------------ */

struct edge {
	int fd;
	uint16_t port;
	uint16_t island_port;
};

static void
edge_open(struct edge *e)
{
	e->fd = fix_udp_socket(&e->port);
}

static void
raw_send(int fd, uint16_t port, const void *buf, size_t len)
{
	struct sockaddr_in a = {.sin_family = AF_INET};

	a.sin_addr.s_addr = htonl(LOOPBACK);
	a.sin_port = htons(port);
	cr_assert_eq(sendto(fd, buf, len, 0, (struct sockaddr *)&a, sizeof(a)), (ssize_t)len);
}

static void
edge_send(struct edge *e, const void *buf, size_t len)
{
	raw_send(e->fd, e->island_port, buf, len);
}

/* One datagram from the island within @ms, or 0. */
static size_t
edge_recv(struct edge *e, uint8_t *buf, size_t cap, int ms)
{
	struct pollfd p = {.fd = e->fd, .events = POLLIN};
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return 0;
	n = recv(e->fd, buf, cap, 0);
	cr_assert_gt(n, 0);
	return (size_t)n;
}

static struct isth_wire_limits lim;

static void
parse_ok(const uint8_t *buf, size_t len, struct isth_wire_pkt *p)
{
	enum isth_wire_reason r = isth_wire_parse_msg(buf, len, &lim, p);

	cr_assert_eq(r, ISTH_WIRE_OK, "island sent a bad packet: %s", isth_wire_reason_name(r));
}

static const struct fix_shape shape = {.n_chunks = NCH, .ce = CE, .elems = ELEMS, .self = SELF};

static size_t
mk_round(uint8_t *buf, uint32_t round, uint64_t expected, uint64_t clique, uint64_t deadline)
{
	return fix_round(buf, &shape, round, 0, expected, clique, deadline);
}

static uint32_t
clen(uint32_t c)
{
	return fix_clen(&shape, c);
}

/* An AGG of chunk @c: the sum over @set, as an edge would send it. */
static size_t
mk_agg(uint8_t *buf, uint8_t dtype, uint32_t round, uint32_t c, uint64_t set, uint64_t seq,
	uint16_t flags)
{
	return fix_agg(buf, &shape, dtype, round, c, set, seq, flags);
}

static size_t
mk_gone(uint8_t *buf, const struct isth_wire_range *r, unsigned int n)
{
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_GONE,
		.sender = SELF,
		.count = (uint16_t)n,
		.job = JOB,
	};
	uint8_t body[16 * 8];
	int k;

	isth_wire_put_ranges(body, sizeof(body), r, n);
	k = isth_wire_build_msg(buf, 2048, &h, body, (size_t)n * 16, NULL);
	cr_assert_gt(k, 0);
	return (size_t)k;
}

static void
send_agg(struct edge *e, uint8_t dtype, uint32_t round, uint32_t c, uint64_t set, uint64_t seq,
	uint16_t flags)
{
	uint8_t buf[2048];

	edge_send(e, buf, mk_agg(buf, dtype, round, c, set, seq, flags));
}

static void
send_round(struct edge *e, uint32_t round, uint64_t expected, uint64_t deadline)
{
	uint8_t buf[2048];

	edge_send(e, buf, mk_round(buf, round, expected, expected | (1ull << SELF), deadline));
}

static struct isth_island_conf
base_conf(const struct edge *e, uint8_t dtype)
{
	struct isth_island_conf c = {
		.job = JOB,
		.island = SELF,
		.n_islands = N_ISLANDS,
		.edge_ip = LOOPBACK,
		.edge_port = e->port,
		.bind_ip = LOOPBACK,
		.elems = ELEMS,
		.dtype = dtype,
		.nack_interval_ns = 5 * MS,
		.probe_ns = UINT64_MAX,
		.clock = fake_clock,
	};
	return c;
}

static struct isth_island *
open_island(struct edge *e, uint8_t dtype)
{
	struct isth_island_conf c = base_conf(e, dtype);
	struct isth_island *s = isth_island_open(&c);

	cr_assert_not_null(s, "open: %s", strerror(errno));
	e->island_port = isth_island_local_port(s);
	return s;
}

static void
own_tensor_i32(uint32_t *t, uint32_t round)
{
	for (uint32_t i = 0; i < ELEMS; i++)
		t[i] = val_i32(SELF, round, i);
}

static void
setup(void)
{
	cr_assert_eq(isth_wire_limits_init(&lim, N_ISLANDS, 1500), 0);
	__atomic_store_n(&fake_now, T0, __ATOMIC_SEQ_CST);
}

TestSuite(island, .init = setup, .timeout = 20);

/* ---- arguments ---------------------------------------------------------- */

/* Each case breaks one field of a good configuration. */
static const struct {
	const char *what;
	int err;
} bad_conf[] = {
	{"n_islands 0", EINVAL},
	{"n_islands 65", EINVAL},
	{"island >= n", EINVAL},
	{"dtype 4", EINVAL},
	{"dtype none", EINVAL},
	{"dtype 9", EINVAL},
	{"elems 0", EINVAL},
	{"edge ip 0", EINVAL},
	{"mtu tiny", EINVAL},
	{"rcvbuf < 0", EINVAL},
};

static void
break_conf(struct isth_island_conf *c, unsigned int i)
{
	switch (i) {
	case 0:
		c->n_islands = 0;
		break;
	case 1:
		c->n_islands = 65;
		break;
	case 2:
		c->island = 4;
		break;
	case 3:
		c->dtype = ISTH_WIRE_DTYPE_MAX + 1;
		break;
	case 4:
		c->dtype = ISTH_WIRE_DTYPE_NONE;
		break;
	case 5:
		c->dtype = 9;
		break;
	case 6:
		c->elems = 0;
		break;
	case 7:
		c->edge_ip = 0;
		break;
	case 8:
		c->mtu = 60;
		break;
	case 9:
		c->rcvbuf = -1;
		break;
	}
}

Test(island, open_refuses_bad_arguments)
{
	struct edge e = {.port = 9};

	for (unsigned int i = 0; i < sizeof(bad_conf) / sizeof(bad_conf[0]); i++) {
		struct isth_island_conf c = base_conf(&e, ISTH_WIRE_DTYPE_INT32);

		break_conf(&c, i);
		errno = 0;
		cr_expect_null(isth_island_open(&c), "%s", bad_conf[i].what);
		cr_expect_eq(errno, bad_conf[i].err, "%s: errno %d", bad_conf[i].what, errno);
	}
	errno = 0;
	cr_expect_null(isth_island_open(NULL));
	cr_expect_eq(errno, EINVAL);
	isth_island_close(NULL);
}

Test(island, chunk_size_follows_mtu)
{
	struct edge e = {.port = 9};
	struct isth_island_conf c = base_conf(&e, ISTH_WIRE_DTYPE_INT32);
	struct isth_island *s;

	s = isth_island_open(&c);
	cr_assert_not_null(s);
	/* (1500 - 20 - 8 - 40) / 4 */
	cr_expect_eq(isth_island_chunk_elems(s), 358);
	cr_expect_eq(isth_island_n_chunks(s), 3);
	isth_island_close(s);
	c.mtu = 9000;
	c.elems = 2233 * 2 + 1;
	s = isth_island_open(&c);
	cr_assert_not_null(s);
	cr_expect_eq(isth_island_chunk_elems(s), 2233);
	cr_expect_eq(isth_island_n_chunks(s), 3);
	isth_island_close(s);
}

/* ---- DATA ---------------------------------------------------------------- */

Test(island, send_chunks_tensor_into_data)
{
	struct edge e;
	struct isth_island *s;
	struct isth_island_stats st;
	uint32_t t[ELEMS];
	uint8_t buf[2048];

	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_INT32);
	own_tensor_i32(t, 5);
	cr_assert_eq(isth_island_send(s, 5, t, sizeof(t) - 4), -EINVAL);
	cr_assert_eq(isth_island_send(s, 5, t, sizeof(t)), 0);
	cr_assert_eq(isth_island_send(s, 5, t, sizeof(t)), -EALREADY);
	own_tensor_i32(t, 6);
	cr_assert_eq(isth_island_send(s, 6, t, sizeof(t)), 0);
	for (uint32_t k = 0; k < 2 * NCH; k++) {
		uint32_t round = k < NCH ? 5 : 6, c = k % NCH;
		struct isth_wire_pkt p;
		size_t n = edge_recv(&e, buf, sizeof(buf), 2000);

		cr_assert_gt(n, 0, "DATA %u never came", k);
		parse_ok(buf, n, &p);
		cr_expect_eq(p.hdr.type, ISTH_WIRE_DATA);
		cr_expect_eq(p.hdr.dtype, ISTH_WIRE_DTYPE_INT32);
		cr_expect_eq(p.hdr.job, JOB);
		cr_expect_eq(p.hdr.round, round);
		cr_expect_eq(p.hdr.chunk, c);
		cr_expect_eq(p.hdr.sender, SELF);
		cr_expect_eq(p.hdr.bitmap, 1ull << SELF);
		cr_expect_eq(p.hdr.seq, k, "DATA seq is per session");
		cr_expect_eq(p.hdr.count, clen(c));
		cr_expect_eq(p.hdr.flags, c == NCH - 1 ? ISTH_WIRE_F_LAST : 0);
		for (uint32_t i = 0; i < clen(c); i++) {
			const uint8_t *q = p.payload + 4 * i;
			uint32_t v = q[0] | q[1] << 8 | q[2] << 16 | (uint32_t)q[3] << 24;

			cr_assert_eq(v, val_i32(SELF, round, c * CE + i),
				"round %u chunk %u elem %u", round, c, i);
		}
	}
	isth_island_stats(s, &st);
	cr_expect_eq(st.data_tx, 6);
	cr_expect_eq(st.data_tx_bytes, 2 * ELEMS * 4);
	cr_expect_eq(st.tx_errors, 0);
	isth_island_close(s);
	close(e.fd);
}

/* ---- complete rounds ------------------------------------------------------ */

static void
check_sums_i32(const uint32_t *out, const struct isth_island_chunk *ch, uint32_t round)
{
	for (uint32_t c = 0; c < NCH; c++) {
		cr_expect_eq(ch[c].count, clen(c));
		for (uint32_t i = 0; i < clen(c); i++)
			cr_assert_eq(out[c * CE + i], sum_i32(ch[c].bitmap, round, c * CE + i),
				"chunk %u elem %u", c, i);
	}
}

Test(island, partials_with_disjoint_bitmaps_sum_to_the_clique)
{
	const uint64_t peers = 1u << 0 | 1u << 2 | 1u << 3;
	struct isth_island_chunk ch[NCH];
	struct isth_island_result res;
	struct isth_island_round ri;
	struct isth_island_stats st;
	struct isth_island *s;
	uint32_t t[ELEMS], out[ELEMS];
	struct edge e;

	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_INT32);
	send_round(&e, 3, peers, T0 + 100 * MS);
	cr_assert_eq(isth_island_wait_round(s, 2000 * MS, &ri), 0);
	cr_expect_eq(ri.round, 3);
	cr_expect_eq(ri.expected, peers);
	cr_expect_eq(ri.clique, peers | 1u << SELF);
	cr_expect_eq(ri.n_chunks, NCH);
	cr_expect_eq(ri.chunk_elems, CE);
	cr_expect_eq(ri.deadline_ns, T0 + 100 * MS);
	own_tensor_i32(t, 3);
	cr_assert_eq(isth_island_send(s, 3, t, sizeof(t)), 0);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 3, 0, peers, 0, 0);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 3, 1, 1u << 0, 1, ISTH_WIRE_F_PARTIAL);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 3, 2, 1u << 0 | 1u << 2, 2, ISTH_WIRE_F_PARTIAL);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 3, 1, 1u << 2 | 1u << 3, 3, ISTH_WIRE_F_PARTIAL);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 3, 2, 1u << 3, 4, ISTH_WIRE_F_PARTIAL);
	/* complete before the deadline: the fake clock never moves */
	cr_assert_eq(isth_island_result(s, 3, out, sizeof(out), ch, NCH, &res, 2000 * MS), 0);
	cr_expect(res.early);
	cr_expect(res.self_sent);
	cr_expect_eq(res.complete, NCH);
	cr_expect_eq(res.partial, 0);
	cr_expect_eq(res.missing, 0);
	for (uint32_t c = 0; c < NCH; c++) {
		cr_expect_eq(ch[c].bitmap, 0xf);
		cr_expect_eq(ch[c].expected, 0xf);
		cr_expect_eq(ch[c].missing, 0);
	}
	cr_expect_eq(ch[0].aggs, 1);
	cr_expect_eq(ch[1].aggs, 2);
	cr_expect_eq(ch[2].aggs, 2);
	check_sums_i32(out, ch, 3);
	/* asked again: the same answer */
	memset(out, 0, sizeof(out));
	cr_assert_eq(isth_island_result(s, 3, out, sizeof(out), ch, NCH, NULL, 0), 0);
	check_sums_i32(out, ch, 3);
	isth_island_stats(s, &st);
	cr_expect_eq(st.rx_type[ISTH_WIRE_AGG], 5);
	cr_expect_eq(st.rx_type[ISTH_WIRE_ROUND], 1);
	cr_expect_eq(st.aggs_summed, 5);
	cr_expect_eq(st.rounds_announced, 1);
	cr_expect_eq(st.rounds_complete, 1);
	cr_expect_eq(st.rounds_partial, 0);
	cr_expect_eq(st.nacks_sent, 0);
	cr_expect_eq(st.duplicates, 0);
	for (unsigned int i = 0; i < ISTH_ISLAND_DROP_MAX; i++)
		cr_expect_eq(st.drop[i], 0, "%s", isth_island_drop_name(i));
	/* a late AGG for a returned round is refused */
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 3, 0, 1u << 0, 5, 0);
	POLL_UNTIL(s, st.drop[ISTH_ISLAND_DROP_round_done] == 1);
	isth_island_close(s);
	close(e.fd);
}

Test(island, fp32_sums_are_exact_for_sixteenths)
{
	const uint64_t peers = 1u << 0 | 1u << 3;
	struct isth_island_chunk ch[NCH];
	struct isth_island *s;
	float t[ELEMS], out[ELEMS];
	struct edge e;

	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_FP32);
	send_round(&e, 11, peers, T0 + 100 * MS);
	for (uint32_t i = 0; i < ELEMS; i++)
		t[i] = val_f32(SELF, 11, i);
	cr_assert_eq(isth_island_send(s, 11, t, sizeof(t)), 0);
	for (uint32_t c = 0; c < NCH; c++) {
		send_agg(&e, ISTH_WIRE_DTYPE_FP32, 11, c, 1u << 3, 2 * c, ISTH_WIRE_F_PARTIAL);
		send_agg(&e, ISTH_WIRE_DTYPE_FP32, 11, c, 1u << 0, 2 * c + 1, ISTH_WIRE_F_PARTIAL);
	}
	cr_assert_eq(isth_island_result(s, 11, out, sizeof(out), ch, NCH, NULL, 2000 * MS), 0);
	for (uint32_t c = 0; c < NCH; c++) {
		cr_expect_eq(ch[c].bitmap, peers | 1u << SELF);
		for (uint32_t i = 0; i < clen(c); i++)
			cr_assert_eq(out[c * CE + i], sum_f32(peers | 1u << SELF, 11, c * CE + i),
				"chunk %u elem %u", c, i);
	}
	isth_island_close(s);
	close(e.fd);
}

Test(island, aggs_before_their_round_and_silent_island)
{
	struct isth_island_stats st;
	const uint64_t peers = 1u << 0 | 1u << 2;
	struct isth_island_chunk ch[NCH];
	struct isth_island_result res;
	struct isth_island *s;
	uint32_t out[ELEMS];
	struct edge e;

	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_INT32);
	/* the island sends nothing (a stopped sender): peers only */
	for (uint32_t c = 0; c < NCH; c++)
		send_agg(&e, ISTH_WIRE_DTYPE_INT32, 8, c, peers, c, 0);
	POLL_UNTIL(s, st.aggs_summed == NCH);
	send_round(&e, 8, peers, T0 + 100 * MS);
	cr_assert_eq(isth_island_result(s, 8, out, sizeof(out), ch, NCH, &res, 2000 * MS), 0);
	cr_expect(!res.self_sent);
	for (uint32_t c = 0; c < NCH; c++) {
		cr_expect_eq(ch[c].bitmap, peers);
		cr_expect_eq(ch[c].expected, peers);
	}
	check_sums_i32(out, ch, 8);
	isth_island_close(s);
	close(e.fd);
}

/* ---- loss: NACK, RESENT, GONE, rate limit --------------------------------- */

static void
expect_nack(struct edge *e, const struct isth_wire_range *want, unsigned int n)
{
	uint8_t buf[2048];
	struct isth_wire_pkt p;
	size_t len = edge_recv(e, buf, sizeof(buf), 2000);

	cr_assert_gt(len, 0, "no NACK");
	parse_ok(buf, len, &p);
	cr_assert_eq(p.hdr.type, ISTH_WIRE_NACK);
	cr_expect_eq(p.hdr.sender, SELF);
	cr_expect_eq(p.hdr.job, JOB);
	cr_expect_eq(p.hdr.flags, 0, "seq ranges, not CHUNKS");
	cr_assert_eq(p.hdr.count, n);
	for (unsigned int i = 0; i < n; i++) {
		struct isth_wire_range r;

		isth_wire_get_range(&p, i, &r);
		cr_expect_eq(
			r.first, want[i].first, "range %u first %lu", i, (unsigned long)r.first);
		cr_expect_eq(r.last, want[i].last, "range %u last %lu", i, (unsigned long)r.last);
	}
}

static void
expect_silence(struct edge *e, int ms)
{
	uint8_t buf[2048];

	cr_expect_eq(
		edge_recv(e, buf, sizeof(buf), ms), 0, "island sent something it should not have");
}

Test(island, gaps_are_nacked_resent_or_gone_and_reported)
{
	struct isth_island_stats st;
	const uint64_t peers = 1u << 0 | 1u << 2;
	const struct isth_wire_range gaps[2] = {{1, 1}, {3, 4}};
	struct isth_island_chunk ch[NCH];
	struct isth_island_result res;
	struct isth_island_stats st0;
	struct isth_island *s;
	uint32_t t[ELEMS], out[ELEMS];
	uint8_t buf[2048];
	char why[128];
	struct edge e;
	/* seq -> (chunk, contributor): chunk c gets {0} then {2} */
	const uint32_t chunk_of[6] = {0, 0, 1, 1, 2, 2};
	const uint64_t set_of[6] = {1, 4, 1, 4, 1, 4};

	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_INT32);
	send_round(&e, 4, peers, T0 + 100 * MS);
	own_tensor_i32(t, 4);
	cr_assert_eq(isth_island_send(s, 4, t, sizeof(t)), 0);
	for (int i = 0; i < (int)NCH; i++)
		cr_assert_gt(edge_recv(&e, buf, sizeof(buf), 2000), 0); /* DATA */
	/* seqs 1, 3 and 4 are lost on the way */
	for (uint64_t q = 0; q < 6; q++)
		if (q != 1 && q != 3 && q != 4)
			send_agg(&e, ISTH_WIRE_DTYPE_INT32, 4, chunk_of[q], set_of[q], q,
				ISTH_WIRE_F_PARTIAL);
	POLL_UNTIL(s, st.aggs_summed == 3);
	/* one NACK naming both gaps */
	expect_nack(&e, gaps, 2);
	/* within the interval: no second NACK */
	advance(4 * MS);
	isth_island_poll(s, 1 * MS);
	expect_silence(&e, 30);
	/* past it: the same ranges again */
	advance(1 * MS);
	POLL_UNTIL(s, st.nacks_sent == 2);
	expect_nack(&e, gaps, 2);
	/* the edge resends 1 and 3 (twice: one is a duplicate), 4 is gone */
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 4, chunk_of[1], set_of[1], 1,
		ISTH_WIRE_F_PARTIAL | ISTH_WIRE_F_RESENT);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 4, chunk_of[3], set_of[3], 3,
		ISTH_WIRE_F_PARTIAL | ISTH_WIRE_F_RESENT);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 4, chunk_of[1], set_of[1], 1,
		ISTH_WIRE_F_PARTIAL | ISTH_WIRE_F_RESENT);
	edge_send(&e, buf, mk_gone(buf, &(struct isth_wire_range){4, 4}, 1));
	POLL_UNTIL(s, st.gone == 1 && st.duplicates == 1);
	isth_island_stats(s, &st0);
	cr_expect_eq(st0.aggs_summed, 5);
	cr_expect_eq(st0.resent, 2);
	cr_expect_eq(st0.duplicates, 1);
	cr_expect_eq(st0.gone_seqs, 1);
	cr_expect_eq(st0.nacks_sent, 2);
	cr_expect_eq(st0.nack_seqs, 6);
	cr_expect_eq(st0.rx_type[ISTH_WIRE_GONE], 1);
	/* nothing is missing any more: no more NACKs however long we wait */
	advance(50 * MS);
	isth_island_poll(s, 1 * MS);
	expect_silence(&e, 30);
	/* the deadline passes: chunk 2 lacks island 0, and says so */
	advance(100 * MS);
	cr_assert_eq(
		isth_island_result(s, 4, out, sizeof(out), ch, NCH, &res, 2000 * MS), -ETIMEDOUT);
	cr_expect(!res.early);
	cr_expect_eq(res.complete, 2);
	cr_expect_eq(res.partial, 1);
	cr_expect_eq(res.missing, 1);
	cr_expect_eq(res.missing_set, 1u << 0);
	cr_expect_eq(ch[0].missing, 0);
	cr_expect_eq(ch[1].missing, 0);
	cr_expect_eq(ch[2].bitmap, 1u << 2 | 1u << SELF);
	cr_expect_eq(ch[2].missing, 1u << 0);
	check_sums_i32(out, ch, 4); /* the partial sum is exact for its bitmap */
	isth_island_missing_str(ch, NCH, why, sizeof(why));
	cr_expect_str_eq(why, "island 0 chunk 2");
	isth_island_stats(s, &st0);
	cr_expect_eq(st0.rounds_partial, 1);
	isth_island_close(s);
	close(e.fd);
}

/* A gap in an announced round is NACKed every interval until the round's
 * deadline, however small nack_retries is, and given up at the deadline. */
Test(island, nacks_go_on_until_the_deadline_not_a_count)
{
	struct isth_island_stats st;
	struct isth_island_conf c;
	struct isth_island *s;
	struct edge e;
	const struct isth_wire_range gap = {1, 1};

	edge_open(&e);
	c = base_conf(&e, ISTH_WIRE_DTYPE_INT32);
	c.nack_retries = 2;
	s = isth_island_open(&c);
	cr_assert_not_null(s);
	e.island_port = isth_island_local_port(s);
	send_round(&e, 2, 1u << 0, T0 + 100 * MS);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 2, 0, 1u << 0, 0, 0);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 2, 2, 1u << 0, 2, 0);
	POLL_UNTIL(s, st.nacks_sent == 1);
	expect_nack(&e, &gap, 1);
	/* at T0 + 5, 10, ... 95 ms: 19 more, 20 in all (100 ms / 5 ms) */
	for (unsigned int k = 2; k <= 20; k++) {
		advance(5 * MS);
		POLL_UNTIL(s, st.nacks_sent == k);
		expect_nack(&e, &gap, 1);
	}
	cr_expect_eq(st.lost_seqs, 0);
	/* the deadline: given up, and silent from then on */
	advance(5 * MS);
	POLL_UNTIL(s, st.lost_seqs == 1);
	cr_expect_eq(st.nacks_sent, 20);
	advance(5 * MS);
	isth_island_poll(s, 1 * MS);
	expect_silence(&e, 30);
	isth_island_close(s);
	close(e.fd);
}

/* Without a ROUND for the gap's round, its deadline is unknown: the gap
 * gets nack_retries NACKs. */
Test(island, nacks_give_up_after_retries_when_the_round_is_unknown)
{
	struct isth_island_stats st;
	struct isth_island_conf c;
	struct isth_island *s;
	struct edge e;
	const struct isth_wire_range gap = {1, 1};

	edge_open(&e);
	c = base_conf(&e, ISTH_WIRE_DTYPE_INT32);
	c.nack_retries = 2;
	s = isth_island_open(&c);
	cr_assert_not_null(s);
	e.island_port = isth_island_local_port(s);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 2, 0, 1u << 0, 0, 0);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 2, 2, 1u << 0, 2, 0);
	POLL_UNTIL(s, st.nacks_sent == 1);
	expect_nack(&e, &gap, 1);
	advance(5 * MS);
	POLL_UNTIL(s, st.nacks_sent == 2);
	expect_nack(&e, &gap, 1);
	advance(5 * MS);
	POLL_UNTIL(s, st.lost_seqs == 1);
	expect_silence(&e, 30);
	isth_island_close(s);
	close(e.fd);
}

Test(island, tail_loss_is_probed)
{
	struct isth_island_stats st;
	struct isth_island_chunk ch[NCH];
	struct isth_island_conf c;
	struct isth_island *s;
	uint32_t out[ELEMS];
	uint8_t buf[2048];
	struct isth_wire_pkt p;
	struct isth_wire_range r;
	struct edge e;
	size_t n;

	edge_open(&e);
	c = base_conf(&e, ISTH_WIRE_DTYPE_INT32);
	c.probe_ns = 10 * MS;
	s = isth_island_open(&c);
	cr_assert_not_null(s);
	e.island_port = isth_island_local_port(s);
	send_round(&e, 6, 1u << 0, T0 + 100 * MS);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 6, 0, 1u << 0, 40, 0);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 6, 1, 1u << 0, 41, 0);
	/* seq 42 (chunk 2) is lost and nothing follows it */
	POLL_UNTIL(s, st.aggs_summed == 2);
	isth_island_poll(s, 1 * MS);
	expect_silence(&e, 20);
	advance(10 * MS);
	POLL_UNTIL(s, st.probes_sent == 1);
	n = edge_recv(&e, buf, sizeof(buf), 2000);
	cr_assert_gt(n, 0);
	parse_ok(buf, n, &p);
	cr_assert_eq(p.hdr.type, ISTH_WIRE_NACK);
	cr_assert_eq(p.hdr.count, 1);
	cr_expect_eq(p.hdr.round, 6);
	isth_wire_get_range(&p, 0, &r);
	cr_expect_eq(r.first, 42);
	cr_expect_eq(r.last, 42 + 31);
	/* the edge has 42, not the rest */
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 6, 2, 1u << 0, 42, ISTH_WIRE_F_RESENT);
	edge_send(&e, buf, mk_gone(buf, &(struct isth_wire_range){43, 73}, 1));
	cr_assert_eq(isth_island_result(s, 6, out, sizeof(out), ch, NCH, NULL, 2000 * MS), 0);
	check_sums_i32(out, ch, 6);
	POLL_UNTIL(s, st.gone == 1);
	cr_expect_eq(st.gone_seqs, 0, "GONE past the stream is not a loss");
	cr_expect_eq(st.nacks_sent, 0);
	cr_expect_eq(st.resent, 1);
	isth_island_close(s);
	close(e.fd);
}

Test(island, restarted_edge_resyncs_the_stream)
{
	struct isth_island_stats st;
	struct isth_island *s;
	struct edge e;

	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_INT32);
	send_round(&e, 3, 1u << 0, T0 + 100 * MS);
	for (uint32_t c = 0; c < NCH; c++)
		send_agg(&e, ISTH_WIRE_DTYPE_INT32, 3, c, 1u << 0, 100 + c, 0);
	POLL_UNTIL(s, st.aggs_summed == 3);
	/* a fresh edge numbers from 0 again, for the next round */
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 4, 0, 1u << 0, 0, 0);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 4, 1, 1u << 0, 1, 0);
	POLL_UNTIL(s, st.aggs_summed == 5);
	cr_expect_eq(st.seq_resyncs, 1);
	cr_expect_eq(st.duplicates, 0);
	cr_expect_eq(st.nacks_sent, 0);
	/* but a duplicate of the old round is still a duplicate */
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 4, 1, 1u << 0, 1, 0);
	POLL_UNTIL(s, st.duplicates == 1);
	cr_expect_eq(st.seq_resyncs, 1);
	isth_island_close(s);
	close(e.fd);
}

/* ---- AGG streams (doc/protocol.md, "AGG streams") -------------------------- */

/* The stream field is flag bits 12..15: the high nibble of byte 4, set by
 * hand here (independent of the library's builder). */
static void
send_agg_in(struct edge *e, uint8_t stream, uint32_t round, uint32_t c, uint64_t set, uint64_t seq,
	uint16_t flags)
{
	uint8_t buf[2048];
	size_t n = mk_agg(buf, ISTH_WIRE_DTYPE_INT32, round, c, set, seq, flags);

	buf[4] |= (uint8_t)(stream << 4);
	edge_send(e, buf, n);
}

/* A ROUND saying the edge sends @streams AGG streams (field: streams - 1). */
static void
send_round_streams(
	struct edge *e, uint32_t round, uint64_t expected, uint64_t deadline, unsigned int streams)
{
	uint8_t buf[2048];
	size_t n = mk_round(buf, round, expected, expected | (1ull << SELF), deadline);

	buf[4] |= (uint8_t)((streams - 1) << 4);
	edge_send(e, buf, n);
}

/* Receive one NACK and check its stream and single range. */
static void
expect_nack_in(struct edge *e, uint8_t stream, uint64_t first, uint64_t last)
{
	uint8_t buf[2048];
	struct isth_wire_pkt p;
	struct isth_wire_range r;
	size_t len = edge_recv(e, buf, sizeof(buf), 2000);

	cr_assert_gt(len, 0, "no NACK");
	parse_ok(buf, len, &p);
	cr_assert_eq(p.hdr.type, ISTH_WIRE_NACK);
	cr_expect_eq(buf[4] >> 4, stream, "NACK for stream %u, want %u", buf[4] >> 4, stream);
	cr_expect_eq(p.hdr.stream, stream);
	cr_expect_eq(p.hdr.flags, 0, "seq ranges, not CHUNKS");
	cr_assert_eq(p.hdr.count, 1);
	isth_wire_get_range(&p, 0, &r);
	cr_expect_eq(r.first, first);
	cr_expect_eq(r.last, last);
}

/*
 * Two AGG streams numbered independently, here with the same seqs: stream
 * 0 carries chunks 0 and 2, stream 1 chunk 1. A seq lost in stream 1 is
 * NACKed in stream 1 alone and repaired; stream 0 is never NACKed; the
 * sums are exact. Followed as one stream, stream 1's seqs 100 and 102
 * would be duplicates of stream 0's and the sums short.
 */
Test(island, two_agg_streams_are_followed_and_nacked_each)
{
	const uint64_t peers = 1u << 0 | 1u << 2 | 1u << 3;
	const uint64_t sets[3] = {1u << 0, 1u << 2, 1u << 3};
	struct isth_island_chunk ch[NCH];
	struct isth_island_result res;
	struct isth_island_stats st;
	struct isth_island *s;
	uint32_t t[ELEMS], out[ELEMS];
	uint8_t buf[2048];
	struct edge e;
	uint64_t q;

	lim.n_streams = ISTH_WIRE_MAX_STREAMS; /* to parse the island's NACKs */
	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_INT32);
	isth_island_stats(s, &st);
	cr_expect_eq(st.agg_streams, 1);
	/* before any ROUND says so, stream 1 is not followed */
	send_agg_in(&e, 1, 5, 1, sets[0], 100, ISTH_WIRE_F_PARTIAL);
	POLL_UNTIL(s, st.drop[ISTH_ISLAND_DROP_agg_stream] == 1);
	cr_expect_eq(st.aggs_summed, 0);

	send_round_streams(&e, 5, peers, T0 + 100 * MS, 2);
	POLL_UNTIL(s, st.rounds_announced == 1);
	cr_expect_eq(st.agg_streams, 2);
	own_tensor_i32(t, 5);
	cr_assert_eq(isth_island_send(s, 5, t, sizeof(t)), 0);
	for (int i = 0; i < (int)NCH; i++)
		cr_assert_gt(edge_recv(&e, buf, sizeof(buf), 2000), 0); /* DATA */
	/* stream 0: chunks 0 and 2, seqs 100..105 */
	q = 100;
	for (uint32_t c = 0; c < NCH; c += 2)
		for (int k = 0; k < 3; k++)
			send_agg_in(&e, 0, 5, c, sets[k], q++, ISTH_WIRE_F_PARTIAL);
	/* stream 1: chunk 1, seqs 100..102, 101 lost */
	send_agg_in(&e, 1, 5, 1, sets[0], 100, ISTH_WIRE_F_PARTIAL);
	send_agg_in(&e, 1, 5, 1, sets[2], 102, ISTH_WIRE_F_PARTIAL);
	POLL_UNTIL(s, st.aggs_summed == 8);
	cr_expect_eq(st.duplicates, 0);
	expect_nack_in(&e, 1, 101, 101);
	/* a stream the edge did not announce (it sends 2): dropped, counted;
	 * a GONE of stream 0 for 101 (stream 0 has 101) changes nothing */
	send_agg_in(&e, 2, 5, 1, sets[1], 101, ISTH_WIRE_F_PARTIAL);
	edge_send(&e, buf, mk_gone(buf, &(struct isth_wire_range){101, 101}, 1));
	POLL_UNTIL(s, st.drop[ISTH_ISLAND_DROP_agg_stream] == 2 && st.gone == 1);
	cr_expect_eq(st.aggs_summed, 8);
	/* stream 0's GONE for 101 did not touch stream 1's gap: NACKed again */
	advance(5 * MS);
	POLL_UNTIL(s, st.nacks_sent == 2);
	expect_nack_in(&e, 1, 101, 101);
	cr_expect_eq(st.gone_seqs, 0);
	/* the repair, in stream 1 */
	send_agg_in(&e, 1, 5, 1, sets[1], 101, ISTH_WIRE_F_PARTIAL | ISTH_WIRE_F_RESENT);
	POLL_UNTIL(s, st.aggs_summed == 9);
	cr_assert_eq(isth_island_result(s, 5, out, sizeof(out), ch, NCH, &res, 2000 * MS), 0);
	cr_expect(res.early);
	cr_expect_eq(res.complete, NCH);
	for (uint32_t c = 0; c < NCH; c++)
		cr_expect_eq(ch[c].bitmap, peers | 1u << SELF);
	check_sums_i32(out, ch, 5);
	isth_island_stats(s, &st);
	cr_expect_eq(st.nacks_sent, 2);
	cr_expect_eq(st.nack_seqs, 2);
	cr_expect_eq(st.resent, 1);
	cr_expect_eq(st.lost_seqs, 0);
	isth_island_close(s);
	close(e.fd);
}

/* A ROUND cannot make the island follow more than the field holds, and a
 * GONE names seqs of its own stream only. */
Test(island, gone_is_per_stream_and_streams_are_bounded)
{
	struct isth_island_stats st;
	struct isth_island *s;
	uint8_t buf[2048];
	struct edge e;
	size_t n;

	lim.n_streams = ISTH_WIRE_MAX_STREAMS;
	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_INT32);
	send_round_streams(&e, 5, 1u << 0, T0 + 100 * MS, ISTH_WIRE_MAX_STREAMS);
	POLL_UNTIL(s, st.rounds_announced == 1);
	cr_expect_eq(st.agg_streams, ISTH_WIRE_MAX_STREAMS);
	/* stream 15: seqs 7 and 9 arrive, 8 is missing and NACKed */
	send_agg_in(&e, 15, 5, 0, 1u << 0, 7, 0);
	send_agg_in(&e, 15, 5, 2, 1u << 0, 9, 0);
	POLL_UNTIL(s, st.aggs_summed == 2);
	expect_nack_in(&e, 15, 8, 8);
	/* a GONE for 8 in stream 14 changes nothing in stream 15 */
	n = mk_gone(buf, &(struct isth_wire_range){8, 8}, 1);
	buf[4] |= 14 << 4;
	edge_send(&e, buf, n);
	POLL_UNTIL(s, st.gone == 1);
	cr_expect_eq(st.gone_seqs, 0);
	/* in stream 15 it gives the seq up */
	n = mk_gone(buf, &(struct isth_wire_range){8, 8}, 1);
	buf[4] |= 15 << 4;
	edge_send(&e, buf, n);
	POLL_UNTIL(s, st.gone == 2);
	cr_expect_eq(st.gone_seqs, 1);
	advance(50 * MS);
	isth_island_poll(s, 1 * MS);
	expect_silence(&e, 30);
	isth_island_close(s);
	close(e.fd);
}

/* ---- bad input ------------------------------------------------------------- */

Test(island, malformed_and_foreign_packets_are_counted_by_name)
{
	struct isth_island_stats st;
	const uint64_t peers = 1u << 0 | 1u << 2;
	struct isth_island_chunk ch[NCH];
	struct isth_island *s;
	uint32_t out[ELEMS];
	uint8_t buf[2048];
	struct edge e;
	uint16_t other_port;
	int other;
	size_t n;

	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_INT32);
	send_round(&e, 9, peers, T0 + 100 * MS);
	POLL_UNTIL(s, st.rounds_announced == 1);

	/* wire refusals: truncated header, magic, version, bad AGG length */
	edge_send(&e, "IS", 2);
	n = mk_agg(buf, ISTH_WIRE_DTYPE_INT32, 9, 0, 1, 0, 0);
	buf[0] = 'X';
	edge_send(&e, buf, n);
	buf[0] = 0x49;
	buf[2] = 2;
	edge_send(&e, buf, n);
	buf[2] = 1;
	edge_send(&e, buf, n - 4);
	POLL_UNTIL(s, st.rx_packets == 5);
	cr_expect_eq(st.wire_drop[ISTH_WIRE_E_HDR_TRUNC], 1);
	cr_expect_eq(st.wire_drop[ISTH_WIRE_E_MAGIC], 1);
	cr_expect_eq(st.wire_drop[ISTH_WIRE_E_VERSION], 1);
	cr_expect_eq(st.wire_drop[ISTH_WIRE_E_LENGTH], 1);

	/* island refusals before sequence accounting: job, sender, type,
	 * source (their seqs are never tracked) */
	n = mk_agg(buf, ISTH_WIRE_DTYPE_INT32, 9, 0, 1, 50, 0);
	buf[11] ^= 1; /* job */
	edge_send(&e, buf, n);
	buf[11] ^= 1;
	buf[20] = 2; /* sender: another island */
	edge_send(&e, buf, n);
	buf[20] = SELF;
	buf[3] = ISTH_WIRE_DATA; /* DATA from the edge */
	buf[39] = 1u << SELF; /* DATA bitmap: the sender's bit */
	edge_send(&e, buf, n);
	other = fix_udp_socket(&other_port);
	n = mk_agg(buf, ISTH_WIRE_DTYPE_INT32, 9, 0, 1, 50, 0);
	raw_send(other, e.island_port, buf, n);
	POLL_UNTIL(s, st.rx_packets == 9);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_job], 1);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_sender], 1);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_type], 1);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_source], 1);

	/* well-formed AGGs that cannot be summed, consecutive seqs 0..5 */
	n = mk_agg(buf, ISTH_WIRE_DTYPE_INT32, 9, 0, 1u << 0 | 1u << SELF, 0, 0);
	edge_send(&e, buf, n); /* self */
	n = mk_agg(buf, ISTH_WIRE_DTYPE_INT32, 9, 0, 1u << 3, 1, 0);
	edge_send(&e, buf, n); /* clique */
	n = mk_agg(buf, ISTH_WIRE_DTYPE_INT32, 9, 2, 1u << 0, 2, 0);
	buf[19] = 1; /* chunk 1, */
	edge_send(&e, buf, n); /* 100 elems */
	n = mk_agg(buf, ISTH_WIRE_DTYPE_INT32, 9, 0, 1u << 0, 3, 0);
	buf[19] = 9;
	edge_send(&e, buf, n); /* chunk 9 */
	n = mk_agg(buf, ISTH_WIRE_DTYPE_FP32, 9, 0, 1u << 0, 4, 0);
	edge_send(&e, buf, n); /* dtype */
	n = mk_agg(buf, ISTH_WIRE_DTYPE_INT32, 5, 0, 1u << 0, 5, 0);
	edge_send(&e, buf, n); /* round 5: 4 behind the newest */
	POLL_UNTIL(s, st.rx_packets == 15);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_agg_self], 1);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_agg_clique], 1);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_agg_count], 1);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_agg_chunk], 1);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_agg_dtype], 1);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_round_old], 1);
	cr_expect_eq(st.aggs_summed, 0);

	/* the good ones, one overlapping (a contribution twice under two
	 * seqs), and a duplicate ROUND */
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 9, 0, peers, 6, 0);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 9, 1, 1u << 2, 7, ISTH_WIRE_F_PARTIAL);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 9, 1, 1u << 2 | 1u << 0, 8, 0);
	send_round(&e, 9, peers, T0 + 100 * MS);
	POLL_UNTIL(s, st.rx_packets == 19);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_agg_overlap], 1);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_round_dup], 1);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 9, 1, 1u << 0, 9, ISTH_WIRE_F_PARTIAL);
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 9, 2, peers, 10, 0);
	cr_assert_eq(isth_island_result(s, 9, out, sizeof(out), ch, NCH, NULL, 2000 * MS), 0);
	check_sums_i32(out, ch, 9);
	for (uint32_t c = 0; c < NCH; c++)
		cr_expect_eq(ch[c].bitmap, peers);
	isth_island_stats(s, &st);
	cr_expect_eq(st.rx_packets, 21);
	cr_expect_eq(st.aggs_summed, 4);
	cr_expect_eq(st.nacks_sent, 0, "refused AGGs still fill the seq space");
	cr_expect_eq(st.duplicates, 0);
	isth_island_close(s);
	close(other);
	close(e.fd);
}

Test(island, round_of_the_wrong_shape_is_an_error)
{
	struct isth_island_round ri;
	struct isth_wire_round b = {
		.start_ns = T0,
		.deadline_ns = T0 + 1,
		.period_ns = 1,
		.clique = 3,
		.n_chunks = NCH + 1,
		.chunk_elems = CE,
	};
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_ROUND,
		.sender = SELF,
		.job = JOB,
		.round = 2,
		.bitmap = 1,
	};
	uint8_t body[40], buf[128];
	struct isth_island *s;
	struct edge e;
	int n;

	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_INT32);
	cr_expect_eq(isth_island_wait_round(s, 0, &ri), -ETIMEDOUT);
	isth_wire_put_round(body, sizeof(body), &b);
	n = isth_wire_build_msg(buf, sizeof(buf), &h, body, 40, NULL);
	edge_send(&e, buf, (size_t)n);
	cr_expect_eq(isth_island_wait_round(s, 2000 * MS, &ri), -EPROTO);
	cr_expect_eq(ri.n_chunks, NCH + 1);
	cr_expect_eq(ri.round, 2);
	cr_expect_eq(isth_island_wait_round(s, 0, &ri), -ETIMEDOUT);
	isth_island_close(s);
	close(e.fd);
}

Test(island, result_without_round_times_out)
{
	struct isth_island_chunk ch[NCH];
	struct isth_island *s;
	uint32_t out[ELEMS];
	struct edge e;

	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_INT32);
	cr_expect_eq(isth_island_result(s, 1, out, sizeof(out), ch, NCH, NULL, 20 * MS), -ENOENT);
	cr_expect_eq(isth_island_result(s, 1, out, sizeof(out), ch, NCH - 1, NULL, 0), -ENOSPC);
	cr_expect_eq(isth_island_result(s, 1, out, sizeof(out) - 1, ch, NCH, NULL, 0), -ENOSPC);
	isth_island_close(s);
	close(e.fd);
}

Test(island, rounds_are_returned_in_order_and_old_ones_go)
{
	struct isth_island_stats st;
	struct isth_island_chunk ch[NCH];
	struct isth_island_round ri;
	struct isth_island *s;
	uint32_t out[ELEMS], t[ELEMS];
	struct edge e;

	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_INT32);
	/* peers-free rounds complete at once; ROUNDs arrive out of order */
	send_round(&e, 21, 0, T0 + 100 * MS);
	send_round(&e, 20, 0, T0 + 100 * MS);
	POLL_UNTIL(s, st.rounds_announced == 2);
	cr_assert_eq(isth_island_wait_round(s, 0, &ri), 0);
	cr_expect_eq(ri.round, 20);
	cr_assert_eq(isth_island_wait_round(s, 0, &ri), 0);
	cr_expect_eq(ri.round, 21);
	cr_expect_eq(isth_island_wait_round(s, 0, &ri), -ETIMEDOUT);
	own_tensor_i32(t, 20);
	cr_assert_eq(isth_island_send(s, 20, t, sizeof(t)), 0);
	cr_assert_eq(isth_island_result(s, 20, out, sizeof(out), ch, NCH, NULL, 0), 0);
	for (uint32_t i = 0; i < ELEMS; i++)
		cr_assert_eq(out[i], val_i32(SELF, 20, i));
	cr_expect_eq(isth_island_send(s, 20, t, sizeof(t)), -ESTALE);
	/* round 25 takes round 21's slot (deadline passed); 21 is gone */
	advance(200 * MS);
	send_round(&e, 25, 0, T0 + 400 * MS);
	POLL_UNTIL(s, st.rounds_announced == 3);
	cr_expect_eq(isth_island_result(s, 21, out, sizeof(out), ch, NCH, NULL, 0), -ESTALE);
	cr_expect_eq(isth_island_send(s, 19, t, sizeof(t)), -ESTALE);
	isth_island_close(s);
	close(e.fd);
}

/* ---- threads ----------------------------------------------------------------- */

struct waiter {
	struct isth_island *s;
	uint32_t out[ELEMS];
	struct isth_island_chunk ch[NCH];
	int rc;
};

static void *
result_thread(void *arg)
{
	struct waiter *w = arg;

	w->rc = isth_island_result(w->s, 12, w->out, sizeof(w->out), w->ch, NCH, NULL, 5000 * MS);
	return NULL;
}

static void *
poll_thread(void *arg)
{
	struct isth_island_stats st;
	struct waiter *w = arg;

	for (int i = 0; i < 1000; i++) {
		isth_island_stats(w->s, &st);
		if (st.rounds_complete)
			break;
		isth_island_poll(w->s, 2 * MS);
	}
	return NULL;
}

Test(island, concurrent_waiters_share_the_socket)
{
	const uint64_t peers = 1u << 0 | 1u << 2 | 1u << 3;
	struct waiter w1, w2;
	pthread_t t1, t2, t3;
	uint32_t t[ELEMS];
	struct edge e;

	edge_open(&e);
	w1.s = w2.s = open_island(&e, ISTH_WIRE_DTYPE_INT32);
	cr_assert_eq(pthread_create(&t1, NULL, result_thread, &w1), 0);
	cr_assert_eq(pthread_create(&t2, NULL, result_thread, &w2), 0);
	cr_assert_eq(pthread_create(&t3, NULL, poll_thread, &w1), 0);
	send_round(&e, 12, peers, T0 + 100 * MS);
	own_tensor_i32(t, 12);
	cr_assert_eq(isth_island_send(w1.s, 12, t, sizeof(t)), 0);
	for (uint32_t c = 0; c < NCH; c++)
		for (unsigned int k = 0; k < 3; k++)
			send_agg(&e, ISTH_WIRE_DTYPE_INT32, 12, c, 1u << (k == 0 ? 0 : k + 1),
				3 * c + k, ISTH_WIRE_F_PARTIAL);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	pthread_join(t3, NULL);
	cr_expect_eq(w1.rc, 0);
	cr_expect_eq(w2.rc, 0);
	check_sums_i32(w1.out, w1.ch, 12);
	check_sums_i32(w2.out, w2.ch, 12);
	cr_expect_eq(w1.ch[0].bitmap, 0xf);
	isth_island_close(w1.s);
	close(e.fd);
}

/* ---- the missing-set text ------------------------------------------------------ */

Test(island, missing_str_names_contributors_and_chunk_ranges)
{
	struct isth_island_chunk ch[8];
	char buf[128];
	int n;

	memset(ch, 0, sizeof(ch));
	cr_expect_eq(isth_island_missing_str(ch, 8, buf, sizeof(buf)), 4);
	cr_expect_str_eq(buf, "none");
	for (int c = 0; c < 8; c++)
		ch[c].missing = (c <= 2 || c == 5) ? 1u << 2 : 0;
	ch[7].missing |= 1u << 4;
	n = isth_island_missing_str(ch, 8, buf, sizeof(buf));
	cr_expect_str_eq(buf, "island 2 chunks 0-2,5; island 4 chunk 7");
	cr_expect_eq(n, (int)strlen(buf));
	n = isth_island_missing_str(ch, 8, buf, 12);
	cr_expect_eq(n, (int)strlen("island 2 chunks 0-2,5; island 4 chunk 7"));
	cr_expect_str_eq(buf, "island 2...");
}

/* ---- bf16 ------------------------------------------------------------------ */

/* Quarters in [-32, 32): at most 8 significant bits, exact in bf16. */
static int
val_q(unsigned int k, uint32_t r, uint32_t i)
{
	return (int)(((k + 1) * 131u + r * 17u + i * 7u) % 256u) - 128;
}

static int
sum_q(uint64_t set, uint32_t r, uint32_t i)
{
	int s = 0;

	for (unsigned int k = 0; k < 64; k++)
		if (set & (1ull << k))
			s += val_q(k, r, i);
	return s;
}

static uint16_t
top16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16);
}

/*
 * x rounded to bf16 (8 significant bits), nearest, ties to even, computed
 * with arithmetic rather than with the bit trick the library uses.
 */
static float
bf16_round_ref(double x)
{
	int e;

	if (x == 0)
		return 0.0f;
	frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
	double ulp = ldexp(1.0, e - 8);

	return (float)(nearbyint(x / ulp) * ulp); /* FE_TONEAREST */
}

/* An AGG of chunk @c carrying @vals (the chunk's elements) as @dtype. */
static void
send_agg_vals(struct edge *e, uint8_t dtype, uint32_t round, uint32_t c, uint64_t set, uint64_t seq,
	const float *vals)
{
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_AGG,
		.dtype = dtype,
		.sender = SELF,
		.count = (uint16_t)clen(c),
		.job = JOB,
		.round = round,
		.chunk = c,
		.seq = seq,
		.bitmap = set,
	};
	uint8_t body[4 * CE], buf[2048];
	size_t es = dtype == ISTH_WIRE_DTYPE_BF16 ? 2 : 4;
	int n;

	for (uint32_t i = 0; i < clen(c); i++) {
		uint32_t v;

		memcpy(&v, &vals[i], 4);
		if (es == 2)
			v >>= 16; /* vals are bf16-exact here */
		for (size_t b = 0; b < es; b++)
			body[es * i + b] = (uint8_t)(v >> (8 * b));
	}
	n = isth_wire_build_msg(buf, sizeof(buf), &h, body, clen(c) * es, NULL);
	cr_assert_gt(n, 0);
	edge_send(e, buf, (size_t)n);
}

/* Read the @NCH DATA packets of @round and check them against @want. */
static void
expect_bf16_data(struct edge *e, uint32_t round, const uint16_t *want)
{
	uint8_t buf[2048];

	for (uint32_t c = 0; c < NCH; c++) {
		struct isth_wire_pkt p;
		size_t n = edge_recv(e, buf, sizeof(buf), 2000);

		cr_assert_gt(n, 0, "DATA chunk %u never came", c);
		parse_ok(buf, n, &p);
		cr_assert_eq(p.hdr.type, ISTH_WIRE_DATA);
		cr_expect_eq(p.hdr.dtype, ISTH_WIRE_DTYPE_BF16);
		cr_expect_eq(p.hdr.round, round);
		cr_expect_eq(p.hdr.chunk, c);
		cr_expect_eq(p.hdr.count, clen(c));
		cr_assert_eq(p.payload_size, 2 * clen(c), "2 bytes an element");
		for (uint32_t i = 0; i < clen(c); i++) {
			uint16_t v = (uint16_t)(p.payload[2 * i] | p.payload[2 * i + 1] << 8);

			cr_assert_eq(v, want[c * CE + i], "round %u chunk %u elem %u: %04x", round,
				c, i, v);
		}
	}
}

/*
 * bf16 end to end: DATA leaves as bf16 (from fp32 or bf16 input), and the
 * sums come back as fp32 AGGs or as bf16 AGGs ([agg] bf16_out), both
 * summed in fp32 with the island's own (bf16) contribution.
 */
Test(island, bf16_goes_out_as_bf16_and_sums_in_fp32)
{
	const uint64_t peers = 1u << 0 | 1u << 2 | 1u << 3;
	struct isth_island_chunk ch[NCH];
	struct isth_island_stats st;
	struct isth_island *s;
	static float t[ELEMS], out[ELEMS], v[ELEMS];
	static uint16_t w[ELEMS];
	struct edge e;

	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_BF16);
	cr_expect_eq(isth_island_chunk_elems(s), CE, "chunks as the edge cuts them");
	cr_expect_eq(isth_island_n_chunks(s), NCH);
	cr_expect_eq(isth_island_send(s, 1, t, ELEMS * 2 + 2), -EINVAL);

	/* round 1: fp32 in, bf16 out, fp32 AGGs back */
	send_round(&e, 1, peers, T0 + 100 * MS);
	for (uint32_t i = 0; i < ELEMS; i++) {
		t[i] = (float)val_q(SELF, 1, i) / 4.0f;
		w[i] = top16(t[i]); /* exact: truncation is rounding */
	}
	cr_assert_eq(isth_island_send(s, 1, t, sizeof(t)), 0);
	expect_bf16_data(&e, 1, w);
	for (uint32_t c = 0; c < NCH; c++) {
		for (uint32_t i = 0; i < clen(c); i++)
			v[i] = (float)sum_q(peers, 1, c * CE + i) / 4.0f;
		send_agg_vals(&e, ISTH_WIRE_DTYPE_FP32, 1, c, peers, c, v);
	}
	cr_assert_eq(isth_island_result(s, 1, out, sizeof(out), ch, NCH, NULL, 2000 * MS), 0);
	for (uint32_t i = 0; i < ELEMS; i++)
		cr_assert_eq(out[i], (float)sum_q(peers | 1u << SELF, 1, i) / 4.0f, "elem %u", i);

	/* round 2: bf16 in, bf16 AGGs (rounded sums) back */
	send_round(&e, 2, peers, T0 + 200 * MS);
	for (uint32_t i = 0; i < ELEMS; i++)
		w[i] = top16((float)val_q(SELF, 2, i) / 4.0f);
	cr_assert_eq(isth_island_send(s, 2, w, sizeof(w)), 0);
	expect_bf16_data(&e, 2, w);
	for (uint32_t c = 0; c < NCH; c++) {
		for (uint32_t i = 0; i < clen(c); i++)
			v[i] = bf16_round_ref(sum_q(peers, 2, c * CE + i) / 4.0);
		send_agg_vals(&e, ISTH_WIRE_DTYPE_BF16, 2, c, peers, NCH + c, v);
	}
	/* an int32 AGG is no sum of bf16 */
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 2, 0, 1u << 0, 2 * NCH, 0);
	cr_assert_eq(isth_island_result(s, 2, out, sizeof(out), ch, NCH, NULL, 2000 * MS), 0);
	for (uint32_t i = 0; i < ELEMS; i++) {
		float want =
			(float)val_q(SELF, 2, i) / 4.0f + bf16_round_ref(sum_q(peers, 2, i) / 4.0);

		cr_assert_eq(out[i], want, "elem %u: %g", i, out[i]);
	}
	POLL_UNTIL(s, st.drop[ISTH_ISLAND_DROP_agg_dtype] == 1);
	cr_expect_eq(st.data_tx_bytes, 2 * ELEMS * 2);
	cr_expect_eq(st.aggs_summed, 2 * NCH);
	isth_island_close(s);
	close(e.fd);
}

/* fp32 handed to a bf16 session is rounded as the edge rounds its output. */
Test(island, bf16_rounds_fp32_input_to_nearest_even)
{
	static const struct {
		uint32_t in;
		uint16_t out;
	} cases[] = {
		{0x3f808000, 0x3f80}, /* 1 + 2^-8: tie, down to even */
		{0x3f818000, 0x3f82}, /* 1 + 3 * 2^-8: tie, up to even */
		{0x3f808001, 0x3f81}, /* just above the tie */
		{0xbf808000, 0xbf80}, /* the sign does not matter */
		{0x7f800001, 0x7fc0}, /* signalling NaN: quiet, not inf */
		{0xffc00001, 0xffc0}, /* quiet NaN keeps its sign */
		{0x7f7fffff, 0x7f80}, /* FLT_MAX rounds to inf */
		{0x00000001, 0x0000}, /* smallest subnormal: to zero */
		{0x3f800000, 0x3f80}, /* exact */
	};
	const size_t n = sizeof(cases) / sizeof(cases[0]);
	static float t[ELEMS];
	static uint16_t w[ELEMS];
	struct isth_island *s;
	struct edge e;

	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_BF16);
	memset(t, 0, sizeof(t));
	memset(w, 0, sizeof(w));
	for (size_t i = 0; i < n; i++) {
		memcpy(&t[i], &cases[i].in, 4);
		w[i] = cases[i].out;
	}
	cr_assert_eq(isth_island_send(s, 4, t, sizeof(t)), 0);
	expect_bf16_data(&e, 4, w);
	isth_island_close(s);
	close(e.fd);
}

/* ---- overlapping rounds ------------------------------------------------------ */

/*
 * Three rounds in flight: each is summed in its own slot whatever the
 * order their AGGs arrive in; ready() says when one has ended without
 * blocking past it; a fourth send that needs a live round's slot is
 * refused until that round has been taken.
 */
Test(island, overlapping_rounds_keep_their_own_sums)
{
	const uint64_t peers = 1u << 0 | 1u << 2;
	const uint64_t all = peers | 1u << SELF;
	struct isth_island_chunk ch[NCH];
	struct isth_island_result res;
	struct isth_island_stats st;
	struct isth_island *s;
	uint32_t t[ELEMS], out[ELEMS];
	struct edge e;
	uint64_t seq = 0;

	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_INT32);
	for (uint32_t r = 1; r <= 3; r++) {
		send_round(&e, r, peers, T0 + r * 100 * MS);
		own_tensor_i32(t, r);
		cr_assert_eq(isth_island_send(s, r, t, sizeof(t)), 0,
			"round %u sent while earlier rounds are open", r);
	}
	cr_expect_eq(isth_island_ready(s, 1, 0), -EAGAIN);
	/* round 2 first, then part of round 1 (late), then round 3 */
	for (uint32_t c = 0; c < NCH; c++)
		send_agg(&e, ISTH_WIRE_DTYPE_INT32, 2, c, peers, seq++, 0);
	for (uint32_t c = 0; c < 2; c++)
		send_agg(&e, ISTH_WIRE_DTYPE_INT32, 1, c, peers, seq++, 0);
	for (uint32_t c = 0; c < NCH; c++)
		send_agg(&e, ISTH_WIRE_DTYPE_INT32, 3, c, 1u << 0, seq++, ISTH_WIRE_F_PARTIAL);
	cr_assert_eq(isth_island_ready(s, 2, 2000 * MS), 0);
	cr_assert_eq(isth_island_result(s, 2, out, sizeof(out), ch, NCH, &res, 0), 0);
	cr_expect(res.early);
	for (uint32_t c = 0; c < NCH; c++)
		cr_expect_eq(ch[c].bitmap, all);
	check_sums_i32(out, ch, 2);

	/* slot of round 4 is round 0's (never used): fine; round 5 would
	 * take round 1's, which is still live */
	own_tensor_i32(t, 4);
	cr_assert_eq(isth_island_send(s, 4, t, sizeof(t)), 0);
	own_tensor_i32(t, 5);
	cr_assert_eq(isth_island_send(s, 5, t, sizeof(t)), -EBUSY);
	cr_expect_eq(isth_island_ready(s, 1, 0), -EAGAIN, "deadline not reached");

	/* round 3's other partial arrives; round 1 passes its deadline */
	for (uint32_t c = 0; c < NCH; c++)
		send_agg(&e, ISTH_WIRE_DTYPE_INT32, 3, c, 1u << 2, seq++, ISTH_WIRE_F_PARTIAL);
	cr_assert_eq(isth_island_ready(s, 3, 2000 * MS), 0);
	advance(150 * MS);
	cr_assert_eq(isth_island_ready(s, 1, 2000 * MS), 0);
	cr_assert_eq(isth_island_result(s, 1, out, sizeof(out), ch, NCH, &res, 0), -ETIMEDOUT);
	cr_expect_eq(res.complete, 2);
	cr_expect_eq(res.partial, 1);
	cr_expect_eq(ch[2].missing, peers);
	cr_expect_eq(ch[2].bitmap, 1u << SELF);
	check_sums_i32(out, ch, 1);
	cr_assert_eq(isth_island_result(s, 3, out, sizeof(out), ch, NCH, &res, 0), 0);
	for (uint32_t c = 0; c < NCH; c++) {
		cr_expect_eq(ch[c].bitmap, all);
		cr_expect_eq(ch[c].aggs, 2);
	}
	check_sums_i32(out, ch, 3);
	/* round 1 has been taken: its slot goes to round 5 */
	cr_assert_eq(isth_island_send(s, 5, t, sizeof(t)), 0);
	cr_expect_eq(isth_island_ready(s, 1, 0), -ESTALE);
	/* a late AGG of round 1 has nowhere to go */
	send_agg(&e, ISTH_WIRE_DTYPE_INT32, 1, 2, peers, seq++, 0);
	POLL_UNTIL(s, st.drop[ISTH_ISLAND_DROP_round_old] == 1);
	cr_expect_eq(st.aggs_summed, 2 * NCH + 2 + NCH);
	cr_expect_eq(st.nacks_sent, 0, "the stream had no gap");
	isth_island_close(s);
	close(e.fd);
}

/*
 * Round 1 is past its deadline and its result not taken when ROUND 5
 * (its slot) is already queued: result(1) must not finalize round 5's
 * slot in its place (it drains the socket before giving up), but say
 * that round 1 is gone; round 5 stays open.
 */
Test(island, a_round_whose_slot_was_taken_is_stale_not_another_rounds)
{
	struct isth_island_chunk ch[NCH];
	struct isth_island_result res;
	struct isth_island_stats st;
	struct isth_island *s;
	uint32_t t[ELEMS], out[ELEMS];
	struct edge e;

	edge_open(&e);
	s = open_island(&e, ISTH_WIRE_DTYPE_INT32);
	send_round(&e, 1, 1u << 0, T0 + 100 * MS);
	own_tensor_i32(t, 1);
	cr_assert_eq(isth_island_send(s, 1, t, sizeof(t)), 0);
	POLL_UNTIL(s, st.rounds_announced == 1);
	advance(500 * MS);
	send_round(&e, 5, 1u << 0, T0 + 600 * MS); /* queued, not read */
	cr_expect_eq(isth_island_result(s, 1, out, sizeof(out), ch, NCH, &res, 0), -ESTALE);
	isth_island_stats(s, &st);
	cr_expect_eq(st.rounds_announced, 2);
	cr_expect_eq(st.rounds_partial + st.rounds_complete, 0, "nothing was finalized");
	cr_expect_eq(isth_island_ready(s, 5, 0), -EAGAIN, "round 5 is still open");
	isth_island_close(s);
	close(e.fd);
}
