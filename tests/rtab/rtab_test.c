/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/rtab: publication, reclamation after a grace period, and a writer
 * racing readers whose every table must stay intact while they hold it.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>
#include <rte_pause.h>

#include "isth_rtab.h"

Test(rtab, bad_params)
{
	struct isth_rtab_params ok = {.n_slots = 4, .n_spare = 2, .size = 16};
	struct isth_rtab_params bad[] = {
		{.n_slots = 0, .n_spare = 2, .size = 16},
		{.n_slots = 4, .n_spare = 0, .size = 16},
		{.n_slots = 4, .n_spare = 2, .size = 0},
		{.n_slots = 4, .n_spare = 2, .size = (1u << 24) + 1},
		{.n_slots = (1u << 20) + 1, .n_spare = 2, .size = 16},
	};
	struct isth_rtab *t;

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_assert_null(isth_rtab_create(&bad[i]), "case %u accepted", i);
		cr_assert_eq(errno, EINVAL);
	}
	cr_assert_null(isth_rtab_create(NULL));
	t = isth_rtab_create(&ok);
	cr_assert_not_null(t);
	isth_rtab_destroy(t);
	cr_assert_null(isth_rtab_qs_create(0));
	cr_assert_str_eq(isth_rtab_stats_name(2), "reuse_waits");
	cr_assert_str_eq(isth_rtab_stats_name(ISTH_RTAB_STATS_N), "unknown");
}

/* Without readers (qs NULL) a replaced table is free at once. */
Test(rtab, single_thread_reuses_at_once)
{
	struct isth_rtab_params p = {.n_slots = 2, .n_spare = 1, .size = 8};
	struct isth_rtab *t = isth_rtab_create(&p);
	struct isth_rtab_stats st;
	uint64_t *b;

	cr_assert_not_null(t);
	cr_assert_null(isth_rtab_get(t, 0));
	for (uint64_t r = 0; r < 10; r++) {
		b = isth_rtab_prepare(t);
		cr_assert_not_null(b, "round %" PRIu64, r);
		cr_assert_eq(isth_rtab_prepare(t), b, "prepare twice: the same buffer");
		*b = r;
		cr_assert_eq(isth_rtab_publish(t, (uint32_t)(r % 2), b), 0);
		cr_assert_eq(*(const uint64_t *)isth_rtab_get(t, (uint32_t)(r % 2)), r);
	}
	cr_assert_eq(isth_rtab_publish(t, 2, NULL), -EINVAL, "slot out of range");
	b = isth_rtab_prepare(t);
	cr_assert_eq(isth_rtab_publish(t, 0, b + 1), -EINVAL, "not the prepared buffer");
	cr_assert_eq(isth_rtab_publish(t, 0, NULL), 0, "empty the slot");
	cr_assert_null(isth_rtab_get(t, 0));
	isth_rtab_stats_get(t, &st);
	cr_assert_eq(st.published, 10);
	cr_assert_eq(st.reuse_waits, 0);
	isth_rtab_destroy(t);
}

/*
 * Two readers (ids 0 and 1), driven from this thread: rte_rcu_qsbr's
 * reader calls take the reader id, so the interleaving is exact.
 */
Test(rtab, reader_in_section_blocks_exactly_its_buffer)
{
	struct rte_rcu_qsbr *qs = isth_rtab_qs_create(2);
	struct isth_rtab_params p = {.n_slots = 1, .n_spare = 2, .size = 8, .qs = qs};
	struct isth_rtab *t;
	struct isth_rtab_stats st;
	void *a, *b, *c, *x;

	cr_assert_not_null(qs);
	t = isth_rtab_create(&p);
	cr_assert_not_null(t);
	for (unsigned int id = 0; id < 2; id++) {
		cr_assert_eq(rte_rcu_qsbr_thread_register(qs, id), 0);
		rte_rcu_qsbr_thread_online(qs, id);
	}
	a = isth_rtab_prepare(t);
	cr_assert_eq(isth_rtab_publish(t, 0, a), 0);
	b = isth_rtab_prepare(t);
	cr_assert_eq(isth_rtab_publish(t, 0, b), 0); /* retires a */
	rte_rcu_qsbr_quiescent(qs, 0);
	rte_rcu_qsbr_quiescent(qs, 1);
	/* reader 0 enters a read section and holds b */
	cr_assert_eq(isth_rtab_get(t, 0), b);
	c = isth_rtab_prepare(t);
	cr_assert_not_null(c);
	cr_assert_eq(isth_rtab_publish(t, 0, c), 0); /* retires b */
	rte_rcu_qsbr_quiescent(qs, 1); /* reader 1 moves on, reader 0 does not */
	x = isth_rtab_prepare(t);
	cr_assert_eq(x, a, "a's grace period is over: it is reused");
	cr_assert_eq(isth_rtab_publish(t, 0, a), 0); /* retires c */
	cr_assert_null(isth_rtab_prepare(t), "b is held by reader 0: no buffer");
	cr_assert_eq(errno, EAGAIN);
	cr_assert_null(isth_rtab_prepare(t), "still held: the writer never waits");
	isth_rtab_stats_get(t, &st);
	cr_assert_eq(st.reuse_waits, 2);
	cr_assert_eq(st.retired, 2, "b and c wait");
	/* reader 0 leaves its section: b (the oldest) is free again */
	rte_rcu_qsbr_quiescent(qs, 0);
	cr_assert_eq(isth_rtab_prepare(t), b);
	cr_assert_eq(isth_rtab_publish(t, 0, b), 0); /* retires a */

	/* an offline reader holds nothing up */
	rte_rcu_qsbr_thread_offline(qs, 0);
	rte_rcu_qsbr_quiescent(qs, 1);
	cr_assert_eq(isth_rtab_reclaim(t), 2,
		"reader 0 is offline, reader 1 reported: c and a are free");
	isth_rtab_stats_get(t, &st);
	cr_assert_eq(st.published, 5);
	cr_assert_eq(st.reclaimed, 4);
	cr_assert_eq(st.retired, 0);
	cr_assert_eq(st.reuse_waits, 2);
	isth_rtab_destroy(t);
	isth_rtab_qs_free(qs);
}

/* The race: one writer, three reader threads. */

#define W 64 /* words per table: [0] round, [1..W-2] f(round, i), [W-1] sum */
#define N_READERS 3

struct race {
	struct isth_rtab *t;
	struct rte_rcu_qsbr *qs;
	uint32_t n_slots;
	volatile uint64_t *writing; /* the buffer being written, or NULL */
	bool stop;
	uint64_t bad[N_READERS]; /* tables that changed or failed the check */
	uint64_t seen[N_READERS]; /* tables checked */
	uint64_t held_writing[N_READERS]; /* held a buffer the writer was writing */
};

static uint64_t
word_of(uint64_t round, unsigned int i)
{
	uint64_t x = round * 0x9e3779b97f4a7c15ull + i;

	x ^= x >> 31;
	return x * 0xbf58476d1ce4e5b9ull;
}

static bool
table_ok(const volatile uint64_t *w)
{
	uint64_t r = w[0], sum = r;

	for (unsigned int i = 1; i < W - 1; i++) {
		if (w[i] != word_of(r, i))
			return false;
		sum += w[i];
	}
	return w[W - 1] == sum;
}

struct reader_arg {
	struct race *race;
	unsigned int id;
};

static void *
reader(void *arg)
{
	struct reader_arg *ra = arg;
	struct race *rc = ra->race;
	unsigned int id = ra->id;
	uint64_t iter = 0;

	rte_rcu_qsbr_thread_online(rc->qs, id);
	while (!__atomic_load_n(&rc->stop, __ATOMIC_ACQUIRE)) {
		/* one read section per loop iteration, as a worker */
		rte_rcu_qsbr_quiescent(rc->qs, id);
		const volatile uint64_t *w = isth_rtab_get(rc->t, (uint32_t)(iter % rc->n_slots));
		if (w != NULL) {
			uint64_t r0 = w[0];

			/* hold the table a while: it must not change */
			for (unsigned int k = 0; k < 4; k++) {
				if (!table_ok(w) || w[0] != r0)
					__atomic_store_n(
						&rc->bad[id], rc->bad[id] + 1, __ATOMIC_RELAXED);
				if (__atomic_load_n(&rc->writing, __ATOMIC_ACQUIRE) == w)
					rc->held_writing[id]++;
			}
			rc->seen[id]++;
		}
		/* sometimes idle: offline, as around a worker's sleep */
		if (++iter % 1024 == 0) {
			rte_rcu_qsbr_thread_offline(rc->qs, id);
			sched_yield();
			rte_rcu_qsbr_thread_online(rc->qs, id);
		}
	}
	rte_rcu_qsbr_thread_offline(rc->qs, id);
	return NULL;
}

/*
 * Publish rounds until @p rounds are published (safe) or a reader caught a
 * changed table (unsafe), bounded by @p max_rounds. Returns the tables
 * found bad.
 */
static uint64_t
race_run(bool unsafe, uint64_t rounds, uint64_t max_rounds, uint64_t *seen, uint64_t *waits)
{
	struct race rc = {.n_slots = 2};
	struct isth_rtab_params p = {.n_slots = 2, .n_spare = 1, .size = W * 8};
	struct reader_arg ra[N_READERS];
	pthread_t th[N_READERS];
	struct isth_rtab_stats st;
	uint64_t r, bad = 0, held = 0;

	rc.qs = isth_rtab_qs_create(N_READERS);
	cr_assert_not_null(rc.qs);
	p.qs = rc.qs;
	rc.t = isth_rtab_create(&p);
	cr_assert_not_null(rc.t);
	isth_rtab_test_unsafe_reuse(rc.t, unsafe);
	for (unsigned int i = 0; i < N_READERS; i++) {
		cr_assert_eq(rte_rcu_qsbr_thread_register(rc.qs, i), 0);
		ra[i].race = &rc;
		ra[i].id = i;
		cr_assert_eq(pthread_create(&th[i], NULL, reader, &ra[i]), 0);
	}
	for (r = 1; r <= max_rounds; r++) {
		volatile uint64_t *w;
		uint64_t sum = r;

		while ((w = isth_rtab_prepare(rc.t)) == NULL)
			sched_yield(); /* the writer's next tick */
		__atomic_store_n(&rc.writing, w, __ATOMIC_RELEASE);
		w[0] = r;
		for (unsigned int i = 1; i < W - 1; i++) {
			w[i] = word_of(r, i);
			sum += w[i];
		}
		w[W - 1] = sum;
		__atomic_store_n(&rc.writing, NULL, __ATOMIC_RELEASE);
		cr_assert_eq(isth_rtab_publish(rc.t, (uint32_t)(r % rc.n_slots), (void *)w), 0);
		if (r >= rounds) {
			if (!unsafe)
				break;
			bad = 0;
			for (unsigned int i = 0; i < N_READERS; i++)
				bad += __atomic_load_n(&rc.bad[i], __ATOMIC_RELAXED);
			if (bad)
				break;
		}
	}
	__atomic_store_n(&rc.stop, true, __ATOMIC_RELEASE);
	bad = 0;
	*seen = 0;
	for (unsigned int i = 0; i < N_READERS; i++) {
		pthread_join(th[i], NULL);
		bad += rc.bad[i];
		held += rc.held_writing[i];
		*seen += rc.seen[i];
	}
	isth_rtab_stats_get(rc.t, &st);
	*waits = st.reuse_waits;
	cr_log_info("unsafe=%d rounds=%" PRIu64 " checked=%" PRIu64 " bad=%" PRIu64
		    " held_while_written=%" PRIu64 " reuse_waits=%" PRIu64,
		unsafe, r, *seen, bad, held, *waits);
	if (!unsafe)
		cr_assert_eq(held, 0, "a reader held the buffer being written");
	isth_rtab_destroy(rc.t);
	isth_rtab_qs_free(rc.qs);
	return bad;
}

Test(rtab, readers_never_see_a_table_rewritten)
{
	uint64_t seen, waits;

	cr_assert_eq(race_run(false, 200000, 200000, &seen, &waits), 0);
	cr_assert_gt(seen, 0, "the readers checked no table");
}

/* The check above can fail: reuse before the grace period is caught. */
Test(rtab, early_reuse_is_caught)
{
	uint64_t seen, waits;

	cr_assert_gt(race_run(true, 1000, 50000000, &seen, &waits), 0,
		"reuse without rte_rcu_qsbr_check() went unnoticed");
	cr_assert_eq(waits, 0);
}
