/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_PACE_H
#define ISTH_PACE_H

/**
 * @file
 * The egress pacer: releases the local island's stream for a round at
 * `epoch + round * T + t_j`, at rate `r_j` (or a piecewise-constant rate
 * profile), from a token bucket on an injected TSC with a bounded burst.
 *
 * No EAL needed (plain C and lib/rtab's rte_rcu_qsbr). Packets are opaque
 * pointers with a size in bytes; the pacer never touches them.
 *
 * Threads (see doc/pace.md, "Rounds and the handoff"):
 * - the *owner* (one data-path lcore) calls isth_pace_enqueue(),
 *   isth_pace_dequeue_burst(), isth_pace_flush(), isth_pace_count() and
 *   isth_pace_active_plan();
 * - the *control* thread (one thread) calls isth_pace_set_round() and
 *   isth_pace_set_profile();
 * - any thread may call isth_pace_stats().
 * No locks: round r's plan is published in slot r % plan_slots of a
 * lib/rtab table set (release store); the owner takes the next plan at a
 * dequeue and switches to it at the plan's start TSC (the round boundary).
 * The owner must be a reader of conf.qs and report a quiescent state
 * between dequeue calls (doc/isthmusd.md, "Round tables").
 */

#include <stdint.h>

#include "isth_ctr.h"

struct rte_rcu_qsbr;

#ifdef __cplusplus
extern "C" {
#endif

struct isth_pace;

/** Segments in one rate profile. */
#define ISTH_PACE_MAX_SEGS 16u
/** Largest rate accepted, bits/s (10 Tbps). */
#define ISTH_PACE_MAX_RATE_BPS 10000000000000ull
/** Largest queue (packets). */
#define ISTH_PACE_MAX_QUEUE (1u << 24)
/** Round slots for plans when isth_pace_conf.plan_slots is 0. */
#define ISTH_PACE_PLAN_SLOTS 4u
/** Most round slots for plans. */
#define ISTH_PACE_MAX_PLAN_SLOTS 64u

/** Creation parameters. */
struct isth_pace_conf {
	uint64_t tsc_hz; /**< TSC ticks per second, > 0 */
	uint32_t queue_size; /**< pending packets; power of two, 2..2^24 */
	uint32_t burst_bytes; /**< bucket depth; also the largest packet */
	uint64_t late_tol_ns; /**< first release later than start + this is late */
	/**
	 * Plans published ahead: round r's plan goes in slot r % plan_slots,
	 * so the control thread may be up to plan_slots rounds ahead of the
	 * owner's staged plan. 0: ISTH_PACE_PLAN_SLOTS; else 2..64.
	 */
	uint32_t plan_slots;
	/**
	 * The owner's RCU variable (lib/rtab): a plan's buffer is reused only
	 * after every online reader of it reported a quiescent state. NULL:
	 * owner and control are one thread (buffers are reused at once).
	 */
	struct rte_rcu_qsbr *qs;
};

/** One piece of a rate profile: @p rate_bps from @p offset_ns on. */
struct isth_pace_seg {
	uint64_t offset_ns; /**< from the round start; first is 0, increasing */
	uint64_t rate_bps; /**< bits per second; 0 pauses the stream */
};

/**
 * Counters. Cumulative ones count since creation; the round_* ones describe
 * the round in progress (or the last one). Read field by field with
 * relaxed loads: a reader racing the owner may see fields of two moments.
 */
#define ISTH_PACE_STATS(X) \
	X(enqueued, "packets accepted") \
	X(queue_full, "packets refused: queue full") \
	X(oversize, "packets refused: 0 bytes or > burst_bytes") \
	X(released, "packets returned by dequeue") \
	X(bytes_sent, "bytes of the released packets") \
	X(flushed, "packets removed by isth_pace_flush()") \
	X(rounds, "plans that became active") \
	X(late_starts, "rounds whose first release was late") \
	X(empty_rounds, "rounds that ended with nothing released") \
	X(plans_busy, "set_round refused with -EBUSY") \
	X(plans_published, "plans published in their round slot") \
	X(plan_reuse_waits, \
		"set_round refused: no buffer the owner has passed a quiescent state for") \
	X(round, "round of the active plan") \
	X(queued, "packets waiting now") \
	X(round_start_lag_ns, "first release minus planned start, ns (0 until the first release)") \
	X(round_bytes, "bytes released this round") \
	X(round_active_ns, "time the queue was backlogged since the round start, ns") \
	X(round_achieved_bps, "round_bytes over round_active_ns, bits/s (0 if no active time)") \
	X(round_planned_bps, "what the plan allowed over the same backlogged time, bits/s")

/**
 * Pacer counters and gauges, one list (lib/ctr convention): the struct,
 * telemetry (/isthmus/pace) and printers are generated from
 * ISTH_PACE_STATS, so a new field cannot be forgotten by one of them.
 */
struct isth_pace_stats {
	ISTH_PACE_STATS(ISTH_CTR_FIELD)
};

/**
 * Create a pacer.
 *
 * @return the pacer, or NULL with errno EINVAL (bad @p conf) or ENOMEM.
 */
struct isth_pace *isth_pace_create(const struct isth_pace_conf *conf);

/** Free a pacer (NULL is fine). Queued objects are not freed: flush first. */
void isth_pace_destroy(struct isth_pace *p);

/**
 * Program a round at one constant rate (control thread).
 *
 * @param round      round number; strictly greater than the last one set
 * @param start_tsc  TSC of `epoch + round * T + t_j`; strictly increasing
 * @param rate_bps   bits/s, 0..ISTH_PACE_MAX_RATE_BPS
 * @return 0; -EINVAL for bad arguments; -EBUSY (nothing published: try
 *         again later; counted plans_busy) if the owner has not yet taken
 *         the plan in round % plan_slots, or has not passed a quiescent
 *         state since a plan buffer was retired (also plan_reuse_waits).
 */
int isth_pace_set_round(struct isth_pace *p, uint32_t round, uint64_t start_tsc, uint64_t rate_bps);

/**
 * Program a round with a piecewise-constant rate profile (control thread).
 * Segment i holds from start + segs[i].offset_ns until the next segment;
 * the last holds until the next round's plan starts. A final segment of
 * rate 0 ends the round's sending.
 *
 * @return as isth_pace_set_round(); -EINVAL also if @p n is 0 or above
 *         ISTH_PACE_MAX_SEGS, segs[0].offset_ns != 0 or offsets are not
 *         strictly increasing.
 */
int isth_pace_set_profile(struct isth_pace *p, uint32_t round, uint64_t start_tsc,
	const struct isth_pace_seg *segs, unsigned int n);

/**
 * Queue a packet (owner). Packets leave in FIFO order.
 *
 * @return 0; -ENOBUFS if the queue is full (counted queue_full);
 *         -EMSGSIZE if @p bytes is 0 or above burst_bytes (counted oversize).
 *         The caller keeps @p obj on error.
 */
int isth_pace_enqueue(struct isth_pace *p, void *obj, uint32_t bytes);

/**
 * Release what may leave at @p now_tsc (owner). Also takes the next plan
 * from its round slot and switches rounds when their start is reached.
 * Nothing leaves before the active plan's start or without a plan.
 *
 * @param objs  filled with up to @p max released objects, in FIFO order
 * @return objects released; ownership passes back to the caller
 */
unsigned int
isth_pace_dequeue_burst(struct isth_pace *p, uint64_t now_tsc, void **objs, unsigned int max);

/** Remove up to @p max queued objects regardless of the plan (shutdown). */
unsigned int isth_pace_flush(struct isth_pace *p, void **objs, unsigned int max);

/**
 * The active plan (owner): its round, start TSC and segments (offsets
 * rounded down to ns). @p segs has room for ISTH_PACE_MAX_SEGS.
 * @return the number of segments, 0 if no plan is active yet.
 */
unsigned int isth_pace_active_plan(const struct isth_pace *p, uint32_t *round, uint64_t *start_tsc,
	struct isth_pace_seg *segs);

/** Packets queued now (owner). */
unsigned int isth_pace_count(const struct isth_pace *p);

/** Read the counters (any thread). */
void isth_pace_stats(const struct isth_pace *p, struct isth_pace_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* ISTH_PACE_H */
