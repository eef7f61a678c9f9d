/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Repair of the AGG streams: each stream's seq window (what arrived, what
 * is missing), gap NACKs with their budget, tail-loss probes, GONE, and
 * following the streams a ROUND announces. Calls island_send.c (NACKs out)
 * and island_auth.c (replay windows of a new stream).
 */
#include "island_priv.h"

static inline struct seq_ent *
seq_ent(struct agg_stream *a, uint64_t q)
{
	return &a->seqs[q & SEQ_MASK];
}

static inline uint64_t
seq_low(const struct agg_stream *a)
{
	return a->next_seq > ISTH_ISLAND_SEQ_WINDOW ? a->next_seq - ISTH_ISLAND_SEQ_WINDOW : 0;
}

/* Start stream @a afresh at @q (first AGG, or the edge restarted). */
static void
seq_base(struct agg_stream *a, uint64_t q, uint32_t round)
{
	memset(a->seqs, 0, ISTH_ISLAND_SEQ_WINDOW * sizeof(*a->seqs));
	a->have_seq = true;
	a->n_missing = 0;
	a->next_seq = q + 1;
	a->seq_round = round;
	seq_ent(a, q)->state = SEQ_RECEIVED;
}

/* Move next_seq to @to (an AGG of @round arrived): [next_seq, to) become
 * missing; what falls out of the window while still missing is lost. */
static void
seq_advance(struct isth_island *s, struct agg_stream *a, uint64_t to, uint32_t round)
{
	uint64_t from = a->next_seq, x;

	if (to - from > ISTH_ISLAND_SEQ_WINDOW) {
		isth_ctr_add(&s->st.lost_seqs, to - ISTH_ISLAND_SEQ_WINDOW - from);
		from = to - ISTH_ISLAND_SEQ_WINDOW;
	}
	for (x = from; x < to; x++) {
		struct seq_ent *e = seq_ent(a, x);

		if (e->state == SEQ_MISSING) {
			a->n_missing--;
			isth_ctr_add(&s->st.lost_seqs, 1);
		}
		e->state = SEQ_MISSING;
		e->nacks = 0;
		e->last_nack_ns = 0;
		e->round = round;
		a->n_missing++;
	}
	a->next_seq = to;
}

/*
 * Sequence bookkeeping of one AGG. Returns true if the AGG is new (go on
 * with it), false if it is a duplicate or refused (already counted).
 *
 * An edge that restarts numbers from 0 again with fresh (not RESENT) AGGs
 * of a newer round: a non-RESENT AGG behind the stream for a round newer
 * than the stream's newest is taken as such a restart. A genuine duplicate
 * carries the round of its original, never a newer one.
 */
bool
isl_seq_accept(struct isth_island *s, struct agg_stream *a, const struct isth_wire_hdr *h)
{
	bool fresh_newer = !(h->flags & ISTH_WIRE_F_RESENT) && h->round > a->seq_round;
	uint64_t q = h->seq;
	struct seq_ent *e;

	if (!a->have_seq) {
		seq_base(a, q, h->round);
		return true;
	}
	if (q >= a->next_seq) {
		if (q - a->next_seq >= ISTH_ISLAND_SEQ_WINDOW && h->round <= a->seq_round) {
			drop(s, ISTH_ISLAND_DROP_seq_jump);
			return false;
		}
		/* A restarted v2 edge starts its stream at its clock, far
		 * ahead: past the window, fresh and for a newer round, it is a
		 * restart, not a gap of millions of lost AGGs to NACK. */
		if (q - a->next_seq >= ISTH_ISLAND_SEQ_WINDOW && fresh_newer) {
			isth_ctr_add(&s->st.seq_resyncs, 1);
			seq_base(a, q, h->round);
			return true;
		}
		seq_advance(s, a, q + 1, h->round);
		e = seq_ent(a, q);
		e->state = SEQ_RECEIVED;
		a->n_missing--;
		if (h->round > a->seq_round)
			a->seq_round = h->round;
		return true;
	}
	if (q < seq_low(a)) {
		if (fresh_newer) {
			isth_ctr_add(&s->st.seq_resyncs, 1);
			seq_base(a, q, h->round);
			return true;
		}
		drop(s, ISTH_ISLAND_DROP_seq_old);
		return false;
	}
	e = seq_ent(a, q);
	switch (e->state) {
	case SEQ_MISSING:
		a->n_missing--;
		e->state = SEQ_RECEIVED;
		return true;
	case SEQ_RECEIVED:
		if (fresh_newer) {
			isth_ctr_add(&s->st.seq_resyncs, 1);
			seq_base(a, q, h->round);
			return true;
		}
		isth_ctr_add(&s->st.duplicates, 1);
		return false;
	default:
		if (fresh_newer) {
			isth_ctr_add(&s->st.seq_resyncs, 1);
			seq_base(a, q, h->round);
			return true;
		}
		/* LOST (GONE or given up) but here after all, or before the
		 * base (reordered): the contribution is welcome. */
		e->state = SEQ_RECEIVED;
		return true;
	}
}

/*
 * Whether missing seq @e is still worth a NACK at @now: until the deadline
 * (+grace) of the round that revealed it (no seq of an older round is
 * summed later than that), or that round's result is done; when that
 * round is unknown here (never announced, or its slot reused), for
 * nack_retries NACKs.
 */
static bool
seq_nack_budget(struct isth_island *s, const struct seq_ent *e, uint64_t now)
{
	const struct slot *sl = slot_find(s, e->round);

	if (sl != NULL && sl->announced)
		return sl->state == SLOT_OPEN && now < slot_end(s, sl);
	return e->nacks < s->conf.nack_retries;
}

/* NACK every missing seq not NACKed in the last nack_interval; give up on
 * those whose budget (seq_nack_budget) is spent. */
static void
run_nacks(struct isth_island *s, unsigned int k, uint64_t now)
{
	struct agg_stream *a = &s->as[k];
	struct isth_wire_range r[64];
	unsigned int n = 0, max = s->lim.max_ranges < 64 ? s->lim.max_ranges : 64;
	uint64_t x, seqs = 0;
	bool open = false;

	for (x = seq_low(a); x < a->next_seq && a->n_missing; x++) {
		struct seq_ent *e = seq_ent(a, x);
		bool due;

		if (e->state != SEQ_MISSING) {
			open = false;
			continue;
		}
		due = e->nacks == 0 || now - e->last_nack_ns >= s->conf.nack_interval_ns;
		if (!due) {
			open = false;
			continue;
		}
		if (!seq_nack_budget(s, e, now)) {
			e->state = SEQ_LOST;
			a->n_missing--;
			isth_ctr_add(&s->st.lost_seqs, 1);
			open = false;
			continue;
		}
		if (e->nacks < UINT8_MAX)
			e->nacks++;
		e->last_nack_ns = now;
		seqs++;
		if (open) {
			r[n - 1].last = x;
			continue;
		}
		if (n == max) {
			if (isl_send_nack(s, r, n, a->seq_round, k) == 0)
				isth_ctr_add(&s->st.nacks_sent, 1);
			n = 0;
		}
		r[n].first = r[n].last = x;
		n++;
		open = true;
	}
	if (n && isl_send_nack(s, r, n, a->seq_round, k) == 0)
		isth_ctr_add(&s->st.nacks_sent, 1);
	isth_ctr_add(&s->st.nack_seqs, seqs);
}

/*
 * Tail loss: the last AGGs of a round leave no gap behind them until the
 * next round's arrive, too late. While an announced round is incomplete
 * and the stream has been quiet for probe_ns, ask for the seqs after the
 * newest: the edge resends what it has and answers GONE for seqs it has
 * not sent yet, which the island ignores.
 */
static void
run_probe(struct isth_island *s, uint64_t now, unsigned int sock)
{
	struct isl_sock *so = &s->socks[sock == ALL_SOCKS ? 0 : sock];
	struct isth_wire_range r;
	const struct slot *live = NULL;
	unsigned int i;

	if (s->conf.probe_ns == UINT64_MAX || now - s->quiet_since_ns < s->conf.probe_ns ||
		now - so->last_probe_ns < s->conf.probe_ns)
		return;
	for (i = 0; i < ISTH_ISLAND_ROUNDS; i++) {
		const struct slot *sl = &s->slots[i];

		if (sl->state == SLOT_OPEN && sl->announced && sl->chunks_done < s->rc_n &&
			now < slot_end(s, sl))
			live = sl;
	}
	if (live == NULL)
		return;
	so->last_probe_ns = now;
	/* each stream's tail: which stream the last AGGs are in is unknown;
	 * with receive threads, socket @sock probes the streams it owns */
	for (i = 0; i < s->n_streams; i++) {
		const struct agg_stream *a = &s->as[i];

		if (sock != ALL_SOCKS && stream_sock(s, i) != sock)
			continue;
		r.first = a->have_seq ? a->next_seq : 0;
		r.last = r.first + PROBE_SPAN - 1;
		if (isl_send_nack(s, &r, 1, live->round, i) == 0)
			isth_ctr_add(&s->st.probes_sent, 1);
	}
}

/* Timers of the streams socket @sock owns (ALL_SOCKS: every stream). */
void
isl_run_timers(struct isth_island *s, uint64_t now, unsigned int sock)
{
	for (unsigned int k = 0; k < s->n_streams; k++)
		if (s->as[k].n_missing && (sock == ALL_SOCKS || stream_sock(s, k) == sock))
			run_nacks(s, k, now);
	run_probe(s, now, sock);
}

void
isl_on_gone(struct isth_island *s, const struct isth_wire_pkt *p)
{
	struct agg_stream *a;
	unsigned int i;

	isth_ctr_add(&s->st.gone, 1);
	if (p->hdr.stream >= s->n_streams) {
		drop(s, ISTH_ISLAND_DROP_agg_stream);
		return;
	}
	a = &s->as[p->hdr.stream];
	if ((p->hdr.flags & ISTH_WIRE_F_CHUNKS) || !a->have_seq)
		return; /* the island never asks for chunk ranges */
	for (i = 0; i < p->hdr.count; i++) {
		struct isth_wire_range r;
		uint64_t x, lo = seq_low(a);

		isth_wire_get_range(p, i, &r);
		/* seqs at or past next_seq were not sent yet (a probe) */
		if (r.last >= a->next_seq)
			r.last = a->next_seq - 1;
		if (r.first < lo)
			r.first = lo;
		for (x = r.first; x <= r.last && r.first <= r.last; x++) {
			struct seq_ent *e = seq_ent(a, x);

			if (e->state == SEQ_MISSING) {
				e->state = SEQ_LOST;
				a->n_missing--;
				isth_ctr_add(&s->st.gone_seqs, 1);
			}
		}
	}
}

/*
 * Follow @count AGG streams (a ROUND said so): give streams n_streams ..
 * count - 1 their seq window and, auth on, replay windows sized for their
 * share of the chunks. Bounded by the 4-bit field (16 streams); a stream
 * that cannot be allocated is not followed (its AGGs are dropped as
 * agg_stream, visibly). Under mu.
 */
void
isl_streams_add(struct isth_island *s, unsigned int count)
{
	unsigned int j;

	while (s->n_streams < count && s->n_streams < ISTH_WIRE_MAX_STREAMS) {
		struct agg_stream *a = &s->as[s->n_streams];

		if (a->seqs == NULL)
			a->seqs = calloc(ISTH_ISLAND_SEQ_WINDOW, sizeof(*a->seqs));
		if (a->seqs == NULL)
			return;
		if (s->eng != NULL && a->win_words == NULL) {
			a->win_agg_bits = isl_agg_win_bits(s, count);
			a->win_stride = isth_auth_replay_words(a->win_agg_bits) +
				isth_auth_replay_words(WIN_SMALL_BITS);
			a->win_words =
				calloc(ISTH_AUTH_MAX_EPOCHS * a->win_stride, sizeof(*a->win_words));
			if (a->win_words == NULL)
				return;
		}
		if (s->eng != NULL)
			for (j = 0; j < ISTH_AUTH_MAX_EPOCHS; j++)
				if (s->win[j].used)
					isl_stream_win_init(s, j, s->n_streams);
		s->n_streams++;
	}
}
