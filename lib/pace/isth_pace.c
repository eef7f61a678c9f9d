/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Token bucket pacer. Tokens are kept exactly, in units of 1/(8 * tsc_hz)
 * byte: a rate of r bit/s adds (elapsed ticks) * r units, a packet of b
 * bytes costs b * 8 * tsc_hz units. Integer arithmetic on 128 bits, so
 * there is no rounding drift however long a round lasts.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "isth_ctr.h"
#include "isth_pace.h"
#include "isth_rtab.h"

typedef unsigned __int128 u128;

/*
 * A plan; in a round slot (lib/rtab buffer) it is immutable once published.
 * prev1 chains the plans: the round published just before this one, plus
 * one (0: the first plan). The owner takes the plan whose prev1 is the
 * last round it took, plus one, so it takes every plan, in order, even
 * when rounds without a plan are skipped.
 */
struct pace_plan {
	uint64_t start_tsc;
	uint64_t prev1;
	uint32_t round;
	uint32_t n_segs;
	uint64_t seg_tsc[ISTH_PACE_MAX_SEGS]; /* absolute start of segment i */
	uint64_t rate[ISTH_PACE_MAX_SEGS]; /* bits/s */
};

struct pace_item {
	void *obj;
	uint32_t bytes;
};

struct isth_pace {
	/* Immutable after create. */
	uint64_t tsc_hz;
	uint64_t late_tol_tsc;
	uint32_t burst_bytes;
	uint32_t mask;
	u128 depth; /* burst_bytes in token units */
	u128 byte_units; /* one byte in token units: 8 * tsc_hz */
	struct pace_item *q;

	/* Owner only. */
	uint64_t head; /* next free slot (enqueue) */
	uint64_t tail; /* oldest queued (dequeue) */
	u128 tokens;
	uint64_t last_tsc; /* tokens are valid at this TSC */
	uint64_t prev_call_tsc; /* previous dequeue, for active time */
	bool backlogged; /* queue non-empty after previous call */
	bool have_active;
	bool have_staged;
	bool first_pending; /* active round has released nothing */
	uint32_t cur_seg;
	u128 planned_units; /* credit while backlogged this round */
	struct pace_plan active;
	struct pace_plan staged; /* next round, waiting for its start */

	/*
	 * The plans: round r's in slot r % n_slots of a lib/rtab table set
	 * (written by: control; read by: owner, within one dequeue call).
	 */
	struct isth_rtab *plans;
	uint32_t n_slots;
	/*
	 * Last round the owner took into its staged plan, plus one (0:
	 * none). written by: owner (release); read by: control (acquire),
	 * which republishes a slot only once its plan was taken.
	 */
	uint64_t taken1;

	/* Control only: validation of what is published next, and the
	 * round (plus one, 0: empty) each slot holds. */
	bool ctl_any;
	uint32_t ctl_round;
	uint64_t ctl_start;
	uint64_t *ctl_slot1;

	/*
	 * Counters: written by the owner (plans_busy: by control) with
	 * relaxed stores, read by anyone with relaxed loads.
	 */
	struct isth_pace_stats st;
	uint64_t round_active_tsc;
	uint64_t round_lag_tsc;
	uint64_t round_planned_bits;
};


static inline uint64_t
ns_to_tsc(uint64_t ns, uint64_t hz)
{
	return (uint64_t)(((u128)ns * hz) / 1000000000u);
}

static inline uint64_t
tsc_to_ns(uint64_t t, uint64_t hz)
{
	return (uint64_t)(((u128)t * 1000000000u) / hz);
}

struct isth_pace *
isth_pace_create(const struct isth_pace_conf *conf)
{
	struct isth_rtab_params rp;
	struct isth_pace *p;
	uint32_t slots = conf != NULL && conf->plan_slots ? conf->plan_slots : ISTH_PACE_PLAN_SLOTS;

	if (conf == NULL || conf->tsc_hz == 0 || conf->burst_bytes == 0 || conf->queue_size < 2 ||
		conf->queue_size > ISTH_PACE_MAX_QUEUE ||
		(conf->queue_size & (conf->queue_size - 1)) != 0 || slots < 2 ||
		slots > ISTH_PACE_MAX_PLAN_SLOTS) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		goto fail;
	p->q = calloc(conf->queue_size, sizeof(*p->q));
	p->ctl_slot1 = calloc(slots, sizeof(*p->ctl_slot1));
	if (p->q == NULL || p->ctl_slot1 == NULL)
		goto free_pace;
	/* as many spare buffers as slots: a full turn of republished slots
	 * can wait for the owner's quiescent state */
	memset(&rp, 0, sizeof(rp));
	rp.n_slots = slots;
	rp.n_spare = slots;
	rp.size = sizeof(struct pace_plan);
	rp.qs = conf->qs;
	p->plans = isth_rtab_create(&rp);
	if (p->plans == NULL)
		goto free_pace;
	p->n_slots = slots;
	p->tsc_hz = conf->tsc_hz;
	p->late_tol_tsc = ns_to_tsc(conf->late_tol_ns, conf->tsc_hz);
	p->burst_bytes = conf->burst_bytes;
	p->mask = conf->queue_size - 1;
	p->byte_units = (u128)8 * conf->tsc_hz;
	p->depth = (u128)conf->burst_bytes * p->byte_units;
	return p;

free_pace:
	free(p->ctl_slot1);
	free(p->q);
	free(p);
fail:
	errno = ENOMEM;
	return NULL;
}

void
isth_pace_destroy(struct isth_pace *p)
{
	if (p == NULL)
		return;
	isth_rtab_destroy(p->plans);
	free(p->ctl_slot1);
	free(p->q);
	free(p);
}

int
isth_pace_set_profile(struct isth_pace *p, uint32_t round, uint64_t start_tsc,
	const struct isth_pace_seg *segs, unsigned int n)
{
	struct pace_plan *pl;
	unsigned int i;
	uint32_t slot;

	if (p == NULL || segs == NULL || n == 0 || n > ISTH_PACE_MAX_SEGS || segs[0].offset_ns != 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (segs[i].rate_bps > ISTH_PACE_MAX_RATE_BPS)
			return -EINVAL;
		if (i > 0 && segs[i].offset_ns <= segs[i - 1].offset_ns)
			return -EINVAL;
		if (ns_to_tsc(segs[i].offset_ns, p->tsc_hz) > UINT64_MAX - start_tsc)
			return -EINVAL;
	}
	if (p->ctl_any && (round <= p->ctl_round || start_tsc <= p->ctl_start))
		return -EINVAL;

	slot = round % p->n_slots;
	/* never replace a plan the owner has not taken: it would be lost */
	if (p->ctl_slot1[slot] > __atomic_load_n(&p->taken1, __ATOMIC_ACQUIRE)) {
		isth_ctr_add(&p->st.plans_busy, 1);
		return -EBUSY;
	}
	/* a buffer the owner cannot be reading (EAGAIN: it has not passed
	 * a quiescent state since the slot's last buffer was retired;
	 * counted in the table's reuse_waits) */
	pl = isth_rtab_prepare(p->plans);
	if (pl == NULL) {
		isth_ctr_add(&p->st.plans_busy, 1);
		return -EBUSY;
	}
	pl->start_tsc = start_tsc;
	pl->prev1 = p->ctl_any ? (uint64_t)p->ctl_round + 1 : 0;
	pl->round = round;
	pl->n_segs = n;
	for (i = 0; i < n; i++) {
		pl->seg_tsc[i] = start_tsc + ns_to_tsc(segs[i].offset_ns, p->tsc_hz);
		pl->rate[i] = segs[i].rate_bps;
	}
	/* cannot fail: the slot is in range and pl the prepared buffer */
	isth_rtab_publish(p->plans, slot, pl);
	p->ctl_slot1[slot] = (uint64_t)round + 1;
	p->ctl_any = true;
	p->ctl_round = round;
	p->ctl_start = start_tsc;
	return 0;
}

int
isth_pace_set_round(struct isth_pace *p, uint32_t round, uint64_t start_tsc, uint64_t rate_bps)
{
	struct isth_pace_seg s = {.offset_ns = 0, .rate_bps = rate_bps};

	return isth_pace_set_profile(p, round, start_tsc, &s, 1);
}

int
isth_pace_enqueue(struct isth_pace *p, void *obj, uint32_t bytes)
{
	struct pace_item *it;

	if (bytes == 0 || bytes > p->burst_bytes) {
		isth_ctr_add(&p->st.oversize, 1);
		return -EMSGSIZE;
	}
	if (p->head - p->tail > p->mask) {
		isth_ctr_add(&p->st.queue_full, 1);
		return -ENOBUFS;
	}
	it = &p->q[p->head & p->mask];
	it->obj = obj;
	it->bytes = bytes;
	p->head++;
	isth_ctr_add(&p->st.enqueued, 1);
	return 0;
}

/*
 * Take the next plan into the staged one if it is free: the plan chained
 * to the last one taken, in whichever slot (rounds without a plan leave
 * gaps). One acquire load per slot; the buffer stays valid until the
 * owner's next quiescent-state report, after this call.
 */
static void
take_plan(struct isth_pace *p)
{
	const struct pace_plan *pl;
	uint32_t i;

	if (p->have_staged)
		return;
	for (i = 0; i < p->n_slots; i++) {
		pl = isth_rtab_get(p->plans, i);
		if (pl != NULL && pl->prev1 == p->taken1)
			break;
	}
	if (i == p->n_slots)
		return;
	p->staged = *pl;
	p->have_staged = true;
	/* the control thread may now replace that slot's plan */
	__atomic_store_n(&p->taken1, (uint64_t)pl->round + 1, __ATOMIC_RELEASE);
}

static void
activate(struct isth_pace *p)
{
	if (p->have_active && p->first_pending)
		isth_ctr_add(&p->st.empty_rounds, 1);
	p->active = p->staged;
	p->have_active = true;
	p->have_staged = false;
	/* Each round starts with a full bucket: its first burst_bytes may
	 * leave at the start, and never more (the "line" of the round). */
	p->tokens = p->depth;
	p->last_tsc = p->active.start_tsc;
	p->prev_call_tsc = p->active.start_tsc;
	p->cur_seg = 0;
	p->first_pending = true;
	p->planned_units = 0;
	__atomic_store_n(&p->st.round, p->active.round, __ATOMIC_RELAXED);
	isth_ctr_add(&p->st.rounds, 1);
	isth_ctr_set(&p->st.round_bytes, 0);
	isth_ctr_set(&p->round_active_tsc, 0);
	isth_ctr_set(&p->round_lag_tsc, 0);
	isth_ctr_set(&p->round_planned_bits, 0);
}

/* Credit the bucket from last_tsc to now, segment by segment. */
static void
refill(struct isth_pace *p, uint64_t now)
{
	const struct pace_plan *pl = &p->active;
	bool count = p->backlogged;
	u128 planned = 0;

	while (p->last_tsc < now) {
		uint64_t end =
			p->cur_seg + 1 < pl->n_segs ? pl->seg_tsc[p->cur_seg + 1] : UINT64_MAX;
		uint64_t t = now < end ? now : end;
		u128 c = (u128)(t - p->last_tsc) * pl->rate[p->cur_seg];

		planned += c;
		p->tokens = p->depth - p->tokens < c ? p->depth : p->tokens + c;
		p->last_tsc = t;
		if (t == end)
			p->cur_seg++;
	}
	if (count && planned != 0) {
		p->planned_units += planned;
		isth_ctr_set(&p->round_planned_bits, (uint64_t)(p->planned_units / p->tsc_hz));
	}
}

unsigned int
isth_pace_dequeue_burst(struct isth_pace *p, uint64_t now_tsc, void **objs, unsigned int max)
{
	uint64_t bytes = 0;
	unsigned int n = 0;

	take_plan(p);
	while (p->have_staged && now_tsc >= p->staged.start_tsc) {
		activate(p);
		take_plan(p);
	}
	if (!p->have_active || now_tsc < p->active.start_tsc)
		return 0;

	if (p->backlogged && now_tsc > p->prev_call_tsc)
		isth_ctr_add(&p->round_active_tsc, now_tsc - p->prev_call_tsc);
	if (now_tsc > p->prev_call_tsc)
		p->prev_call_tsc = now_tsc;
	refill(p, now_tsc);

	while (n < max && p->tail != p->head) {
		const struct pace_item *it = &p->q[p->tail & p->mask];
		u128 cost = (u128)it->bytes * p->byte_units;

		if (p->tokens < cost)
			break;
		p->tokens -= cost;
		objs[n++] = it->obj;
		bytes += it->bytes;
		p->tail++;
	}
	p->backlogged = p->tail != p->head;
	if (n == 0)
		return 0;

	if (p->first_pending) {
		uint64_t lag = now_tsc - p->active.start_tsc;

		p->first_pending = false;
		isth_ctr_set(&p->round_lag_tsc, lag);
		if (lag > p->late_tol_tsc)
			isth_ctr_add(&p->st.late_starts, 1);
	}
	isth_ctr_add(&p->st.released, n);
	isth_ctr_add(&p->st.bytes_sent, bytes);
	isth_ctr_add(&p->st.round_bytes, bytes);
	return n;
}

unsigned int
isth_pace_flush(struct isth_pace *p, void **objs, unsigned int max)
{
	unsigned int n = 0;

	while (n < max && p->tail != p->head) {
		objs[n++] = p->q[p->tail & p->mask].obj;
		p->tail++;
	}
	p->backlogged = p->tail != p->head;
	isth_ctr_add(&p->st.flushed, n);
	return n;
}

unsigned int
isth_pace_active_plan(
	const struct isth_pace *p, uint32_t *round, uint64_t *start_tsc, struct isth_pace_seg *segs)
{
	const struct pace_plan *pl = &p->active;
	unsigned int i;

	if (!p->have_active)
		return 0;
	*round = pl->round;
	*start_tsc = pl->start_tsc;
	for (i = 0; i < pl->n_segs; i++) {
		segs[i].offset_ns = tsc_to_ns(pl->seg_tsc[i] - pl->start_tsc, p->tsc_hz);
		segs[i].rate_bps = pl->rate[i];
	}
	return pl->n_segs;
}

unsigned int
isth_pace_count(const struct isth_pace *p)
{
	return (unsigned int)(p->head - p->tail);
}

void
isth_pace_stats(const struct isth_pace *p, struct isth_pace_stats *st)
{
	uint64_t active, bytes, hz = p->tsc_hz;

	st->enqueued = isth_ctr_get(&p->st.enqueued);
	st->queue_full = isth_ctr_get(&p->st.queue_full);
	st->oversize = isth_ctr_get(&p->st.oversize);
	st->released = isth_ctr_get(&p->st.released);
	st->bytes_sent = isth_ctr_get(&p->st.bytes_sent);
	st->rounds = isth_ctr_get(&p->st.rounds);
	st->late_starts = isth_ctr_get(&p->st.late_starts);
	st->empty_rounds = isth_ctr_get(&p->st.empty_rounds);
	st->plans_busy = isth_ctr_get(&p->st.plans_busy);
	{
		struct isth_rtab_stats rs;

		isth_rtab_stats_get(p->plans, &rs);
		st->plans_published = rs.published;
		st->plan_reuse_waits = rs.reuse_waits;
	}
	st->round = __atomic_load_n(&p->st.round, __ATOMIC_RELAXED);
	st->flushed = isth_ctr_get(&p->st.flushed);
	st->queued = st->enqueued - st->released - st->flushed;
	st->round_start_lag_ns = tsc_to_ns(isth_ctr_get(&p->round_lag_tsc), hz);
	bytes = isth_ctr_get(&p->st.round_bytes);
	active = isth_ctr_get(&p->round_active_tsc);
	st->round_bytes = bytes;
	st->round_active_ns = tsc_to_ns(active, hz);
	st->round_achieved_bps = active == 0 ? 0 : (uint64_t)(((u128)bytes * 8 * hz) / active);
	st->round_planned_bps = active == 0
		? 0
		: (uint64_t)(((u128)isth_ctr_get(&p->round_planned_bits) * hz) / active);
}
