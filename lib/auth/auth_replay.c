/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/auth: the replay window (doc/protocol.md, "Replay window"): check
 * without a change, commit once the packet is accepted.
 */
#include <errno.h>
#include <string.h>

#include "isth_auth.h"

int
isth_auth_replay_init(struct isth_auth_replay *w, uint64_t *words, uint32_t n_bits)
{
	if (w == NULL || words == NULL || n_bits < 64 || (n_bits & (n_bits - 1)) != 0)
		return -EINVAL;
	w->top = 0;
	w->bits = words;
	w->n_bits = n_bits;
	w->started = false;
	w->round_hi = 0;
	w->round_lo = 0;
	memset(words, 0, isth_auth_replay_words(n_bits) * sizeof(*words));
	return 0;
}

static inline bool
replay_bit(const struct isth_auth_replay *w, uint64_t seq)
{
	uint64_t b = seq & (w->n_bits - 1);

	return (w->bits[b >> 6] >> (b & 63)) & 1u;
}

/* Older than the window: a new incarnation if its round is newer than any
 * accepted (a replay's round is at most round_hi), else stale. */
static inline bool
replay_restart(const struct isth_auth_replay *w, uint64_t seq, uint32_t round)
{
	return seq < w->top && w->top - seq >= w->n_bits && round > w->round_hi;
}

enum isth_auth_status
isth_auth_replay_check(const struct isth_auth_replay *w, uint64_t seq, uint32_t round)
{
	if (!w->started)
		return ISTH_AUTH_OK;
	if (round < w->round_lo)
		return ISTH_AUTH_E_STALE;
	if (seq > w->top)
		return ISTH_AUTH_OK;
	if (w->top - seq >= w->n_bits)
		return round > w->round_hi ? ISTH_AUTH_OK : ISTH_AUTH_E_STALE;
	return replay_bit(w, seq) ? ISTH_AUTH_E_REPLAY : ISTH_AUTH_OK;
}

static void
replay_clear(struct isth_auth_replay *w)
{
	memset(w->bits, 0, isth_auth_replay_words(w->n_bits) * sizeof(*w->bits));
}

/* Clear the bits of seqs (top, to]: they are new, not yet seen. */
static void
replay_slide(struct isth_auth_replay *w, uint64_t to)
{
	uint64_t x = w->top + 1;

	if (to - w->top >= w->n_bits) {
		replay_clear(w);
		return;
	}
	while (x <= to) {
		uint64_t b = x & (w->n_bits - 1);

		if ((b & 63) == 0 && to - x >= 63) {
			w->bits[b >> 6] = 0;
			x += 64;
		} else {
			w->bits[b >> 6] &= ~(UINT64_C(1) << (b & 63));
			x++;
		}
	}
}

enum isth_auth_status
isth_auth_replay_commit(struct isth_auth_replay *w, uint64_t seq, uint32_t round)
{
	enum isth_auth_status s = isth_auth_replay_check(w, seq, round);
	uint64_t b;

	if (s != ISTH_AUTH_OK)
		return s;
	if (!w->started || replay_restart(w, seq, round)) {
		/* the first packet, or a new incarnation: the window starts
		 * here, and the rounds of the one that ended are refused */
		replay_clear(w);
		w->round_lo = w->started ? round : 0;
		w->started = true;
		w->top = seq;
		w->round_hi = round;
	} else if (seq > w->top) {
		replay_slide(w, seq);
		w->top = seq;
	}
	if (round > w->round_hi)
		w->round_hi = round;
	b = seq & (w->n_bits - 1);
	w->bits[b >> 6] |= UINT64_C(1) << (b & 63);
	return ISTH_AUTH_OK;
}
