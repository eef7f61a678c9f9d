/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * WAN repair between edges (doc/isthmusd.md, "WAN repair"), the asking
 * side: track the chunks each peer sent us, NACK gaps at once and tails
 * when they are due, and NACK again with back-off until the cutoff (the
 * last moment a repair can still be summed). State: struct isthd_repair
 * (repair.h), written by the RX worker only (ISTHD_ROLE_RX). The serving
 * side is repair.c and repair_serve.c.
 */
#include <inttypes.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>

#include "isthd.h"

/* The last attempts before the cutoff that leave last_nack_copies times
 * (isthd_repair_tail_check). */
#define COPIED_ATTEMPTS 3

/* DATA below the highest chunk seen of a (round, sender), not repairs,
 * after which the sender counts as unordered (isthd_repair_track): a few
 * frames reordered on the WAN stay below it (and a false positive only
 * asks for that sender's gaps at its tail, until ORDERED_ROUNDS rounds of
 * it in a row come whole and in order); an island of two hosts passes it
 * within its first 8 chunks (one of fewer than 4 chunks a host never
 * does, and keeps the NACK of each jump). */
#define UNORDERED_MIN 4

/* Rounds of an unordered sender in a row that come whole and in order
 * before it counts as ordered again: an island of several hosts whose
 * hosts happen to send one after the other in a round stays unordered
 * (each finding cost a NACK of the other hosts' ranges in flight). */
#define ORDERED_ROUNDS 8

/* Chunks a stream must have spanned since its first arrival before its
 * observed rate may move its tail's due time (isthd_repair_track): over
 * fewer, one late pass of the worker would be taken for a slow stream. */
#define RATE_MIN_SPAN 4

/* One NACK frame to peer @s's edge for chunks @ranges of round @r of its
 * island, tagged @tag (the header's chunk field), with @flags beyond
 * CHUNKS (ISTH_WIRE_F_ECHO). Returns 0 if it was sent. */
static int
nack_frame(struct isthd_worker *w, unsigned int s, uint64_t r, const struct isth_wire_range *ranges,
	unsigned int n, uint16_t tag, uint16_t flags)
{
	struct isthd *d = w->d;
	struct isth_wire_hdr h = {
		.type = ISTH_WIRE_NACK,
		.flags = (uint16_t)(ISTH_WIRE_F_CHUNKS | flags),
		.sender = d->island,
		.count = (uint16_t)n,
		.job = d->cfg.job,
		.round = (uint32_t)r,
		.chunk = tag,
		/* version 2: NACK is a stream of its own (IV uniqueness) */
		.seq = d->auth.on ? w->seq_nack++ : 0,
		.bitmap = 1ull << s,
	};
	const struct isthd_peer *peer = d->peer_of[s];
	struct rte_mbuf *msg, *f;
	uint8_t *p;

	msg = rte_pktmbuf_alloc(d->ctl_pool);
	if (msg == NULL) {
		isth_ctr_add(&w->st.drop[ISTHD_DROP_repair_no_mbuf], 1);
		return -ENOMEM;
	}
	p = (uint8_t *)rte_pktmbuf_append(
		msg, (uint16_t)(ISTH_WIRE_HDR_SIZE + n * ISTH_WIRE_RANGE_SIZE));
	isth_wire_put_hdr(p, ISTH_WIRE_HDR_SIZE, &h);
	isth_wire_put_ranges(p + ISTH_WIRE_HDR_SIZE, n * ISTH_WIRE_RANGE_SIZE, ranges, n);
	f = isthd_repair_frame_to_peer(d, w->eng, peer, msg);
	rte_pktmbuf_free(msg);
	if (f == NULL) {
		isth_ctr_add(&w->st.drop[ISTHD_DROP_repair_no_mbuf], 1);
		return -ENOMEM;
	}
	isthd_worker_tx(w, ISTHD_WAN, &f, 1);
	return 0;
}

/*
 * Ask peer @s's edge again for chunks @ranges of round @r of its island:
 * one NACK message (@n <= max_ranges) of the NACK event tagged @tag, and
 * right after it @echoes echoes of it (ISTH_WIRE_F_ECHO, the same ranges
 * and tag). The asked edge serves an echo only for chunks no NACK of the
 * event has named (repair_serve.c), so echoes cost no repairs when
 * the NACK arrives, and bring the event's repairs when it was lost.
 * Why: isthmus-wan, like netem, moves a link's Gilbert-Elliott state per
 * frame; after a round's last DATA a link towards the asked edge may carry
 * nothing but the last NACKs, and a link in its bad state ate every one
 * of them (doc/notes/performance-log.md, section 9, "NACK echoes").
 * Frames, not time, take a link out of its bad state. Returns 0 if the
 * NACK itself was sent.
 */
static int
nack_peer(struct isthd_worker *w, unsigned int s, uint64_t r, const struct isth_wire_range *ranges,
	unsigned int n, uint16_t tag, unsigned int echoes)
{
	struct isthd *d = w->d;
	unsigned int e;

	if (d->peer_of[s] == NULL || n == 0 || n > d->lim.max_ranges)
		return -EINVAL;
	if (nack_frame(w, s, r, ranges, n, tag, 0) < 0)
		return -ENOMEM;
	isth_ctr_add(&w->st.peer_nacks_sent, 1);
	/* the asked edge knows the events of a round's first
	 * ISTHD_SERVED_CHUNKS chunks only, and serves no echo beyond them */
	if (ranges[0].first >= ISTHD_SERVED_CHUNKS)
		echoes = 0;
	for (e = 0; e < echoes; e++)
		if (nack_frame(w, s, r, ranges, n, tag, ISTH_WIRE_F_ECHO) < 0)
			break;
	isth_ctr_add(&w->st.peer_nack_echoes, e);
	if (unlikely(d->rep.trace)) {
		char b[256];
		size_t o = 0;

		for (unsigned int i = 0; i < n && o < sizeof(b) - 48; i++)
			o += (size_t)snprintf(b + o, sizeof(b) - o, " %" PRIu64 "-%" PRIu64,
				ranges[i].first, ranges[i].last);
		b[o] = 0;
		isthd_repair_trace(
			d, "nack r %" PRIu64 " s %u tag %u echoes %u ranges%s", r, s, tag, e, b);
	}
	return 0;
}

/* The tag of a new NACK event of (round, sender) @t: its NACK, its
 * messages and their echoes carry it; never 0 (untagged). */
static inline uint16_t
next_tag(struct isthd_rx_track *t)
{
	if (++t->tags == 0)
		t->tags = 1;
	return t->tags;
}

/* Echoes of a NACK of (r, s) @t sent at @now_ns: [wan] nack_echoes for
 * one of the last attempts before the cutoff @cut (those that leave
 * last_nack_copies times), none before, and none for a stream none of
 * whose DATA came (asked for once: more likely queued than lost). */
static inline unsigned int
echoes_at(const struct isthd *d, const struct isthd_rx_track *t, uint64_t now_ns, uint64_t cut)
{
	if (t->first_ns == 0 || now_ns + COPIED_ATTEMPTS * t->backoff_ns <= cut)
		return 0;
	return d->cfg.wan_nack_echoes;
}

static inline bool
chunk_seen(const uint64_t *bits, uint32_t c)
{
	return bits[c / 64] & (1ull << (c % 64));
}

/*
 * NACK every chunk in [@from, @upto) still missing from sender @s in round
 * @r: as many messages as the ranges need (max_ranges each). Returns the
 * messages sent (0: nothing missing or nothing could leave); *@named (if
 * not NULL) counts the chunks those messages name: the repair train that
 * answers them.
 */
static unsigned int
nack_missing(struct isthd_worker *w, unsigned int s, uint64_t r, const uint64_t *bits,
	uint32_t from, uint32_t upto, uint32_t *named, uint16_t tag, unsigned int echoes)
{
	struct isth_wire_range g[ISTHD_BURST];
	unsigned int n = 0, sent = 0, max = w->d->lim.max_ranges;
	uint32_t c = from, in = 0, nm = 0;

	if (max > RTE_DIM(g))
		max = RTE_DIM(g);
	while (c < upto) {
		uint32_t a;

		if (chunk_seen(bits, c)) {
			c++;
			continue;
		}
		a = c;
		while (c < upto && !chunk_seen(bits, c))
			c++;
		g[n].first = a;
		g[n].last = c - 1;
		in += c - a;
		if (++n == max) {
			if (nack_peer(w, s, r, g, n, tag, echoes) == 0) {
				sent++;
				nm += in;
			}
			n = 0;
			in = 0;
		}
	}
	if (n && nack_peer(w, s, r, g, n, tag, echoes) == 0) {
		sent++;
		nm += in;
	}
	if (named)
		*named = nm;
	return sent;
}

/* The chunk-tracking slot of (round r, sender s), reset for a new round. */
static struct isthd_rx_track *
rx_slot(struct isthd *d, const struct isthd_repair_round *rt, uint64_t r, unsigned int s,
	uint64_t **bits)
{
	unsigned int idx = (unsigned int)(r & 3) * d->n_islands + s;
	struct isthd_rx_track *t = &d->rep.rx[idx];

	*bits = d->rep.rx_bits + (size_t)idx * d->rep.rx_words;
	if (t->round != r) {
		memset(t, 0, sizeof(*t));
		t->round = r;
		t->backoff_ns = rt->backoff_ns[s];
		memset(*bits, 0, d->rep.rx_words * sizeof(uint64_t));
	}
	return t;
}

/*
 * A NACK for (r, s) naming @named chunks went out at @now: the next one
 * waits the back-off, a round trip + tail_wait, plus the time the serving
 * edge's answer, a train of @named repairs sent back to back, takes to
 * arrive at the sender's planned rate (@chunk_ns a chunk). Without the
 * train's time the retry of a long NACK fired while its repairs were still
 * arriving and asked again for those on their way (64 chunks take ~77 ms
 * at the testbed's rates), spending the serving edge's repeat allowance
 * and the link. The train never moves the retry past @cut, the cutoff:
 * a retry the round trip alone lets in stays, at the final retry's time
 * at the latest (one more attempt, if a premature one, rather than none).
 *
 * The final retry: when even the round trip does not fit before the
 * cutoff, one more NACK still leaves, last_nack_copies - 1 copy spacings
 * (tail_copies_after) before the cutoff so that its copies leave by it
 * too, provided it is a copy spacing after this NACK. Before, the last
 * NACK of a stream was often a round trip and more before the cutoff
 * (a stream that arrives late in the round has room for two attempts):
 * in traced runs at 5 % loss (triangles, 2026-12-06), a chunk whose gap
 * NACK and its copy both lost their repairs, and whose retry (with its
 * copy) was lost again, stayed missing although a third attempt fitted;
 * the chunks still missing at the cutoff are a few dozen a run, so a
 * premature ask for the ones whose repairs are on their way costs little.
 *
 * The back-off does not grow: the cutoff ends NACKing within the round
 * anyway, the serving edge's budget and repeat allowance cap the repairs
 * (2.25 times a round's stream per peer, doc/security.md), and on a lossy
 * multi-hop path a doubling back-off left room for two or three attempts
 * where a constant one leaves four to six (doc/notes/performance-log.md, section 9).
 */
static void
nack_sent(struct isthd_worker *w, struct isthd_rx_track *t, uint64_t now_ns, uint32_t named,
	uint64_t chunk_ns, uint64_t cut)
{
	const struct isthd *d = w->d;
	uint64_t at = now_ns + t->backoff_ns, after = d->cfg.wan_tail_copies_after_ns;
	uint64_t spread = (uint64_t)(d->cfg.wan_last_nack_copies - 1) * after;
	uint64_t final = cut > spread ? cut - spread : cut;

	if (t->nacks)
		isth_ctr_add(&w->st.peer_nack_retries, 1);
	if (t->nacks < UINT16_MAX)
		t->nacks++;
	t->nack_at = at + (uint64_t)named * chunk_ns;
	if (t->nack_at <= cut)
		return;
	if (at <= cut)
		t->nack_at = RTE_MAX(at, final);
	else if (final > now_ns && final >= now_ns + after)
		t->nack_at = final;
}

/*
 * When a copy of a last-chance NACK sent at @now_ns leaves: tail_copies_after
 * later, but never after the cutoff @cut (a copy due after it never left: the
 * cutoff ended NACKing first), and at once if the NACK itself left past the
 * cutoff (a late pass of the worker). So every pending copy is due by the
 * cutoff or at once, and check_stream lets it leave past the cutoff.
 */
static uint64_t
copy_time(const struct isthd *d, uint64_t now_ns, uint64_t cut)
{
	uint64_t at = now_ns + d->cfg.wan_tail_copies_after_ns;

	if (at > cut)
		at = now_ns < cut ? cut : now_ns;
	return at;
}

/*
 * A gap [@first, @last] of (r, s) was NACKed at @now_ns: when at most two
 * retries fit before the cutoff @cut, the NACK is a last chance like the
 * tail check's (isthd_repair_tail_check) and leaves last_nack_copies
 * times, the copies tail_copies_after apart, naming the gap's chunks
 * still missing then. Until 2026-12-02 a gap's own NACK was never copied:
 * on a long lossy path (three hops of 5 %, 14 % a message each way) a
 * stream queued behind a bottleneck shows its gaps late in the round, its
 * gap NACK was one of the last three attempts, and both partial results
 * of two runs at 5 % loss began with that one NACK or its one repair
 * lost (doc/notes/performance-log.md, section 9, "the last partial results at 5 %"). Gaps found before
 * a pending copy leaves join it: its range grows, its time stays.
 */
static void
gap_copies(struct isthd *d, struct isthd_rx_track *t, uint32_t first, uint32_t last,
	uint64_t now_ns, uint64_t cut)
{
	unsigned int copies = d->cfg.wan_last_nack_copies;

	if (copies < 2 || now_ns + COPIED_ATTEMPTS * t->backoff_ns <= cut)
		return;
	if (t->copies_left == 0) {
		t->copies_left = (uint8_t)RTE_MIN(copies - 1, 255u);
		t->copy_from = first;
		t->copy_to = last + 1;
		t->copy_at = copy_time(d, now_ns, cut);
		return;
	}
	if (first < t->copy_from)
		t->copy_from = first;
	if (t->copy_to && last + 1 > t->copy_to)
		t->copy_to = last + 1;
}

/*
 * A peer's DATA arrived at @now_ns: note it, NACK a gap in its chunk order
 * at once (chunks leave an island in order; reordering costs a duplicate
 * only), and, from its arrival and the stream's rate, when its last chunk
 * is due here.
 *
 * The rate is the sender's planned one or the one observed since the
 * stream's first arrival, whichever is slower. A stream through a
 * bottleneck the plan fills (or draining after an outage) arrives slower
 * than planned; at the planned rate its tail, only late in the WAN's
 * queue, was due too early and NACKed as if lost, and the repairs of
 * those NACKs, in the WAN's priority class, overtook the tail and added
 * to the very queue (doc/notes/isthmusd-design.md, "WAN repair", "Tail due time").
 * Never faster than planned: the pacer's first burst arrives faster.
 */
void
isthd_repair_track(struct isthd_worker *w, const struct isth_wire_pkt *p, uint64_t now_ns)
{
	struct isthd *d = w->d;
	uint64_t r = p->hdr.round, *bits, cns;
	unsigned int s = p->hdr.sender;
	const struct isthd_repair_round *rt;
	struct isthd_rx_track *t;
	uint32_t c = p->hdr.chunk, span;
	bool unordered, first, jump_ok, by_count;

	if (d->rep.rx == NULL || c >= d->rep.n_chunks)
		return;
	rt = isthd_repair_round(d, r);
	if (rt == NULL || !(rt->expected & (1ull << s)))
		return;
	t = rx_slot(d, rt, r, s, &bits);
	if (chunk_seen(bits, c))
		return; /* a duplicate: the backend counts it */
	bits[c / 64] |= 1ull << (c % 64);
	t->n_rx++;
	if (p->hdr.flags & ISTH_WIRE_F_RESENT) {
		isth_ctr_add(&w->st.peer_repairs_rx, 1);
		if (t->done) /* NACKing for it had stopped */
			isth_ctr_add(&w->st.peer_repairs_late, 1);
		ISTHD_REPAIR_TRACE(
			d, "repair r %" PRIu64 " s %u c %u%s", r, s, c, t->done ? " late" : "");
		return; /* a repair says nothing about the stream */
	}
	if (t->done) /* its sender (or this edge's worker) is late */
		isth_ctr_add(&w->st.peer_data_late, 1);
	if (c != t->next || t->done)
		ISTHD_REPAIR_TRACE(d, "data r %" PRIu64 " s %u c %u next %u%s", r, s, c, t->next,
			t->done ? " late" : "");
	first = t->first_ns == 0;
	if (first) {
		t->first_ns = now_ns ? now_ns : 1;
		t->first_chunk = c;
	}
	/* Out of chunk order: an island of several hosts, whose ranges
	 * reach its edge's pacer side by side (chunk 0, 50, 1, 51, ... with
	 * two), so a chunk above the next one shows no gap. Its gaps are
	 * asked for when its tail is due; until 2026-12-07 every such chunk
	 * NACKed the rest of the other hosts' ranges, still to come
	 * (doc/isthmusd.md, "An island of several hosts"). It stays
	 * unordered until ORDERED_ROUNDS rounds of it in a row come whole
	 * and in order. */
	if (c < t->next && !t->done && t->below < UINT16_MAX && ++t->below == UNORDERED_MIN) {
		d->rep.ordered_rounds[s] = 0;
		if (!(d->rep.unordered & (1ull << s))) {
			d->rep.unordered |= 1ull << s;
			isth_ctr_add(&w->st.peer_streams_unordered, 1);
			ISTHD_REPAIR_TRACE(
				d, "unordered r %" PRIu64 " s %u c %u next %u", r, s, c, t->next);
		}
	}
	unordered = (d->rep.unordered >> s) & 1;
	/* A stream whose first DATA here is chunk 8 or above: another host's
	 * range came first (the other hosts' chunks then come below it and
	 * make the sender unordered), or its first 8 chunks were lost. Its
	 * jump is not NACKed at once (that NACK named the other hosts' range,
	 * on its way), and its tail is due by the chunks still to come (the
	 * other hosts', or in order the lost ones: asked for with the tail,
	 * a few chunks' time later). */
	jump_ok = first && c >= UNORDERED_MIN * 2;
	if (jump_ok)
		t->jumped = 1;
	by_count = unordered || t->jumped;
	/* the sender's stream is here now: the rest follows at its rate (a
	 * late or slow sender moves its tail's due time), measured over the
	 * chunks come so far, by their ids in order, by their count out of
	 * order */
	cns = rt->chunk_ns[s];
	span = by_count ? t->n_rx - 1 : (c >= t->first_chunk ? c - t->first_chunk : 0);
	if (cns && span >= RATE_MIN_SPAN) {
		uint64_t took = now_ns - t->first_ns;

		/* divide (per DATA, worker 0) only when the stream is slower */
		if (now_ns > t->first_ns && took > cns * span)
			cns = took / span;
	}
	if (cns && by_count) {
		/* its chunks still to come, whatever their ids (lost ones
		 * counted too: the tail falls due a little late, by the time
		 * they would have taken) */
		t->last_due = now_ns + (uint64_t)(d->rep.n_chunks - t->n_rx) * cns;
		/* still coming (a host that paused): not due yet */
		if (t->n_rx < d->rep.n_chunks && !t->done)
			t->tail_due = 0;
	} else if (cns && c + 1 >= t->next) {
		t->last_due = now_ns + (uint64_t)(d->rep.n_chunks - 1 - c) * cns;
		/* a stream still coming after the plan's due time (a late
		 * sender): its tail is not due yet, retries ask for gaps only */
		if (c + 1 < d->rep.n_chunks && !t->done)
			t->tail_due = 0;
	}
	if (c > t->next && !t->done && !unordered && !jump_ok) {
		struct isth_wire_range g = {t->next, c - 1};
		uint64_t cut = d->clk.epoch_ns + r * d->clk.round_ns + rt->cutoff[s];

		if (nack_peer(w, s, r, &g, 1, next_tag(t), echoes_at(d, t, now_ns, cut)) == 0) {
			if (t->nack_at == 0)
				nack_sent(w, t, now_ns, c - t->next, rt->chunk_ns[s], cut);
			gap_copies(d, t, t->next, c - 1, now_ns, cut);
		}
	}
	if (c + 1 > t->next)
		t->next = c + 1;
}

/* NACKing for (round, sender) @t stopped with chunks missing: count them,
 * and of them the tail (after the last chunk its stream brought) and
 * those never NACKed, so that a partial says why (doc/isthmusd.md). */
static void
unrepaired(struct isthd_worker *w, const struct isthd_rx_track *t, unsigned int s,
	const uint64_t *bits)
{
	const struct isthd *d = w->d;
	uint32_t n = d->rep.n_chunks - t->n_rx, tail = 0;

	for (uint32_t c = t->next; c < d->rep.n_chunks; c++)
		tail += !chunk_seen(bits, c);
	isth_ctr_add(&w->st.peer_chunks_unrepaired, n);
	isth_ctr_add(&w->st.peer_unrepaired_tail, tail);
	if (t->nacks == 0)
		isth_ctr_add(&w->st.peer_unrepaired_unasked, n);
	if (unlikely(d->rep.trace)) {
		for (uint32_t c = 0; c < d->rep.n_chunks; c++)
			if (!chunk_seen(bits, c))
				isthd_repair_trace(d,
					"unrepaired r %" PRIu64 " s %u c %u next %u nacks %u",
					t->round, s, c, t->next, t->nacks);
	}
}

/* A last-chance NACK's next copy of (r, s) @t, spaced from the one
 * before (by the cutoff @cut at the latest), when due: what is still
 * missing now. @return messages sent. */
static unsigned int
copy_due(struct isthd_worker *w, struct isthd_rx_track *t, uint64_t r, unsigned int s,
	const uint64_t *bits, uint64_t now_ns, uint64_t cut)
{
	const struct isthd *d = w->d;
	uint64_t upto;
	unsigned int k;

	if (!t->copies_left || now_ns < t->copy_at)
		return 0;
	t->copies_left--;
	t->copy_at = copy_time(d, now_ns, cut);
	upto = t->tail_due ? d->rep.n_chunks : t->next;
	if (t->copy_to && t->copy_to < upto)
		upto = t->copy_to;
	k = nack_missing(w, s, r, bits, t->copy_from, (uint32_t)upto, NULL, next_tag(t),
		d->cfg.wan_nack_echoes);
	ISTHD_REPAIR_TRACE(d, "copy r %" PRIu64 " s %u nacks %u", r, s, k);
	return k;
}

/* What a NACK of (r, s) @t from chunk @from that sent @k messages naming
 * @named chunks leaves to do: the next retry, the copies still to leave
 * (@copies in all), or a retry of a NACK that could not leave. */
static void
nack_after(struct isthd_worker *w, struct isthd_rx_track *t, uint32_t from, unsigned int k,
	unsigned int copies, uint32_t named, uint64_t chunk_ns, uint64_t cut, uint64_t now_ns)
{
	const struct isthd *d = w->d;

	if (from) {
		/* the tail only: the gaps' retry stays when it was */
		if (t->nacks < UINT16_MAX)
			t->nacks++;
		/* a gap's copy still to leave joins these */
		if (copies > 1) {
			if (t->copies_left == 0 || from < t->copy_from)
				t->copy_from = from;
			t->copies_left = (uint8_t)RTE_MIN(copies - 1, 255u);
			t->copy_to = 0;
			t->copy_at = copy_time(d, now_ns, cut);
		}
	} else if (k) {
		nack_sent(w, t, now_ns, named, chunk_ns, cut);
		t->copies_left = (uint8_t)RTE_MIN(copies - 1, 255u);
		t->copy_from = 0;
		t->copy_to = 0;
		t->copy_at = copy_time(d, now_ns, cut);
	} else if (t->tail_due) {
		/* nothing could leave (no mbuf): try again */
		t->nack_at = now_ns + t->backoff_ns;
	} else {
		/* nothing below next missing: wait for the tail */
		t->nack_at = 0;
	}
}

/*
 * Sender @s's stream of round @r (started at @start) at @now_ns: done, or
 * its copies, its tail or its retry when due (isthd_repair_tail_check).
 * @return NACK messages sent; *@pending set while NACKing for it goes on.
 */
static unsigned int
check_stream(struct isthd_worker *w, const struct isthd_repair_round *rt, uint64_t r,
	unsigned int s, uint64_t start, uint64_t now_ns, bool *pending)
{
	const struct isthd *d = w->d;
	uint64_t cut, due, upto, *bits;
	struct isthd_rx_track *t;
	unsigned int copies = 1, k, work = 0;
	uint32_t from, named = 0;
	bool tail_now = false;

	t = rx_slot(w->d, rt, r, s, &bits);
	if (t->done)
		return 0;
	if (t->n_rx == d->rep.n_chunks) {
		t->done = 1;
		/* rounds that came whole and in order */
		if (t->below == 0 && w->d->rep.ordered_rounds[s] < ORDERED_ROUNDS &&
			++w->d->rep.ordered_rounds[s] == ORDERED_ROUNDS)
			w->d->rep.unordered &= ~(1ull << s);
		else if (t->below)
			w->d->rep.ordered_rounds[s] = 0;
		return 0;
	}
	cut = start + rt->cutoff[s];
	/* Past the cutoff, NACKing stops, unless a NACK fell due before it
	 * (a retry, or the tail, due at the cutoff at the latest) and this
	 * pass came late (the worker slept or was preempted): that last NACK
	 * leaves now, with its copies, rather than never. A last NACK's
	 * copies still to leave are due by the cutoff, or at once when the
	 * NACK left past it (copy_time): they leave too. */
	if (now_ns > cut &&
		!((t->nack_at && t->nack_at <= cut) || !t->tail_due || t->copies_left)) {
		t->done = 1;
		unrepaired(w, t, s, bits);
		return 0;
	}
	*pending = true;
	work += copy_due(w, t, r, s, bits, now_ns, cut);
	due = (t->last_due ? t->last_due : start + rt->tail_at[s]) + d->cfg.wan_tail_wait_ns;
	/* a tail due after the cutoff is asked for at it */
	if (due > cut)
		due = cut;
	/* none of its DATA came: queued on its path or lost whole (a
	 * stalled host's ring): asked for once, at the cutoff */
	if (t->first_ns == 0)
		due = cut;
	if (!t->tail_due && now_ns >= due) {
		t->tail_due = 1;
		if (t->first_ns == 0) {
			isth_ctr_add(&w->st.peer_streams_queued, 1);
			ISTHD_REPAIR_TRACE(d, "queued r %" PRIu64 " s %u n_rx %u", r, s, t->n_rx);
		}
		tail_now = true;
		ISTHD_REPAIR_TRACE(d, "tail r %" PRIu64 " s %u due %.3f cut %.3f next %u n_rx %u",
			r, s, (double)(due - start) / 1e6, (double)(cut - start) / 1e6, t->next,
			t->n_rx);
	} else if (t->nack_at == 0 || now_ns < t->nack_at) {
		return work;
	}
	upto = t->tail_due ? d->rep.n_chunks : t->next;
	/* an unordered sender's chunks below next may still be coming */
	if (!t->tail_due && ((d->rep.unordered >> s) & 1))
		upto = 0;
	/* The tail fell due while the gaps' NACK (each gap is NACKed at once
	 * when found, isthd_repair_track) is less than a back-off old: ask
	 * for the tail only (the chunks after the last one the stream
	 * brought). The gaps' repairs are on their way; asking again for them
	 * (and copying that) tripled a loss burst's repairs, which overflowed
	 * the WAN's priority class, taking other peers' NACKs and repairs
	 * with them, and spent the serving edge's repeat allowance that the
	 * retries needed (doc/notes/isthmusd-design.md, "WAN repair", "Tail due time"). The retry at
	 * nack_at asks for everything still missing; if that retry would come
	 * after the cutoff, this is the gaps' last chance, and they are asked
	 * again. */
	from = tail_now && t->nack_at > now_ns && t->nack_at <= cut ? t->next : 0;
	if (from >= upto)
		return work;
	/* The last three attempts before the cutoff leave last_nack_copies
	 * times: one NACK names every chunk still missing, so its loss costs
	 * them all that attempt, and a long lossy path (several hops of loss
	 * p each way) has room for three or four. Each copy brings its own
	 * repair (charged to the repeat allowance). The copies leave
	 * tail_copies_after apart, each naming what is still missing then:
	 * sent back to back, a copy and its repairs died in the same loss
	 * burst as the first (bursty loss). A stream none of whose DATA has
	 * arrived is asked for once: it is more likely late (queued behind a
	 * bottleneck) than lost whole, and a copy of it spent a round's
	 * stream of the repeat allowance that the chunks lost later needed
	 * (doc/notes/isthmusd-design.md, "WAN repair", "Last chances"). */
	if (now_ns + COPIED_ATTEMPTS * t->backoff_ns > cut && t->first_ns != 0)
		copies = d->cfg.wan_last_nack_copies;
	k = nack_missing(w, s, r, bits, from, (uint32_t)upto, &named, next_tag(t),
		echoes_at(d, t, now_ns, cut));
	if (k == 0 && from)
		return work; /* the tail came as repairs (tail copies) */
	nack_after(w, t, from, k, copies, named, rt->chunk_ns[s], cut, now_ns);
	return work + k;
}

/*
 * Per (round, sender), until its chunks are complete or the cutoff
 * (isthd_repair_publish: a later NACK's repair cannot be summed in time)
 * passes:
 *  - when its tail is due (from its arrivals and its planned or observed
 *    rate, else the plan; at the cutoff at the latest) plus tail_wait,
 *    NACK every chunk still missing: lost tails, and gaps whose repair
 *    was lost;
 *  - after each NACK, wait a back-off (a round trip + tail_wait) and NACK
 *    what is still missing again;
 *  - a NACK with at most two retries left before the cutoff leaves
 *    last_nack_copies times (a lost NACK then does not cost the chunks);
 *  - at the cutoff, what is still missing is counted (peer_chunks_unrepaired).
 */
unsigned int
isthd_repair_tail_check(struct isthd_worker *w, uint64_t now_ns)
{
	struct isthd *d = w->d;
	unsigned int work = 0;

	if (d->rep.rx == NULL || now_ns < d->clk.epoch_ns)
		return 0;
	for (uint64_t r = d->rep.tail_next;; r++) {
		uint64_t start = d->clk.epoch_ns + r * d->clk.round_ns;
		const struct isthd_repair_round *rt;
		bool pending = false;

		if (now_ns < start)
			break;
		rt = isthd_repair_round(d, r);
		if (rt == NULL) {
			if (r == d->rep.tail_next && now_ns >= start + 2 * d->clk.round_ns)
				d->rep.tail_next++; /* never published (a bye) */
			continue;
		}
		for (unsigned int s = 0; s < d->n_islands; s++)
			if (rt->expected & (1ull << s))
				work += check_stream(w, rt, r, s, start, now_ns, &pending);
		if (!pending && r == d->rep.tail_next)
			d->rep.tail_next++;
		if (r > d->rep.tail_next + 2)
			break;
	}
	return work;
}
