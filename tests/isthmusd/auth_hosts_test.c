/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An island of several hosts with auth on (app/isthmusd/auth.c;
 * doc/protocol.md, "An island of several hosts"): each host's UP DATA and
 * NACKs have replay windows of their own, apart from every WAN window; a
 * replay of one host's DATA is refused whatever the other host's window
 * holds; a host's restart (seqs below its window, a newer round) restarts
 * that host's window only; the island's DATA leaves for the WAN with the
 * edge's own consecutive seqs when K > 1 and untouched when K = 1; and host
 * h's AGG streams start h x 2^56 ns below the clock. The expected seqs are
 * written out here (the lane values computed apart with Python's big
 * integers), not taken from the code under test.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "isthd.h"
#include "isth_test_isthd.h"

#define N_ISLANDS 3u
#define WIN_BITS 256u
#define EPOCH 1u

/* An edge of island 0 with @k island hosts: the windows isthd_auth_setup
 * would make (epoch 1 in slot 0), without keys or engines. */
static struct isthd *
edge_new(unsigned int k, struct isthd_worker **w)
{
	struct isthd *d = isth_test_isthd_new();
	struct isthd_auth *au;
	unsigned int i, words = isth_auth_replay_words(WIN_BITS);

	cr_assert_not_null(d);
	au = &d->auth;
	au->on = true;
	d->island = 0;
	d->n_islands = N_ISLANDS;
	d->cfg.n_island_hosts = k;
	d->cfg.seq_ahead_ns = ISTH_AUTH_SEQ_AHEAD_NS_DEFAULT;
	au->win_bits = WIN_BITS;
	/* UP DATA and NACK per host, WAN DATA, NACK, GONE, PARTIAL per island */
	au->n_win = ISTH_AUTH_MAX_EPOCHS * (2 * k + 4 * N_ISLANDS);
	au->win = calloc(au->n_win, sizeof(*au->win));
	au->words = calloc((size_t)au->n_win * words, sizeof(uint64_t));
	cr_assert(au->win != NULL && au->words != NULL);
	for (i = 0; i < au->n_win; i++)
		cr_assert_eq(
			isth_auth_replay_init(&au->win[i], au->words + (size_t)i * words, WIN_BITS),
			0);
	for (i = 0; i < ISTH_AUTH_MAX_EPOCHS; i++)
		au->slot_epoch[i] = -1;
	au->slot_epoch[0] = EPOCH;
	*w = aligned_alloc(_Alignof(struct isthd_worker),
		(sizeof(struct isthd_worker) + _Alignof(struct isthd_worker) - 1) /
			_Alignof(struct isthd_worker) * _Alignof(struct isthd_worker));
	cr_assert_not_null(*w);
	memset(*w, 0, sizeof(**w));
	(*w)->d = d;
	return d;
}

static void
edge_free(struct isthd *d, struct isthd_worker *w)
{
	free(d->auth.win);
	free(d->auth.words);
	free(d);
	free(w);
}

/* A version 2 message of @type from island @sender, round @round, seq @seq
 * (its header only: what the windows read), parsed into @p over @buf. */
static void
msg(uint8_t *buf, struct isth_wire_pkt *p, uint8_t type, uint8_t sender, uint32_t round,
	uint64_t seq)
{
	struct isth_wire_hdr h = {
		.version = 2,
		.epoch = EPOCH,
		.type = type,
		.dtype = type == ISTH_WIRE_DATA ? ISTH_WIRE_DTYPE_INT32 : 0,
		.sender = sender,
		.job = 1,
		.round = round,
		.seq = seq,
		.bitmap = type == ISTH_WIRE_DATA ? UINT64_C(1) << sender : 0,
	};

	cr_assert_eq(isth_wire_put_hdr(buf, ISTH_WIRE_HDR_SIZE + 64, &h), ISTH_WIRE_HDR_SIZE);
	memset(p, 0, sizeof(*p));
	p->hdr = h;
	p->msg = buf;
	p->msg_size = ISTH_WIRE_HDR_SIZE;
}

/* Commit UP DATA of @host, seq @seq, round @round. */
static enum isthd_drop
up_data(struct isthd_worker *w, unsigned int host, uint32_t round, uint64_t seq)
{
	uint8_t buf[ISTH_WIRE_HDR_SIZE + 64];
	struct isth_wire_pkt p;

	msg(buf, &p, ISTH_WIRE_DATA, 0, round, seq);
	return isthd_auth_commit(w, ISTH_AUTH_UP, &p, host);
}

Test(isthmusd_auth_hosts, every_host_and_wan_stream_has_a_window_of_its_own)
{
	struct isthd_worker *w;
	struct isthd *d = edge_new(3, &w);
	struct isth_auth_replay *seen[64];
	uint8_t buf[ISTH_WIRE_HDR_SIZE + 64];
	struct isth_wire_pkt p;
	unsigned int n = 0;
	static const uint8_t wan_types[] = {
		ISTH_WIRE_DATA, ISTH_WIRE_NACK, ISTH_WIRE_GONE, ISTH_WIRE_PARTIAL};

	for (unsigned int h = 0; h < 3; h++) {
		msg(buf, &p, ISTH_WIRE_DATA, 0, 0, 1);
		seen[n++] = isthd_auth_window(d, ISTH_AUTH_UP, buf, h);
		msg(buf, &p, ISTH_WIRE_NACK, 0, 0, 1);
		seen[n++] = isthd_auth_window(d, ISTH_AUTH_UP, buf, h);
	}
	for (unsigned int s = 0; s < N_ISLANDS; s++)
		for (unsigned int t = 0; t < RTE_DIM(wan_types); t++) {
			msg(buf, &p, wan_types[t], (uint8_t)s, 0, 1);
			/* the host does not choose a WAN window */
			seen[n] = isthd_auth_window(d, ISTH_AUTH_WAN, buf, 0);
			cr_assert_eq(isthd_auth_window(d, ISTH_AUTH_WAN, buf, 2), seen[n]);
			n++;
		}
	/* 2 x 3 + 4 x 3 windows of epoch slot 0, no two the same */
	cr_assert_eq(n, 18);
	for (unsigned int i = 0; i < n; i++) {
		cr_assert_not_null(seen[i]);
		cr_assert(seen[i] >= d->auth.win && seen[i] < d->auth.win + 18,
			"window %u outside epoch slot 0's", i);
		for (unsigned int j = 0; j < i; j++)
			cr_assert_neq(seen[i], seen[j], "windows %u and %u are one", i, j);
	}
	/* a source that is no host, or a host above K: no window (refused
	 * later as access_bad_source) */
	msg(buf, &p, ISTH_WIRE_DATA, 0, 0, 1);
	cr_assert_null(isthd_auth_window(d, ISTH_AUTH_UP, buf, ISTHD_AUTH_NO_HOST));
	cr_assert_null(isthd_auth_window(d, ISTH_AUTH_UP, buf, 3));
	edge_free(d, w);
}

Test(isthmusd_auth_hosts, a_hosts_replay_is_refused_whatever_the_other_host_did)
{
	/* two hosts started 3 s apart, seqs k mod 2 stepping by 2 (lib/island) */
	const uint64_t b0 = UINT64_C(1796546015000000000), b1 = UINT64_C(1796546018000000001);
	struct isthd_worker *w;
	struct isthd *d = edge_new(2, &w);
	struct isth_auth_replay one;
	uint64_t words[WIN_BITS / 64];

	/* why a window per host: one shared window takes host 1's stream and
	 * then finds host 0's 3 s of seqs below it, stale */
	cr_assert_eq(isth_auth_replay_init(&one, words, WIN_BITS), 0);
	cr_assert_eq(isth_auth_replay_commit(&one, b0, 0), ISTH_AUTH_OK);
	cr_assert_eq(isth_auth_replay_commit(&one, b1, 0), ISTH_AUTH_OK);
	cr_assert_eq(isth_auth_replay_commit(&one, b0 + 2, 0), ISTH_AUTH_E_STALE);

	/* interleaved, 100 DATA each over rounds 0 and 1: all admitted */
	for (unsigned int i = 0; i < 100; i++) {
		cr_assert_eq(
			up_data(w, 0, i / 50, b0 + 2 * i), ISTHD_DROP_MAX, "host 0 DATA %u", i);
		cr_assert_eq(
			up_data(w, 1, i / 50, b1 + 2 * i), ISTHD_DROP_MAX, "host 1 DATA %u", i);
	}
	/* host 0 runs far ahead (its window now holds nothing of host 1's) */
	for (unsigned int i = 100; i < 400; i++)
		cr_assert_eq(up_data(w, 0, 1, b0 + 2 * i), ISTHD_DROP_MAX);
	/* host 1's DATA 60 again, and its first, from host 1: refused */
	cr_assert_eq(up_data(w, 1, 1, b1 + 120), ISTHD_DROP_auth_replay);
	cr_assert_eq(up_data(w, 1, 0, b1), ISTHD_DROP_auth_replay);
	/* host 1 goes on where it was: its window did not move */
	cr_assert_eq(up_data(w, 1, 1, b1 + 200), ISTHD_DROP_MAX);
	/* host 0's stream is untouched by host 1's refusals */
	cr_assert_eq(up_data(w, 0, 1, b0 + 800), ISTHD_DROP_MAX);
	cr_assert_eq(up_data(w, 0, 1, b0 + 798), ISTHD_DROP_auth_replay);
	edge_free(d, w);
}

Test(isthmusd_auth_hosts, a_host_restart_restarts_that_hosts_window_only)
{
	const uint64_t b0 = UINT64_C(1796546015000000000), b1 = UINT64_C(1796546018000000001);
	/* host 1 restarted after its clock stepped back 1 s: below its window */
	const uint64_t r1 = UINT64_C(1796546017000000001);
	struct isthd_worker *w;
	struct isthd *d = edge_new(2, &w);

	for (unsigned int i = 0; i < 100; i++) {
		cr_assert_eq(up_data(w, 0, i / 50, b0 + 2 * i), ISTHD_DROP_MAX);
		cr_assert_eq(up_data(w, 1, i / 50, b1 + 2 * i), ISTHD_DROP_MAX);
	}
	/* below the window with a round it already had: stale, not a restart */
	cr_assert_eq(up_data(w, 1, 1, r1), ISTHD_DROP_auth_stale);
	/* with the next round: host 1's new incarnation */
	cr_assert_eq(up_data(w, 1, 2, r1), ISTHD_DROP_MAX);
	cr_assert_eq(up_data(w, 1, 2, r1 + 2), ISTHD_DROP_MAX);
	/* the incarnation that ended: its rounds are refused from host 1 */
	cr_assert_eq(up_data(w, 1, 1, b1 + 200), ISTHD_DROP_auth_stale);
	/* host 0 did not restart: its round 1 is still taken, its seqs go on */
	cr_assert_eq(up_data(w, 0, 1, b0 + 200), ISTHD_DROP_MAX);
	cr_assert_eq(up_data(w, 0, 2, b0 + 202), ISTHD_DROP_MAX);
	cr_assert_eq(up_data(w, 0, 1, b0 + 198), ISTHD_DROP_auth_replay);
	edge_free(d, w);
}

Test(isthmusd_auth_hosts, island_data_leaves_with_the_edges_own_seqs)
{
	uint8_t buf[ISTH_WIRE_HDR_SIZE + 64];
	struct isth_wire_pkt p;
	struct isthd_worker *w;
	struct isthd *d = edge_new(1, &w);

	/* one host: the island's seq goes on, as ever */
	d->auth.seq_data = 1000;
	msg(buf, &p, ISTH_WIRE_DATA, 0, 0, 77);
	isthd_auth_wan_seq(d, buf);
	cr_assert_eq(isth_wire_get_seq(buf), 77);
	cr_assert_eq(d->auth.seq_data, 1000);
	/* two hosts: 1000, 1001, 1002 whatever the hosts' seqs */
	d->cfg.n_island_hosts = 2;
	for (uint64_t i = 0; i < 3; i++) {
		msg(buf, &p, ISTH_WIRE_DATA, 0, 0, i % 2 ? 9000001 + i : 5000000 + i);
		isthd_auth_wan_seq(d, buf);
		cr_assert_eq(isth_wire_get_seq(buf), 1000 + i);
	}
	cr_assert_eq(d->auth.seq_data, 1003);
	edge_free(d, w);
}

Test(isthmusd_auth_hosts, host_agg_lanes_start_below_the_clock)
{
	const uint64_t now = UINT64_C(1796546015000000000);

	cr_assert_eq(ISTHD_AUTH_HOST_LANE, UINT64_C(72057594037927936));
	cr_assert_eq(isthd_auth_host_seq0(now, 0), now);
	cr_assert_eq(isthd_auth_host_seq0(now, 1), UINT64_C(1724488420962072064));
	cr_assert_eq(isthd_auth_host_seq0(now, 2), UINT64_C(1652430826924144128));
	/* the last host of 16 still far above 0 */
	cr_assert_eq(isthd_auth_host_seq0(now, 15), UINT64_C(715682104431080960));
}
