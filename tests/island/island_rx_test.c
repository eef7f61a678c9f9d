/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/island receiving on several sockets, a thread per socket
 * (conf.rx_threads), against a fake edge on loopback that sends AGG stream
 * k (chunks c with c % N == k) to the island's socket k % S, as isthmusd
 * does with [access] island_sockets = S. Expected sums come from the
 * closed-form tensor formula here, never from the library. Waits poll the
 * session's counters with a bound (the threads, not the test, read the
 * sockets: without them nothing would ever be counted); time for
 * deadlines and NACKs is an injected clock. With auth on, the fake edge
 * seals with lib/auth.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "isth_auth.h"
#include "isth_island.h"
#include "isth_wire.h"

#include "island_fix.h"

#define JOB FIX_JOB
#define SELF 1u
#define N_ISLANDS FIX_N_ISLANDS
#define NCH 12u /* every stream of up to 4 has 3 chunks */
#define LOOPBACK 0x7f000001u
#define MS 1000000ull
#define T0 FIX_T0
#define PEERS (1u << 0 | 1u << 2 | 1u << 3)
#define KEY1 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

/* ---- the fake edge ------------------------------------------------------ */

struct edge {
	int fd;
	uint16_t port;
	unsigned int n_socks;
	uint16_t isl_port[ISTH_ISLAND_MAX_SOCKETS]; /* the island's sockets */
	bool auth;
	struct keys k; /* auth on: the island's key file, the edge's engine */
	uint32_t ce; /* elements per chunk (MTU 1500; 344 with auth: the tag and
		      * room for a WAN tag list of 3 peers) */
	uint32_t elems;
	uint64_t ctl_seq; /* ROUND and GONE seqs (auth: each is unique) */
};

static uint32_t
clen(const struct edge *e, uint32_t c)
{
	return c + 1 < NCH ? e->ce : e->elems - (NCH - 1) * e->ce;
}

static void
edge_open(struct edge *e, bool auth)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);

	memset(e, 0, sizeof(*e));
	e->fd = socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert_geq(e->fd, 0);
	a.sin_addr.s_addr = htonl(LOOPBACK);
	cr_assert_eq(bind(e->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(e->fd, (struct sockaddr *)&a, &len), 0);
	e->port = ntohs(a.sin_port);
	e->auth = auth;
	e->ce = auth ? 344 : 358;
	e->elems = (NCH - 1) * e->ce + 100;
	e->ctl_seq = 1000;
	if (auth)
		keys_load(&e->k, "job 7\nepoch 1 round 0 key " KEY1 "\n");
}

static void
edge_close(struct edge *e)
{
	close(e->fd);
	if (e->auth)
		keys_free(&e->k);
}

/* Seal (auth on) and send the message in @buf (cap 2048) to socket @sock. */
static void
edge_send(struct edge *e, unsigned int sock, uint8_t *buf, size_t len)
{
	struct sockaddr_in a = {.sin_family = AF_INET};

	if (e->auth) {
		int n = isth_auth_seal(e->k.e, ISTH_AUTH_DOWN, SELF, buf, len, 2048);

		cr_assert_gt(n, 0, "seal: %d", n);
		len = (size_t)n;
	}
	a.sin_addr.s_addr = htonl(LOOPBACK);
	a.sin_port = htons(e->isl_port[sock]);
	cr_assert_eq(sendto(e->fd, buf, len, 0, (struct sockaddr *)&a, sizeof(a)), (ssize_t)len);
}

/* A ROUND announcing @streams AGG streams (field: streams - 1), to socket 0. */
static void
send_round(struct edge *e, uint32_t round, unsigned int streams)
{
	struct isth_wire_round b = {
		.start_ns = T0,
		.deadline_ns = T0 + 100 * MS,
		.period_ns = 100 * MS,
		.clique = PEERS | 1u << SELF,
		.n_chunks = NCH,
		.chunk_elems = e->ce,
	};
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_ROUND,
		.sender = SELF,
		.job = JOB,
		.round = round,
		.seq = e->ctl_seq++,
		.bitmap = PEERS,
	};
	uint8_t body[ISTH_WIRE_ROUND_SIZE], buf[2048];
	int n;

	isth_wire_put_round(body, sizeof(body), &b);
	n = isth_wire_build_msg(buf, sizeof(buf), &h, body, sizeof(body), NULL);
	cr_assert_gt(n, 0);
	buf[4] |= (uint8_t)((streams - 1) << 4); /* flag bits 12..15, by hand */
	edge_send(e, 0, buf, (size_t)n);
}

/* The AGG of chunk @c from peer @peer alone, in stream @stream, to @sock. */
static void
send_agg(struct edge *e, unsigned int sock, unsigned int stream, uint32_t round, uint32_t c,
	unsigned int peer, uint64_t seq, uint16_t flags)
{
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_AGG,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.flags = flags | ISTH_WIRE_F_PARTIAL,
		.sender = SELF,
		.count = (uint16_t)clen(e, c),
		.job = JOB,
		.round = round,
		.chunk = c,
		.seq = seq,
		.bitmap = 1ull << peer,
	};
	uint8_t body[4 * 358], buf[2048];
	int n;

	for (uint32_t i = 0; i < clen(e, c); i++) {
		uint32_t v = val_i32(peer, round, c * e->ce + i);

		body[4 * i] = (uint8_t)v; /* little-endian by hand */
		body[4 * i + 1] = (uint8_t)(v >> 8);
		body[4 * i + 2] = (uint8_t)(v >> 16);
		body[4 * i + 3] = (uint8_t)(v >> 24);
	}
	n = isth_wire_build_msg(buf, sizeof(buf), &h, body, (size_t)clen(e, c) * 4, NULL);
	cr_assert_gt(n, 0);
	buf[4] |= (uint8_t)(stream << 4);
	edge_send(e, sock, buf, (size_t)n);
}

static void
send_gone(struct edge *e, unsigned int sock, unsigned int stream, uint64_t first, uint64_t last)
{
	struct isth_wire_range r = {first, last};
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_GONE,
		.sender = SELF,
		.count = 1,
		.job = JOB,
		.seq = e->ctl_seq++,
	};
	uint8_t body[16], buf[2048];
	int n;

	isth_wire_put_ranges(body, sizeof(body), &r, 1);
	n = isth_wire_build_msg(buf, sizeof(buf), &h, body, sizeof(body), NULL);
	cr_assert_gt(n, 0);
	buf[4] |= (uint8_t)(stream << 4);
	edge_send(e, sock, buf, (size_t)n);
}

/*
 * The next NACK from the island within 2 s (DATA in between is skipped):
 * its source port in @from_port, its stream and single range returned.
 */
static void
recv_nack(struct edge *e, uint16_t *from_port, unsigned int *stream, struct isth_wire_range *r)
{
	struct isth_wire_limits lim;

	cr_assert_eq(isth_wire_limits_init_auth(&lim, N_ISLANDS, 1500, e->auth), 0);
	lim.n_streams = ISTH_WIRE_MAX_STREAMS;
	for (int tries = 0; tries < 64; tries++) {
		struct pollfd p = {.fd = e->fd, .events = POLLIN};
		struct sockaddr_in a;
		socklen_t alen = sizeof(a);
		struct isth_wire_pkt pk;
		uint8_t buf[2048];
		ssize_t n;

		cr_assert_gt(poll(&p, 1, 2000), 0, "no NACK from the island");
		n = recvfrom(e->fd, buf, sizeof(buf), 0, (struct sockaddr *)&a, &alen);
		cr_assert_gt(n, 0);
		if (buf[ISTH_WIRE_OFF_TYPE] != ISTH_WIRE_NACK)
			continue;
		if (e->auth)
			cr_assert_eq(isth_auth_verify(e->k.e, ISTH_AUTH_UP, SELF, buf, (size_t)n),
				ISTH_AUTH_OK);
		cr_assert_eq(isth_wire_parse_msg(buf, (size_t)n, &lim, &pk), ISTH_WIRE_OK);
		cr_assert_eq(pk.hdr.count, 1);
		*from_port = ntohs(a.sin_port);
		*stream = buf[4] >> 4;
		isth_wire_get_range(&pk, 0, r);
		return;
	}
	cr_assert_fail("no NACK among 64 datagrams");
}

/* Read and discard what the island sent (its DATA), until quiet for 50 ms. */
static void
edge_drain(struct edge *e)
{
	struct pollfd p = {.fd = e->fd, .events = POLLIN};
	uint8_t buf[2048];

	while (poll(&p, 1, 50) > 0)
		cr_assert_gt(recv(e->fd, buf, sizeof(buf), 0), 0);
}

/* ---- sessions -------------------------------------------------------------- */

static struct isth_island *
open_island(struct edge *e, unsigned int n_socks, bool rx_threads)
{
	struct isth_island_conf c = {
		.job = JOB,
		.island = SELF,
		.n_islands = N_ISLANDS,
		.edge_ip = LOOPBACK,
		.edge_port = e->port,
		.bind_ip = LOOPBACK,
		.elems = e->elems,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.nack_interval_ns = 5 * MS,
		.probe_ns = UINT64_MAX,
		.clock = fake_clock,
		.key_file = e->auth ? e->k.path : NULL,
		.n_sockets = n_socks,
		.rx_threads = rx_threads,
	};
	char err[256];
	struct isth_island *s = isth_island_open_err(&c, err, sizeof(err));

	cr_assert_not_null(s, "open: %s: %s", strerror(errno), err);
	cr_assert_eq(isth_island_chunk_elems(s), e->ce);
	cr_assert_eq(isth_island_n_chunks(s), NCH);
	e->n_socks = n_socks;
	for (unsigned int i = 0; i < n_socks; i++)
		e->isl_port[i] = isth_island_socket_port(s, i);
	return s;
}

/* Wait (~2 s at most) until @cond over `st` holds; only stats() is called:
 * the session's own threads must do the reading. */
#define STATS_UNTIL(s, cond) \
	do { \
		for (int i_ = 0; i_ < 1000; i_++) { \
			isth_island_stats((s), &st); \
			if (cond) \
				break; \
			(void)poll(NULL, 0, 2); \
		} \
		isth_island_stats((s), &st); \
		cr_assert(cond, "condition never held: %s", #cond); \
	} while (0)

static void
check_round(struct isth_island *s, struct edge *e, uint32_t round)
{
	struct isth_island_chunk ch[NCH];
	struct isth_island_result res;
	uint32_t *out = calloc(e->elems, 4);

	cr_assert_not_null(out);
	cr_assert_eq(
		isth_island_result(s, round, out, (size_t)e->elems * 4, ch, NCH, &res, 2000 * MS),
		0);
	cr_expect_eq(res.complete, NCH);
	cr_expect(res.early);
	for (uint32_t c = 0; c < NCH; c++) {
		cr_expect_eq(ch[c].bitmap, PEERS | 1u << SELF, "chunk %u", c);
		cr_expect_eq(ch[c].aggs, 3, "chunk %u", c);
		for (uint32_t i = 0; i < clen(e, c); i++)
			cr_assert_eq(out[c * e->ce + i],
				sum_i32(PEERS | 1u << SELF, round, c * e->ce + i),
				"round %u chunk %u elem %u", round, c, i);
	}
	free(out);
}

static void
send_own(struct isth_island *s, struct edge *e, uint32_t round)
{
	uint32_t *t = malloc((size_t)e->elems * 4);

	cr_assert_not_null(t);
	for (uint32_t i = 0; i < e->elems; i++)
		t[i] = val_i32(SELF, round, i);
	cr_assert_eq(isth_island_send(s, round, t, (size_t)e->elems * 4), 0);
	free(t);
}

static void
setup(void)
{
	__atomic_store_n(&fake_now, T0, __ATOMIC_SEQ_CST);
}

TestSuite(island_rx, .init = setup, .fini = key_files_remove, .timeout = 30);

/* ---- streams to sockets ----------------------------------------------------- */

struct ns {
	unsigned int n; /* AGG streams */
	unsigned int s; /* sockets */
	bool auth;
};

ParameterizedTestParameters(island_rx, streams_are_received_by_their_sockets)
{
	static struct ns p[] = {
		{2, 2, false},
		{3, 2, false},
		{4, 2, false},
		{3, 3, false},
		{4, 3, false},
		{2, 2, true},
		{4, 3, true},
	};

	return cr_make_param_array(struct ns, p, sizeof(p) / sizeof(p[0]));
}

/*
 * N streams to S sockets, two rounds: every chunk's three AGGs in its
 * stream c % N, on socket (c % N) % S. The sums are exact, and socket s
 * took exactly the streams k with k % S == s (its counters), all without
 * the test ever reading a socket.
 */
ParameterizedTest(struct ns *p, island_rx, streams_are_received_by_their_sockets)
{
	struct isth_island_stats st;
	uint64_t seq[ISTH_WIRE_MAX_STREAMS];
	uint64_t rx_want[ISTH_ISLAND_MAX_SOCKETS] = {0};
	struct isth_island *s;
	struct edge e;

	edge_open(&e, p->auth);
	s = open_island(&e, p->s, true);
	isth_island_stats(s, &st);
	cr_expect(st.rx_threads);
	cr_expect_eq(st.n_sockets, p->s);
	for (unsigned int k = 0; k < p->n; k++)
		seq[k] = 100 + 1000 * k; /* each stream numbers on its own */
	for (uint32_t r = 5; r < 7; r++) {
		send_round(&e, r, p->n);
		rx_want[0]++;
		STATS_UNTIL(s, st.rounds_announced == r - 4);
		cr_expect_eq(st.agg_streams, p->n);
		send_own(s, &e, r);
		for (uint32_t c = 0; c < NCH; c++) {
			unsigned int k = c % p->n;

			for (unsigned int peer = 0; peer < N_ISLANDS; peer++)
				if (PEERS & 1u << peer) {
					send_agg(&e, k % p->s, k, r, c, peer, seq[k]++, 0);
					rx_want[k % p->s]++;
				}
		}
		STATS_UNTIL(s, st.aggs_summed == 3 * NCH * (r - 4));
		check_round(s, &e, r);
	}
	isth_island_stats(s, &st);
	for (unsigned int i = 0; i < p->s; i++) {
		uint16_t want = 0;

		for (unsigned int k = 0; k < p->n; k++)
			if (k % p->s == i)
				want |= (uint16_t)(1u << k);
		cr_expect_eq(st.sock_streams[i], want, "socket %u took streams %#x, want %#x", i,
			st.sock_streams[i], want);
		cr_expect_eq(st.sock_rx[i], rx_want[i], "socket %u read %lu, want %lu", i,
			(unsigned long)st.sock_rx[i], (unsigned long)rx_want[i]);
	}
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_agg_socket], 0);
	cr_expect_eq(st.duplicates, 0);
	cr_expect_eq(st.nacks_sent, 0);
	cr_expect_eq(st.rounds_complete, 2);
	if (p->auth)
		for (unsigned int i = 0; i < ISTH_AUTH_STATUS_MAX; i++)
			cr_expect_eq(st.auth_drop[i], 0, "%s", isth_auth_status_name(i));
	isth_island_close(s);
	edge_drain(&e);
	edge_close(&e);
}

/*
 * Two streams, two sockets: a seq lost in stream 1 is NACKed by socket 1
 * (its source port), in stream 1, and the repair sent to socket 1 makes
 * the round exact. Stream 0 is never NACKed.
 */
static void
gap_on_socket_1(bool auth)
{
	struct isth_island_stats st;
	struct isth_wire_range r;
	unsigned int stream;
	struct isth_island *s;
	uint16_t from;
	struct edge e;
	uint64_t q0 = 100, q1 = 100, lost = 0;
	uint32_t lost_c = 0;
	unsigned int lost_peer = 0;

	edge_open(&e, auth);
	s = open_island(&e, 2, true);
	send_round(&e, 5, 2);
	STATS_UNTIL(s, st.rounds_announced == 1);
	send_own(s, &e, 5);
	edge_drain(&e);
	for (uint32_t c = 0; c < NCH; c++)
		for (unsigned int peer = 0; peer < N_ISLANDS; peer++) {
			if (!(PEERS & 1u << peer))
				continue;
			if (c % 2 == 0) {
				send_agg(&e, 0, 0, 5, c, peer, q0++, 0);
			} else if (c == 5 && peer == 2) {
				lost = q1++; /* never sent: a gap in stream 1 */
				lost_c = c;
				lost_peer = peer;
			} else {
				send_agg(&e, 1, 1, 5, c, peer, q1++, 0);
			}
		}
	STATS_UNTIL(s, st.aggs_summed == 3 * NCH - 1);
	recv_nack(&e, &from, &stream, &r);
	cr_expect_eq(from, e.isl_port[1], "NACK from port %u, socket 1 is %u", from, e.isl_port[1]);
	cr_expect_eq(stream, 1);
	cr_expect_eq(r.first, lost);
	cr_expect_eq(r.last, lost);
	send_agg(&e, 1, 1, 5, lost_c, lost_peer, lost, ISTH_WIRE_F_RESENT);
	STATS_UNTIL(s, st.aggs_summed == 3 * NCH);
	check_round(s, &e, 5);
	isth_island_stats(s, &st);
	cr_expect_eq(st.resent, 1);
	cr_expect_eq(st.lost_seqs, 0);
	cr_expect_eq(st.sock_streams[0], 1u << 0);
	cr_expect_eq(st.sock_streams[1], 1u << 1);
	isth_island_close(s);
	edge_drain(&e);
	edge_close(&e);
}

Test(island_rx, gap_owned_by_socket_1_is_nacked_from_it_and_repaired)
{
	gap_on_socket_1(false);
}

Test(island_rx, gap_owned_by_socket_1_is_nacked_from_it_and_repaired_auth_on)
{
	gap_on_socket_1(true);
}

/*
 * An edge that sends every stream to island_port (island_sockets = 1)
 * while the island receives stream 1 on socket 1: stream 1's AGGs and
 * GONE on socket 0 are dropped as agg_socket, counted, never summed, and
 * leave nothing of stream 1's window behind (the same AGGs on socket 1
 * are then summed, not duplicates or replays).
 */
static void
wrong_socket(bool auth)
{
	struct isth_island_stats st;
	struct isth_island *s;
	struct edge e;

	edge_open(&e, auth);
	s = open_island(&e, 2, true);
	send_round(&e, 5, 2);
	STATS_UNTIL(s, st.rounds_announced == 1);
	send_own(s, &e, 5);
	edge_drain(&e);
	/* stream 1 (chunk 1) on socket 0, as a misconfigured edge sends it */
	send_agg(&e, 0, 1, 5, 1, 0, 100, 0);
	send_agg(&e, 0, 1, 5, 1, 2, 101, 0);
	send_gone(&e, 0, 1, 100, 101);
	/* and stream 0 (chunk 0) on socket 1 */
	send_agg(&e, 1, 0, 5, 0, 0, 100, 0);
	STATS_UNTIL(s, st.drop[ISTH_ISLAND_DROP_agg_socket] == 4);
	cr_expect_eq(st.aggs_summed, 0);
	cr_expect_eq(st.gone_seqs, 0);
	cr_expect_eq(st.sock_streams[0], 0);
	cr_expect_eq(st.sock_streams[1], 0);
	/* now where they belong: every chunk, stream c % 2 on socket c % 2 */
	for (uint32_t c = 0; c < NCH; c++) {
		uint64_t q = 100 + 3 * (c / 2);
		unsigned int j = 0;

		for (unsigned int peer = 0; peer < N_ISLANDS; peer++)
			if (PEERS & 1u << peer)
				send_agg(&e, c % 2, c % 2, 5, c, peer, q + j++, 0);
	}
	STATS_UNTIL(s, st.aggs_summed == 3 * NCH);
	check_round(s, &e, 5);
	isth_island_stats(s, &st);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_agg_socket], 4);
	cr_expect_eq(st.duplicates, 0);
	cr_expect_eq(st.auth_drop[ISTH_AUTH_E_REPLAY], 0);
	cr_expect_eq(st.nacks_sent, 0);
	isth_island_close(s);
	edge_drain(&e);
	edge_close(&e);
}

Test(island_rx, stream_on_the_wrong_socket_is_dropped_and_counted)
{
	wrong_socket(false);
}

Test(island_rx, stream_on_the_wrong_socket_is_dropped_and_counted_auth_on)
{
	wrong_socket(true);
}

/*
 * Each receive thread adds into the round outside the session mutex, so a
 * chunk's sum has one writer per round: the socket that summed it first.
 * An edge that breaks "stream = chunk % N" (chunk 0 in stream 1, read on
 * socket 1 after socket 0 summed chunk 0) has that AGG dropped as
 * agg_owner and never summed; the round is still exact once chunk 0's
 * other AGGs come in its own stream.
 */
Test(island_rx, a_chunk_is_summed_by_one_socket_per_round)
{
	struct isth_island_stats st;
	struct isth_island *s;
	uint64_t q[2] = {100, 100};
	struct edge e;

	edge_open(&e, false);
	s = open_island(&e, 2, true);
	send_round(&e, 5, 2);
	STATS_UNTIL(s, st.rounds_announced == 1);
	send_own(s, &e, 5);
	edge_drain(&e);
	send_agg(&e, 0, 0, 5, 0, 0, q[0]++, 0); /* chunk 0, peer 0: socket 0 */
	STATS_UNTIL(s, st.aggs_summed == 1);
	send_agg(&e, 1, 1, 5, 0, 2, q[1]++, 0); /* chunk 0, peer 2: socket 1 */
	STATS_UNTIL(s, st.drop[ISTH_ISLAND_DROP_agg_owner] == 1);
	cr_expect_eq(st.aggs_summed, 1);
	for (uint32_t c = 0; c < NCH; c++)
		for (unsigned int peer = 0; peer < N_ISLANDS; peer++)
			if ((PEERS & 1u << peer) && !(c == 0 && peer == 0))
				send_agg(&e, c % 2, c % 2, 5, c, peer, q[c % 2]++, 0);
	STATS_UNTIL(s, st.aggs_summed == 3 * NCH);
	check_round(s, &e, 5);
	isth_island_stats(s, &st);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_agg_owner], 1);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_agg_socket], 0);
	cr_expect_eq(st.sock_streams[0], 1u << 0);
	cr_expect_eq(st.sock_streams[1], 1u << 1);
	isth_island_close(s);
	edge_drain(&e);
	edge_close(&e);
}

/*
 * Without rx_threads (the caller reads every socket) nothing is owned:
 * stream 1 on socket 0 and stream 0 on socket 1 are summed as before, and the caller must drive the
 * session: its counters do not move while nobody calls into it.
 */
Test(island_rx, without_rx_threads_the_caller_reads_every_socket)
{
	struct isth_island_stats st;
	struct isth_island *s;
	struct edge e;
	struct pollfd p = {.fd = -1};

	edge_open(&e, false);
	s = open_island(&e, 2, false);
	send_round(&e, 5, 2);
	(void)poll(&p, 0, 100);
	isth_island_stats(s, &st);
	cr_expect_eq(st.rx_packets, 0, "nobody read: no thread runs");
	cr_expect(!st.rx_threads);
	for (int i = 0; i < 400 && st.rounds_announced == 0; i++) {
		isth_island_poll(s, 5 * MS);
		isth_island_stats(s, &st);
	}
	cr_assert_eq(st.rounds_announced, 1);
	send_agg(&e, 0, 1, 5, 1, 0, 100, 0);
	for (int i = 0; i < 400 && st.aggs_summed == 0; i++) {
		isth_island_poll(s, 5 * MS);
		isth_island_stats(s, &st);
	}
	cr_expect_eq(st.aggs_summed, 1);
	/* and stream 0 on socket 1 */
	send_agg(&e, 1, 0, 5, 0, 0, 100, 0);
	for (int i = 0; i < 400 && st.aggs_summed == 1; i++) {
		isth_island_poll(s, 5 * MS);
		isth_island_stats(s, &st);
	}
	cr_expect_eq(st.aggs_summed, 2);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_agg_socket], 0);
	cr_expect_eq(st.sock_streams[0], 1u << 1);
	cr_expect_eq(st.sock_streams[1], 1u << 0);
	isth_island_close(s);
	edge_drain(&e);
	edge_close(&e);
}

/*
 * Open and close with receive threads, many times, some while datagrams
 * arrive and a caller waits in another thread: close stops and joins the
 * threads (ASan/TSan builds see any leak or use after free).
 */
struct waiter {
	struct isth_island *s;
	int rc;
};

static void *
wait_thread(void *arg)
{
	struct waiter *w = arg;
	struct isth_island_round ri;

	w->rc = isth_island_wait_round(w->s, 5000 * MS, &ri);
	return NULL;
}

Test(island_rx, open_close_loops_stop_the_threads)
{
	for (int i = 0; i < 40; i++) {
		struct isth_island_stats st;
		struct waiter w = {0};
		struct isth_island *s;
		pthread_t th;
		struct edge e;

		edge_open(&e, i % 2 == 1);
		s = open_island(&e, 1 + (unsigned int)i % 4, true);
		w.s = s;
		cr_assert_eq(pthread_create(&th, NULL, wait_thread, &w), 0);
		send_round(&e, 5, 4);
		pthread_join(th, NULL);
		cr_expect_eq(w.rc, 0, "wait_round: %d", w.rc);
		/* after the ROUND: on another socket an AGG could overtake it
		 * and find its stream not yet announced (doc/island.md) */
		for (unsigned int k = 0; k < e.n_socks; k++)
			send_agg(&e, k, k, 5, k, 0, 100, 0);
		if (i % 3 == 0)
			STATS_UNTIL(s, st.aggs_summed == e.n_socks);
		isth_island_close(s);
		edge_close(&e);
	}
}

/* The reload swaps the receive threads' engines while they verify. */
Test(island_rx, key_reload_with_receive_threads)
{
	struct isth_island_stats st;
	struct isth_island *s;
	struct edge e;
	char err[256];

	edge_open(&e, true);
	s = open_island(&e, 3, true);
	send_round(&e, 5, 3);
	STATS_UNTIL(s, st.rounds_announced == 1);
	send_own(s, &e, 5);
	for (uint32_t c = 0; c < NCH; c++) {
		uint64_t q = 100 + 3 * (c / 3);
		unsigned int j = 0;

		if (c == 6)
			cr_assert_eq(isth_island_reload_keys(s, e.k.path, err, sizeof(err)), 0,
				"%s", err);
		for (unsigned int peer = 0; peer < N_ISLANDS; peer++)
			if (PEERS & 1u << peer)
				send_agg(&e, c % 3, c % 3, 5, c, peer, q + j++, 0);
	}
	STATS_UNTIL(s, st.aggs_summed == 3 * NCH);
	check_round(s, &e, 5);
	isth_island_stats(s, &st);
	cr_expect_eq(st.key_reloads, 1);
	isth_island_close(s);
	edge_drain(&e);
	edge_close(&e);
}
