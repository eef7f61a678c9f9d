/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * WAN repair between edges (doc/isthmusd.md, "WAN repair"), serving peers:
 * the RX worker admits a peer's chunk NACK (its address, the round's
 * clique) and hands it to the worker that sends the round to that peer,
 * which serves it from its ring within the peer's budget; each worker also
 * sends its peers the tail of each round again, unasked. State: struct
 * isthd_egress (repair.h), its worker's only.
 */
#include <inttypes.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>

#include "isthd.h"

/* The ring seq at which @b keeps chunk @c, or UINT64_MAX if none. */
static inline uint64_t
keep_seq(const struct isthd_keep_map *b, uint64_t r, uint64_t c)
{
	if (b->round != r || b->n_seg == 0 || c < b->seg[0].from)
		return UINT64_MAX;
	for (unsigned int i = b->n_seg; i-- > 0;) {
		if (b->seg[i].from > c)
			continue;
		/* a chunk between two segments never reached the ring: its
		 * seq would be the next segment's first */
		if (i + 1 < b->n_seg &&
			b->seg[i].base + c >= b->seg[i + 1].base + b->seg[i + 1].from)
			return UINT64_MAX;
		return b->seg[i].base + c;
	}
	return UINT64_MAX;
}

/* The ring seq at which worker @eg keeps chunk @c of round @r, or
 * UINT64_MAX if it keeps none: not released yet (the segments map chunks
 * ahead of the ring too), or not kept. With several island hosts the
 * per-chunk map decides (struct isthd_egress, chunk_seq). */
static inline uint64_t
kept_seq(const struct isthd *d, const struct isthd_egress *eg, uint64_t r, uint64_t c)
{
	const uint32_t *cs = eg->chunk_seq[r & 1];
	uint64_t seq;

	if (cs != NULL) {
		if (eg->base[r & 1].round != r || c >= d->rep.n_chunks || cs[c] == 0)
			return UINT64_MAX;
		return eg->seq_first[r & 1] + cs[c] - 1;
	}
	seq = keep_seq(&eg->base[r & 1], r, c);
	if (seq != UINT64_MAX && seq >= isth_resend_next_seq(eg->ring))
		return UINT64_MAX;
	return seq;
}

/*
 * Clip @n chunk ranges to [0, n_chunks), sort them and merge the ones that
 * overlap or touch, in place: each chunk is named once however the NACK
 * repeats it. @return ranges left; *cut counts ranges naming no chunk.
 */
static unsigned int
merge_ranges(struct isth_wire_range *g, unsigned int n, uint32_t n_chunks, unsigned int *cut)
{
	unsigned int i, j, k = 0;

	*cut = 0;
	for (i = 0; i < n; i++) {
		if (g[i].first >= n_chunks) {
			(*cut)++;
			continue;
		}
		if (g[i].last >= n_chunks)
			g[i].last = n_chunks - 1;
		g[k++] = g[i];
	}
	for (i = 1; i < k; i++) { /* insertion sort: k <= ISTHD_BURST */
		struct isth_wire_range x = g[i];

		for (j = i; j > 0 && g[j - 1].first > x.first; j--)
			g[j] = g[j - 1];
		g[j] = x;
	}
	for (i = 0, j = 0; i < k; i++) {
		if (j > 0 && g[i].first <= g[j - 1].last + 1) {
			if (g[i].last > g[j - 1].last)
				g[j - 1].last = g[i].last;
			continue;
		}
		g[j++] = g[i];
	}
	return j;
}

static uint32_t serve_chunks(struct isthd_worker *w, const struct isthd_peer *peer, uint64_t r,
	struct isth_wire_range *want, unsigned int n, uint64_t now_ns);

/*
 * A peer edge NACKs chunks of our island's DATA: resend them to it, if the
 * NACK is from that peer's configured address, the peer is in the round's
 * clique, and within its repair allowance for the round, each chunk at
 * most once per NACK. Per peer and round:
 *  - a chunk's first repair is charged to the peer's budget (budget_chunks:
 *    one round's stream and a quarter), so a round's every chunk can be
 *    repaired once whatever came before;
 *  - a chunk repaired already (of the round's first served_chunks) is
 *    repaired again from a repeat allowance of as many (budget_chunks),
 *    and at most [wan] repair_attempts times in all (drop_repair_attempts
 *    beyond): a NACK's retry (the asker's back-off is a configured round
 *    trip; a repair that queued takes longer) and a last-chance NACK's
 *    copies ask for the same chunks again. Before the repeat allowance those were
 *    charged to the one budget and spent it before a burst's later
 *    chunks were repaired once (doc/notes/performance-log.md, section 9);
 *  - any repair of a chunk beyond served_chunks is charged to the budget.
 * What is over the budget or the allowance is refused (drop_repair_budget).
 * So no NACK stream can get a peer more than rep.peer_max repairs a round
 * (isthd_repair_peer_max; doc/isthmusd.md, "Admission"; doc/security.md).
 */
bool
isthd_repair_admit(struct isthd_worker *w, const struct isth_wire_pkt *p, unsigned int *k)
{
	const struct isthd *d = w->d;
	const struct isthd_peer *peer = d->peer_of[p->hdr.sender];
	const struct isthd_repair_round *rt;

	isth_ctr_add(&w->st.peer_nacks_rx, 1);
	if (!d->cfg.wan_repair)
		return false;
	if (peer == NULL || p->addr.src_ip != peer->ip) {
		isth_ctr_add(&w->st.drop[ISTHD_DROP_nack_bad_source], 1);
		return false;
	}
	rt = isthd_repair_round(d, p->hdr.round);
	if (rt == NULL || !(rt->expected & (1ull << p->hdr.sender))) {
		isth_ctr_add(&w->st.drop[ISTHD_DROP_nack_not_clique], 1);
		return false;
	}
	*k = isthd_egress_worker(d, rt->expected, p->hdr.sender);
	return true;
}

void
isthd_repair_serve(struct isthd_worker *w, const struct isth_wire_pkt *p, uint64_t now_ns)
{
	struct isthd *d = w->d;
	struct isth_wire_range want[ISTHD_BURST], acc[ISTHD_BURST];
	struct isthd_egress *eg = &w->eg;
	struct isthd_dp_stats *st = &w->st;
	const struct isthd_peer *peer = d->peer_of[p->hdr.sender];
	unsigned int i, k, n = p->hdr.count, cut;
	struct isthd_repair_served *sv;
	struct isthd_repair_budget *b;
	uint64_t r = p->hdr.round, over, spent, echoed, gone;
	uint32_t attempts = d->cfg.wan_repair_attempts;
	/* the NACK event's tag (0: untagged) and whether this is an echo */
	uint16_t tag = (uint16_t)p->hdr.chunk;
	bool echo = (p->hdr.flags & ISTH_WIRE_F_ECHO) && tag != 0;

	/* isthd_repair_admit passed it: the peer's address, in the clique */
	if (eg->ring == NULL || eg->base[r & 1].round != r) {
		isth_ctr_add(&st->drop[ISTHD_DROP_repair_gone], 1);
		return;
	}
	if (n > RTE_DIM(want))
		n = RTE_DIM(want);
	for (i = 0; i < n; i++)
		isth_wire_get_range(p, i, &want[i]);
	n = merge_ranges(want, n, d->shape.n_chunks, &cut);
	if (cut) /* chunk ids the round does not have */
		isth_ctr_add(&st->drop[ISTHD_DROP_repair_gone], cut);
	b = &eg->budget[p->hdr.sender][r & 1];
	sv = eg->served + ((size_t)p->hdr.sender * 2 + (r & 1)) * d->rep.served_chunks;
	if (b->round1 != r + 1) {
		b->round1 = r + 1;
		b->used = 0;
		b->repeats = 0;
	}
	over = 0;
	spent = 0;
	echoed = 0;
	gone = 0;
	k = 0;
	for (i = 0; i < n; i++) {
		for (uint64_t c = want[i].first; c <= want[i].last; c++) {
			struct isthd_repair_served *e = c < d->rep.served_chunks ? &sv[c] : NULL;

			if (e && e->round1 != (uint32_t)(r + 1)) {
				e->round1 = (uint32_t)(r + 1);
				e->serves = 0;
				e->tag = 0;
			}
			/* An echo of an event a NACK of which named the chunk
			 * already (served or refused): that NACK arrived,
			 * nothing to do. Beyond the table nothing tells: an
			 * echo there is not served (the NACK or a copy is). */
			if (echo && (e == NULL || e->tag == tag)) {
				echoed++;
				continue;
			}
			/* not released yet (a peer NACKing ahead of an
			 * island's hosts, whose ranges come interleaved) or
			 * not kept: nothing to send, nothing charged */
			if (kept_seq(d, eg, r, c) == UINT64_MAX) {
				gone++;
				continue;
			}
			if (e)
				e->tag = tag;
			if (e && e->serves >= attempts) {
				spent++;
				continue;
			}
			if (e && e->serves > 0) {
				if (b->repeats >= d->rep.budget_chunks) {
					over++;
					continue;
				}
				b->repeats++;
			} else {
				if (b->used >= d->rep.budget_chunks) {
					over++;
					continue;
				}
				b->used++;
			}
			if (e)
				e->serves++;
			if (k > 0 && acc[k - 1].last + 1 == c) {
				acc[k - 1].last++;
				continue;
			}
			if (k == RTE_DIM(acc)) {
				serve_chunks(w, peer, r, acc, k, now_ns);
				k = 0;
			}
			acc[k].first = acc[k].last = c;
			k++;
		}
	}
	if (unlikely(d->rep.trace))
		isthd_repair_trace(d,
			"serve r %" PRIu64 " to %u ranges %u first %" PRIu64 " over %" PRIu64
			" spent %" PRIu64 " used %u repeats %u worker %u tag %u%s echoed %" PRIu64,
			r, p->hdr.sender, n, n ? want[0].first : 0, over, spent, b->used,
			b->repeats, w->id, tag, echo ? " echo" : "", echoed);
	if (over)
		isth_ctr_add(&st->drop[ISTHD_DROP_repair_budget], over);
	if (spent)
		isth_ctr_add(&st->drop[ISTHD_DROP_repair_attempts], spent);
	if (echoed)
		isth_ctr_add(&st->repair_echoes_skipped, echoed);
	if (gone)
		isth_ctr_add(&st->drop[ISTHD_DROP_repair_gone], gone);
	serve_chunks(w, peer, r, acc, k, now_ns);
}

/*
 * Send peer edge @peer chunks @want[0..n) (chunk ids, merged ranges) of
 * round @r of the island's DATA from worker @w's ring, as repairs
 * (RESENT), one chunk at a time: each kept message must be the chunk
 * asked for (its round and chunk id, not only where the map puts it),
 * else it is refused (repair_mismatch). @return chunks sent.
 */
static uint32_t
serve_chunks(struct isthd_worker *w, const struct isthd_peer *peer, uint64_t r,
	struct isth_wire_range *want, unsigned int n, uint64_t now_ns)
{
	struct isthd *d = w->d;
	struct isthd_egress *eg = &w->eg;
	struct isthd_dp_stats *st = &w->st;
	struct isth_auth_engine *eng = w->eng;
	struct rte_mbuf *out[ISTHD_BURST];
	uint64_t gone = 0, mismatch = 0;
	unsigned int i, n_out = 0;
	uint32_t sent = 0;

	for (i = 0; i < n; i++) {
		for (uint64_t c = want[i].first; c <= want[i].last; c++) {
			uint64_t seq = kept_seq(d, eg, r, c);
			struct isth_wire_range one = {seq, seq}, g;
			struct isth_resend_cursor cur;
			struct rte_mbuf *m, *f = NULL;
			unsigned int n_gone = 0;
			const uint8_t *h;

			if (seq == UINT64_MAX ||
				isth_resend_nack_begin(eg->ring, &cur, &one, 1) < 0 ||
				isth_resend_nack_serve(
					eg->ring, &cur, now_ns, &m, 1, &g, 1, &n_gone) == 0) {
				gone++; /* not kept, gone from the window, or no mbuf */
				continue;
			}
			h = rte_pktmbuf_mtod(m, const uint8_t *);
			if (isth_wire_get_hdr_round(h) == r && isth_wire_get_hdr_chunk(h) == c)
				f = isthd_repair_frame_to_peer(d, eng, peer, m);
			else
				mismatch++;
			rte_pktmbuf_free(m);
			if (f == NULL)
				continue;
			out[n_out++] = f;
			if (n_out == RTE_DIM(out)) {
				isthd_worker_tx(w, ISTHD_WAN, out, n_out);
				sent += n_out;
				n_out = 0;
			}
		}
	}
	isthd_worker_tx(w, ISTHD_WAN, out, n_out);
	sent += n_out;
	isth_ctr_add(&st->repairs_sent, sent);
	if (gone)
		isth_ctr_add(&st->drop[ISTHD_DROP_repair_gone], gone);
	if (mismatch)
		isth_ctr_add(&st->drop[ISTHD_DROP_repair_mismatch], mismatch);
	return sent;
}

/*
 * The last [wan] tail_copies chunks of the island's DATA of a round go to
 * every peer of the round a second time, tail_copies_after after the last
 * one left, unasked: a chunk lost at the end of a stream is otherwise found
 * missing only when the tail is due plus tail_wait, and repaired a round
 * trip later, which near the deadline leaves one attempt or none. The
 * copies are repairs (RESENT): the aggregation drops the one that comes
 * second (exactly once), and they are not charged to the peers' budgets.
 * Cost: tail_copies / n_chunks of the DATA. @return chunks sent.
 */
unsigned int
isthd_repair_tail_copies(struct isthd_worker *w, uint64_t now_ns)
{
	struct isthd *d = w->d;
	struct isthd_egress *eg = &w->eg;
	struct isthd_dp_stats *st = &w->st;
	uint32_t n_chunks = d->rep.n_chunks;
	unsigned int work = 0;

	for (unsigned int i = 0; i < 2; i++) {
		uint64_t r = eg->tail[i].round, expected;
		struct isth_wire_range want;
		uint32_t k;

		if (eg->tail[i].at_ns == 0 || now_ns < eg->tail[i].at_ns)
			continue;
		eg->tail[i].at_ns = 0;
		const struct isthd_repair_round *rt = isthd_repair_round(d, r);

		if (eg->base[r & 1].round != r || rt == NULL)
			continue;
		/* this worker's peers of the round (all with one worker) */
		expected = isthd_egress_peers(d, rt->expected, w->id);
		k = RTE_MIN(d->cfg.wan_tail_copies, n_chunks);
		for (unsigned int s = 0; s < d->n_islands && s < ISTHD_MAX_PEERS; s++) {
			uint32_t sent;

			if (!(expected & (1ull << s)) || d->peer_of[s] == NULL)
				continue;
			want.first = n_chunks - k;
			want.last = n_chunks - 1;
			sent = serve_chunks(w, d->peer_of[s], r, &want, 1, now_ns);
			isth_ctr_add(&st->tail_copies_sent, sent);
			work += sent;
		}
	}
	return work;
}
