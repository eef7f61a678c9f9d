/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/island with authentication on (wire version 2), against the fake
 * edge of island_test.c taught to speak v2: it seals ROUND, AGG and GONE
 * with lib/auth (the DOWN key of the island, OpenSSL engine) and verifies
 * the island's DATA and NACKs with the UP key. The hostile-traffic attacks (doc/security.md) on
 * an island's socket (forged, replayed, reflected, other island's key,
 * version 1, wrong epoch) are each refused, counted by name, and leave
 * the round's exact sum unchanged; a key rotation across an epoch
 * boundary loses nothing. Expected sums come from the closed-form tensor
 * formula; time is an injected clock; waits poll conditions, no sleeps.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <criterion/criterion.h>

#include "isth_auth.h"
#include "isth_island.h"
#include "isth_wire.h"

#include "island_fix.h"

#define JOB FIX_JOB
#define SELF 1u
#define N_ISLANDS FIX_N_ISLANDS
/* elements per chunk at MTU 1500 with auth: the 16-byte tag and room for
 * the edge's WAN tag list of at most 3 peers (4 islands): 8 + 2 x 16 more
 * bytes, (1500 - 28 - 40 - 16 - 40) / 4 */
#define CE 344u
#define ELEMS (2 * CE + 100) /* three chunks: 344, 344, 100 */
#define NCH 3u
#define LOOPBACK 0x7f000001u
#define MS 1000000ull
#define T0 FIX_T0
#define PEERS (1u << 0 | 1u << 2 | 1u << 3)

#define KEY1 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define KEY2 "f0e1d2c3b4a5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff"

static const struct fix_shape shape = {.n_chunks = NCH, .ce = CE, .elems = ELEMS, .self = SELF};

static uint32_t
clen(uint32_t c)
{
	return fix_clen(&shape, c);
}

/* ---- the fake edge, version 2 ------------------------------------------- */

struct edge {
	int fd;
	uint16_t port;
	uint16_t island_port;
	struct keys *k; /* seals with these */
};

static void
edge_open(struct edge *e, struct keys *k)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);

	e->fd = socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert_geq(e->fd, 0);
	a.sin_addr.s_addr = htonl(LOOPBACK);
	cr_assert_eq(bind(e->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(e->fd, (struct sockaddr *)&a, &len), 0);
	e->port = ntohs(a.sin_port);
	e->k = k;
}

/* Send @len bytes as they are (a sealed message, or an attack). */
static void
edge_send_raw(struct edge *e, const void *buf, size_t len)
{
	struct sockaddr_in a = {.sin_family = AF_INET};

	a.sin_addr.s_addr = htonl(LOOPBACK);
	a.sin_port = htons(e->island_port);
	cr_assert_eq(sendto(e->fd, buf, len, 0, (struct sockaddr *)&a, sizeof(a)), (ssize_t)len);
}

/* Seal the message in @buf (cap 2048) with @k's key of (DOWN, @owner);
 * returns the sealed length. */
static size_t
seal(struct keys *k, unsigned int owner, uint8_t *buf, size_t len)
{
	int n = isth_auth_seal(k->e, ISTH_AUTH_DOWN, owner, buf, len, 2048);

	cr_assert_gt(n, 0, "seal: %d", n);
	return (size_t)n;
}

static size_t
mk_round(uint8_t *buf, uint32_t round, uint64_t seq)
{
	return fix_round(buf, &shape, round, seq, PEERS, PEERS | 1u << SELF, T0 + 100 * MS);
}

/* An unsealed (version 1 framing) AGG of chunk @c: the sum over @set. */
static size_t
mk_agg(uint8_t *buf, uint32_t round, uint32_t c, uint64_t set, uint64_t seq, uint16_t flags)
{
	return fix_agg(buf, &shape, ISTH_WIRE_DTYPE_INT32, round, c, set, seq, flags);
}

static void
send_round(struct edge *e, uint32_t round, uint64_t seq)
{
	uint8_t buf[2048];

	edge_send_raw(e, buf, seal(e->k, SELF, buf, mk_round(buf, round, seq)));
}

/* A genuine AGG, sealed; the sealed bytes are left in @buf for replays. */
static size_t
send_agg(struct edge *e, uint8_t *buf, uint32_t round, uint32_t c, uint64_t set, uint64_t seq)
{
	size_t n = seal(e->k, SELF, buf, mk_agg(buf, round, c, set, seq, ISTH_WIRE_F_PARTIAL));

	edge_send_raw(e, buf, n);
	return n;
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

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t
be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

/* ---- sessions -------------------------------------------------------------- */

static struct isth_island *
open_island(struct edge *e, const char *key_path)
{
	struct isth_island_conf c = {
		.job = JOB,
		.island = SELF,
		.n_islands = N_ISLANDS,
		.edge_ip = LOOPBACK,
		.edge_port = e->port,
		.bind_ip = LOOPBACK,
		.elems = ELEMS,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.nack_interval_ns = 5 * MS,
		.probe_ns = UINT64_MAX,
		.clock = fake_clock,
		.key_file = key_path,
	};
	char err[256];
	struct isth_island *s = isth_island_open_err(&c, err, sizeof(err));

	cr_assert_not_null(s, "open: %s: %s", strerror(errno), err);
	e->island_port = isth_island_local_port(s);
	return s;
}

static void
own_tensor(uint32_t *t, uint32_t round)
{
	for (uint32_t i = 0; i < ELEMS; i++)
		t[i] = val_i32(SELF, round, i);
}

static void
check_sums(const uint32_t *out, const struct isth_island_chunk *ch, uint32_t round)
{
	for (uint32_t c = 0; c < NCH; c++) {
		cr_expect_eq(ch[c].count, clen(c));
		for (uint32_t i = 0; i < clen(c); i++)
			cr_assert_eq(out[c * CE + i], sum_i32(ch[c].bitmap, round, c * CE + i),
				"round %u chunk %u elem %u", round, c, i);
	}
}

/*
 * Receive the island's @n DATA of @round, check each verifies with the UP
 * key of SELF under @k, carries epoch @epoch and the island's own values,
 * and that seqs increase by one from at least @min_seq. Returns the last
 * seq.
 */
static uint64_t
expect_data(struct edge *e, struct keys *k, uint32_t round, uint8_t epoch, uint64_t min_seq)
{
	struct isth_wire_limits lim;
	uint64_t last = 0;

	cr_assert_eq(isth_wire_limits_init_auth(&lim, N_ISLANDS, 1500, true), 0);
	for (uint32_t c = 0; c < NCH; c++) {
		uint8_t buf[2048];
		size_t n = edge_recv(e, buf, sizeof(buf), 2000);
		enum isth_auth_status v;
		enum isth_wire_reason r;
		struct isth_wire_pkt p;
		uint64_t seq;

		cr_assert_eq(n, ISTH_WIRE_HDR_SIZE + 4 * clen(c) + ISTH_AUTH_TAG_SIZE,
			"DATA %u: %zu bytes", c, n);
		v = isth_auth_verify(k->e, ISTH_AUTH_UP, SELF, buf, n);
		cr_assert_eq(v, ISTH_AUTH_OK, "DATA %u: %s", c, isth_auth_status_name(v));
		/* the DOWN key (a reflection) and another island's do not verify */
		cr_expect_eq(isth_auth_verify(k->e, ISTH_AUTH_DOWN, SELF, buf, n), ISTH_AUTH_E_TAG);
		cr_expect_eq(isth_auth_verify(k->e, ISTH_AUTH_UP, 2, buf, n), ISTH_AUTH_E_TAG);
		/* and the edge's v2 parser takes it */
		r = isth_wire_parse_msg(buf, n, &lim, &p);
		cr_assert_eq(r, ISTH_WIRE_OK, "DATA %u: %s", c, isth_wire_reason_name(r));
		cr_expect_eq(p.hdr.version, 2);
		cr_expect_eq(p.hdr.epoch, epoch);
		cr_expect_eq(p.hdr.count, clen(c));
		cr_expect_eq(buf[ISTH_WIRE_OFF_VERSION], 2);
		cr_expect_eq(buf[ISTH_WIRE_OFF_TYPE], ISTH_WIRE_DATA);
		cr_expect_eq(buf[ISTH_WIRE_OFF_TRAILER], ISTH_AUTH_TAG_SIZE);
		cr_expect_eq(buf[ISTH_AUTH_OFF_EPOCH], epoch);
		cr_expect_eq(be32(buf + ISTH_WIRE_OFF_ROUND), round);
		cr_expect_eq(be32(buf + ISTH_WIRE_OFF_CHUNK), c);
		seq = be64(buf + ISTH_WIRE_OFF_SEQ);
		cr_expect_geq(seq, min_seq, "DATA seq starts at the real clock");
		if (c)
			cr_expect_eq(seq, last + 1);
		last = seq;
		for (uint32_t i = 0; i < clen(c); i++) {
			const uint8_t *q = buf + ISTH_WIRE_HDR_SIZE + 4 * i;
			uint32_t x = q[0] | q[1] << 8 | q[2] << 16 | (uint32_t)q[3] << 24;

			cr_assert_eq(x, val_i32(SELF, round, c * CE + i));
		}
	}
	return last;
}

static uint64_t
realtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void
setup(void)
{
	__atomic_store_n(&fake_now, T0, __ATOMIC_SEQ_CST);
}

TestSuite(island_auth, .init = setup, .fini = key_files_remove, .timeout = 20);

static const char file1[] = "job 7\nepoch 1 round 0 key " KEY1 "\n";

/* ---- tests -------------------------------------------------------------------- */

Test(island_auth, sums_are_exact_and_data_is_sealed)
{
	struct isth_island_chunk ch[NCH];
	struct isth_island_result res;
	struct isth_island_round ri;
	struct isth_island_stats st;
	uint32_t t[ELEMS], out[ELEMS];
	struct isth_island *s;
	uint8_t buf[2048];
	uint64_t t_open;
	struct keys k;
	struct edge e;

	keys_load(&k, file1);
	edge_open(&e, &k);
	t_open = realtime();
	s = open_island(&e, k.path);
	cr_expect_eq(isth_island_chunk_elems(s), CE, "the tag comes out of the chunk");
	cr_expect_eq(isth_island_n_chunks(s), NCH);
	isth_island_stats(s, &st);
	cr_expect(st.auth);
	cr_expect_eq(st.auth_epochs, 1);

	send_round(&e, 3, 500);
	cr_assert_eq(isth_island_wait_round(s, 2000 * MS, &ri), 0);
	cr_expect_eq(ri.round, 3);
	own_tensor(t, 3);
	cr_assert_eq(isth_island_send(s, 3, t, sizeof(t)), 0);
	expect_data(&e, &k, 3, 1, t_open);
	send_agg(&e, buf, 3, 0, PEERS, 10);
	send_agg(&e, buf, 3, 1, 1u << 0, 11);
	send_agg(&e, buf, 3, 2, 1u << 0 | 1u << 2, 12);
	send_agg(&e, buf, 3, 1, 1u << 2 | 1u << 3, 13);
	send_agg(&e, buf, 3, 2, 1u << 3, 14);
	cr_assert_eq(isth_island_result(s, 3, out, sizeof(out), ch, NCH, &res, 2000 * MS), 0);
	cr_expect_eq(res.complete, NCH);
	for (uint32_t c = 0; c < NCH; c++)
		cr_expect_eq(ch[c].bitmap, PEERS | 1u << SELF);
	check_sums(out, ch, 3);
	isth_island_stats(s, &st);
	cr_expect_eq(st.aggs_summed, 5);
	for (unsigned int i = 0; i < ISTH_AUTH_STATUS_MAX; i++)
		cr_expect_eq(st.auth_drop[i], 0, "%s", isth_auth_status_name(i));
	isth_island_close(s);
	close(e.fd);
	keys_free(&k);
}

Test(island_auth, nacks_are_sealed_on_their_own_stream)
{
	struct isth_island_stats st;
	struct isth_island *s;
	uint8_t buf[2048];
	enum isth_auth_status v;
	uint64_t t_open, seq1, seq2;
	struct keys k;
	struct edge e;
	size_t n;

	keys_load(&k, file1);
	edge_open(&e, &k);
	t_open = realtime();
	s = open_island(&e, k.path);
	send_round(&e, 3, 500);
	POLL_UNTIL(s, st.rounds_announced == 1);
	/* seqs 20 and 22: 21 is a gap, NACKed */
	send_agg(&e, buf, 3, 0, 1u << 0, 20);
	send_agg(&e, buf, 3, 1, 1u << 0, 22);
	POLL_UNTIL(s, st.nacks_sent >= 1);
	n = edge_recv(&e, buf, sizeof(buf), 2000);
	cr_assert_gt(n, 0);
	v = isth_auth_verify(k.e, ISTH_AUTH_UP, SELF, buf, n);
	cr_assert_eq(v, ISTH_AUTH_OK, "NACK: %s", isth_auth_status_name(v));
	cr_expect_eq(buf[ISTH_WIRE_OFF_TYPE], ISTH_WIRE_NACK);
	seq1 = be64(buf + ISTH_WIRE_OFF_SEQ);
	cr_expect_geq(seq1, t_open, "NACK seq starts at the real clock, not 0");
	/* the re-NACK is a new message: a new seq, so a new IV */
	__atomic_add_fetch(&fake_now, 6 * MS, __ATOMIC_SEQ_CST);
	POLL_UNTIL(s, st.nacks_sent >= 2);
	n = edge_recv(&e, buf, sizeof(buf), 2000);
	cr_assert_gt(n, 0);
	cr_assert_eq(isth_auth_verify(k.e, ISTH_AUTH_UP, SELF, buf, n), ISTH_AUTH_OK);
	seq2 = be64(buf + ISTH_WIRE_OFF_SEQ);
	cr_expect_eq(seq2, seq1 + 1);
	isth_island_close(s);
	close(e.fd);
	keys_free(&k);
}

/*
 * AGG streams with auth on (doc/protocol.md, "AGG streams"): the stream
 * field (high nibble of byte 4) is in the tag and the IV; only a verified
 * ROUND makes the island follow more streams; each stream has its own
 * replay window, so the same seq in two streams is two messages, while a
 * replay within one stream is refused.
 */
Test(island_auth, agg_streams_have_their_own_replay_windows)
{
	struct isth_island_chunk ch[NCH];
	struct isth_island_result res;
	struct isth_island_stats st;
	uint32_t t[ELEMS], out[ELEMS];
	struct isth_island *s;
	uint8_t buf[2048], rep[2048];
	size_t n, rn;
	struct keys k;
	struct edge e;

	keys_load(&k, file1);
	edge_open(&e, &k);
	s = open_island(&e, k.path);
	/* a ROUND announcing 16 streams with a wrong tag: refused, nothing
	 * allocated or followed */
	n = seal(&k, SELF, buf, mk_round(buf, 3, 499));
	buf[4] |= 0xf0;
	edge_send_raw(&e, buf, n);
	POLL_UNTIL(s, st.auth_drop[ISTH_AUTH_E_TAG] == 1);
	cr_expect_eq(st.agg_streams, 1);
	/* a sealed AGG of stream 1 before any ROUND announced it */
	n = mk_agg(buf, 3, 1, 1u << 0, 10, ISTH_WIRE_F_PARTIAL);
	buf[4] |= 1 << 4;
	edge_send_raw(&e, buf, seal(&k, SELF, buf, n));
	POLL_UNTIL(s, st.drop[ISTH_ISLAND_DROP_agg_stream] == 1);
	/* the genuine ROUND: 2 streams */
	n = mk_round(buf, 3, 500);
	buf[4] |= 1 << 4;
	edge_send_raw(&e, buf, seal(&k, SELF, buf, n));
	POLL_UNTIL(s, st.rounds_announced == 1);
	cr_expect_eq(st.agg_streams, 2);
	own_tensor(t, 3);
	cr_assert_eq(isth_island_send(s, 3, t, sizeof(t)), 0);
	/* stream 0: chunks 0 and 2, seqs 10, 11; stream 1: chunk 1, seq 10 */
	send_agg(&e, buf, 3, 0, PEERS, 10);
	rn = mk_agg(rep, 3, 1, PEERS, 10, ISTH_WIRE_F_PARTIAL);
	rep[4] |= 1 << 4;
	rn = seal(&k, SELF, rep, rn);
	edge_send_raw(&e, rep, rn);
	send_agg(&e, buf, 3, 2, PEERS, 11);
	cr_assert_eq(isth_island_result(s, 3, out, sizeof(out), ch, NCH, &res, 2000 * MS), 0);
	cr_expect_eq(res.complete, NCH);
	check_sums(out, ch, 3);
	/* stream 1's AGG again: a replay in its own window */
	edge_send_raw(&e, rep, rn);
	POLL_UNTIL(s, st.auth_drop[ISTH_AUTH_E_REPLAY] == 1);
	cr_expect_eq(st.aggs_summed, 3);
	cr_expect_eq(st.auth_drop[ISTH_AUTH_E_TAG], 1);
	cr_expect_eq(st.auth_drop[ISTH_AUTH_E_STALE], 0);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_agg_stream], 1);
	isth_island_close(s);
	close(e.fd);
	keys_free(&k);
}

/*
 * Every attack on the island's socket: refused before the parser, counted
 * by name, and the round's sum is exactly the genuine one.
 */
Test(island_auth, attacks_are_refused_counted_and_change_nothing)
{
	struct isth_island_chunk ch[NCH];
	struct isth_island_result res;
	struct isth_island_stats st;
	uint32_t t[ELEMS], out[ELEMS];
	struct isth_island *s;
	uint8_t buf[2048], saved[2048];
	size_t n, saved_n;
	struct keys k, other, later;
	struct edge e;

	keys_load(&k, file1);
	/* an edge with a second epoch from round 3 the island has not got */
	keys_load(&later, "job 7\nepoch 1 round 0 key " KEY1 "\nepoch 2 round 3 key " KEY2 "\n");
	/* another job's master key, same job id: a stranger's keys */
	keys_load(&other, "job 7\nepoch 1 round 0 key " KEY2 "\n");
	edge_open(&e, &k);
	s = open_island(&e, k.path);
	send_round(&e, 3, 500);
	POLL_UNTIL(s, st.rounds_announced == 1);
	own_tensor(t, 3);
	cr_assert_eq(isth_island_send(s, 3, t, sizeof(t)), 0);

	/* genuine chunk 0 from island 0; kept for the replays */
	saved_n = send_agg(&e, saved, 3, 0, 1u << 0, 10);
	POLL_UNTIL(s, st.aggs_summed == 1);

	/* 1. forged: a genuine AGG with one payload byte changed */
	n = mk_agg(buf, 3, 1, 1u << 0, 11, ISTH_WIRE_F_PARTIAL);
	n = seal(&k, SELF, buf, n);
	buf[ISTH_WIRE_HDR_SIZE + 5] ^= 0x01;
	edge_send_raw(&e, buf, n);
	/* ...and with a header field changed (the bitmap claims more) */
	n = seal(&k, SELF, buf, mk_agg(buf, 3, 2, 1u << 0, 12, ISTH_WIRE_F_PARTIAL));
	buf[ISTH_WIRE_OFF_BITMAP + 7] |= 1u << 2;
	edge_send_raw(&e, buf, n);
	POLL_UNTIL(s, st.auth_drop[ISTH_AUTH_E_TAG] == 2);

	/* 2. replayed: the genuine AGG, byte for byte */
	edge_send_raw(&e, saved, saved_n);
	POLL_UNTIL(s, st.auth_drop[ISTH_AUTH_E_REPLAY] == 1);

	/* 3. another island's key (island 2's DOWN key), and the island's
	 * own UP key (a reflected DATA-direction tag), and a stranger's key */
	n = seal(&k, 2, buf, mk_agg(buf, 3, 1, 1u << 0, 13, ISTH_WIRE_F_PARTIAL));
	edge_send_raw(&e, buf, n);
	n = mk_agg(buf, 3, 1, 1u << 0, 14, ISTH_WIRE_F_PARTIAL);
	n = (size_t)isth_auth_seal(k.e, ISTH_AUTH_UP, SELF, buf, n, sizeof(buf));
	edge_send_raw(&e, buf, n);
	n = seal(&other, SELF, buf, mk_agg(buf, 3, 1, 1u << 0, 15, ISTH_WIRE_F_PARTIAL));
	edge_send_raw(&e, buf, n);
	POLL_UNTIL(s, st.auth_drop[ISTH_AUTH_E_TAG] == 5);

	/* 4. version 1 (no tag at all), and v1 with a zero tag appended */
	n = mk_agg(buf, 3, 1, 1u << 0, 16, ISTH_WIRE_F_PARTIAL);
	edge_send_raw(&e, buf, n);
	memset(buf + n, 0, ISTH_AUTH_TAG_SIZE);
	edge_send_raw(&e, buf, n + ISTH_AUTH_TAG_SIZE);
	POLL_UNTIL(s, st.auth_drop[ISTH_AUTH_E_FORMAT] == 2);

	/* 5. wrong epoch: tagged with epoch 2's key for round 3 (the island
	 * has only epoch 1), and an epoch byte rewritten */
	n = seal(&later, SELF, buf, mk_agg(buf, 3, 1, 1u << 0, 17, ISTH_WIRE_F_PARTIAL));
	cr_assert_eq(buf[ISTH_AUTH_OFF_EPOCH], 2);
	edge_send_raw(&e, buf, n);
	n = seal(&k, SELF, buf, mk_agg(buf, 3, 1, 1u << 0, 18, ISTH_WIRE_F_PARTIAL));
	buf[ISTH_AUTH_OFF_EPOCH] = 3;
	edge_send_raw(&e, buf, n);
	POLL_UNTIL(s, st.auth_drop[ISTH_AUTH_E_EPOCH] == 2);

	/* 6. stale: far behind the window of the ROUND stream (seq 500),
	 * for a round not newer than the one accepted (a newer one would be
	 * a restarted edge's: replay_restart_on_newer_round) */
	n = seal(&k, SELF, buf, mk_round(buf, 3, 1));
	edge_send_raw(&e, buf, n);
	POLL_UNTIL(s, st.auth_drop[ISTH_AUTH_E_STALE] == 1);

	/* nothing of that reached the round: the parser and the island never
	 * saw them */
	cr_expect_eq(st.aggs_summed, 1);
	cr_expect_eq(st.rx_type[ISTH_WIRE_AGG], 1);
	cr_expect_eq(st.rx_type[ISTH_WIRE_ROUND], 1);
	cr_expect_eq(st.rounds_announced, 1);
	for (unsigned int i = 0; i < ISTH_ISLAND_DROP_MAX; i++)
		cr_expect_eq(st.drop[i], 0, "%s", isth_island_drop_name(i));
	for (unsigned int i = 1; i < ISTH_WIRE_REASON_MAX; i++)
		cr_expect_eq(st.wire_drop[i], 0, "%s", isth_wire_reason_name(i));

	/* the genuine rest of the round: the exact clique sum */
	send_agg(&e, buf, 3, 0, 1u << 2 | 1u << 3, 11);
	send_agg(&e, buf, 3, 1, PEERS, 12);
	send_agg(&e, buf, 3, 2, PEERS, 13);
	cr_assert_eq(isth_island_result(s, 3, out, sizeof(out), ch, NCH, &res, 2000 * MS), 0);
	cr_expect_eq(res.complete, NCH);
	for (uint32_t c = 0; c < NCH; c++)
		cr_expect_eq(ch[c].bitmap, PEERS | 1u << SELF);
	cr_expect_eq(ch[0].aggs, 2);
	cr_expect_eq(ch[1].aggs, 1);
	cr_expect_eq(ch[2].aggs, 1);
	check_sums(out, ch, 3);
	isth_island_stats(s, &st);
	cr_expect_eq(st.auth_drop[ISTH_AUTH_E_TAG], 5);
	cr_expect_eq(st.auth_drop[ISTH_AUTH_E_REPLAY], 1);
	cr_expect_eq(st.auth_drop[ISTH_AUTH_E_FORMAT], 2);
	cr_expect_eq(st.auth_drop[ISTH_AUTH_E_EPOCH], 2);
	cr_expect_eq(st.auth_drop[ISTH_AUTH_E_STALE], 1);
	cr_expect_eq(st.auth_drop[ISTH_AUTH_E_KEY], 0);
	isth_island_close(s);
	close(e.fd);
	keys_free(&k);
	keys_free(&later);
	keys_free(&other);
}

/*
 * The replay window moves only for a datagram the island accepts. One
 * sealed AGG (a key holder's) with a seq far ahead of the stream, refused
 * after the tag by the session's checks (another job), leaves the window
 * where it was: the genuine AGGs after it complete the round (before, it
 * moved the window and they were all auth_stale). A seq further ahead of
 * the island's clock than the slack is auth_ahead; an edge restarted
 * after its clock stepped back (ROUND seq below the window, round newer)
 * is accepted.
 */
Test(island_auth, one_packet_cannot_push_the_window_away)
{
	struct isth_island_chunk ch[NCH];
	struct isth_island_result res;
	struct isth_island_stats st;
	uint32_t t[ELEMS], out[ELEMS];
	struct isth_island *s;
	uint8_t buf[2048];
	size_t n;
	struct keys k;
	struct edge e;

	keys_load(&k, file1);
	edge_open(&e, &k);
	s = open_island(&e, k.path);
	send_round(&e, 3, 500);
	POLL_UNTIL(s, st.rounds_announced == 1);
	own_tensor(t, 3);
	cr_assert_eq(isth_island_send(s, 3, t, sizeof(t)), 0);

	/* the attack: verified, seq 10^9 ahead of the stream (behind the
	 * clock), refused after the parser as another job's */
	n = mk_agg(buf, 3, 0, PEERS, 1000000000ull, ISTH_WIRE_F_PARTIAL);
	buf[ISTH_WIRE_OFF_JOB + 3] ^= 0x01;
	edge_send_raw(&e, buf, seal(&k, SELF, buf, n));
	POLL_UNTIL(s, st.drop[ISTH_ISLAND_DROP_job] == 1);
	/* seq ahead of the island's clock by 5 s (> the 1 s slack) */
	n = mk_agg(buf, 3, 0, PEERS, realtime() + 5000 * MS, ISTH_WIRE_F_PARTIAL);
	edge_send_raw(&e, buf, seal(&k, SELF, buf, n));
	POLL_UNTIL(s, st.auth_drop[ISTH_AUTH_E_AHEAD] == 1);
	/* the genuine AGGs, seqs far below both */
	send_agg(&e, buf, 3, 0, PEERS, 10);
	send_agg(&e, buf, 3, 1, PEERS, 11);
	send_agg(&e, buf, 3, 2, PEERS, 12);
	cr_assert_eq(isth_island_result(s, 3, out, sizeof(out), ch, NCH, &res, 2000 * MS), 0);
	cr_expect_eq(res.complete, NCH);
	check_sums(out, ch, 3);
	isth_island_stats(s, &st);
	cr_expect_eq(st.aggs_summed, 3);
	cr_expect_eq(st.auth_drop[ISTH_AUTH_E_STALE], 0);
	cr_expect_eq(st.auth_drop[ISTH_AUTH_E_REPLAY], 0);

	/* the edge restarted with its clock stepped back: its ROUND stream
	 * starts below the window (seq 1 < 500 - W) with a newer round */
	send_round(&e, 4, 1);
	POLL_UNTIL(s, st.rounds_announced == 2);
	/* ...and the old incarnation's ROUND of round 3 cannot come back */
	edge_send_raw(&e, buf, seal(&k, SELF, buf, mk_round(buf, 3, 500)));
	POLL_UNTIL(s, st.auth_drop[ISTH_AUTH_E_STALE] == 1);
	cr_expect_eq(st.rounds_announced, 2);
	isth_island_close(s);
	close(e.fd);
	keys_free(&k);
}

/* A session without a key file speaks version 1: a sealed AGG is refused
 * by the parser, and it has no keys to reload. */
Test(island_auth, auth_off_is_version_1_and_reported)
{
	struct isth_island_conf c = {
		.job = JOB,
		.island = SELF,
		.n_islands = N_ISLANDS,
		.edge_ip = LOOPBACK,
		.bind_ip = LOOPBACK,
		.elems = ELEMS,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.probe_ns = UINT64_MAX,
		.clock = fake_clock,
	};
	struct isth_island_stats st;
	struct isth_island *s;
	char err[128];
	struct keys k;
	struct edge e;

	keys_load(&k, file1);
	edge_open(&e, &k);
	c.edge_port = e.port;
	s = isth_island_open(&c);
	cr_assert_not_null(s);
	cr_expect_eq(isth_island_chunk_elems(s), 358);
	isth_island_stats(s, &st);
	cr_expect(!st.auth);
	cr_expect_eq(st.auth_epochs, 0);
	cr_expect_eq(isth_island_reload_keys(s, k.path, err, sizeof(err)), -ENOTCONN);
	cr_expect(strstr(err, "auth off") != NULL, "%s", err);
	isth_island_close(s);
	close(e.fd);
	keys_free(&k);
}

Test(island_auth, bad_key_files_are_refused_at_open)
{
	struct isth_island_conf c = {
		.job = JOB,
		.island = SELF,
		.n_islands = N_ISLANDS,
		.edge_ip = LOOPBACK,
		.bind_ip = LOOPBACK,
		.elems = ELEMS,
		.dtype = ISTH_WIRE_DTYPE_INT32,
	};
	char path[64], err[256];

	key_file(path, sizeof(path), file1);
	cr_assert_eq(chmod(path, 0644), 0);
	c.key_file = path;
	cr_expect_null(isth_island_open_err(&c, err, sizeof(err)));
	cr_expect_eq(errno, EACCES);
	cr_expect(strstr(err, path) != NULL, "error does not name the file: %s", err);
	cr_assert_eq(chmod(path, 0600), 0);
	c.job = JOB + 1;
	cr_expect_null(isth_island_open_err(&c, err, sizeof(err)));
	cr_expect_eq(errno, EINVAL);
	cr_expect(strstr(err, "not job 8") != NULL, "%s", err);
	key_file_remove(path);
	c.job = JOB;
	key_file(path, sizeof(path), "job 7\nepoch 1 round 0 key 0011\n");
	cr_expect_null(isth_island_open_err(&c, err, sizeof(err)));
	cr_expect_eq(errno, EINVAL);
	cr_expect(strstr(err, ":2:") != NULL, "no file:line: %s", err);
	key_file_remove(path);
}

/* Island @id's site file of job JOB, epoch 1 from round 0, master KEY1
 * (what isthmus-keys split writes) into @path. */
static void
site_file(char *path, size_t size, unsigned int id)
{
	uint8_t master[ISTH_AUTH_KEY_SIZE], k[ISTH_AUTH_KEY_SIZE];
	char text[512];
	int n;

	for (unsigned int i = 0; i < ISTH_AUTH_KEY_SIZE; i++)
		master[i] = (uint8_t)i; /* KEY1 */
	n = snprintf(text, sizeof(text), "job %u\nsite island %u\nepoch 1 round 0\n", JOB, id);
	for (unsigned int d = ISTH_AUTH_UP; d <= ISTH_AUTH_DOWN; d++) {
		cr_assert_eq(isth_auth_derive(master, JOB, 1, d, id, k), 0);
		n += snprintf(text + n, sizeof(text) - (size_t)n, "key %s ",
			d == ISTH_AUTH_UP ? "up" : "down");
		for (unsigned int i = 0; i < ISTH_AUTH_KEY_SIZE; i++)
			n += snprintf(text + n, sizeof(text) - (size_t)n, "%02x", k[i]);
		n += snprintf(text + n, sizeof(text) - (size_t)n, "\n");
	}
	key_file(path, size, text);
}

/* The island's own site file (UP and DOWN of this island only) works like
 * the job file against an edge holding the job's keys; another island's
 * site file is refused at open, naming both sites. */
Test(island_auth, own_site_file_works_and_another_sites_is_refused)
{
	struct isth_island_conf c = {
		.job = JOB,
		.island = SELF,
		.n_islands = N_ISLANDS,
		.edge_ip = LOOPBACK,
		.bind_ip = LOOPBACK,
		.elems = ELEMS,
		.dtype = ISTH_WIRE_DTYPE_INT32,
	};
	struct isth_island_chunk ch[NCH];
	struct isth_island_result res;
	struct isth_island_round ri;
	uint32_t t[ELEMS], out[ELEMS];
	char path[64], other[64], err[256];
	struct isth_island *s;
	uint8_t buf[2048];
	uint64_t t_open;
	struct keys k;
	struct edge e;

	site_file(other, sizeof(other), SELF + 1);
	c.key_file = other;
	cr_expect_null(isth_island_open_err(&c, err, sizeof(err)));
	cr_expect_eq(errno, EINVAL);
	cr_expect(strstr(err, "the key file of island 2, not of island 1") != NULL, "%s", err);
	key_file_remove(other);

	site_file(path, sizeof(path), SELF);
	keys_load(&k, file1);
	edge_open(&e, &k);
	t_open = realtime();
	s = open_island(&e, path);
	send_round(&e, 3, 500);
	cr_assert_eq(isth_island_wait_round(s, 2000 * MS, &ri), 0);
	own_tensor(t, 3);
	cr_assert_eq(isth_island_send(s, 3, t, sizeof(t)), 0);
	/* the edge verifies with UP 1 derived from the job file */
	expect_data(&e, &k, 3, 1, t_open);
	send_agg(&e, buf, 3, 0, PEERS, 10);
	send_agg(&e, buf, 3, 1, PEERS, 11);
	send_agg(&e, buf, 3, 2, PEERS, 12);
	cr_assert_eq(isth_island_result(s, 3, out, sizeof(out), ch, NCH, &res, 2000 * MS), 0);
	cr_expect_eq(res.complete, NCH);
	check_sums(out, ch, 3);
	isth_island_close(s);
	close(e.fd);
	keys_free(&k);
	key_file_remove(path);
}

/*
 * Rotation at a round boundary: epoch 2 from round 5 is appended to the key
 * file and reloaded while round 4 is still collecting. Round 4's late AGGs
 * (epoch 1) still count, round 5 is tagged and verified with epoch 2 both
 * ways, epoch 1 cannot be used for round 5, and nothing is lost.
 */
Test(island_auth, rotation_across_an_epoch_boundary_loses_nothing)
{
	char rot[512], err[256], bad_path[64];
	struct isth_island_chunk ch[NCH];
	struct isth_island_result res;
	struct isth_island_stats st;
	uint32_t t[ELEMS], out[ELEMS];
	struct isth_island *s;
	uint8_t buf[2048];
	struct keys k1, k2;
	struct edge e;
	size_t n;

	keys_load(&k1, file1);
	snprintf(rot, sizeof(rot),
		"job 7\nepoch 1 round 0 key " KEY1 "\nepoch 2 round 5 key " KEY2 "\n");
	keys_load(&k2, rot);
	edge_open(&e, &k1);
	s = open_island(&e, k1.path);

	/* round 4 under epoch 1, half its AGGs in */
	send_round(&e, 4, 100);
	POLL_UNTIL(s, st.rounds_announced == 1);
	own_tensor(t, 4);
	cr_assert_eq(isth_island_send(s, 4, t, sizeof(t)), 0);
	expect_data(&e, &k1, 4, 1, 0);
	send_agg(&e, buf, 4, 0, PEERS, 1000);
	send_agg(&e, buf, 4, 1, PEERS, 1001);
	POLL_UNTIL(s, st.aggs_summed == 2);
	/* a file that moves round 4 to a new key is refused, keys unchanged */
	key_file(bad_path, sizeof(bad_path),
		"job 7\nepoch 1 round 0 key " KEY1 "\nepoch 2 round 4 key " KEY2 "\n");
	cr_expect_eq(isth_island_reload_keys(s, bad_path, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "round 4") != NULL, "%s", err);
	key_file_remove(bad_path);
	isth_island_stats(s, &st);
	cr_expect_eq(st.key_reloads, 0);
	cr_expect_eq(st.auth_epochs, 1);

	/* the rotation: the edge and the island take the new file */
	cr_assert_eq(isth_island_reload_keys(s, k2.path, err, sizeof(err)), 0, "%s", err);
	isth_island_stats(s, &st);
	cr_expect_eq(st.key_reloads, 1);
	cr_expect_eq(st.auth_epochs, 2);
	e.k = &k2;

	/* round 5 starts under epoch 2 while round 4's last AGG is late */
	send_round(&e, 5, 101);
	POLL_UNTIL(s, st.rounds_announced == 2);
	own_tensor(t, 5);
	cr_assert_eq(isth_island_send(s, 5, t, sizeof(t)), 0);
	expect_data(&e, &k2, 5, 2, 0);
	/* late round-4 AGG: epoch 1, same window as before the reload */
	n = send_agg(&e, buf, 4, 2, PEERS, 1002);
	cr_expect_eq(buf[ISTH_AUTH_OFF_EPOCH], 1);
	/* a replay of it still refused: the window survived the reload */
	edge_send_raw(&e, buf, n);
	/* round 5 AGGs tagged with epoch 2 */
	for (uint32_t c = 0; c < NCH; c++) {
		send_agg(&e, buf, 5, c, PEERS, 1003 + c);
		cr_expect_eq(buf[ISTH_AUTH_OFF_EPOCH], 2);
	}
	/* an attacker holding only the old key cannot speak for round 5 */
	n = seal(&k1, SELF, buf, mk_agg(buf, 5, 0, 1u << 0, 1010, ISTH_WIRE_F_PARTIAL));
	edge_send_raw(&e, buf, n);

	cr_assert_eq(isth_island_result(s, 4, out, sizeof(out), ch, NCH, &res, 2000 * MS), 0);
	cr_expect_eq(res.complete, NCH);
	check_sums(out, ch, 4);
	for (uint32_t c = 0; c < NCH; c++)
		cr_expect_eq(ch[c].bitmap, PEERS | 1u << SELF);
	cr_assert_eq(isth_island_result(s, 5, out, sizeof(out), ch, NCH, &res, 2000 * MS), 0);
	cr_expect_eq(res.complete, NCH);
	check_sums(out, ch, 5);
	POLL_UNTIL(s, st.auth_drop[ISTH_AUTH_E_EPOCH] == 1);
	cr_expect_eq(st.auth_drop[ISTH_AUTH_E_REPLAY], 1);
	cr_expect_eq(st.auth_drop[ISTH_AUTH_E_TAG], 0);
	cr_expect_eq(st.aggs_summed, 6);
	cr_expect_eq(st.rounds_complete, 2);
	cr_expect_eq(st.lost_seqs, 0);
	isth_island_close(s);
	close(e.fd);
	keys_free(&k1);
	keys_free(&k2);
}

/* A restarted v2 edge starts its AGG stream at its clock: a jump of 10^9
 * seqs for a newer round is a restart (resync), not a billion lost AGGs
 * to NACK; the replay window accepts the new, higher stream. */
Test(island_auth, restarted_edge_jumps_ahead_and_resyncs)
{
	struct isth_island_stats st;
	struct isth_island *s;
	uint8_t buf[2048];
	struct keys k;
	struct edge e;

	keys_load(&k, file1);
	edge_open(&e, &k);
	s = open_island(&e, k.path);
	send_round(&e, 3, 500);
	for (uint32_t c = 0; c < NCH; c++)
		send_agg(&e, buf, 3, c, PEERS, 1000 + c);
	POLL_UNTIL(s, st.aggs_summed == NCH);
	/* the restarted edge: ROUND and AGG streams from its clock */
	send_round(&e, 4, 500 + 1000000000ull);
	send_agg(&e, buf, 4, 0, PEERS, 1000 + 1000000000ull);
	send_agg(&e, buf, 4, 1, PEERS, 1001 + 1000000000ull);
	POLL_UNTIL(s, st.aggs_summed == NCH + 2);
	cr_expect_eq(st.seq_resyncs, 1);
	cr_expect_eq(st.lost_seqs, 0);
	cr_expect_eq(st.nacks_sent, 0);
	cr_expect_eq(st.drop[ISTH_ISLAND_DROP_seq_jump], 0);
	isth_island_close(s);
	close(e.fd);
	keys_free(&k);
}
