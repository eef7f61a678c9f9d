/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * WAN repair's per-round times (app/isthmusd/repair.c, isthd_repair_publish;
 * doc/isthmusd.md, "WAN repair"): the cutoff after which no NACK is sent is
 * the last moment a repair can still be summed, the round's end + round_slack
 * less a round trip and repair_before; the plan's tail due time is the
 * sender's offset + payload at its rate + the latency; the data path's
 * clock keeps to the system's. Expected values are
 * worked out here from the figures, not by calling the code under test.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "isth_test_eal.h"
#include "isth_clock.h"
#include "isthd.h"
#include "isth_test_isthd.h"

#define MS 1000000ull

static struct isthd *
edge(uint64_t slack_ns)
{
	struct isthd *d = isth_test_isthd_new();

	cr_assert_not_null(d);
	d->n_islands = 4;
	d->lim.max_elems = 358; /* MTU 1500: 1432-byte chunks */
	d->cfg.agg_round_slack_ns = slack_ns;
	d->cfg.wan_repair_before_ns = 20 * MS;
	d->cfg.wan_tail_wait_ns = 20 * MS;
	d->cfg.resend_linger_ns = 2 * MS;
	/* no readers (qs NULL): this thread publishes and reads */
	cr_assert_eq(isthd_repair_tables_init(d), 0);
	return d;
}

static void
view(struct isth_sched_round_view *v)
{
	memset(v, 0, sizeof(*v));
	v->round_ns = 600 * MS;
	v->payload_bytes = 130000;
	v->clique = 0x7;
	v->peers = 0x6; /* self is island 0 */
	for (int i = 1; i <= 2; i++) {
		v->snd[i].offset_ns = 10 * MS * (uint64_t)i;
		v->snd[i].rate_bps = 5200000; /* 130 KB in 200 ms */
		v->snd[i].n_segs = 1;
	}
}

Test(isthmusd_repair, cutoff_is_the_last_nack_a_repair_can_answer_in_time)
{
	struct isthd_peer p1 = {.latency_ns = 30 * MS}, p2 = {.latency_ns = 110 * MS};
	struct isth_sched_round_view v;
	struct isthd *d = edge(250 * MS);
	const struct isthd_repair_round *rt;

	d->peer_of[1] = &p1;
	d->peer_of[2] = &p2;
	view(&v);
	cr_assert_eq(isthd_repair_publish(d, &v, 5), 0);
	rt = isthd_repair_round(d, 5);
	cr_assert_not_null(rt);
	cr_assert_eq(rt->round, 5);
	cr_assert_null(isthd_repair_round(d, 1), "slot 1 holds round 5");
	cr_expect_eq(rt->expected, 0x6);
	/* 600 + 250 - 2 x 30 - 20 and 600 + 250 - 2 x 110 - 20 ms */
	cr_expect_eq(rt->cutoff[1], 770 * MS);
	cr_expect_eq(rt->cutoff[2], 610 * MS);
	/* tails by the plan: 10 + 200 + 30 and 20 + 200 + 110 ms */
	cr_expect_eq(rt->tail_at[1], 240 * MS);
	cr_expect_eq(rt->tail_at[2], 330 * MS);
	/* back-off: a round trip + tail_wait */
	cr_expect_eq(rt->backoff_ns[1], 80 * MS);
	cr_expect_eq(rt->backoff_ns[2], 240 * MS);
	isthd_repair_fini(d);
	free(d);
}

Test(isthmusd_repair, cutoff_without_latency_or_with_a_slack_beyond_a_round)
{
	struct isthd_peer p2 = {.latency_ns = 50 * MS};
	struct isth_sched_round_view v;
	struct isthd *d = edge(900 * MS);
	const struct isthd_repair_round *rt;

	d->peer_of[2] = &p2; /* peer 1 has no [peer] latency */
	view(&v);
	cr_assert_eq(isthd_repair_publish(d, &v, 0), 0);
	rt = isthd_repair_round(d, 0);
	cr_assert_not_null(rt);
	/* no latency: repair_before the round's end */
	cr_expect_eq(rt->cutoff[1], 580 * MS);
	/* the serving edge keeps a round for two: the slack counts up to T,
	 * 600 + 600 - 100 - 20 ms */
	cr_expect_eq(rt->cutoff[2], 1080 * MS);
	isthd_repair_fini(d);
	free(d);
}

/*
 * The asking side's tail due time (app/isthmusd/repair_nack.c): driven
 * through isthd_repair_track and isthd_repair_tail_check as the worker
 * drives them, with the NACKs read back from the WAN port (a ring). The
 * plan: 20 chunks of 358 int32 (11,456 bits) at 5.728 Mbit/s, 2 ms a
 * chunk, 40 ms the stream; tail_wait 5 ms; round 600 ms, slack 250 ms,
 * repair_before 20 ms. Every expected time is worked out in the test's
 * comments from those figures.
 */
#define TAIL_CHUNKS 20
#define MAX_NACKS 64

static struct rte_ring *w_in, *w_out;
static int wan_port = -1;

static void
eal_up(void)
{
	char prefix[64];
	char *argv[] = {"repair_test", "--no-huge", "-m", "64", "--no-pci", "--no-telemetry",
		"--log-level=lib.*:error", "-l", "0", prefix};
	struct rte_eth_conf conf;

	snprintf(prefix, sizeof(prefix), "--file-prefix=isth-repair-%d", getpid());
	cr_assert_geq(rte_eal_init(RTE_DIM(argv), argv), 0, "EAL: %s", rte_strerror(rte_errno));
	w_in = rte_ring_create("w_in", 256, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	w_out = rte_ring_create("w_out", 256, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	cr_assert(w_in && w_out);
	wan_port = rte_eth_from_rings("wan", &w_in, 1, &w_out, 1, 0);
	cr_assert_geq(wan_port, 0);
	memset(&conf, 0, sizeof(conf));
	cr_assert_eq(rte_eth_dev_configure((uint16_t)wan_port, 1, 1, &conf), 0);
	cr_assert_eq(rte_eth_tx_queue_setup((uint16_t)wan_port, 0, 256, 0, NULL), 0);
	cr_assert_eq(rte_eth_dev_start((uint16_t)wan_port), 0);
}

static void
eal_down(void)
{
	isth_test_eal_cleanup();
}

/* An edge (island 0) whose worker tracks peers 1 and 2 (latencies 30 and
 * 110 ms) in round 0, starting at epoch E; sends NACKs on the ring port. */
#define E (1000 * 1000 * MS)

static struct isthd *
asking_edge(struct isthd_peer *peers)
{
	struct isthd *d = edge(250 * MS);
	struct isth_sched_round_view v;

	cr_assert_eq(isth_wire_limits_init(&d->lim, 4, 1500), 0);
	d->cfg.wan_tail_wait_ns = 5 * MS;
	d->cfg.wan_last_nack_copies = 1;
	d->cfg.udp_port = 9470;
	d->wan_port = (uint16_t)wan_port;
	d->pool = rte_pktmbuf_pool_create("frames", 255, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	d->ctl_pool = rte_pktmbuf_pool_create("ctl", 255, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	cr_assert(d->pool && d->ctl_pool);
	for (unsigned int i = 1; i <= 2; i++) {
		peers[i].ip = 0x0a000000u + i;
		peers[i].port = 9470;
		d->peer_of[i] = &peers[i];
	}
	peers[1].latency_ns = 30 * MS;
	peers[2].latency_ns = 110 * MS;
	d->rep.n_chunks = TAIL_CHUNKS;
	d->rep.rx_words = TAIL_CHUNKS / 64 + 1;
	d->rep.rx = rte_zmalloc("rx", 4 * d->n_islands * sizeof(*d->rep.rx), 0);
	d->rep.rx_bits = rte_zmalloc("rx_bits", 4ull * d->n_islands * d->rep.rx_words * 8, 0);
	cr_assert(d->rep.rx && d->rep.rx_bits);
	for (unsigned int i = 0; i < 4 * d->n_islands; i++)
		d->rep.rx[i].round = UINT64_MAX;
	d->workers[0].eg.tail[0].round = d->workers[0].eg.tail[1].round = UINT64_MAX;
	isthd_workers_roles(d); /* worker 0, the RX worker, on d->wan_port */
	d->clk.epoch_ns = E;
	d->clk.round_ns = 600 * MS;
	/* 20 chunks of 1432 bytes at 5.728 Mbit/s: 2 ms a chunk, 40 ms */
	view(&v);
	v.payload_bytes = TAIL_CHUNKS * 1432;
	for (int i = 1; i <= 2; i++)
		v.snd[i].rate_bps = 5728000;
	cr_assert_eq(isthd_repair_publish(d, &v, 0), 0);
	return d;
}

static void
asking_edge_free(struct isthd *d)
{
	rte_mempool_free(d->pool);
	rte_mempool_free(d->ctl_pool);
	isthd_repair_fini(d);
	free(d);
}

/* A NACK the edge sent: when (ms from the round's start), to whom, and
 * its ranges. */
struct sent_nack {
	uint64_t at_ms;
	unsigned int sender;
	unsigned int n;
	struct isth_wire_range g[4];
	uint16_t flags; /* CHUNKS, ECHO */
	uint32_t tag; /* the NACK event's (the header's chunk field) */
	uint32_t round;
};

/*
 * Play round 0 from peer @s, millisecond by millisecond from @from_ms to
 * @until_ms:
 * chunk c arrives at @arr_ms[c] ms (0: lost), and a repair of it (RESENT)
 * at @rep_ms[c] (@rep_ms NULL or 0: none), then the worker's tail check
 * runs; every NACK it sends is read back into @out. Returns their number.
 */
/* the round play_rep plays (0 unless a test plays a later one; its
 * milliseconds count from that round's start) */
static uint64_t play_round;

static unsigned int
play_rep(struct isthd *d, unsigned int s, const uint64_t *arr_ms, const uint64_t *rep_ms,
	uint64_t from_ms, uint64_t until_ms, struct sent_nack *out)
{
	const uint64_t t0 = E + play_round * d->clk.round_ns;

	struct isth_wire_limits lim = d->lim;
	unsigned int n = 0;

	lim.udp_port = 9470;
	for (uint64_t ms = from_ms; ms <= until_ms; ms++) {
		struct rte_mbuf *m;

		for (uint32_t c = 0; c < TAIL_CHUNKS; c++) {
			struct isth_wire_pkt p;
			bool data = arr_ms[c] != 0 && arr_ms[c] == ms;
			bool rep = rep_ms != NULL && rep_ms[c] != 0 && rep_ms[c] == ms;

			if (!data && !rep)
				continue;
			memset(&p, 0, sizeof(p));
			p.hdr.type = ISTH_WIRE_DATA;
			p.hdr.flags = data ? 0 : ISTH_WIRE_F_RESENT;
			p.hdr.round = (uint32_t)play_round;
			p.hdr.sender = (uint8_t)s;
			p.hdr.chunk = c;
			isthd_repair_track(&d->workers[0], &p, t0 + ms * MS);
		}
		isthd_repair_tail_check(&d->workers[0], t0 + ms * MS);
		while (rte_ring_dequeue(w_out, (void **)&m) == 0) {
			struct isth_wire_pkt p;

			cr_assert_eq(isth_wire_parse_frame(rte_pktmbuf_mtod(m, const uint8_t *),
					     rte_pktmbuf_data_len(m), &lim, &p),
				ISTH_WIRE_OK);
			cr_assert_eq(p.hdr.type, ISTH_WIRE_NACK);
			/* the other peer sends nothing: its NACKs are not
			 * this test's */
			if (p.hdr.bitmap == 1ull << s) {
				cr_assert_lt(n, MAX_NACKS);
				out[n].at_ms = ms;
				out[n].sender = (unsigned int)__builtin_ctzll(p.hdr.bitmap);
				out[n].n = RTE_MIN(p.hdr.count, 4u);
				out[n].flags = p.hdr.flags;
				out[n].tag = p.hdr.chunk;
				out[n].round = p.hdr.round;
				for (unsigned int i = 0; i < out[n].n; i++)
					isth_wire_get_range(&p, i, &out[n].g[i]);
				n++;
			}
			rte_pktmbuf_free(m);
		}
	}
	return n;
}

static unsigned int
play(struct isthd *d, unsigned int s, const uint64_t *arr_ms, uint64_t from_ms, uint64_t until_ms,
	struct sent_nack *out)
{
	return play_rep(d, s, arr_ms, NULL, from_ms, until_ms, out);
}

/* NACK @i (@k) left at @at ms naming the @nr ranges @g, in order. */
static void
expect_nack(const struct sent_nack *k, unsigned int i, uint64_t at, unsigned int nr,
	const struct isth_wire_range *g)
{
	cr_expect_eq(k->at_ms, at, "NACK %u at %llu ms, want %llu", i, (unsigned long long)k->at_ms,
		(unsigned long long)at);
	cr_assert_eq(k->n, nr, "NACK %u: %u ranges, want %u", i, k->n, nr);
	for (unsigned int j = 0; j < nr; j++) {
		cr_expect_eq(k->g[j].first, g[j].first, "NACK %u range %u", i, j);
		cr_expect_eq(k->g[j].last, g[j].last, "NACK %u range %u", i, j);
	}
}

/*
 * The @n NACKs sent are the @n_want expected, at the times @want_ms, each
 * naming one range, chunks @first..@last.
 */
static void
expect_nacks_of(const struct sent_nack *nk, unsigned int n, const uint64_t *want_ms,
	unsigned int n_want, uint32_t first, uint32_t last)
{
	const struct isth_wire_range g = {first, last};

	cr_assert_eq(n, n_want, "%u NACKs, want %u; the second at %llu ms", n, n_want,
		n > 1 ? (unsigned long long)nk[1].at_ms : 0ull);
	for (unsigned int i = 0; i < n; i++)
		expect_nack(&nk[i], i, want_ms[i], 1, &g);
}

/* A stream arriving at half its planned rate (4 ms a chunk) whose last
 * four chunks are lost: its tail is due at the observed rate, not the
 * planned one, and is still NACKed, long before the cutoff (770 ms). */
Test(isthmusd_repair, tail_due_follows_a_stream_at_half_its_planned_rate, .init = eal_up,
	.fini = eal_down)
{
	struct isthd_peer peers[3] = {0};
	struct isthd *d = asking_edge(peers);
	struct sent_nack nk[MAX_NACKS];
	uint64_t arr[TAIL_CHUNKS] = {0};
	unsigned int n;

	/* chunks 0-15 at 40, 44, ..., 100 ms; 16-19 lost */
	for (uint32_t c = 0; c < 16; c++)
		arr[c] = 40 + 4 * c;
	/* planned: 100 + 4 chunks x 2 ms + tail_wait 5 = 113 ms (what the
	 * planned rate said; the old due time). Observed: (100 - 40) ms /
	 * 15 chunks = 4 ms a chunk, 100 + 4 x 4 + 5 = 121 ms */
	n = play(d, 1, arr, 0, 120, nk);
	cr_expect_eq(n, 0, "NACKed at %llu ms, before the observed rate's due time (121 ms)",
		n ? (unsigned long long)nk[0].at_ms : 0ull);
	n = play(d, 1, arr, 121, 121, nk);
	cr_assert_eq(n, 1, "%u NACKs by 121 ms, want 1 (the tail)", n);
	cr_expect_eq(nk[0].at_ms, 121);
	cr_expect_eq(nk[0].sender, 1);
	cr_assert_eq(nk[0].n, 1);
	cr_expect_eq(nk[0].g[0].first, 16);
	cr_expect_eq(nk[0].g[0].last, 19);
	asking_edge_free(d);
}

/* A stream at a fifth of its planned rate (10 ms a chunk: a bottleneck
 * the plan fills) that arrives whole: nothing is NACKed. At the planned
 * rate chunk 17 (at 210 ms) put the tail due at 210 + 2 x 2 + 5 = 219
 * ms, before chunk 18 (220 ms): chunks 18-19, only late, NACKed as lost.
 * Observed from chunk 4 on: 10 ms a chunk, due 40 + 19 x 10 + 5 = 235 ms,
 * after chunk 19 (230 ms). */
Test(isthmusd_repair, a_slow_stream_arriving_whole_is_not_nacked, .init = eal_up, .fini = eal_down)
{
	struct isthd_peer peers[3] = {0};
	struct isthd *d = asking_edge(peers);
	struct sent_nack nk[MAX_NACKS];
	uint64_t arr[TAIL_CHUNKS];
	unsigned int n;

	for (uint32_t c = 0; c < TAIL_CHUNKS; c++)
		arr[c] = 40 + 10 * c;
	n = play(d, 1, arr, 0, 800, nk);
	cr_expect_eq(n, 0, "%u NACKs, the first at %llu ms naming chunks %llu-%llu", n,
		n ? (unsigned long long)nk[0].at_ms : 0ull,
		n ? (unsigned long long)nk[0].g[0].first : 0ull,
		n ? (unsigned long long)nk[0].g[0].last : 0ull);
	asking_edge_free(d);
}

/* Peer 2 (110 ms away: cutoff 600 + 250 - 220 - 20 = 610 ms) at 30 ms a
 * chunk from 120 ms, chunks 10-19 lost: observed, the tail is due at
 * 120 + 19 x 30 + 5 = 695 ms, past the cutoff, so it is NACKed at the
 * cutoff, whole, not later and not before (at the planned rate chunk 7,
 * at 330 ms, made it due at 330 + 12 x 2 + 5 = 359 ms, before chunk 8).
 * Chunks 17-19 would come at 630-690 ms if they came: they are asked for
 * too, since whether they are lost is known only after the cutoff. Then
 * NACKing stops: nothing after the cutoff. */
Test(isthmusd_repair, a_tail_due_past_the_cutoff_is_nacked_at_it, .init = eal_up, .fini = eal_down)
{
	struct isthd_peer peers[3] = {0};
	struct isthd *d = asking_edge(peers);
	struct sent_nack nk[MAX_NACKS];
	uint64_t arr[TAIL_CHUNKS] = {0};
	unsigned int n;

	for (uint32_t c = 0; c < 10; c++)
		arr[c] = 120 + 30 * c;
	n = play(d, 2, arr, 0, 900, nk);
	cr_assert_eq(n, 1, "%u NACKs, want 1 (the tail at the cutoff); the first at %llu ms", n,
		n ? (unsigned long long)nk[0].at_ms : 0ull);
	cr_expect_eq(nk[0].at_ms, 610);
	cr_expect_eq(nk[0].sender, 2);
	cr_assert_eq(nk[0].n, 1);
	cr_expect_eq(nk[0].g[0].first, 10);
	cr_expect_eq(nk[0].g[0].last, 19);
	/* counted at the cutoff: its 10, and peer 1's 20 (it sent nothing) */
	cr_expect_eq(isth_ctr_get(&d->workers[0].st.peer_chunks_unrepaired), 10 + 20);
	asking_edge_free(d);
}

/*
 * Last-chance copies leave spaced, not back to back (bursty loss: a copy
 * sent 0.1 ms after the first, and its repairs, died in the same loss
 * burst). Peer 2: back-off 2 x 110 + 5 = 225 ms, cutoff 610 ms,
 * last_nack_copies 2, tail_copies_after 20 ms. Chunks 0-15 at 130, 132,
 * ..., 160 ms (the planned 2 ms a chunk), 16-19 lost: the tail is due at
 * 160 + 4 x 2 + 5 = 173 ms; 173 + 3 x 225 > 610, so it is a last chance:
 * the NACK at 173 ms, its copy at 193; the retry after the back-off and
 * the 4 chunks' repair train, 173 + 225 + 4 x 2 = 406 ms, its copy at 426;
 * the next retry (406 + 225 = 631 ms) is past the cutoff, so the final
 * retry leaves one copy spacing before the cutoff, 610 - 20 = 590, with its
 * copy at 610 (before the final retry: 173, 193, 406, 426). Before, both
 * copies left at 173 and at 398 ms (the retry without the train: 398).
 */
/* The stream of the test below (last_nack_copies 2, tail_copies_after
 * 20 ms, @echoes echoes) played to 900 ms; the NACKs into @nk. */
static unsigned int
play_last_chances(struct isthd *d, unsigned int echoes, struct sent_nack *nk)
{
	uint64_t arr[TAIL_CHUNKS] = {0};

	d->cfg.wan_last_nack_copies = 2;
	d->cfg.wan_nack_echoes = echoes;
	d->cfg.wan_tail_copies_after_ns = 20 * MS;
	for (uint32_t c = 0; c < 16; c++)
		arr[c] = 130 + 2 * c;
	return play(d, 2, arr, 0, 900, nk);
}

Test(isthmusd_repair, last_chance_copies_leave_spaced, .init = eal_up, .fini = eal_down)
{
	static const uint64_t want[] = {173, 193, 406, 426, 590, 610};
	struct isthd_peer peers[3] = {0};
	struct isthd *d = asking_edge(peers);
	struct sent_nack nk[MAX_NACKS];
	unsigned int n;

	n = play_last_chances(d, 0, nk);
	expect_nacks_of(nk, n, want, RTE_DIM(want), 16, 19);
	asking_edge_free(d);
}

/*
 * A stream none of whose DATA has arrived is asked for once, at the
 * cutoff, not when its tail falls due: losing all its 20 chunks is out of
 * reach of the loss rates repair is for (0.1^20), while a stream queued on
 * its path is common (a bottleneck the plan fills, a WAN draining after an
 * outage), and early repairs of it, served in the WAN's priority class
 * ahead of the DATA they duplicate, sent it over its path twice, every
 * back-off, and kept the queue from draining (system-pause partial for 20
 * rounds instead of 4). At the cutoff it is asked for once, whole, for a
 * stream really lost whole (a stalled host's ring). Peer 2 (cutoff 610
 * ms) sends nothing, then (a second edge) only its two tail copies
 * arrive, as repairs, at 100 ms: one NACK at 610, chunks 0-19 (0-17), not
 * copied (before: at 175 and 440 ms). Peer 1 sends nothing either: two
 * streams counted queued; their chunks but the copies unrepaired at the
 * cutoffs, none unasked.
 */
Test(isthmusd_repair, a_stream_none_of_whose_data_came_is_asked_at_the_cutoff, .init = eal_up,
	.fini = eal_down)
{
	static const uint64_t want[] = {610};

	for (int copies = 0; copies <= 1; copies++) {
		struct isthd_peer peers[3] = {0};
		struct isthd *d = asking_edge(peers);
		struct sent_nack nk[MAX_NACKS];
		uint64_t arr[TAIL_CHUNKS] = {0}, rep[TAIL_CHUNKS] = {0};
		unsigned int n;

		d->cfg.wan_last_nack_copies = 2;
		d->cfg.wan_tail_copies_after_ns = 20 * MS;
		if (copies)
			rep[TAIL_CHUNKS - 2] = rep[TAIL_CHUNKS - 1] = 100;
		n = play_rep(d, 2, arr, rep, 0, 900, nk);
		expect_nacks_of(nk, n, want, RTE_DIM(want), 0, TAIL_CHUNKS - 1 - 2 * copies);
		cr_expect_eq(isth_ctr_get(&d->workers[0].st.peer_streams_queued), 2);
		cr_expect_eq(isth_ctr_get(&d->workers[0].st.peer_chunks_unrepaired),
			2 * TAIL_CHUNKS - 2 * copies);
		cr_expect_eq(isth_ctr_get(&d->workers[0].st.peer_unrepaired_unasked), 0);
		asking_edge_free(d);
	}
}

/*
 * A tail falling due while the gaps' NACK is less than a back-off old asks
 * for the tail only: the gaps' repairs are on their way (asking again
 * tripled a loss burst's repairs). Peer 2 (back-off 225 ms, cutoff 610,
 * last_nack_copies 2, tail_copies_after 20 ms): chunks 0-15 at 130 + 2c
 * ms but 8-9 lost, 16-19 lost. Chunk 10 (150 ms) shows the gap: NACK 8-9
 * at 150, retry due after the back-off and the 2 chunks' repair train, at
 * 150 + 225 + 2 x 2 = 379; a last chance (150 + 3 x 225 > 610), so the
 * gap's NACK has its copy at 170 (8-9 only; before 2026-12-02 a gap NACK
 * was never copied). The tail is due at 160 + 4 x 2 + 5 = 173 ms:
 * NACK 16-19 only, a last chance (173 + 3 x 225 > 610), its copy at 193
 * (16-19). The retry at 379 asks for 8-9 and 16-19, its copy at 399; the
 * next, 379 + 225 + 6 x 2 = 616 ms, would miss the cutoff (610) for the
 * train's time only, so it leaves after the round trip alone, at 604 (not
 * before the final retry's time, 610 - 20 = 590), and its copy at the
 * cutoff, 610 (before the final retry: the retry at 610, its copy, due at
 * 630, never left). Before the train (the back-off of 2026-12-02): 375, 395 and 600. Before
 * the tail-only NACK: 8-9 at 150; 8-9 and 16-19 twice at 173 and twice at 398
 * (the tail NACK moved the retry), nothing at 600.
 */
Test(isthmusd_repair, a_tail_due_soon_after_a_gap_nack_asks_for_the_tail_only, .init = eal_up,
	.fini = eal_down)
{
	static const struct {
		uint64_t at;
		unsigned int n;
		struct isth_wire_range g[2];
	} want[] = {{150, 1, {{8, 9}}}, {170, 1, {{8, 9}}}, {173, 1, {{16, 19}}},
		{193, 1, {{16, 19}}}, {379, 2, {{8, 9}, {16, 19}}}, {399, 2, {{8, 9}, {16, 19}}},
		{604, 2, {{8, 9}, {16, 19}}}, {610, 2, {{8, 9}, {16, 19}}}};
	struct isthd_peer peers[3] = {0};
	struct isthd *d = asking_edge(peers);
	struct sent_nack nk[MAX_NACKS];
	uint64_t arr[TAIL_CHUNKS] = {0};
	unsigned int n;

	d->cfg.wan_last_nack_copies = 2;
	d->cfg.wan_tail_copies_after_ns = 20 * MS;
	for (uint32_t c = 0; c < 16; c++)
		arr[c] = c == 8 || c == 9 ? 0 : 130 + 2 * c;
	n = play(d, 2, arr, 0, 900, nk);
	cr_assert_eq(n, RTE_DIM(want), "%u NACKs, want %zu; the second at %llu ms (%u ranges)", n,
		RTE_DIM(want), n > 1 ? (unsigned long long)nk[1].at_ms : 0ull, n > 1 ? nk[1].n : 0);
	for (unsigned int i = 0; i < n; i++)
		expect_nack(&nk[i], i, want[i].at, want[i].n, want[i].g);
	asking_edge_free(d);
}

/*
 * ... unless the gaps' retry would come after the cutoff: then the tail
 * NACK is the gaps' last chance and names them too (seen in the system
 * test at 2 % loss: a gap whose one repair was lost, a retry 5 ms past the
 * cutoff, and the tail NACK asking for the tail only, so the chunk was
 * asked once). Peer 2 as above, chunks 0-15 at 100 + 30c ms (the
 * observed 30 ms a chunk), 8-9 and 16-19 lost: the gap NACK at 400
 * (chunk 10), a last chance, its copy at 420 (8-9 only), its retry due at
 * 400 + 225 + 2 x 2 = 629, past the cutoff (610); the tail, due
 * at 550 + 4 x 30 + 5 = 675 ms, is asked for at the cutoff, 610. The
 * gap's final retry leaves one copy spacing before the cutoff, at 590
 * (8-9: the tail is not due yet), its copy at the cutoff, 610 (8-9); the
 * tail NACK at 610 names 8-9 too (their retry, 590 + 225, is past the
 * cutoff), and its copy, due at once since the NACK left at the cutoff,
 * leaves at the next pass, 611. Before the final retry: 400, 420, and the
 * tail NACK at 610 naming both, its copy (630) never sent. With the tail
 * only, 8-9 were asked once; before the tail-only NACK both left twice
 * at 610; before the gap copies the gap NACK had no copy.
 */
Test(isthmusd_repair, a_tail_nack_is_the_gaps_last_chance_when_their_retry_misses_the_cutoff,
	.init = eal_up, .fini = eal_down)
{
	static const struct {
		uint64_t at;
		unsigned int n;
		struct isth_wire_range g[2];
	} want[] = {{400, 1, {{8, 9}}}, {420, 1, {{8, 9}}}, {590, 1, {{8, 9}}}, {610, 1, {{8, 9}}},
		{610, 2, {{8, 9}, {16, 19}}}, {611, 2, {{8, 9}, {16, 19}}}};
	struct isthd_peer peers[3] = {0};
	struct isthd *d = asking_edge(peers);
	struct sent_nack nk[MAX_NACKS];
	uint64_t arr[TAIL_CHUNKS] = {0};
	unsigned int n;

	d->cfg.wan_last_nack_copies = 2;
	d->cfg.wan_tail_copies_after_ns = 20 * MS;
	for (uint32_t c = 0; c < 16; c++)
		arr[c] = c == 8 || c == 9 ? 0 : 100 + 30 * c;
	n = play(d, 2, arr, 0, 900, nk);
	cr_assert_eq(n, RTE_DIM(want), "%u NACKs, want %zu; the second at %llu ms (%u ranges)", n,
		RTE_DIM(want), n > 1 ? (unsigned long long)nk[1].at_ms : 0ull, n > 1 ? nk[1].n : 0);
	for (unsigned int i = 0; i < n; i++)
		expect_nack(&nk[i], i, want[i].at, want[i].n, want[i].g);
	asking_edge_free(d);
}

/*
 * A retry waits for the repair train its NACK asked for: the serving edge
 * answers a NACK of n chunks with n repairs back to back, which arrive a
 * round trip later over n chunk times. Peer 1 (30 ms away: back-off 2 x
 * 30 + 5 = 65 ms, cutoff 770), chunks at 40 + 2c ms, 4-15 lost: chunk 16
 * (72 ms) shows the gap, NACK 4-15 at 72. Its repairs leave the peer at
 * 102 ms and arrive at 72 + 60 + 2 = 134, 136, ..., 156 ms (chunk 4 + k at
 * 134 + 2k), but chunk 10's (146) is lost. The retry waits the back-off and
 * the 12 chunks' train, 72 + 65 + 12 x 2 = 161 ms, and asks for chunk 10
 * only; its repair arrives at 161 + 60 + 2 = 223. Without the train the
 * retry left at 72 + 65 = 137 ms and asked again for 6-15, nine of them on
 * their way (then for 10 at 202).
 */
Test(isthmusd_repair, a_retry_waits_for_the_repair_train_of_its_nack, .init = eal_up,
	.fini = eal_down)
{
	struct isthd_peer peers[3] = {0};
	struct isthd *d = asking_edge(peers);
	struct sent_nack nk[MAX_NACKS];
	uint64_t arr[TAIL_CHUNKS] = {0}, rep[TAIL_CHUNKS] = {0};
	unsigned int n;

	for (uint32_t c = 0; c < TAIL_CHUNKS; c++)
		if (c < 4 || c > 15)
			arr[c] = 40 + 2 * c;
	for (uint32_t c = 4; c <= 15; c++)
		rep[c] = c == 10 ? 223 : 134 + 2 * (c - 4);
	n = play_rep(d, 1, arr, rep, 0, 800, nk);
	cr_assert_eq(n, 2, "%u NACKs, want 2; the second at %llu ms naming %llu-%llu", n,
		n > 1 ? (unsigned long long)nk[1].at_ms : 0ull,
		n > 1 ? (unsigned long long)nk[1].g[0].first : 0ull,
		n > 1 ? (unsigned long long)nk[1].g[0].last : 0ull);
	cr_expect_eq(nk[0].at_ms, 72);
	cr_assert_eq(nk[0].n, 1);
	cr_expect_eq(nk[0].g[0].first, 4);
	cr_expect_eq(nk[0].g[0].last, 15);
	cr_expect_eq(
		nk[1].at_ms, 161, "retry at %llu ms, want 161", (unsigned long long)nk[1].at_ms);
	cr_assert_eq(nk[1].n, 1);
	cr_expect_eq(nk[1].g[0].first, 10);
	cr_expect_eq(nk[1].g[0].last, 10);
	cr_expect_eq(isth_ctr_get(&d->workers[0].st.peer_chunks_unrepaired), 0 + TAIL_CHUNKS,
		"peer 2 sent nothing: its 20, none of peer 1's");
	asking_edge_free(d);
}

/*
 * A gap's own NACK is copied when it is a last chance (at most two retries
 * fit before the cutoff), like the tail check's: on a long lossy path a
 * stream queued behind a bottleneck shows its gaps late in the round, and
 * a lost gap NACK, or its one lost repair, cost the chunk an attempt of
 * the three it had. Peer 2 (back-off 225 ms, cutoff 610, last_nack_copies
 * 2, tail_copies_after 20 ms), chunks at 130 + 2c ms, chunk 8 lost and
 * never repaired: chunk 9 (148 ms) shows the gap, NACK 8 at 148, a last
 * chance (148 + 3 x 225 > 610), its copy at 168 (chunk 8 only); the retry
 * at 148 + 225 + 1 x 2 = 375, its copy at 395; the next at 375 + 227 =
 * 602 (<= 610); its copy, 20 ms later at 622, would be past the cutoff, so
 * it leaves at it, 610 (before: never). Without the gap's copy: 148, 375,
 * 395, 602.
 */
Test(isthmusd_repair, a_gap_nack_that_is_a_last_chance_is_copied, .init = eal_up, .fini = eal_down)
{
	static const uint64_t want[] = {148, 168, 375, 395, 602, 610};
	struct isthd_peer peers[3] = {0};
	struct isthd *d = asking_edge(peers);
	struct sent_nack nk[MAX_NACKS];
	uint64_t arr[TAIL_CHUNKS] = {0};
	unsigned int n;

	d->cfg.wan_last_nack_copies = 2;
	d->cfg.wan_tail_copies_after_ns = 20 * MS;
	for (uint32_t c = 0; c < TAIL_CHUNKS; c++)
		arr[c] = c == 8 ? 0 : 130 + 2 * c;
	n = play(d, 2, arr, 0, 900, nk);
	expect_nacks_of(nk, n, want, RTE_DIM(want), 8, 8);
	asking_edge_free(d);
}

/*
 * ... and not when retries fit: peer 1 (back-off 65 ms, cutoff 770),
 * chunks at 40 + 2c ms, chunk 8 lost: the gap NACK at 58 (chunk 9) has
 * 58 + 3 x 65 = 253 ms < 770 and no copy; the repair arrives at 100.
 */
Test(isthmusd_repair, an_early_gap_nack_is_not_copied, .init = eal_up, .fini = eal_down)
{
	struct isthd_peer peers[3] = {0};
	struct isthd *d = asking_edge(peers);
	struct sent_nack nk[MAX_NACKS];
	uint64_t arr[TAIL_CHUNKS] = {0}, rep[TAIL_CHUNKS] = {0};
	unsigned int n;

	d->cfg.wan_last_nack_copies = 2;
	d->cfg.wan_nack_echoes = 2; /* for last chances only: none here */
	d->cfg.wan_tail_copies_after_ns = 20 * MS;
	for (uint32_t c = 0; c < TAIL_CHUNKS; c++)
		arr[c] = c == 8 ? 0 : 40 + 2 * c;
	rep[8] = 100;
	n = play_rep(d, 1, arr, rep, 0, 800, nk);
	cr_assert_eq(n, 1, "%u NACKs, want 1; the second at %llu ms", n,
		n > 1 ? (unsigned long long)nk[1].at_ms : 0ull);
	cr_expect_eq(nk[0].at_ms, 58);
	cr_expect_eq(nk[0].g[0].first, 8);
	cr_expect_eq(nk[0].g[0].last, 8);
	cr_expect_eq(nk[0].flags, ISTH_WIRE_F_CHUNKS, "not an echo");
	cr_expect_neq(nk[0].tag, 0, "tagged");
	asking_edge_free(d);
}

/*
 * With [wan] nack_echoes 2, each NACK of the last chances of
 * last_chance_copies_leave_spaced (the NACK and copy at 173 and 193 ms,
 * the retry and copy at 406 and 426, the final retry and copy at 590 and
 * 610) leaves with two echoes right behind it: ECHO set, the same ranges
 * (16-19) and the same tag. Each of the six is an event of its own (a copy
 * is served again when it arrives, an echo only when its event's NACK did
 * not): six tags, none 0, none repeated.
 */
Test(isthmusd_repair, last_chance_nacks_leave_with_their_echoes, .init = eal_up, .fini = eal_down)
{
	static const uint64_t want[] = {173, 193, 406, 426, 590, 610};
	const struct isth_wire_range g = {16, 19};
	struct isthd_peer peers[3] = {0};
	struct isthd *d = asking_edge(peers);
	struct sent_nack nk[MAX_NACKS];
	unsigned int n;

	n = play_last_chances(d, 2, nk);
	cr_assert_eq(n, 3 * RTE_DIM(want), "%u NACK frames, want %zu", n, 3 * RTE_DIM(want));
	for (unsigned int i = 0; i < RTE_DIM(want); i++) {
		const struct sent_nack *k = &nk[3 * i];

		cr_expect_eq(k[0].flags, ISTH_WIRE_F_CHUNKS, "event %u: the NACK first", i);
		cr_expect_neq(k[0].tag, 0, "event %u tagged", i);
		for (unsigned int j = 0; j < 3; j++) {
			expect_nack(&k[j], 3 * i + j, want[i], 1, &g);
			cr_expect_eq(k[j].tag, k[0].tag, "event %u frame %u: its tag", i, j);
			if (j > 0)
				cr_expect_eq(k[j].flags, ISTH_WIRE_F_CHUNKS | ISTH_WIRE_F_ECHO,
					"event %u frame %u: an echo", i, j);
		}
		for (unsigned int j = 0; j < i; j++)
			cr_expect_neq(
				nk[3 * j].tag, k[0].tag, "events %u and %u share a tag", j, i);
	}
	asking_edge_free(d);
}

/* Keep the NACKs @nk[0..n) of round @r only, in order; @return them. */
static unsigned int
only_round(struct sent_nack *nk, unsigned int n, uint32_t r)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < n; i++)
		if (nk[i].round == r)
			nk[k++] = nk[i];
	return k;
}

/*
 * Peer 2 is an island of two hosts: chunks 0-9 (host 0) at 130 + 4c ms
 * and 10-19 (host 1) at 132 + 4(c - 10), side by side as its edge's pacer
 * releases them, chunk 5 (at 150) lost. Chunk 10 at 132 shows a gap,
 * 1-9, NACKed at once (nothing is known yet), its retry due after the
 * back-off and the 9 chunks' train, 132 + 225 + 18 = 375 ms; chunks 1-4
 * then come below the next one, and the fourth (146 ms) marks peer 2
 * unordered. From then its tail is due by the chunks still to come (at
 * 168 ms one, at the rate measured below, + tail_wait 5 ms: 175 ms); the
 * gap NACK's retry is pending, so the tail NACK asks for the chunks after
 * the newest (none) and the retry at 375 for chunk 5.
 * In round 1 peer 2 is known unordered from its first chunk: the jump to
 * chunk 10 asks for nothing, and its rate is measured over the chunks
 * come (19 from 130 to 168 ms: 38 / 18 = 2.11 ms a chunk, slower than the
 * planned 2), so the tail is due at 168 + 2.11 + 5 = 175.1 ms: the NACK
 * of chunk 5 at 176, its retry at 176 + 225 + 2 = 403. (Before: in every round the jump NACKed
 * the other host's range still to come, and its repairs duplicated the
 * stream.) Eight rounds of peer 2 in a row coming whole and in order
 * make it ordered again.
 */
Test(isthmusd_repair, an_island_of_two_hosts_is_asked_for_at_its_tail, .init = eal_up,
	.fini = eal_down)
{
	static const uint64_t want1[] = {176, 403};
	const struct isth_wire_range g5 = {5, 5}, g1_9 = {1, 9};
	struct isthd_peer peers[3] = {0};
	struct isthd *d = asking_edge(peers);
	struct isth_sched_round_view v;
	struct sent_nack nk[MAX_NACKS];
	uint64_t arr[TAIL_CHUNKS] = {0};
	unsigned int n;

	for (uint32_t c = 0; c < 10; c++) {
		arr[c] = c == 5 ? 0 : 130 + 4 * c;
		arr[10 + c] = 132 + 4 * c;
	}
	n = play(d, 2, arr, 0, 500, nk);
	cr_assert_eq(n, 2, "%u NACKs, want 2", n);
	expect_nack(&nk[0], 0, 132, 1, &g1_9);
	expect_nack(&nk[1], 1, 375, 1, &g5);
	cr_expect_eq(d->rep.unordered, 1ull << 2, "peer 2 unordered");
	cr_expect_eq(isth_ctr_get(&d->workers[0].st.peer_streams_unordered), 1);

	/* round 1 (publish the same view for it) */
	view(&v);
	v.payload_bytes = TAIL_CHUNKS * 1432;
	for (int i = 1; i <= 2; i++)
		v.snd[i].rate_bps = 5728000;
	cr_assert_eq(isthd_repair_publish(d, &v, 1), 0);
	play_round = 1;
	n = play(d, 2, arr, 0, 500, nk);
	/* round 0's last retries (602 ms and on) fall in round 1's first
	 * milliseconds: round 1's NACKs only */
	n = only_round(nk, n, 1);
	expect_nacks_of(nk, n, want1, RTE_DIM(want1), 5, 5);
	cr_expect_eq(isth_ctr_get(&d->workers[0].st.peer_streams_unordered), 1, "counted once");

	/* rounds 2-9 in chunk order, whole: ordered again after the eighth
	 * (hosts that happen to send one after the other in a round do not
	 * make the peer ordered) */
	for (uint32_t c = 0; c < TAIL_CHUNKS; c++)
		arr[c] = 130 + 2 * c;
	for (play_round = 2; play_round <= 9; play_round++) {
		cr_expect_eq(d->rep.unordered, 1ull << 2, "round %lu: peer 2 still unordered",
			(unsigned long)play_round);
		cr_assert_eq(isthd_repair_publish(d, &v, play_round), 0);
		n = only_round(nk, play(d, 2, arr, 0, 500, nk), (uint32_t)play_round);
		cr_expect_eq(n, 0, "round %lu: %u NACKs", (unsigned long)play_round, n);
	}
	cr_expect_eq(d->rep.unordered, 0, "peer 2 ordered again");
	asking_edge_free(d);
}

/*
 * Peer 2's host 1 sends its whole range first (chunks 10-19 at 130 +
 * 2(c - 10) ms), then host 0 (0-9 at 150 + 2c), chunk 5 (160 ms) lost: the
 * stream's first DATA here is chunk 10, a jump not NACKed (before: chunks
 * 0-9 at 130 ms, all on their way); chunks 0-3 then come below it, and
 * the fourth (156 ms) marks peer 2 unordered. The tail is due by the
 * chunks still to come, at the rate measured (19 in 38 ms from 130: 2.11
 * ms a chunk): 168 + 2.11 + 5 = 175.1 ms, the NACK of chunk 5 at 176,
 * its retry at 176 + 225 + 2 = 403. Peer 1 sends in order (chunks at 40 +
 * 2c ms) and loses its first 8: its first DATA is chunk 8 (56 ms), a jump
 * not NACKed at once either, and nothing comes below it: peer 1 stays
 * ordered; its tail is due by the chunks still to come, the 8 lost
 * counted (12 came in 22 ms: 2 ms a chunk), 78 + 8 x 2 + 5 = 99 ms (chunk
 * 19, the last, at 78), when chunks 0-7 are NACKed with it. A first DATA below chunk 8
 * shows a gap NACKed at once (an_early_gap_nack_is_not_copied: chunk 8
 * lost, NACKed at 58).
 */
Test(isthmusd_repair, a_stream_that_begins_with_another_hosts_range_is_unordered, .init = eal_up,
	.fini = eal_down)
{
	static const uint64_t want[] = {176, 403};
	struct isthd_peer peers[3] = {0};
	struct isthd *d = asking_edge(peers);
	struct sent_nack nk[MAX_NACKS];
	uint64_t arr[TAIL_CHUNKS] = {0};
	unsigned int n;

	for (uint32_t c = 0; c < 10; c++) {
		arr[10 + c] = 130 + 2 * c;
		arr[c] = c == 5 ? 0 : 150 + 2 * c;
	}
	n = play(d, 2, arr, 0, 500, nk);
	expect_nacks_of(nk, n, want, RTE_DIM(want), 5, 5);
	cr_expect_eq(d->rep.unordered, 1ull << 2, "peer 2 unordered");

	for (uint32_t c = 0; c < TAIL_CHUNKS; c++)
		arr[c] = c < 8 ? 0 : 40 + 2 * c;
	n = play(d, 1, arr, 0, 100, nk);
	cr_assert_eq(n, 1, "%u NACKs", n);
	cr_expect_eq(nk[0].at_ms, 99);
	cr_expect_eq(nk[0].g[0].first, 0);
	cr_expect_eq(nk[0].g[0].last, 7);
	cr_expect_eq(d->rep.unordered, 1ull << 2, "peer 1 ordered");
	cr_expect_eq(isth_ctr_get(&d->workers[0].st.peer_streams_unordered), 1);
	asking_edge_free(d);
}

/* A (TSC, CLOCK_REALTIME) pair read as close together as the test can:
 * the tightest of five brackets. */
static void
pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t a = rte_rdtsc(), n = isth_clock_real_ns(), b = rte_rdtsc();

		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = n;
		}
	}
}

/* The data path's clock (TSC since start, at the measured rate) keeps to
 * CLOCK_REALTIME, the islands' clock: within 0.2 ms over a second (DPDK's
 * own figure, rounded to 10 MHz, drifted 1.9 ms a second on the AMD VM
 * this was written on, and 57 ms by the time a testbed's epoch came). */
Test(isthmusd_clock, tsc_rate_keeps_to_the_system_clock)
{
	struct isthd *d = isth_test_isthd_new();
	struct timespec w = {.tv_sec = 1};
	uint64_t tsc = 0, ns = 0;
	int64_t diff;

	cr_assert_not_null(d);
	d->clk.tsc_hz = isthd_tsc_hz_measure(200 * MS, 0);
	cr_assert_gt(d->clk.tsc_hz, 0);
	pair(&d->clk.tsc0, &d->clk.rt0);
	while (nanosleep(&w, &w) != 0)
		;
	pair(&tsc, &ns);
	diff = (int64_t)(isthd_tsc_to_ns(d, tsc) - ns);
	cr_expect(diff < 200000 && diff > -200000, "TSC clock off by %lld ns after 1 s at %llu Hz",
		(long long)diff, (unsigned long long)d->clk.tsc_hz);
	free(d);
}
