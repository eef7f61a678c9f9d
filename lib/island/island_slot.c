/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Round slots and the summation into them: finding and taking over the
 * slot of a round, the receive threads' queued sums (pend_run) and the
 * wait for them (busy). island_priv.h, "Summation outside mu", has the
 * rules. Also the rule that splits a round among an island's hosts
 * (isth_island_split()). Calls no other file of the library.
 */
#include "island_priv.h"

int
isth_island_split(
	uint32_t n_chunks, unsigned int hosts, unsigned int host, uint32_t *first, uint32_t *count)
{
	uint32_t c0, c1;

	if (hosts == 0 || hosts > ISTH_ISLAND_MAX_HOSTS || host >= hosts || n_chunks < hosts ||
		first == NULL || count == NULL)
		return -EINVAL;
	c0 = (uint32_t)((uint64_t)host * n_chunks / hosts);
	c1 = (uint32_t)((uint64_t)(host + 1) * n_chunks / hosts);
	*first = c0;
	*count = c1 - c0;
	return 0;
}

/* A round no slot can hold any more, or never again. */
bool
isl_round_is_old(const struct isth_island *s, uint32_t round)
{
	const struct slot *sl = &s->slots[round % ISTH_ISLAND_ROUNDS];

	if (s->have_newest && (uint64_t)round + ISTH_ISLAND_ROUNDS <= s->newest_round)
		return true;
	return sl->state != SLOT_FREE && sl->round > round;
}

/*
 * Wait once (mu held, dropped while waiting) for @sl's queued AGGs to be
 * added by the receive threads; the caller looks at the slot again after
 * (it may have changed) and holds no queued AGGs of its own. sum_waiters
 * is raised before busy is read, and isl_pend_run() lowers busy before it
 * reads sum_waiters (both seq_cst): either this sees busy 0 or the last
 * adder sees a waiter and broadcasts, which it can only do (taking mu)
 * once this waits.
 */
void
isl_slot_wait_sums(struct isth_island *s, struct slot *sl)
{
	struct timespec ts;
	uint64_t t;

	atomic_fetch_add(&s->sum_waiters, 1);
	if (atomic_load(&sl->busy) != 0) {
		t = isth_clock_mono_ns() + s->tick_ns;
		ts.tv_sec = (time_t)(t / 1000000000ull);
		ts.tv_nsec = (long)(t % 1000000000ull);
		pthread_cond_timedwait(&s->cv, &s->mu, &ts);
	}
	atomic_fetch_sub(&s->sum_waiters, 1);
}

/*
 * The slot of @round, taking it over if needed. A slot is taken from an
 * older round only when that round is done, or its deadline (+grace) has
 * passed, or it was never announced: a live round is never evicted; and
 * only once no receive thread still adds into it (its own queue, @x, is
 * added first; NULL: a caller, which queues nothing).
 */
struct slot *
isl_slot_get(struct isth_island *s, uint32_t round, uint64_t now, enum isth_island_drop *why,
	struct rx_ctx *x)
{
	struct slot *sl = &s->slots[round % ISTH_ISLAND_ROUNDS];

again:
	if (sl->state != SLOT_FREE && sl->round == round)
		return sl;
	if (isl_round_is_old(s, round)) {
		*why = ISTH_ISLAND_DROP_round_old;
		return NULL;
	}
	if (sl->state == SLOT_OPEN && sl->announced && now < slot_end(s, sl)) {
		*why = ISTH_ISLAND_DROP_round_busy;
		return NULL;
	}
	if (!slot_summed(sl)) {
		if (x != NULL && x->n_pend)
			isl_pend_run(s, x, true, false);
		isl_slot_wait_sums(s, sl);
		goto again;
	}
	memset(sl->acc, 0, (size_t)s->r_elems * 4);
	memset(sl->bitmap, 0, (size_t)s->n_chunks * sizeof(*sl->bitmap));
	memset(sl->aggs, 0, (size_t)s->n_chunks * sizeof(*sl->aggs));
	if (sl->owner != NULL)
		memset(sl->owner, 0, s->n_chunks);
	memset(&sl->info, 0, sizeof(sl->info));
	memset(&sl->res, 0, sizeof(sl->res));
	sl->round = round;
	sl->state = SLOT_OPEN;
	sl->announced = false;
	sl->sent = false;
	sl->chunks_done = 0;
	sl->rc = 0;
	if (!s->have_newest || round > s->newest_round) {
		s->have_newest = true;
		s->newest_round = round;
	}
	return sl;
}

/* Add @n little-endian elements of type @dtype at @src into the
 * accumulator at @dst (int32, or fp32 for fp32 and bf16 sessions). */
void
isl_sum_le(const struct isth_island *s, uint8_t dtype, void *dst, const uint8_t *src, uint32_t n)
{
	uint32_t i, v;

	(void)s;
	if (dtype == ISTH_WIRE_DTYPE_BF16) {
		float *d = dst;
		uint16_t b;

		for (i = 0; i < n; i++) {
			memcpy(&b, src + 2 * (size_t)i, 2);
			d[i] += bf16_to_f32(le16toh(b));
		}
	} else if (dtype == ISTH_WIRE_DTYPE_INT32) {
		uint32_t *d = dst;

		for (i = 0; i < n; i++) {
			memcpy(&v, src + 4 * (size_t)i, 4);
			d[i] += le32toh(v); /* wraps modulo 2^32 */
		}
	} else {
		float *d = dst, f;

		for (i = 0; i < n; i++) {
			memcpy(&v, src + 4 * (size_t)i, 4);
			v = le32toh(v);
			memcpy(&f, &v, 4);
			d[i] += f;
		}
	}
}

/*
 * Add the AGGs receive thread context @x queued (after the thread dropped
 * mu; or under mu, @locked, before it waits on a slot or when its queue is
 * full) and release them: each slot's busy drops by what was added, with
 * release order, so whoever sees 0 (slot_summed()) sees the sums. The
 * thread that brings a busy to 0 wakes the waiters (isl_slot_wait_sums()),
 * and so does @wake (a caller waits for what the burst judged: one
 * wake-up once the sums are in, not one before and one after).
 */
void
isl_pend_run(struct isth_island *s, struct rx_ctx *x, bool locked, bool wake)
{
	unsigned int cnt[ISTH_ISLAND_ROUNDS] = {0}, i;
	bool zero = false;

	for (i = 0; i < x->n_pend; i++) {
		const struct pend_sum *q = &x->pend[i];

		isl_sum_le(s, q->dtype, q->dst, q->src, q->n);
		cnt[q->slot]++;
	}
	x->n_pend = 0;
	for (i = 0; i < ISTH_ISLAND_ROUNDS; i++)
		if (cnt[i] && atomic_fetch_sub(&s->slots[i].busy, cnt[i]) == cnt[i])
			zero = true;
	if (wake || (zero && atomic_load(&s->sum_waiters) != 0)) {
		if (!locked)
			pthread_mutex_lock(&s->mu);
		pthread_cond_broadcast(&s->cv);
		if (!locked)
			pthread_mutex_unlock(&s->mu);
	}
}
