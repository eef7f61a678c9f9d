/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pacer tests on a simulated TSC. Expected byte counts come from the
 * closed form rate * time / 8 (and the token-bucket line
 * burst + rate * (t - start) / 8), never from the pacer's own arithmetic.
 */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <rte_rcu_qsbr.h>

#include "isth_pace.h"
#include "isth_rtab.h"

#define HZ 2500000000ull /* simulated TSC: 2.5 GHz */

static struct isth_pace *
mk(uint64_t hz, uint32_t qsize, uint32_t burst, uint64_t tol_ns)
{
	struct isth_pace_conf c = {
		.tsc_hz = hz,
		.queue_size = qsize,
		.burst_bytes = burst,
		.late_tol_ns = tol_ns,
	};
	struct isth_pace *p = isth_pace_create(&c);

	cr_assert_not_null(p, "create: errno %d", errno);
	return p;
}

/* Objects are their own index in FIFO order: (void *)(uintptr_t)(i + 1). */
static uint64_t next_obj;

/* Fill the queue (bounded, so a pacer that never says "full" fails). */
static void
top_up(struct isth_pace *p, uint32_t bytes)
{
	unsigned int i;

	for (i = 0; i < 4096; i++)
		if (isth_pace_enqueue(p, (void *)(uintptr_t)(++next_obj), bytes) != 0)
			break;
	next_obj--; /* the refused one was not queued */
}

Test(pace, create_invalid)
{
	static const struct isth_pace_conf bad[] = {
		{.tsc_hz = 0, .queue_size = 8, .burst_bytes = 1500},
		{.tsc_hz = HZ, .queue_size = 0, .burst_bytes = 1500},
		{.tsc_hz = HZ, .queue_size = 1, .burst_bytes = 1500},
		{.tsc_hz = HZ, .queue_size = 12, .burst_bytes = 1500},
		{.tsc_hz = HZ, .queue_size = 1u << 25, .burst_bytes = 1500},
		{.tsc_hz = HZ, .queue_size = 8, .burst_bytes = 0},
	};
	unsigned int i;

	errno = 0;
	cr_assert_null(isth_pace_create(NULL));
	cr_assert_eq(errno, EINVAL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_assert_null(isth_pace_create(&bad[i]), "case %u", i);
		cr_assert_eq(errno, EINVAL, "case %u", i);
	}
	isth_pace_destroy(NULL);
}

Test(pace, plan_invalid)
{
	struct isth_pace *p = mk(HZ, 8, 1500, 0);
	static const struct {
		struct isth_pace_seg s[3];
		unsigned int n;
	} bad[] = {
		{{{0, 1000}}, 0}, /* no segment */
		{{{5, 1000}}, 1}, /* first not at 0 */
		{{{0, 1000}, {10, 5}, {10, 7}}, 3}, /* not increasing */
		{{{0, 1000}, {20, 5}, {10, 7}}, 3}, /* decreasing */
		{{{0, ISTH_PACE_MAX_RATE_BPS + 1}}, 1}, /* rate */
		{{{0, 1000}}, ISTH_PACE_MAX_SEGS + 1}, /* too many */
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(isth_pace_set_profile(p, 1, 100, bad[i].s, bad[i].n), -EINVAL,
			"case %u", i);
	cr_assert_eq(isth_pace_set_profile(p, 1, 100, NULL, 1), -EINVAL);
	cr_assert_eq(isth_pace_set_round(NULL, 1, 100, 1000), -EINVAL);
	/* start + offset overflowing the TSC */
	cr_assert_eq(isth_pace_set_profile(p, 1, UINT64_MAX - 10,
			     (struct isth_pace_seg[]){{0, 1}, {1000000, 1}}, 2),
		-EINVAL);
	cr_assert_eq(isth_pace_set_round(p, 5, 1000, 1000000), 0);
	/* rounds and starts must increase */
	cr_assert_eq(isth_pace_set_round(p, 5, 2000, 1000000), -EINVAL);
	cr_assert_eq(isth_pace_set_round(p, 4, 2000, 1000000), -EINVAL);
	cr_assert_eq(isth_pace_set_round(p, 6, 1000, 1000000), -EINVAL);
	isth_pace_destroy(p);
}

Test(pace, nothing_leaves_before_start)
{
	struct isth_pace *p = mk(HZ, 64, 9000, 0);
	const uint64_t start = 10 * HZ; /* 10 s into the simulated TSC */
	void *objs[64];
	uint64_t t;

	top_up(p, 1500);
	/* no plan at all: nothing leaves, however late */
	cr_assert_eq(isth_pace_dequeue_burst(p, 1000, objs, 64), 0);
	cr_assert_eq(isth_pace_set_round(p, 1, start, 1000000000ull), 0);
	for (t = 0; t < start; t += HZ / 1000 + 7)
		if (isth_pace_dequeue_burst(p, t, objs, 64) != 0)
			cr_assert_fail("released at %lu < start", (unsigned long)t);
	cr_assert_eq(isth_pace_dequeue_burst(p, start - 1, objs, 64), 0);
	/* at the start the full bucket lets burst_bytes out: 9000/1500 */
	cr_assert_eq(isth_pace_dequeue_burst(p, start, objs, 64), 6);
	cr_assert_eq((uintptr_t)objs[0], 1);
	cr_assert_eq((uintptr_t)objs[5], 6);
	isth_pace_destroy(p);
}

struct rate_case {
	uint64_t hz;
	uint64_t rate_bps;
	uint32_t burst;
	uint32_t pkt;
};

ParameterizedTestParameters(pace, achieved_rate)
{
	static struct rate_case cases[] = {
		{HZ, 100000000ull, 1500, 1500}, /* 100 Mbps */
		{HZ, 1000000000ull, 9000, 1500}, /* 1 Gbps */
		{HZ, 1000000000ull, 1500, 64}, /* small packets */
		{HZ, 10000000000ull, 65536, 1500}, /* 10 Gbps */
		{HZ, 40000000000ull, 16384, 1024}, /* 40 Gbps */
		{HZ, 100000000000ull, 262144, 9000}, /* 100 Gbps jumbo */
		{2394567891ull, 7777777777ull, 20000, 1234}, /* odd clock */
	};

	return cr_make_param_array(struct rate_case, cases, sizeof(cases) / sizeof(cases[0]));
}

/*
 * Backlogged for one simulated second, polled often enough that the bucket
 * never caps the rate (poll interval <= burst / rate / 4).
 */
ParameterizedTest(struct rate_case *c, pace, achieved_rate)
{
	struct isth_pace *p = mk(c->hz, 1024, c->burst, 1000);
	uint64_t step = (uint64_t)c->burst * 8 * c->hz / c->rate_bps / 4;
	const uint64_t start = 12345, end = start + c->hz;
	struct isth_pace_stats st;
	uint64_t bytes = 0, t;
	double want, got;
	void *objs[64];

	if (step == 0)
		step = 1;
	if (step > c->hz / 1000000)
		step = c->hz / 1000000; /* at least one poll per us */
	cr_assert_eq(isth_pace_set_round(p, 7, start, c->rate_bps), 0);
	for (t = start; t < end; t += step) {
		unsigned int n;

		top_up(p, c->pkt);
		do {
			n = isth_pace_dequeue_burst(p, t, objs, 64);
			bytes += (uint64_t)n * c->pkt;
		} while (n == 64);
	}
	want = (double)c->rate_bps / 8.0; /* bytes in one second */
	got = (double)bytes;
	cr_assert(got >= want * 0.99 && got <= want * 1.01,
		"rate %lu burst %u: %.0f bytes in 1 s, want %.0f", (unsigned long)c->rate_bps,
		c->burst, got, want);
	isth_pace_stats(p, &st);
	cr_assert_eq(st.bytes_sent, bytes);
	cr_assert_eq(st.round, 7);
	cr_assert_eq(st.late_starts, 0);
	cr_assert(st.round_achieved_bps >= c->rate_bps * 0.99 &&
			st.round_achieved_bps <= c->rate_bps * 1.01,
		"achieved counter %lu", (unsigned long)st.round_achieved_bps);
	cr_assert(st.round_planned_bps >= c->rate_bps * 0.999 &&
			st.round_planned_bps <= c->rate_bps * 1.001,
		"planned counter %lu", (unsigned long)st.round_planned_bps);
	isth_pace_destroy(p);
}

/* A tiny deterministic generator for irregular poll intervals. */
static uint64_t
lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/*
 * Never more than burst bytes above the line: cumulative bytes released by
 * t <= burst + rate * (t - start) / 8, checked exactly in integers at
 * every poll; irregular polls and idle gaps (the queue runs dry, then
 * refills) included. Also no single poll releases more than burst.
 */
Test(pace, burst_bound)
{
	static const struct {
		uint64_t rate;
		uint32_t burst, pkt;
	} cs[] = {
		{1000000000ull, 3000, 1500},
		{10000000000ull, 64000, 1000},
		{25000000000ull, 9000, 9000},
	};
	unsigned int k;

	for (k = 0; k < sizeof(cs) / sizeof(cs[0]); k++) {
		struct isth_pace *p = mk(HZ, 256, cs[k].burst, 0);
		const uint64_t start = 5000;
		uint64_t seed = 42 + k, cum = 0, t = start, i;
		void *objs[256];

		cr_assert_eq(isth_pace_set_round(p, 1, start, cs[k].rate), 0);
		for (i = 0; i < 200000; i++) {
			unsigned __int128 lhs, rhs;
			unsigned int n;
			uint64_t r = lcg(&seed);

			/* mostly short steps, sometimes a long idle gap */
			t += (r % 100 == 0) ? HZ / 1000 : r % 20000;
			if (r % 7 != 0)
				top_up(p, cs[k].pkt);
			n = isth_pace_dequeue_burst(p, t, objs, 256);
			if ((uint64_t)n * cs[k].pkt > cs[k].burst)
				cr_assert_fail("case %u: %u packets in one poll", k, n);
			cum += (uint64_t)n * cs[k].pkt;
			lhs = (unsigned __int128)cum * 8 * HZ;
			rhs = (unsigned __int128)cs[k].burst * 8 * HZ +
				(unsigned __int128)cs[k].rate * (t - start);
			if (lhs > rhs)
				cr_assert_fail("case %u: %lu bytes above line at "
					       "poll %lu",
					k, (unsigned long)cum, (unsigned long)i);
		}
		isth_pace_destroy(p);
	}
}

/*
 * Profile: 1 Gbps for 250 ms, 4 Gbps for 250 ms, paused 250 ms, 2 Gbps for
 * the rest. Bytes per quarter within 1 % of rate * 0.25 s / 8, and the
 * pause lets out at most what was left in the bucket (< one packet).
 */
Test(pace, profile_segments)
{
	static const struct isth_pace_seg segs[] = {
		{0, 1000000000ull},
		{250000000ull, 4000000000ull},
		{500000000ull, 0},
		{750000000ull, 2000000000ull},
	};
	static const double rate[4] = {1e9, 4e9, 0, 2e9};
	struct isth_pace *p = mk(HZ, 512, 6000, 0);
	const uint64_t start = 777, q = HZ / 4, step = 2500;
	struct isth_pace_stats st;
	uint64_t bytes[4] = {0}, t;
	void *objs[64];
	unsigned int i;

	cr_assert_eq(isth_pace_set_profile(p, 3, start, segs, 4), 0);
	for (t = start; t < start + 4 * q; t += step) {
		unsigned int n;

		top_up(p, 1500);
		n = isth_pace_dequeue_burst(p, t, objs, 64);
		bytes[(t - start) / q] += (uint64_t)n * 1500;
	}
	for (i = 0; i < 4; i++) {
		double want = rate[i] * 0.25 / 8;

		if (rate[i] == 0) {
			cr_assert_lt(bytes[i], 1500, "pause leaked %lu", (unsigned long)bytes[i]);
			continue;
		}
		cr_assert(bytes[i] >= want * 0.99 && bytes[i] <= want * 1.01,
			"segment %u: %lu bytes, want %.0f", i, (unsigned long)bytes[i], want);
	}
	/* planned rate over the backlogged second: the profile's average */
	isth_pace_stats(p, &st);
	cr_assert(st.round_planned_bps >= 1.75e9 * 0.999 && st.round_planned_bps <= 1.75e9 * 1.001,
		"planned %lu", (unsigned long)st.round_planned_bps);
	isth_pace_destroy(p);
}

Test(pace, queue_full_and_oversize)
{
	struct isth_pace *p = mk(HZ, 8, 2000, 0);
	struct isth_pace_stats st;
	void *objs[16];
	unsigned int i;

	for (i = 0; i < 8; i++)
		cr_assert_eq(isth_pace_enqueue(p, (void *)(uintptr_t)(i + 1), 100), 0);
	cr_assert_eq(isth_pace_enqueue(p, (void *)9, 100), -ENOBUFS);
	cr_assert_eq(isth_pace_enqueue(p, (void *)10, 100), -ENOBUFS);
	cr_assert_eq(isth_pace_enqueue(p, (void *)11, 0), -EMSGSIZE);
	cr_assert_eq(isth_pace_enqueue(p, (void *)12, 2001), -EMSGSIZE);
	cr_assert_eq(isth_pace_count(p), 8);
	isth_pace_stats(p, &st);
	cr_assert_eq(st.enqueued, 8);
	cr_assert_eq(st.queue_full, 2);
	cr_assert_eq(st.oversize, 2);
	cr_assert_eq(st.queued, 8);
	/* flush hands back everything in FIFO order */
	cr_assert_eq(isth_pace_flush(p, objs, 3), 3);
	cr_assert_eq(isth_pace_flush(p, objs + 3, 16), 5);
	for (i = 0; i < 8; i++)
		cr_assert_eq((uintptr_t)objs[i], i + 1);
	cr_assert_eq(isth_pace_count(p), 0);
	isth_pace_stats(p, &st);
	cr_assert_eq(st.queued, 0);
	cr_assert_eq(st.flushed, 8);
	/* room again */
	cr_assert_eq(isth_pace_enqueue(p, (void *)13, 100), 0);
	isth_pace_destroy(p);
}

Test(pace, late_start)
{
	struct isth_pace *p = mk(HZ, 64, 3000, 10000); /* 10 us tolerance */
	const uint64_t s1 = 1000000, s2 = s1 + HZ / 10, us = HZ / 1000000;
	struct isth_pace_stats st;
	void *objs[64];

	cr_assert_eq(isth_pace_set_round(p, 1, s1, 1000000000ull), 0);
	cr_assert_eq(isth_pace_dequeue_burst(p, s1 - 1, objs, 64), 0);
	cr_assert_eq(isth_pace_set_round(p, 2, s2, 1000000000ull), 0);
	/* round 1: packets queued before the start, first poll 5 us late */
	cr_assert_eq(isth_pace_enqueue(p, (void *)1, 1000), 0);
	cr_assert_eq(isth_pace_dequeue_burst(p, s1 + 5 * us, objs, 64), 1);
	isth_pace_stats(p, &st);
	cr_assert_eq(st.late_starts, 0);
	cr_assert_eq(st.round_start_lag_ns, 5000);
	/* round 2: the island's data arrives 50 us after the start */
	cr_assert_eq(isth_pace_dequeue_burst(p, s2 + 10 * us, objs, 64), 0);
	isth_pace_stats(p, &st);
	cr_assert_eq(st.round, 2);
	cr_assert_eq(st.rounds, 2);
	cr_assert_eq(isth_pace_enqueue(p, (void *)2, 1000), 0);
	cr_assert_eq(isth_pace_dequeue_burst(p, s2 + 50 * us, objs, 64), 1);
	isth_pace_stats(p, &st);
	cr_assert_eq(st.late_starts, 1);
	cr_assert_eq(st.round_start_lag_ns, 50000);
	cr_assert_eq(st.empty_rounds, 0);
	isth_pace_destroy(p);
}

/*
 * Round slots: round r's plan goes in slot r % plan_slots (2 here), so the
 * control thread may be two rounds ahead of the owner's staged plan; a
 * plan for a slot whose plan the owner has not taken gets -EBUSY, nothing
 * is lost. Rounds switch exactly at their start and each runs at its own
 * rate.
 */
Test(pace, handoff_and_round_switch)
{
	struct isth_pace_conf c = {
		.tsc_hz = HZ, .queue_size = 1024, .burst_bytes = 3000, .plan_slots = 2};
	struct isth_pace *p = isth_pace_create(&c);
	const uint64_t s1 = 1000, s2 = s1 + HZ / 10, s3 = s2 + HZ / 10, s4 = s3 + HZ / 10;
	uint64_t bytes1 = 0, bytes2 = 0, t;
	struct isth_pace_stats st;
	void *objs[64];

	cr_assert_not_null(p);
	cr_assert_eq(isth_pace_set_round(p, 1, s1, 1000000000ull), 0);
	cr_assert_eq(isth_pace_set_round(p, 2, s2, 3000000000ull), 0);
	/* slot 1 still holds round 1, not taken */
	cr_assert_eq(isth_pace_set_round(p, 3, s3, 1000ull), -EBUSY);
	cr_assert_eq(isth_pace_dequeue_burst(p, 0, objs, 64), 0); /* takes 1 */
	cr_assert_eq(isth_pace_set_round(p, 3, s3, 1000ull), 0);
	cr_assert_eq(isth_pace_dequeue_burst(p, 1, objs, 64), 0);
	/* slot 0 holds 2: 1 is staged and not yet started, 2 not taken */
	cr_assert_eq(isth_pace_set_round(p, 4, s4, 1000ull), -EBUSY);
	isth_pace_stats(p, &st);
	cr_assert_eq(st.plans_busy, 2);
	cr_assert_eq(st.plans_published, 3);
	cr_assert_eq(st.rounds, 0);

	for (t = s1; t < s3; t += 2500) {
		unsigned int n;

		top_up(p, 1000);
		n = isth_pace_dequeue_burst(p, t, objs, 64);
		if (t < s2)
			bytes1 += n * 1000ull;
		else
			bytes2 += n * 1000ull;
		if (t == s1) {
			/* round 1 active, 2 staged: slot 0 free again */
			cr_assert_eq(isth_pace_set_round(p, 4, s4, 1000ull), 0);
		}
	}
	/* 100 ms at 1 Gbps, then 100 ms at 3 Gbps */
	cr_assert(bytes1 >= 12500000 * 0.99 && bytes1 <= 12500000 * 1.01, "round 1: %lu",
		(unsigned long)bytes1);
	cr_assert(bytes2 >= 37500000 * 0.99 && bytes2 <= 37500000 * 1.01, "round 2: %lu",
		(unsigned long)bytes2);
	isth_pace_stats(p, &st);
	cr_assert_eq(st.round, 2);
	cr_assert_eq(st.rounds, 2);
	isth_pace_dequeue_burst(p, s3, objs, 64);
	isth_pace_stats(p, &st);
	cr_assert_eq(st.round, 3);
	isth_pace_dequeue_burst(p, s4, objs, 64);
	isth_pace_stats(p, &st);
	cr_assert_eq(st.round, 4);
	cr_assert_eq(st.rounds, 4);
	isth_pace_destroy(p);
}

/*
 * Rounds without a plan leave gaps (isthmusd publishes none for a round
 * without peers): the owner still takes the next plan, wherever its slot,
 * and never an older plan still sitting in another slot.
 */
Test(pace, gaps_between_rounds)
{
	struct isth_pace_conf c = {.tsc_hz = HZ, .queue_size = 8, .burst_bytes = 3000};
	struct isth_pace *p = isth_pace_create(&c);
	struct isth_pace_seg segs[ISTH_PACE_MAX_SEGS];
	uint64_t start;
	uint32_t r;
	void *objs[8];

	cr_assert_not_null(p);
	/* 5 and 9 both map to slot 1 of 4: 9 waits until 5 is taken */
	cr_assert_eq(isth_pace_set_round(p, 5, 500, 5), 0);
	cr_assert_eq(isth_pace_set_round(p, 9, 900, 9), -EBUSY);
	isth_pace_dequeue_burst(p, 0, objs, 8);
	cr_assert_eq(isth_pace_set_round(p, 9, 900, 9), 0);
	cr_assert_eq(isth_pace_set_round(p, 10, 1000, 10), 0);
	cr_assert_eq(isth_pace_active_plan(p, &r, &start, segs), 0);
	isth_pace_dequeue_burst(p, 500, objs, 8);
	cr_assert_eq(isth_pace_active_plan(p, &r, &start, segs), 1);
	cr_assert_eq(r, 5);
	cr_assert_eq(segs[0].rate_bps, 5);
	isth_pace_dequeue_burst(p, 900, objs, 8);
	cr_assert_eq(isth_pace_active_plan(p, &r, &start, segs), 1);
	cr_assert_eq(r, 9);
	cr_assert_eq(start, 900);
	cr_assert_eq(segs[0].rate_bps, 9);
	isth_pace_dequeue_burst(p, 1000, objs, 8);
	cr_assert_eq(isth_pace_active_plan(p, &r, &start, segs), 1);
	cr_assert_eq(r, 10);
	isth_pace_destroy(p);
}

/*
 * With a reader registered on the RCU variable, a plan buffer the owner
 * may still be reading is not rewritten: the publication that needs it
 * gets -EBUSY (plan_reuse_waits) until the owner reports a quiescent
 * state, and nothing of the queued plans is lost meanwhile.
 */
Test(pace, buffer_reused_after_quiescent_state)
{
	struct rte_rcu_qsbr *qs = isth_rtab_qs_create(1);
	struct isth_pace_conf c = {
		.tsc_hz = HZ, .queue_size = 8, .burst_bytes = 3000, .plan_slots = 2, .qs = qs};
	struct isth_pace_seg segs[ISTH_PACE_MAX_SEGS];
	struct isth_pace_stats st;
	struct isth_pace *p;
	uint64_t start;
	uint32_t r, k;
	void *objs[8];

	cr_assert_not_null(qs);
	cr_assert_eq(rte_rcu_qsbr_thread_register(qs, 0), 0);
	rte_rcu_qsbr_thread_online(qs, 0);
	p = isth_pace_create(&c);
	cr_assert_not_null(p);
	/* 4 buffers: 2 slots + 2 spare */
	cr_assert_eq(isth_pace_set_round(p, 1, 100, 1), 0);
	cr_assert_eq(isth_pace_set_round(p, 2, 200, 2), 0);
	isth_pace_dequeue_burst(p, 0, objs, 8); /* takes 1 */
	cr_assert_eq(isth_pace_set_round(p, 3, 300, 3), 0); /* retires 1's buffer */
	isth_pace_dequeue_burst(p, 100, objs, 8); /* 1 active, takes 2 */
	cr_assert_eq(isth_pace_set_round(p, 4, 400, 4), 0); /* retires 2's buffer */
	isth_pace_dequeue_burst(p, 200, objs, 8); /* 2 active, takes 3 */
	/* slot 1's plan (3) is taken, but every spare buffer was retired
	 * after the owner's last quiescent state */
	cr_assert_eq(isth_pace_set_round(p, 5, 500, 5), -EBUSY);
	isth_pace_stats(p, &st);
	cr_assert_eq(st.plan_reuse_waits, 1);
	cr_assert_eq(st.plans_busy, 1);
	rte_rcu_qsbr_quiescent(qs, 0);
	cr_assert_eq(isth_pace_set_round(p, 5, 500, 5), 0);
	for (k = 3; k <= 5; k++) {
		isth_pace_dequeue_burst(p, k * 100, objs, 8);
		cr_assert_eq(isth_pace_active_plan(p, &r, &start, segs), 1);
		cr_assert_eq(r, k);
		cr_assert_eq(segs[0].rate_bps, k);
	}
	isth_pace_stats(p, &st);
	cr_assert_eq(st.rounds, 5);
	cr_assert_eq(st.plans_published, 5);
	rte_rcu_qsbr_thread_offline(qs, 0);
	isth_pace_destroy(p);
	isth_rtab_qs_free(qs);
}

Test(pace, empty_round_counted)
{
	struct isth_pace *p = mk(HZ, 8, 3000, 0);
	struct isth_pace_stats st;
	void *objs[8];

	cr_assert_eq(isth_pace_set_round(p, 1, 100, 1000000000ull), 0);
	isth_pace_dequeue_burst(p, 100, objs, 8);
	cr_assert_eq(isth_pace_set_round(p, 2, 200, 1000000000ull), 0);
	isth_pace_dequeue_burst(p, 150, objs, 8);
	isth_pace_dequeue_burst(p, 200, objs, 8);
	isth_pace_stats(p, &st);
	cr_assert_eq(st.rounds, 2);
	cr_assert_eq(st.empty_rounds, 1);
	isth_pace_destroy(p);
}

/*
 * The handoff across real threads: a control thread publishes rounds
 * 1..N (retrying on -EBUSY) while the owner polls with an advancing
 * simulated TSC; the owner must activate every round, in order.
 */
#define HANDOFF_ROUNDS 1000u
#define ROUND_TICKS 1000u

static bool handoff_done; /* written by: control (release) */

static void *
control_main(void *arg)
{
	struct isth_pace *p = arg;
	uint32_t r;

	for (r = 1; r <= HANDOFF_ROUNDS; r++) {
		int rc;

		while ((rc = isth_pace_set_round(
				p, r, (uint64_t)r * ROUND_TICKS, r * 1000000ull)) == -EBUSY)
			sched_yield();
		if (rc != 0)
			break;
	}
	__atomic_store_n(&handoff_done, true, __ATOMIC_RELEASE);
	return r <= HANDOFF_ROUNDS ? (void *)1 : NULL;
}

Test(pace, handoff_threads)
{
	struct rte_rcu_qsbr *qs = isth_rtab_qs_create(1);
	struct isth_pace_conf cf = {.tsc_hz = HZ, .queue_size = 8, .burst_bytes = 3000, .qs = qs};
	struct isth_pace *p;
	uint32_t last = 0, seen = 0;
	struct isth_pace_stats st;
	uint64_t t = 0, idle_after_done = 0;
	void *objs[8], *ret;
	pthread_t th;

	/* the owner is the RCU variable's reader 0 */
	cr_assert_not_null(qs);
	cr_assert_eq(rte_rcu_qsbr_thread_register(qs, 0), 0);
	rte_rcu_qsbr_thread_online(qs, 0);
	p = isth_pace_create(&cf);
	cr_assert_not_null(p);
	cr_assert_eq(pthread_create(&th, NULL, control_main, p), 0);
	while (last < HANDOFF_ROUNDS) {
		isth_pace_dequeue_burst(p, t, objs, 8);
		isth_pace_stats(p, &st);
		if (st.rounds != seen) {
			/* rounds become active in order */
			if (st.round <= last)
				cr_assert_fail("round %u after %u", (unsigned int)st.round, last);
			last = st.round;
			seen = st.rounds;
			idle_after_done = 0;
		} else if (__atomic_load_n(&handoff_done, __ATOMIC_ACQUIRE) &&
			++idle_after_done > 1000) {
			/* a lost plan: the owner would wait for it forever */
			cr_assert_fail("round %u never became active", last + 1);
		}
		/* a quarter round per poll; yield so that a control thread
		 * sharing this core runs (the host may have 2 busy cores) */
		t += ROUND_TICKS / 4;
		rte_rcu_qsbr_quiescent(qs, 0);
		sched_yield();
	}
	cr_assert_eq(pthread_join(th, &ret), 0);
	cr_assert_null(ret);
	cr_assert_eq(st.round, HANDOFF_ROUNDS);
	/* every published plan was activated exactly once */
	cr_assert_eq(st.rounds, HANDOFF_ROUNDS);
	rte_rcu_qsbr_thread_offline(qs, 0);
	isth_pace_destroy(p);
	isth_rtab_qs_free(qs);
}

/*
 * Plans for many consecutive rounds from a control thread on 1 ms ticks
 * while a slow owner runs: every plan reaches the owner, in order, none
 * lost and none torn. Plan r is a function of r alone (segment count,
 * offsets and rates from a hash of r), so the owner recomputes it and
 * compares every field of the plan it switched to. Every seventh round
 * has no plan (a gap, as in isthmusd). The owner's simulated TSC never
 * passes the start of the next round it expects, so it sees every round
 * active; it stays online while it stalls (2 ms every 64 polls, the
 * buffers it may be reading then are not reused).
 */
#define SLOT_ROUNDS 2000u
#define SLOT_T 100000u /* ticks per round; HZ_NS: one tick per ns */
#define HZ_NS 1000000000ull

static uint64_t
mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static bool
has_plan(uint32_t r)
{
	return r % 7 != 3;
}

static unsigned int
plan_of(uint32_t r, struct isth_pace_seg *segs)
{
	unsigned int n = 1 + (unsigned int)(mix(r) % ISTH_PACE_MAX_SEGS), k;

	for (k = 0; k < n; k++) {
		uint64_t h = mix((uint64_t)r << 8 | k);

		/* steps of 1000..1999 ticks: increasing, within the round */
		segs[k].offset_ns = k == 0 ? 0 : segs[k - 1].offset_ns + 1000 + h % 1000;
		segs[k].rate_bps = (h >> 10) % ISTH_PACE_MAX_RATE_BPS;
	}
	return n;
}

struct slot_ctl {
	struct isth_pace *p;
	uint64_t busy; /* -EBUSY answers seen */
	int err; /* another error */
	bool done; /* written by: control (release) */
};

static void *
slot_control(void *arg)
{
	struct slot_ctl *c = arg;
	struct isth_pace_seg segs[ISTH_PACE_MAX_SEGS];
	const struct timespec tick = {0, 1000000}; /* the controller's 1 ms */
	uint32_t r = 1;

	while (r <= SLOT_ROUNDS) {
		unsigned int n;
		int rc;

		if (!has_plan(r)) {
			r++;
			continue;
		}
		n = plan_of(r, segs);
		rc = isth_pace_set_profile(c->p, r, (uint64_t)r * SLOT_T, segs, n);
		if (rc == 0) {
			r++;
			continue;
		}
		if (rc != -EBUSY) {
			c->err = rc;
			break;
		}
		c->busy++;
		nanosleep(&tick, NULL); /* retry at the next tick */
	}
	__atomic_store_n(&c->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static uint32_t
next_planned(uint32_t r)
{
	do
		r++;
	while (r <= SLOT_ROUNDS && !has_plan(r));
	return r;
}

Test(pace, round_slots_across_threads, .timeout = 120)
{
	struct rte_rcu_qsbr *qs = isth_rtab_qs_create(1);
	struct isth_pace_conf cf = {
		.tsc_hz = HZ_NS, .queue_size = 8, .burst_bytes = 3000, .qs = qs};
	struct isth_pace_seg want[ISTH_PACE_MAX_SEGS], got[ISTH_PACE_MAX_SEGS];
	const struct timespec stall = {0, 2000000};
	struct slot_ctl c = {0};
	uint32_t expect = next_planned(0), seen = 0, r = 0, k;
	uint64_t t = 0, polls = 0, idle_after_done = 0, start;
	struct isth_pace_stats st;
	void *objs[8];
	pthread_t th;

	cr_assert_not_null(qs);
	cr_assert_eq(rte_rcu_qsbr_thread_register(qs, 0), 0);
	rte_rcu_qsbr_thread_online(qs, 0);
	c.p = isth_pace_create(&cf);
	cr_assert_not_null(c.p);
	cr_assert_eq(pthread_create(&th, NULL, slot_control, &c), 0);
	while (expect <= SLOT_ROUNDS) {
		uint64_t cap = (uint64_t)expect * SLOT_T;
		unsigned int n;

		isth_pace_dequeue_burst(c.p, t < cap ? t : cap, objs, 8);
		n = isth_pace_active_plan(c.p, &r, &start, got);
		if (n != 0 && r != seen) {
			/* the round after the last one seen, whole */
			if (r != expect)
				cr_assert_fail("round %u active, want %u", r, expect);
			if (n != plan_of(r, want) || start != (uint64_t)r * SLOT_T)
				cr_assert_fail("round %u: %u segments from %lu: torn", r, n,
					(unsigned long)start);
			for (k = 0; k < n; k++)
				if (got[k].offset_ns != want[k].offset_ns ||
					got[k].rate_bps != want[k].rate_bps)
					cr_assert_fail("round %u segment %u torn", r, k);
			seen = r;
			expect = next_planned(r);
			idle_after_done = 0;
		} else if (__atomic_load_n(&c.done, __ATOMIC_ACQUIRE) && ++idle_after_done > 1000) {
			cr_assert_fail(
				"round %u never arrived (control done, error %d)", expect, c.err);
		}
		if (t < cap)
			t += SLOT_T / 4;
		/* slow owner: a stall inside its read section */
		if (++polls % 64 == 0)
			nanosleep(&stall, NULL);
		rte_rcu_qsbr_quiescent(qs, 0);
		sched_yield();
	}
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(c.err, 0);
	isth_pace_stats(c.p, &st);
	/* every published plan activated once: rounds 1..N without gaps */
	cr_assert_eq(st.rounds, SLOT_ROUNDS - (SLOT_ROUNDS + 4) / 7);
	cr_assert_eq(st.plans_published, st.rounds);
	/* the control thread did run ahead into the owner's slots */
	cr_assert_gt(c.busy, 0);
	cr_assert_eq(st.plans_busy, c.busy);
	cr_log_info("round slots: %lu plans, %lu busy (%lu reuse waits), %lu owner polls",
		(unsigned long)st.plans_published, (unsigned long)st.plans_busy,
		(unsigned long)st.plan_reuse_waits, (unsigned long)polls);
	rte_rcu_qsbr_thread_offline(qs, 0);
	isth_pace_destroy(c.p);
	isth_rtab_qs_free(qs);
}
