/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of lib/agg. Expected values come from the scalar sums written
 * out here (int32 in uint32 arithmetic, fp32 in double with a stated bound),
 * never from the engine's own kernels; time is injected.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "isth_agg.h"

#define JOB 7u
#define MS 1000000ull

static struct isth_agg_params
base_params(void)
{
	struct isth_agg_params p = {
		.mem_budget = 64 * 1024,
		.max_elems = 256,
		.max_chunks = 1024,
		.n_islands = 8,
		.window = 4,
		.timeout_ns = 10 * MS,
		.reserve = ISTH_AGG_RESERVE_DEFAULT,
	};
	return p;
}

static struct isth_agg *
make(const struct isth_agg_params *p)
{
	struct isth_agg *agg = isth_agg_create(p);

	cr_assert_not_null(agg, "isth_agg_create: errno %d", errno);
	return agg;
}

/* Deterministic contribution data: int32 element i of (sender, chunk). */
static int32_t
ival(unsigned int sender, uint32_t chunk, unsigned int i)
{
	uint32_t x = (sender + 1) * 2654435761u ^ (chunk + 1) * 40503u ^ i * 2246822519u;

	return (int32_t)(x * 0x9e3779b1u);
}

static float
fval(unsigned int sender, uint32_t chunk, unsigned int i)
{
	/* mixed signs and magnitudes, exactly representable */
	return (float)(ival(sender, chunk, i) % 100000) / 64.0f;
}

struct src {
	uint32_t buf[256 + 4];
};

static void
fill_int32(struct src *s, unsigned int sender, uint32_t chunk, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		s->buf[i] = (uint32_t)ival(sender, chunk, i);
}

static void
fill_fp32(struct src *s, unsigned int sender, uint32_t chunk, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		float f = fval(sender, chunk, i);

		memcpy(&s->buf[i], &f, 4);
	}
}

static struct isth_agg_contrib
contrib(uint32_t round, uint32_t chunk, unsigned int sender, uint8_t dtype, uint16_t count,
	const void *data)
{
	struct isth_agg_contrib c = {
		.job = JOB,
		.round = round,
		.chunk = chunk,
		.sender = (uint8_t)sender,
		.dtype = dtype,
		.count = count,
		.data = data,
	};
	return c;
}

static unsigned int
add1(struct isth_agg *agg, uint32_t round, uint32_t chunk, unsigned int sender, uint8_t dtype,
	uint16_t count, uint64_t now)
{
	struct isth_agg_contrib c;
	struct src s;

	if (dtype == ISTH_WIRE_DTYPE_FP32)
		fill_fp32(&s, sender, chunk, count);
	else
		fill_int32(&s, sender, chunk, count);
	c = contrib(round, chunk, sender, dtype, count, s.buf);
	return isth_agg_add_burst(agg, &c, 1, now);
}

/* The exact int32 sum of the senders in bitmap, element by element. */
static void
check_int32_sum(const struct isth_agg_emit *e)
{
	const int32_t *acc = e->acc;
	unsigned int i, s;

	for (i = 0; i < e->count; i++) {
		uint32_t want = 0;

		for (s = 0; s < 64; s++)
			if (e->bitmap & (1ull << s))
				want += (uint32_t)ival(s, e->chunk, i);
		cr_assert_eq((uint32_t)acc[i], want, "chunk %u elem %u: %d != %u", e->chunk, i,
			acc[i], want);
	}
}

static struct isth_agg_stats
stats(const struct isth_agg *agg)
{
	struct isth_agg_stats st;

	isth_agg_stats_get(agg, &st);
	return st;
}

Test(agg, create_invalid)
{
	struct isth_agg_params bad[16];
	unsigned int n = 0, i;

	for (i = 0; i < 16; i++)
		bad[i] = base_params();
	bad[n++].mem_budget = 0;
	bad[n++].mem_budget = 1023; /* below one 1024-byte slot */
	bad[n++].max_elems = 0;
	bad[n++].max_elems = 70000;
	bad[n++].max_chunks = 0;
	bad[n++].n_islands = 0;
	bad[n++].n_islands = 65;
	bad[n++].timeout_ns = 0;
	bad[n++].bf16_out = ISTH_WIRE_DTYPE_INT32;
	bad[n++].n_buckets = 3;
	bad[n++].kernel = ISTH_AGG_KERNEL_MAX;
	bad[n].mem_budget = 4096;
	bad[n++].reserve = 4; /* reserve must leave an active slot */
	for (i = 0; i < n; i++) {
		errno = 0;
		cr_assert_null(isth_agg_create(&bad[i]), "case %u accepted", i);
		cr_assert_eq(errno, EINVAL, "case %u: errno %d", i, errno);
	}
	cr_assert_null(isth_agg_create(NULL));
	isth_agg_destroy(NULL);
}

Test(agg, budget_sizing)
{
	struct isth_agg_params p = base_params();
	struct isth_agg_info info;
	struct isth_agg *agg;

	p.max_elems = 250; /* 1000 bytes -> 1024-byte slots */
	p.mem_budget = 10 * 1024 + 1000;
	agg = make(&p);
	isth_agg_info_get(agg, &info);
	cr_assert_eq(info.slot_size, 1024);
	cr_assert_eq(info.n_slots, 10);
	cr_assert_eq(info.acc_size, 10 * 1024);
	cr_assert_leq(info.acc_size, p.mem_budget);
	cr_assert_gt(info.meta_size, 0);
	cr_assert_eq(info.reserve, 1);
	isth_agg_destroy(agg);
}

Test(agg, completion_int32)
{
	struct isth_agg_params p = base_params();
	struct isth_agg_emit e[4];
	struct isth_agg_stats st;
	struct isth_agg *agg = make(&p);
	struct isth_wire_hdr h;
	unsigned int s;

	cr_assert_eq(isth_agg_set_round(agg, JOB, 1, 0x0b), 0); /* 0, 1, 3 */
	cr_assert_eq(add1(agg, 1, 5, 3, ISTH_WIRE_DTYPE_INT32, 200, 0), 1);
	cr_assert_eq(add1(agg, 1, 5, 0, ISTH_WIRE_DTYPE_INT32, 200, 1), 1);
	cr_assert_eq(isth_agg_pending(agg), 0);
	cr_assert_eq(add1(agg, 1, 5, 1, ISTH_WIRE_DTYPE_INT32, 200, 2), 1);
	cr_assert_eq(isth_agg_pending(agg), 1);
	cr_assert_eq(isth_agg_drain(agg, e, 4), 1);
	cr_assert_eq(e[0].reason, ISTH_AGG_COMPLETE);
	cr_assert_eq(e[0].flags, 0);
	cr_assert_eq(e[0].bitmap, 0x0b);
	cr_assert_eq(e[0].n_contrib, 3);
	cr_assert_eq(e[0].count, 200);
	cr_assert_eq(e[0].dtype, ISTH_WIRE_DTYPE_INT32);
	cr_assert_eq(e[0].size, 800);
	cr_assert_eq(e[0].chunk, 5);
	cr_assert_eq((uintptr_t)e[0].acc % 64, 0);
	check_int32_sum(&e[0]);
	isth_agg_emit_hdr(&e[0], &h);
	cr_assert_eq(h.type, ISTH_WIRE_AGG);
	cr_assert_eq(h.bitmap, 0x0b);
	cr_assert_eq(h.count, 200);
	cr_assert_eq(h.round, 1);
	cr_assert_eq(isth_agg_release(agg, &e[0]), 0);
	cr_assert_eq(isth_agg_release(agg, &e[0]), -EINVAL, "double release");

	/* a late copy of any contributor is a duplicate, not a new slot */
	for (s = 0; s < 2; s++)
		cr_assert_eq(add1(agg, 1, 5, s, ISTH_WIRE_DTYPE_INT32, 200, 3), 0);
	st = stats(agg);
	cr_assert_eq(st.accepted, 3);
	cr_assert_eq(st.completed, 1);
	cr_assert_eq(st.duplicate_emitted, 2);
	cr_assert_eq(st.slots_in_use, 0);
	cr_assert_eq(st.mem_in_use, 0);
	cr_assert_eq(st.slots_hwm, 1);
	cr_assert_eq(st.mem_hwm, 1024);
	isth_agg_destroy(agg);
}

/*
 * One isth_agg_add_burst() of more contributions than the engine hashes
 * and prefetches together (blocks of 32): runs of one chunk (aligned
 * streams, where a contribution to the chunk just summed prefetches
 * nothing), a duplicate inside a run, then senders interleaved over
 * chunks (skewed streams). Every contribution is summed once and every
 * chunk completes with the sum computed here.
 */
Test(agg, one_burst_longer_than_a_block)
{
	enum { CH = 30, SND = 4, N = CH * SND + 1 };
	static struct src src[N];
	struct isth_agg_contrib c[N];
	struct isth_agg_params p = base_params();
	struct isth_agg_emit e[CH];
	uint64_t done = 0;
	struct isth_agg_stats st;
	struct isth_agg *agg = make(&p);
	unsigned int n = 0, ch, snd, i, m;

	cr_assert_eq(isth_agg_set_round(agg, JOB, 1, (1u << SND) - 1), 0);
	for (ch = 0; ch < CH / 2; ch++)
		for (snd = 0; snd < SND; snd++) {
			fill_int32(&src[n], snd, ch, 100);
			c[n] = contrib(1, ch, snd, ISTH_WIRE_DTYPE_INT32, 100, src[n].buf);
			n++;
			if (ch == 9 && snd == 1) { /* the same sender again, at once */
				c[n] = c[n - 1];
				n++;
			}
		}
	for (snd = 0; snd < SND; snd++)
		for (ch = CH / 2; ch < CH; ch++) {
			fill_int32(&src[n], snd, ch, 100);
			c[n] = contrib(1, ch, snd, ISTH_WIRE_DTYPE_INT32, 100, src[n].buf);
			n++;
		}
	cr_assert_eq(n, N);
	cr_assert_eq(isth_agg_add_burst(agg, c, n, 0), N - 1);
	m = isth_agg_drain(agg, e, CH);
	cr_assert_eq(m, CH, "%u of %u chunks complete", m, CH);
	for (i = 0; i < m; i++) {
		cr_assert_eq(e[i].reason, ISTH_AGG_COMPLETE);
		cr_assert_eq(e[i].bitmap, (1u << SND) - 1);
		cr_assert_eq(done & (1ull << e[i].chunk), 0, "chunk %u twice", e[i].chunk);
		done |= 1ull << e[i].chunk;
		check_int32_sum(&e[i]);
		cr_assert_eq(isth_agg_release(agg, &e[i]), 0);
	}
	st = stats(agg);
	cr_assert_eq(st.accepted, CH * SND);
	cr_assert_eq(st.duplicate, 1);
	isth_agg_destroy(agg);
}

Test(agg, duplicate_in_slot)
{
	struct isth_agg_params p = base_params();
	struct isth_agg *agg = make(&p);
	struct isth_agg_emit e;

	isth_agg_set_round(agg, JOB, 0, 0x3);
	cr_assert_eq(add1(agg, 0, 1, 0, ISTH_WIRE_DTYPE_INT32, 16, 0), 1);
	cr_assert_eq(add1(agg, 0, 1, 0, ISTH_WIRE_DTYPE_INT32, 16, 0), 0);
	cr_assert_eq(add1(agg, 0, 1, 0, ISTH_WIRE_DTYPE_INT32, 16, 0), 0);
	cr_assert_eq(add1(agg, 0, 1, 1, ISTH_WIRE_DTYPE_INT32, 16, 0), 1);
	cr_assert_eq(isth_agg_drain(agg, &e, 1), 1);
	check_int32_sum(&e);
	cr_assert_eq(stats(agg).duplicate, 2);
	isth_agg_destroy(agg);
}

Test(agg, timeout_then_late_contribution)
{
	struct isth_agg_params p = base_params();
	struct isth_agg *agg = make(&p);
	struct isth_agg_emit e[2];
	struct isth_agg_stats st;

	isth_agg_set_round(agg, JOB, 2, 0x7);
	add1(agg, 2, 9, 0, ISTH_WIRE_DTYPE_INT32, 64, 100);
	add1(agg, 2, 9, 2, ISTH_WIRE_DTYPE_INT32, 64, 200);
	cr_assert_eq(isth_agg_poll(agg, 100 + 10 * MS - 1), 0, "early timeout");
	cr_assert_eq(isth_agg_poll(agg, 100 + 10 * MS), 1);
	cr_assert_eq(isth_agg_drain(agg, e, 2), 1);
	cr_assert_eq(e[0].reason, ISTH_AGG_TIMEOUT);
	cr_assert_eq(e[0].flags, ISTH_WIRE_F_PARTIAL);
	cr_assert_eq(e[0].bitmap, 0x5);
	cr_assert_eq(e[0].expected, 0x7);
	check_int32_sum(&e[0]);
	isth_agg_release(agg, &e[0]);

	/* already emitted senders are refused; the late one gets a fresh slot */
	cr_assert_eq(add1(agg, 2, 9, 0, ISTH_WIRE_DTYPE_INT32, 64, 20 * MS), 0);
	cr_assert_eq(add1(agg, 2, 9, 1, ISTH_WIRE_DTYPE_INT32, 64, 20 * MS), 1);
	cr_assert_eq(isth_agg_drain(agg, e, 2), 1);
	/* the remainder completes the chunk but is itself a partial */
	cr_assert_eq(e[0].reason, ISTH_AGG_COMPLETE);
	cr_assert_eq(e[0].flags, ISTH_WIRE_F_PARTIAL);
	cr_assert_eq(e[0].bitmap, 0x2);
	check_int32_sum(&e[0]);
	isth_agg_release(agg, &e[0]);
	cr_assert_eq(add1(agg, 2, 9, 2, ISTH_WIRE_DTYPE_INT32, 64, 21 * MS), 0);

	st = stats(agg);
	cr_assert_eq(st.partial_timeout, 1);
	cr_assert_eq(st.completed, 1);
	cr_assert_eq(st.duplicate_emitted, 2);
	cr_assert_eq(st.accepted, 3);
	isth_agg_destroy(agg);
}

Test(agg, conflict_pool_evicts_oldest)
{
	struct isth_agg_params p = base_params();
	struct isth_agg_emit e[4];
	struct isth_agg *agg;
	uint32_t c;

	p.mem_budget = 4 * 1024; /* 4 slots of 256 elements */
	p.reserve = 1; /* 3 active at most */
	agg = make(&p);
	isth_agg_set_round(agg, JOB, 0, 0x3);
	for (c = 0; c < 3; c++)
		add1(agg, 0, c, 0, ISTH_WIRE_DTYPE_INT32, 32, 10 + c);
	cr_assert_eq(isth_agg_pending(agg), 0);
	add1(agg, 0, 3, 0, ISTH_WIRE_DTYPE_INT32, 32, 20);
	cr_assert_eq(isth_agg_drain(agg, e, 4), 1);
	cr_assert_eq(e[0].reason, ISTH_AGG_CONFLICT_POOL);
	cr_assert_eq(e[0].chunk, 0, "victim must be the oldest");
	cr_assert_eq(e[0].bitmap, 0x1);
	cr_assert_eq(e[0].flags, ISTH_WIRE_F_PARTIAL);
	check_int32_sum(&e[0]);
	cr_assert_eq(stats(agg).partial_conflict_pool, 1);
	cr_assert_eq(stats(agg).mem_hwm, 4 * 1024);
	isth_agg_release(agg, &e[0]);
	/* chunk 1 completes in place: the age list kept it */
	add1(agg, 0, 1, 1, ISTH_WIRE_DTYPE_INT32, 32, 21);
	cr_assert_eq(isth_agg_drain(agg, e, 4), 1);
	cr_assert_eq(e[0].chunk, 1);
	cr_assert_eq(e[0].reason, ISTH_AGG_COMPLETE);
	check_int32_sum(&e[0]);
	isth_agg_destroy(agg);
}

Test(agg, conflict_bucket_evicts_oldest_of_bucket)
{
	struct isth_agg_params p = base_params();
	struct isth_agg_emit e[4];
	struct isth_agg *agg;
	uint32_t c;

	p.n_buckets = 1; /* every chunk collides */
	agg = make(&p);
	isth_agg_set_round(agg, JOB, 0, 0x3);
	for (c = 0; c < ISTH_AGG_BUCKET_WAYS; c++)
		add1(agg, 0, c, 1, ISTH_WIRE_DTYPE_INT32, 8, 100 - c);
	cr_assert_eq(isth_agg_pending(agg), 0);
	add1(agg, 0, 100, 1, ISTH_WIRE_DTYPE_INT32, 8, 200);
	cr_assert_eq(isth_agg_drain(agg, e, 4), 1);
	cr_assert_eq(e[0].reason, ISTH_AGG_CONFLICT_BUCKET);
	/* first_ns 100 - c: the smallest is the last chunk added */
	cr_assert_eq(e[0].chunk, ISTH_AGG_BUCKET_WAYS - 1);
	cr_assert_eq(stats(agg).partial_conflict_bucket, 1);
	cr_assert_eq(stats(agg).partial_conflict_pool, 0);
	isth_agg_destroy(agg);
}

Test(agg, no_slot_when_emissions_are_not_released)
{
	struct isth_agg_params p = base_params();
	struct isth_agg_emit e[4];
	struct isth_agg *agg;

	p.mem_budget = 2 * 1024;
	p.reserve = 1;
	agg = make(&p);
	isth_agg_set_round(agg, JOB, 0, 0x3);
	cr_assert_eq(add1(agg, 0, 0, 0, ISTH_WIRE_DTYPE_INT32, 8, 0), 1);
	cr_assert_eq(add1(agg, 0, 1, 0, ISTH_WIRE_DTYPE_INT32, 8, 1), 1);
	cr_assert_eq(isth_agg_drain(agg, e, 4), 1); /* chunk 0, not released */
	cr_assert_eq(add1(agg, 0, 2, 0, ISTH_WIRE_DTYPE_INT32, 8, 2), 0);
	cr_assert_eq(stats(agg).no_slot, 1);
	cr_assert_leq(stats(agg).mem_hwm, p.mem_budget);
	isth_agg_release(agg, &e[0]);
	cr_assert_eq(add1(agg, 0, 2, 0, ISTH_WIRE_DTYPE_INT32, 8, 3), 1);
	isth_agg_destroy(agg);
}

Test(agg, refusals_are_counted)
{
	struct isth_agg_params p = base_params();
	struct isth_agg *agg = make(&p);
	struct isth_agg_contrib c;
	struct isth_agg_stats st;
	struct src s;
	unsigned int r;

	memset(&s, 0, sizeof(s));
	for (r = 1; r <= 6; r++)
		cr_assert_eq(isth_agg_set_round(agg, JOB, r, 0x0f), 0);
	/* window 4: rounds 3..6 live */
	cr_assert_eq(add1(agg, 2, 0, 0, ISTH_WIRE_DTYPE_INT32, 8, 0), 0);
	cr_assert_eq(add1(agg, 7, 0, 0, ISTH_WIRE_DTYPE_INT32, 8, 0), 0);
	cr_assert_eq(add1(agg, 3, 0, 5, ISTH_WIRE_DTYPE_INT32, 8, 0), 0);
	c = contrib(3, 0, 0, ISTH_WIRE_DTYPE_INT32, 8, s.buf);
	c.job = JOB + 1;
	cr_assert_eq(isth_agg_add_burst(agg, &c, 1, 0), 0);
	/* bad input, table-driven */
	{
		struct isth_agg_contrib bad[6];
		unsigned int i;

		for (i = 0; i < 6; i++)
			bad[i] = contrib(3, 0, 0, ISTH_WIRE_DTYPE_INT32, 8, s.buf);
		bad[0].dtype = ISTH_WIRE_DTYPE_NONE;
		bad[1].dtype = ISTH_WIRE_DTYPE_MAX + 1;
		bad[2].count = 0;
		bad[3].count = 257;
		bad[4].chunk = 1024;
		bad[5].sender = 8;
		cr_assert_eq(isth_agg_add_burst(agg, bad, 6, 0), 0);
	}
	/* mismatch against the slot */
	cr_assert_eq(add1(agg, 3, 0, 0, ISTH_WIRE_DTYPE_INT32, 8, 0), 1);
	cr_assert_eq(add1(agg, 3, 0, 1, ISTH_WIRE_DTYPE_INT32, 9, 0), 0);
	cr_assert_eq(add1(agg, 3, 0, 1, ISTH_WIRE_DTYPE_FP32, 8, 0), 0);

	st = stats(agg);
	cr_assert_eq(st.stale_round, 1);
	cr_assert_eq(st.unknown_round, 1);
	cr_assert_eq(st.unexpected_sender, 1);
	cr_assert_eq(st.unknown_job, 1);
	cr_assert_eq(st.bad_input, 6);
	cr_assert_eq(st.mismatch, 2);
	cr_assert_eq(st.accepted, 1);

	/* control-plane refusals */
	cr_assert_eq(isth_agg_set_round(agg, JOB, 5, 0x1), -EINVAL, "going back");
	cr_assert_eq(isth_agg_set_round(agg, JOB, 8, 0), -EINVAL);
	cr_assert_eq(isth_agg_set_round(agg, JOB, 8, 0x100), -EINVAL);
	cr_assert_eq(isth_agg_set_round(agg, JOB + 1, 1, 0x1), -ENOSPC);
	isth_agg_destroy(agg);
}

Test(agg, record_full_closes_chunk)
{
	struct isth_agg_params p = base_params();
	struct isth_agg_info info;
	struct isth_agg_emit e[16];
	struct isth_agg *agg;
	unsigned int n, i;
	uint32_t c;

	p.n_records = 8; /* one record bucket */
	agg = make(&p);
	isth_agg_info_get(agg, &info);
	cr_assert_eq(info.n_records, 8);
	isth_agg_set_round(agg, JOB, 0, 0x3);
	for (c = 0; c < 9; c++)
		add1(agg, 0, c, 0, ISTH_WIRE_DTYPE_INT32, 8, 0);
	cr_assert_eq(isth_agg_poll(agg, 10 * MS), 9);
	n = isth_agg_drain(agg, e, 16);
	cr_assert_eq(n, 9);
	for (i = 0; i < n; i++)
		isth_agg_release(agg, &e[i]);
	cr_assert_eq(stats(agg).record_full, 1);
	/* chunk 8 was closed: sender 1's data for it is refused and counted */
	cr_assert_eq(add1(agg, 0, 8, 1, ISTH_WIRE_DTYPE_INT32, 8, 11 * MS), 0);
	cr_assert_eq(stats(agg).chunk_closed, 1);
	/* chunks with a record still accept the late sender; completing
	 * chunk 3 frees its record */
	cr_assert_eq(add1(agg, 0, 3, 1, ISTH_WIRE_DTYPE_INT32, 8, 11 * MS), 1);
	cr_assert_eq(isth_agg_drain(agg, e, 16), 1);
	cr_assert_eq(e[0].bitmap, 0x2);
	isth_agg_release(agg, &e[0]);
	/* so a tenth partial finds room */
	cr_assert_eq(add1(agg, 0, 9, 0, ISTH_WIRE_DTYPE_INT32, 8, 12 * MS), 1);
	cr_assert_eq(isth_agg_poll(agg, 30 * MS), 1);
	cr_assert_eq(isth_agg_drain(agg, e, 16), 1);
	isth_agg_release(agg, &e[0]);
	cr_assert_eq(stats(agg).record_full, 1);
	cr_assert_eq(add1(agg, 0, 9, 0, ISTH_WIRE_DTYPE_INT32, 8, 31 * MS), 0);
	cr_assert_eq(stats(agg).duplicate_emitted, 1);
	cr_assert_eq(add1(agg, 0, 9, 1, ISTH_WIRE_DTYPE_INT32, 8, 31 * MS), 1);
	isth_agg_destroy(agg);
}

Test(agg, stale_slot_round_reuse)
{
	struct isth_agg_params p = base_params();
	struct isth_agg_emit e[4];
	struct isth_agg *agg;

	p.window = 2;
	agg = make(&p);
	isth_agg_set_round(agg, JOB, 0, 0x3);
	add1(agg, 0, 4, 0, ISTH_WIRE_DTYPE_INT32, 8, 0);
	cr_assert_eq(isth_agg_poll(agg, 10 * MS), 1);
	cr_assert_eq(isth_agg_drain(agg, e, 4), 1);
	isth_agg_release(agg, &e[0]);
	/* round 2 reuses round 0's entry: chunk 4 starts clean there */
	isth_agg_set_round(agg, JOB, 1, 0x3);
	isth_agg_set_round(agg, JOB, 2, 0x3);
	cr_assert_eq(add1(agg, 0, 4, 1, ISTH_WIRE_DTYPE_INT32, 8, 11 * MS), 0);
	cr_assert_eq(stats(agg).stale_round, 1);
	cr_assert_eq(add1(agg, 2, 4, 0, ISTH_WIRE_DTYPE_INT32, 8, 11 * MS), 1);
	cr_assert_eq(add1(agg, 2, 4, 1, ISTH_WIRE_DTYPE_INT32, 8, 11 * MS), 1);
	cr_assert_eq(isth_agg_drain(agg, e, 4), 1);
	cr_assert_eq(e[0].reason, ISTH_AGG_COMPLETE);
	cr_assert_eq(e[0].flags, 0);
	isth_agg_destroy(agg);
}

/*
 * Random schedule: several chunks, every sender's contribution sent 1..3
 * times, shuffled, under a pool too small for the working set, with
 * timeouts; drains and releases after every burst. Checks: int32 sums are
 * exactly the sums of their bitmaps; partials of a chunk are disjoint;
 * their union is every accepted contribution; high-water <= budget.
 */
struct ev {
	uint32_t chunk;
	uint8_t sender;
};

static void
shuffle(struct ev *v, unsigned int n, unsigned int *seed)
{
	unsigned int i;

	for (i = n - 1; i > 0; i--) {
		unsigned int j = (unsigned int)rand_r(seed) % (i + 1);
		struct ev t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
}

#define RS_CHUNKS 64u
#define RS_SENDERS 6u

static void
random_schedule(unsigned int seed, uint64_t budget, uint32_t n_buckets, uint32_t n_records)
{
	const unsigned int seed0 = seed;
	static struct ev evs[RS_CHUNKS * RS_SENDERS * 3];
	uint64_t union_bm[RS_CHUNKS] = {0};
	struct isth_agg_params p = base_params();
	struct isth_agg_emit e[64];
	struct isth_agg_stats st;
	uint64_t now = 0, n_emitted_contribs = 0;
	unsigned int n = 0, i, j, k, m;
	struct isth_agg *agg;

	p.mem_budget = budget;
	p.n_buckets = n_buckets;
	p.reserve = 8;
	p.max_chunks = RS_CHUNKS;
	p.n_records = n_records;
	agg = make(&p);
	isth_agg_set_round(agg, JOB, 1, (1u << RS_SENDERS) - 1);
	for (i = 0; i < RS_CHUNKS; i++)
		for (j = 0; j < RS_SENDERS; j++) {
			unsigned int copies = 1 + (unsigned int)rand_r(&seed) % 3;

			for (k = 0; k < copies; k++)
				evs[n++] = (struct ev){i, (uint8_t)j};
		}
	shuffle(evs, n, &seed);

	for (i = 0; i < n; i += 8) {
		struct isth_agg_contrib c[8];
		static struct src s[8];

		for (k = 0; k < 8 && i + k < n; k++) {
			fill_int32(&s[k], evs[i + k].sender, evs[i + k].chunk, 100);
			c[k] = contrib(1, evs[i + k].chunk, evs[i + k].sender,
				ISTH_WIRE_DTYPE_INT32, 100, s[k].buf);
		}
		now += (uint64_t)(rand_r(&seed) % 3) * MS;
		isth_agg_add_burst(agg, c, k, now);
		isth_agg_poll(agg, now);
		while ((m = isth_agg_drain(agg, e, 64)) > 0) {
			for (k = 0; k < m; k++) {
				cr_assert_eq(union_bm[e[k].chunk] & e[k].bitmap, 0,
					"chunk %u emitted twice", e[k].chunk);
				union_bm[e[k].chunk] |= e[k].bitmap;
				n_emitted_contribs += e[k].n_contrib;
				check_int32_sum(&e[k]);
				cr_assert_eq(isth_agg_release(agg, &e[k]), 0);
			}
		}
	}
	isth_agg_flush(agg);
	while ((m = isth_agg_drain(agg, e, 64)) > 0)
		for (k = 0; k < m; k++) {
			cr_assert_eq(union_bm[e[k].chunk] & e[k].bitmap, 0);
			union_bm[e[k].chunk] |= e[k].bitmap;
			n_emitted_contribs += e[k].n_contrib;
			check_int32_sum(&e[k]);
			isth_agg_release(agg, &e[k]);
		}
	st = stats(agg);
	cr_log_info("seed %u: n %u accepted %llu complete %llu timeout %llu "
		    "pool %llu bucket %llu flush %llu dup %llu dup_emitted %llu "
		    "closed %llu record_full %llu hwm %llu",
		seed0, n, (unsigned long long)st.accepted, (unsigned long long)st.completed,
		(unsigned long long)st.partial_timeout,
		(unsigned long long)st.partial_conflict_pool,
		(unsigned long long)st.partial_conflict_bucket,
		(unsigned long long)st.partial_flush, (unsigned long long)st.duplicate,
		(unsigned long long)st.duplicate_emitted, (unsigned long long)st.chunk_closed,
		(unsigned long long)st.record_full, (unsigned long long)st.mem_hwm);
	/* every accepted contribution is in exactly one emission */
	cr_assert_eq(st.accepted, n_emitted_contribs);
	/* and every copy that was not accepted is counted as a drop */
	cr_assert_eq(
		st.accepted + st.duplicate + st.duplicate_emitted + st.no_slot + st.chunk_closed,
		n);
	cr_assert_eq(st.no_slot, 0, "reserve 8 covers bursts of 8");
	/* no chunk closed, so every sender of every chunk got through once */
	if (st.chunk_closed == 0)
		for (i = 0; i < RS_CHUNKS; i++)
			cr_assert_eq(union_bm[i], (1u << RS_SENDERS) - 1, "chunk %u: %llx", i,
				(unsigned long long)union_bm[i]);
	cr_assert_leq(st.mem_hwm, budget);
	cr_assert_eq(st.slots_in_use, 0);
	if (n_records >= 1024)
		cr_assert_eq(st.record_full, 0);
	isth_agg_destroy(agg);
}

Test(agg, random_schedule_roomy)
{
	random_schedule(1, 256 * 1024, 0, 0);
}

Test(agg, random_schedule_pool_conflicts)
{
	random_schedule(2, 16 * 1024, 0, 1024);
	random_schedule(3, 12 * 1024, 0, 1024);
}

/* Default record table on a tiny pool: some chunks close, still at most once. */
Test(agg, random_schedule_records_exhausted)
{
	random_schedule(5, 12 * 1024, 0, 0);
}

Test(agg, random_schedule_bucket_conflicts)
{
	random_schedule(4, 256 * 1024, 2, 0);
}

/*
 * fp32: any order, with duplicates, gives a sum within
 * (k - 1) * 2^-24 * sum|x_i| of the exact (double) sum of k terms.
 */
Test(agg, fp32_reordering_bound)
{
	struct isth_agg_params p = base_params();
	const unsigned int k_senders = 8, n_el = 256;
	unsigned int seed = 11, trial, i, s;

	for (trial = 0; trial < 20; trial++) {
		struct isth_agg *agg = make(&p);
		struct ev evs[8 * 3];
		struct isth_agg_emit e;
		unsigned int n = 0;
		const float *acc;

		isth_agg_set_round(agg, JOB, 1, 0xff);
		for (s = 0; s < k_senders; s++) {
			unsigned int copies = 1 + (unsigned int)rand_r(&seed) % 3;

			for (i = 0; i < copies; i++)
				evs[n++] = (struct ev){trial, (uint8_t)s};
		}
		shuffle(evs, n, &seed);
		for (i = 0; i < n; i++)
			add1(agg, 1, trial, evs[i].sender, ISTH_WIRE_DTYPE_FP32, n_el, 0);
		cr_assert_eq(isth_agg_drain(agg, &e, 1), 1);
		cr_assert_eq(e.bitmap, 0xff);
		acc = e.acc;
		for (i = 0; i < n_el; i++) {
			double exact = 0, mag = 0;

			for (s = 0; s < k_senders; s++) {
				exact += fval(s, trial, i);
				mag += fabs(fval(s, trial, i));
			}
			cr_assert_leq(fabs(acc[i] - exact), (k_senders - 1) * ldexp(mag, -24),
				"elem %u: %g vs %g", i, acc[i], exact);
		}
		isth_agg_destroy(agg);
	}
}

/* bf16 rounding, checked by hand. */
static const struct {
	uint32_t f32;
	uint16_t bf16;
	const char *why;
} bf16_cases[] = {
	{0x3f800000, 0x3f80, "1.0 exact"},
	{0x3f808000, 0x3f80, "1 + 2^-8: tie, even stays"},
	{0x3f818000, 0x3f82, "tie, odd rounds up to even"},
	{0x3f808001, 0x3f81, "above half"},
	{0x3f807fff, 0x3f80, "below half"},
	{0xbfc00000, 0xbfc0, "-1.5 exact"},
	{0xbf808001, 0xbf81, "negative, above half: magnitude up"},
	{0x7f7fffff, 0x7f80, "FLT_MAX rounds to +inf"},
	{0x7f800000, 0x7f80, "+inf"},
	{0xff800000, 0xff80, "-inf"},
	{0x7fc00001, 0x7fc0, "quiet NaN keeps its top bits"},
	{0x7f800001, 0x7fc0, "signalling NaN is quieted, not inf"},
	{0xffffffff, 0xffff, "NaN with carry would overflow: stays NaN"},
	{0x00000001, 0x0000, "smallest denormal rounds to +0"},
	{0x80008000, 0x8000, "negative denormal tie to -0"},
	{0x00018000, 0x0002, "denormal tie, odd up"},
};

Test(agg, bf16_rounding_hand_checked)
{
	unsigned int k, i;

	for (k = ISTH_AGG_KERNEL_SCALAR; k < ISTH_AGG_KERNEL_MAX; k++) {
		struct isth_agg_kernels ks;
		const unsigned int n = sizeof(bf16_cases) / sizeof(bf16_cases[0]);
		uint32_t in[40];
		uint16_t out[40];

		if (isth_agg_kernels_get(k, &ks) < 0)
			continue;
		/* twice over, so the vector body and the tail both see each */
		for (i = 0; i < 2 * n; i++)
			in[i] = bf16_cases[i % n].f32;
		ks.store_bf16(out, (const float *)in, 2 * n);
		for (i = 0; i < 2 * n; i++)
			cr_assert_eq(out[i], bf16_cases[i % n].bf16,
				"%s: %08x -> %04x, want %04x (%s)", isth_agg_kernel_name(k), in[i],
				out[i], bf16_cases[i % n].bf16, bf16_cases[i % n].why);
	}
}

static void
bf16_engine(uint8_t out_dtype)
{
	struct isth_agg_params p = base_params();
	/* 1.0, 2^-8, 2^-8 as bf16 */
	static const uint16_t one[3] = {0x3f80, 0x3f80, 0x3f80};
	static const uint16_t tiny[3] = {0x3b80, 0x3b80, 0x3b80};
	struct isth_agg_contrib c[3];
	struct isth_agg_emit e[2];
	struct isth_agg *agg;
	uint8_t buf[16];
	uint16_t b;
	uint32_t f;

	p.bf16_out = out_dtype;
	agg = make(&p);
	isth_agg_set_round(agg, JOB, 0, 0x3);
	isth_agg_set_round(agg, JOB, 1, 0x7);
	/* round 0: 1 + 2^-8 = 0x3f808000: a tie, bf16 0x3f80 */
	c[0] = contrib(0, 0, 0, ISTH_WIRE_DTYPE_BF16, 3, one);
	c[1] = contrib(0, 0, 1, ISTH_WIRE_DTYPE_BF16, 3, tiny);
	/* round 1: 1 + 2^-7 = 0x3f810000: exact, bf16 0x3f81 */
	cr_assert_eq(isth_agg_add_burst(agg, c, 2, 0), 2);
	c[0].round = c[1].round = 1;
	c[2] = contrib(1, 0, 2, ISTH_WIRE_DTYPE_BF16, 3, tiny);
	cr_assert_eq(isth_agg_add_burst(agg, c, 3, 0), 3);
	cr_assert_eq(isth_agg_drain(agg, e, 2), 2);
	cr_assert_eq(e[0].dtype, out_dtype);
	if (out_dtype == ISTH_WIRE_DTYPE_BF16) {
		cr_assert_eq(e[0].size, 6);
		cr_assert_eq(isth_agg_emit_copy(agg, &e[0], buf, 5), -ENOSPC);
		cr_assert_eq(isth_agg_emit_copy(agg, &e[0], buf, sizeof(buf)), 6);
		memcpy(&b, buf + 4, 2);
		cr_assert_eq(b, 0x3f80);
		cr_assert_eq(isth_agg_emit_copy(agg, &e[1], buf, sizeof(buf)), 6);
		memcpy(&b, buf + 4, 2);
		cr_assert_eq(b, 0x3f81);
	} else {
		cr_assert_eq(e[0].size, 12);
		cr_assert_eq(isth_agg_emit_copy(agg, &e[0], buf, sizeof(buf)), 12);
		memcpy(&f, buf + 8, 4);
		cr_assert_eq(f, 0x3f808000);
	}
	isth_agg_destroy(agg);
}

Test(agg, bf16_engine_out_bf16)
{
	bf16_engine(ISTH_WIRE_DTYPE_BF16);
}

Test(agg, bf16_engine_out_fp32)
{
	bf16_engine(ISTH_WIRE_DTYPE_FP32);
}

/*
 * Differential: every kernel this CPU runs against the scalar reference,
 * bit for bit (element-wise IEEE adds are exact functions of their
 * inputs), on random data, every length 0..2300 and 4 byte
 * misalignments of the input and of the accumulator.
 */
#define DIFF_MAX 2300u

static uint32_t
rnd32(unsigned int *seed)
{
	return (uint32_t)rand_r(seed) << 16 ^ (uint32_t)rand_r(seed);
}

static uint32_t
rnd_f32_bits(unsigned int *seed)
{
	/* finite floats over a wide exponent range, some denormals and zeros */
	uint32_t u = rnd32(seed);
	unsigned int e = 1 + (u >> 8) % 253;

	if ((u & 63) == 0)
		return u & 0x807fffffu; /* zero or denormal */
	return (u & 0x807fffffu) | e << 23;
}

Test(agg, kernels_differential)
{
	static uint8_t src_buf[DIFF_MAX * 4 + 64], acc0_buf[DIFF_MAX * 4 + 64];
	static uint8_t ref_buf[DIFF_MAX * 4 + 64], got_buf[DIFF_MAX * 4 + 64];
	struct isth_agg_kernels ref, ks;
	unsigned int seed = 42, tested = 0, k;
	size_t n, i;

	cr_assert_eq(isth_agg_kernels_get(ISTH_AGG_KERNEL_SCALAR, &ref), 0);
	cr_assert_eq(isth_agg_kernels_get(ISTH_AGG_KERNEL_AUTO, &ks), 0);
	for (k = ISTH_AGG_KERNEL_AVX2; k < ISTH_AGG_KERNEL_MAX; k++) {
		if (isth_agg_kernels_get(k, &ks) < 0) {
			/* info, not warn: Criterion exits 1 after a warning, which
			 * failed the suite on every CPU without AVX-512 */
			cr_log_info("kernel %s not supported here", isth_agg_kernel_name(k));
			continue;
		}
		tested++;
		for (n = 0; n <= DIFF_MAX; n++) {
			unsigned int so = (unsigned int)(n % 4), ao = (unsigned int)(n / 4 % 4) * 4;
			uint8_t *src = src_buf + so, *a_ref = ref_buf + ao, *a_got = got_buf + ao;
			unsigned int op;

			for (i = 0; i < n + 16; i++) {
				uint32_t u = rnd_f32_bits(&seed);

				memcpy(src_buf + 4 * i, &u, 4);
				u = rnd_f32_bits(&seed);
				memcpy(acc0_buf + 4 * i, &u, 4);
			}
			for (op = 0; op < 5; op++) {
				/* guard bytes past n must stay untouched */
				memset(ref_buf, 0xa5, sizeof(ref_buf));
				memcpy(a_ref, acc0_buf, n * 4);
				memcpy(got_buf, ref_buf, sizeof(ref_buf));
				switch (op) {
				case 0:
					ref.add_fp32((float *)a_ref, src, n);
					ks.add_fp32((float *)a_got, src, n);
					break;
				case 1:
					ref.add_bf16((float *)a_ref, src, n);
					ks.add_bf16((float *)a_got, src, n);
					break;
				case 2:
					ref.add_int32((int32_t *)a_ref, src, n);
					ks.add_int32((int32_t *)a_got, src, n);
					break;
				case 3:
					ref.load_bf16((float *)a_ref, src, n);
					ks.load_bf16((float *)a_got, src, n);
					break;
				default:
					ref.store_bf16(a_ref, (const float *)src, n);
					ks.store_bf16(a_got, (const float *)src, n);
					break;
				}
				cr_assert_eq(memcmp(ref_buf, got_buf, sizeof(ref_buf)), 0,
					"%s op %u n %zu src+%u acc+%u differs",
					isth_agg_kernel_name(k), op, n, so, ao);
			}
		}
	}
	cr_log_info("%u vector kernel sets checked", tested);
	if (isth_agg_kernel_supported(ISTH_AGG_KERNEL_AVX2))
		cr_assert_geq(tested, 1);
}

/* The scalar reference itself against sums written out here. */
Test(agg, scalar_reference_matches_closed_form)
{
	struct isth_agg_kernels ref;
	int32_t acc[5] = {INT32_MAX, -1, 0, INT32_MIN, 7};
	const int32_t add[5] = {1, 1, -5, -1, 8};
	const uint32_t want[5] = {0x80000000u, 0, (uint32_t)-5, 0x7fffffffu, 15};
	float f[3] = {1.5f, -2.0f, 1e30f};
	const uint16_t b[3] = {0x4000, 0x3f80, 0xff80}; /* 2, 1, -inf */
	unsigned int i;

	isth_agg_kernels_get(ISTH_AGG_KERNEL_SCALAR, &ref);
	ref.add_int32(acc, add, 5);
	for (i = 0; i < 5; i++)
		cr_assert_eq((uint32_t)acc[i], want[i], "wrap elem %u", i);
	ref.add_bf16(f, b, 3);
	cr_assert_eq(f[0], 3.5f);
	cr_assert_eq(f[1], -1.0f);
	cr_assert(isinf(f[2]) && f[2] < 0);
}

/* A forced kernel is what the engine uses. */
Test(agg, forced_kernel)
{
	struct isth_agg_params p = base_params();
	struct isth_agg_info info;
	unsigned int k;

	for (k = ISTH_AGG_KERNEL_AUTO; k < ISTH_AGG_KERNEL_MAX; k++) {
		struct isth_agg *agg;

		p.kernel = k;
		agg = isth_agg_create(&p);
		if (!isth_agg_kernel_supported(k)) {
			cr_assert_null(agg);
			cr_assert_eq(errno, ENOTSUP);
			continue;
		}
		cr_assert_not_null(agg);
		isth_agg_info_get(agg, &info);
		if (k != ISTH_AGG_KERNEL_AUTO)
			cr_assert_eq(info.kernel, k);
		else
			cr_assert_neq(info.kernel, ISTH_AGG_KERNEL_AUTO);
		isth_agg_destroy(agg);
	}
}

Test(agg, stats_names)
{
	unsigned int i;

	for (i = 0; i < ISTH_AGG_STATS_N; i++)
		cr_assert_neq(strcmp(isth_agg_stats_name(i), "unknown"), 0);
	cr_assert_str_eq(isth_agg_stats_name(ISTH_AGG_STATS_N), "unknown");
	cr_assert_str_eq(
		isth_agg_stats_name(offsetof(struct isth_agg_stats, mem_hwm) / 8), "mem_hwm");
	cr_assert_str_eq(isth_agg_stats_name(offsetof(struct isth_agg_stats, chunk_closed) / 8),
		"chunk_closed");
	cr_assert_str_eq(isth_agg_reason_name(ISTH_AGG_CONFLICT_BUCKET), "conflict_bucket");
}

/* A round's deadline: its unfinished slots leave as timeout partials, the
 * next round's stay. */
Test(agg, expire_round_emits_only_that_round_and_older)
{
	struct isth_agg_params p = {
		.mem_budget = 64 * 1024,
		.max_elems = 16,
		.max_chunks = 64,
		.n_islands = 4,
		.timeout_ns = UINT64_MAX / 2,
	};
	struct isth_agg *agg = isth_agg_create(&p);
	struct isth_agg_contrib c = {
		.job = 1,
		.sender = 1,
		.dtype = ISTH_WIRE_DTYPE_INT32,
		.count = 16,
	};
	struct isth_agg_emit e[8];
	int32_t v[16] = {0};
	struct isth_agg_stats st;
	unsigned int n;

	cr_assert_not_null(agg);
	cr_assert_eq(isth_agg_set_round(agg, 1, 5, 0x6), 0);
	cr_assert_eq(isth_agg_set_round(agg, 1, 6, 0x6), 0);
	c.data = v;
	c.round = 5;
	c.chunk = 0;
	cr_assert_eq(isth_agg_add_burst(agg, &c, 1, 10), 1);
	c.chunk = 1;
	cr_assert_eq(isth_agg_add_burst(agg, &c, 1, 11), 1);
	c.round = 6;
	c.chunk = 0;
	cr_assert_eq(isth_agg_add_burst(agg, &c, 1, 12), 1);
	cr_expect_eq(isth_agg_expire_round(agg, 2, 6), 0, "other job untouched");
	cr_expect_eq(isth_agg_expire_round(agg, 1, 5), 2);
	n = isth_agg_drain(agg, e, 8);
	cr_assert_eq(n, 2);
	for (unsigned int i = 0; i < n; i++) {
		cr_expect_eq(e[i].round, 5);
		cr_expect_eq(e[i].bitmap, 0x2);
		cr_expect_neq(e[i].flags & ISTH_WIRE_F_PARTIAL, 0);
		cr_expect_eq(e[i].reason, ISTH_AGG_TIMEOUT);
		isth_agg_release(agg, &e[i]);
	}
	isth_agg_stats_get(agg, &st);
	cr_expect_eq(st.partial_timeout, 2);
	cr_expect_eq(st.slots_in_use, 1, "round 6's slot stays");
	isth_agg_destroy(agg);
}

/*
 * The round tables through lib/rtab: an owner (reader 0) that has not
 * reported a quiescent state since tables were replaced keeps them, so
 * set_round asks for a retry (-EBUSY, counted) instead of rewriting a
 * table the owner may be reading; after its report, publishing goes on.
 * What the owner reads stays what was published.
 */
Test(agg, set_round_waits_for_the_owner_quiescent_state)
{
	struct rte_rcu_qsbr *qs = isth_rtab_qs_create(1);
	struct isth_agg_params p = base_params();
	struct isth_rtab_stats rs;
	struct isth_agg_contrib c = {.job = JOB, .sender = 0, .dtype = ISTH_WIRE_DTYPE_INT32};
	int32_t v[16] = {0};
	struct isth_agg *agg;
	uint32_t r;

	cr_assert_not_null(qs);
	p.qs = qs;
	agg = make(&p);
	cr_assert_eq(rte_rcu_qsbr_thread_register(qs, 0), 0);
	rte_rcu_qsbr_thread_online(qs, 0);
	/* window 4: 4 slots and 4 spares. Rounds 0-3 fill the slots, 4-7
	 * use the spares and retire 0-3, which the owner may still hold. */
	for (r = 0; r < 8; r++)
		cr_assert_eq(isth_agg_set_round(agg, JOB, r, 0x3), 0, "round %u", r);
	cr_assert_eq(isth_agg_set_round(agg, JOB, 8, 0x3), -EBUSY);
	isth_agg_round_stats_get(agg, &rs);
	cr_assert_eq(rs.reuse_waits, 1);
	cr_assert_eq(rs.retired, 4);
	/* the owner reads round 7's table: sender 1 expected, 2 not */
	c.data = v;
	c.count = 16;
	c.round = 7;
	c.sender = 2;
	cr_assert_eq(isth_agg_add_burst(agg, &c, 1, 1), 0);
	c.sender = 1;
	cr_assert_eq(isth_agg_add_burst(agg, &c, 1, 1), 1);
	cr_assert_eq(stats(agg).unexpected_sender, 1);
	cr_assert_eq(stats(agg).accepted, 1);
	rte_rcu_qsbr_quiescent(qs, 0);
	cr_assert_eq(isth_agg_set_round(agg, JOB, 8, 0x5), 0, "after the owner's report");
	c.round = 8;
	c.chunk = 1;
	c.sender = 2;
	cr_assert_eq(isth_agg_add_burst(agg, &c, 1, 1), 1);
	cr_assert_eq(stats(agg).accepted, 2, "round 8's table, not round 4's");
	/* an owner that is offline (asleep) holds nothing up */
	rte_rcu_qsbr_thread_offline(qs, 0);
	for (r = 9; r < 40; r++)
		cr_assert_eq(isth_agg_set_round(agg, JOB, r, 0x3), 0, "round %u", r);
	isth_agg_round_stats_get(agg, &rs);
	cr_assert_eq(rs.published, 40);
	cr_assert_eq(rs.reuse_waits, 1);
	isth_agg_destroy(agg);
	isth_rtab_qs_free(qs);
}

/* The reference of the finite checks: the C library's isfinite() on the
 * decoded value (bf16: the high half of an fp32). */
static bool
ref_finite_fp32(const uint32_t *u, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float f;

		memcpy(&f, &u[i], 4);
		if (!isfinite(f))
			return false;
	}
	return true;
}

static bool
ref_finite_bf16(const uint16_t *u, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t w = (uint32_t)u[i] << 16;
		float f;

		memcpy(&f, &w, 4);
		if (!isfinite(f))
			return false;
	}
	return true;
}

/*
 * NaN and +-Inf are refused, -0, denormals and the largest finite values
 * accepted, by every kernel set this CPU runs and by isth_agg_finite(),
 * against isfinite(): every length 0..300 (the vector loops and their
 * tails), a special value at every position class, and random bits.
 */
Test(agg, finite_checks_match_isfinite)
{
	static const uint32_t specials32[] = {0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7f800000u,
		0xff800000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu, 0u};
	static const uint16_t specials16[] = {0x7fc0u, 0xffc1u, 0x7f81u, 0x7f80u, 0xff80u, 0x8000u,
		0x0001u, 0x807fu, 0x7f7fu, 0xff7fu, 0u};
	static uint32_t u32[301];
	static uint16_t u16[301];
	unsigned int seed = 7, checked = 0;

	for (enum isth_agg_kernel k = ISTH_AGG_KERNEL_SCALAR; k < ISTH_AGG_KERNEL_MAX; k++) {
		struct isth_agg_kernels ks;

		if (isth_agg_kernels_get(k, &ks) < 0)
			continue;
		for (size_t n = 0; n <= 300; n++) {
			for (size_t s = 0; s < sizeof(specials32) / sizeof(specials32[0]); s++) {
				/* finite random values, one special at a
				 * position that walks through every lane */
				for (size_t i = 0; i < n; i++) {
					u32[i] = rnd32(&seed) & 0xbf7fffffu; /* exponent < 255 */
					u16[i] = (uint16_t)(rnd32(&seed) & 0xbf7fu);
				}
				if (n > 0) {
					u32[(n * 7 + s * 13) % n] = specials32[s];
					u16[(n * 5 + s * 11) % n] = specials16[s];
				}
				cr_assert_eq(ks.within_fp32(u32, n, ISTH_AGG_FP32_MAX_BITS),
					ref_finite_fp32(u32, n), "%s fp32 n %zu special %#x",
					isth_agg_kernel_name(k), n, specials32[s]);
				cr_assert_eq(ks.within_bf16(u16, n, ISTH_AGG_BF16_MAX_BITS),
					ref_finite_bf16(u16, n), "%s bf16 n %zu special %#x",
					isth_agg_kernel_name(k), n, specials16[s]);
				checked++;
			}
			/* random bits: about one element in 256 NaN or Inf */
			for (size_t i = 0; i < n; i++) {
				u32[i] = rnd32(&seed);
				u16[i] = (uint16_t)rnd32(&seed);
			}
			cr_assert_eq(ks.within_fp32(u32 + 1, n ? n - 1 : 0, ISTH_AGG_FP32_MAX_BITS),
				ref_finite_fp32(u32 + 1, n ? n - 1 : 0), "%s fp32 random n %zu",
				isth_agg_kernel_name(k), n);
			cr_assert_eq(ks.within_bf16(u16 + 1, n ? n - 1 : 0, ISTH_AGG_BF16_MAX_BITS),
				ref_finite_bf16(u16 + 1, n ? n - 1 : 0), "%s bf16 random n %zu",
				isth_agg_kernel_name(k), n);
		}
	}
	cr_assert_gt(checked, 0);
	/* the dispatcher: fp32 and bf16 checked, every other dtype finite */
	u32[0] = 0x7fc00000u;
	cr_expect_not(isth_agg_finite(ISTH_WIRE_DTYPE_FP32, u32, 1));
	cr_expect(isth_agg_finite(ISTH_WIRE_DTYPE_INT32, u32, 1));
	u32[0] = 0x80000000u; /* -0 */
	cr_expect(isth_agg_finite(ISTH_WIRE_DTYPE_FP32, u32, 1));
	u16[0] = 0xff80u; /* -Inf */
	cr_expect_not(isth_agg_finite(ISTH_WIRE_DTYPE_BF16, u16, 1));
	u16[0] = 0x0001u;
	cr_expect(isth_agg_finite(ISTH_WIRE_DTYPE_BF16, u16, 1));
}

/* A magnitude bound: every kernel set against fabsf(x) <= M (and
 * isfinite), for bounds across the range, values on both sides of each
 * and exactly on it; bf16 against the bound rounded down to a bf16. */
Test(agg, within_bound_matches_fabsf)
{
	static const float bounds[] = {0.0f, 1e-40f, 1.0f, 1.5f, 1000.0f, 3.0e38f, 3.4028235e38f};
	static uint32_t u32[257];
	static uint16_t u16[257];
	unsigned int seed = 11;

	for (enum isth_agg_kernel k = ISTH_AGG_KERNEL_SCALAR; k < ISTH_AGG_KERNEL_MAX; k++) {
		struct isth_agg_kernels ks;

		if (isth_agg_kernels_get(k, &ks) < 0)
			continue;
		for (size_t b = 0; b < sizeof(bounds) / sizeof(bounds[0]); b++) {
			uint32_t lim;

			memcpy(&lim, &bounds[b], 4);
			for (int t = 0; t < 400; t++) {
				size_t n = rnd32(&seed) % 257;
				bool want32 = true, want16 = true;

				for (size_t i = 0; i < n; i++) {
					uint32_t r = rnd32(&seed);
					float f;

					/* near the bound: its bits +-2, either sign */
					u32[i] = (r & 3) == 0
						? ((lim + (r >> 8) % 5 - 2) & 0x7fffffffu) |
							(r & 0x80000000u)
						: (r & 0xbfffffffu);
					u16[i] = (uint16_t)(u32[i] >> 16);
					memcpy(&f, &u32[i], 4);
					want32 &= isfinite(f) && fabsf(f) <= bounds[b];
					want16 &= ((u16[i] & 0x7fffu) << 16) <= (lim & 0xffff0000u);
				}
				cr_assert_eq(ks.within_fp32(u32, n, lim), want32,
					"%s fp32 M %g n %zu", isth_agg_kernel_name(k),
					(double)bounds[b], n);
				cr_assert_eq(ks.within_bf16(u16, n, (uint16_t)(lim >> 16)), want16,
					"%s bf16 M %g n %zu", isth_agg_kernel_name(k),
					(double)bounds[b], n);
			}
		}
	}
	u32[0] = 0x447a0000u; /* 1000 */
	cr_expect(isth_agg_within(ISTH_WIRE_DTYPE_FP32, u32, 1, 1000.0f));
	cr_expect_not(isth_agg_within(ISTH_WIRE_DTYPE_FP32, u32, 1, 999.9f));
	u32[0] = 0xc47a0000u; /* -1000 */
	cr_expect_not(isth_agg_within(ISTH_WIRE_DTYPE_FP32, u32, 1, 999.9f));
	u32[0] = 0x7fc00000u;
	cr_expect_not(isth_agg_within(ISTH_WIRE_DTYPE_FP32, u32, 1, __builtin_inff()));
}
