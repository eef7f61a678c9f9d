/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isthmusd's counters by name: the data-path list (ISTHD_COUNTERS), the
 * wire parser's and isthmusd's drop reasons, and one in-use gauge per
 * mempool. /isthmus/stats and the final print walk the same list, so a
 * counter added to worker.h shows up in both. And the one place that sums
 * over the workers: their counters (and the controller's), backends and
 * pacers.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_mempool.h>

#include "isthd.h"

static const char *const counter_names[ISTHD_N_COUNTERS] = {ISTHD_COUNTERS(ISTH_CTR_NAME)};

static const char *const drop_names[ISTHD_DROP_MAX] = {
#define X(n, s) #n,
	ISTHD_DROPS(X)
#undef X
};

/* The counters come first in struct isthd_dp_stats, as an array. */
_Static_assert(offsetof(struct isthd_dp_stats, wire_drop) == ISTHD_N_COUNTERS * sizeof(uint64_t),
	"ISTHD_COUNTERS must be the first members of isthd_dp_stats");
/* isthd_stats_sum adds them as one array */
ISTH_CTR_ASSERT_ARRAY(struct isthd_dp_stats,
	ISTHD_N_COUNTERS + ISTH_WIRE_REASON_MAX + ISTHD_DROP_MAX +
		ISTHD_ISLAND_MAX_HOSTS * ISTHD_N_HOST_COUNTERS);

static const char *const host_counter_names[ISTHD_N_HOST_COUNTERS] = {
#define X(n, s) #n,
	ISTHD_HOST_COUNTERS(X)
#undef X
};

const char *
isthd_host_counter_name(unsigned int i)
{
	return i < ISTHD_N_HOST_COUNTERS ? host_counter_names[i] : "unknown";
}

void
isthd_host_stats(const struct isthd *d, unsigned int host, uint64_t v[ISTHD_N_HOST_COUNTERS])
{
	for (unsigned int i = 0; i < ISTHD_N_HOST_COUNTERS; i++) {
		v[i] = 0;
		for (unsigned int k = 0; k < RTE_MAX(d->n_workers, 1u); k++)
			v[i] += isth_ctr_get(&d->workers[k].st.host[host][i]);
	}
}

void
isthd_host_chunks(const struct isthd *d, unsigned int host, uint32_t *first, uint32_t *n)
{
	uint64_t c = d->shape.n_chunks, k = RTE_MAX(d->cfg.n_island_hosts, 1u);

	*first = (uint32_t)(host * c / k);
	*n = (uint32_t)((host + 1) * c / k) - *first;
}

const char *
isthd_drop_name(unsigned int i)
{
	return i < ISTHD_DROP_MAX ? drop_names[i] : "unknown";
}

static inline unsigned int
n_workers(const struct isthd *d)
{
	return RTE_MAX(d->n_workers, 1u);
}

void
isthd_stats_sum(const struct isthd *d, struct isthd_dp_stats *st)
{
	const unsigned int n = sizeof(*st) / sizeof(uint64_t);
	uint64_t *dst = (uint64_t *)st;

	/* the controller's own (two drops), then every worker's */
	for (unsigned int i = 0; i < n; i++)
		dst[i] = isth_ctr_get((const uint64_t *)&d->ctl_st + i);
	for (unsigned int k = 0; k < n_workers(d); k++)
		for (unsigned int i = 0; i < n; i++)
			dst[i] += isth_ctr_get((const uint64_t *)&d->workers[k].st + i);
}

void
isthd_stats_walk(const struct isthd *d, isthd_stat_fn fn, void *arg)
{
	static const char *const pools[] = {"pkt", "hdr", "ctl"};
	const struct rte_mempool *mp[] = {d->pool, d->hdr_pool, d->ctl_pool};
	struct isthd_dp_stats sum;
	const struct isthd_dp_stats *st = &sum;
	char name[64];
	unsigned int i;

	/* several workers: each counter is the sum of theirs */
	isthd_stats_sum(d, &sum);

	for (i = 0; i < ISTHD_N_COUNTERS; i++)
		fn(arg, counter_names[i], isth_ctr_at(st, i), ISTHD_STAT_COUNTER);
	for (i = 1; i < ISTH_WIRE_REASON_MAX; i++) {
		snprintf(name, sizeof(name), "drop_%s", isth_wire_reason_name(i));
		fn(arg, name, isth_ctr_get(&st->wire_drop[i]), ISTHD_STAT_DROP);
	}
	for (i = 0; i < ISTHD_DROP_MAX; i++) {
		snprintf(name, sizeof(name), "drop_%s", drop_names[i]);
		fn(arg, name, isth_ctr_get(&st->drop[i]), ISTHD_STAT_DROP);
	}
	/* mbufs out of each pool now (allocated, or in a per-lcore cache):
	 * a gauge that climbs while traffic is steady is a leak */
	for (i = 0; i < RTE_DIM(pools); i++) {
		if (mp[i] == NULL)
			continue;
		snprintf(name, sizeof(name), "mempool_%s_in_use", pools[i]);
		fn(arg, name, rte_mempool_in_use_count(mp[i]), ISTHD_STAT_GAUGE);
	}
}

static void
print_one(void *arg, const char *name, uint64_t v, enum isthd_stat_kind kind)
{
	/* drops only when they happened: the list of reasons is long */
	if (kind == ISTHD_STAT_DROP && v == 0)
		return;
	fprintf(arg, "  %-24s %" PRIu64 "\n", name, v);
}

/* Several hosts of the island: what each sent and got (its chunk range;
 * "chunks 5-4": none). */
static void
print_hosts(const struct isthd *d, FILE *f)
{
	for (unsigned int h = 0; d->cfg.n_island_hosts > 1 && h < d->cfg.n_island_hosts; h++) {
		uint64_t v[ISTHD_N_HOST_COUNTERS];
		uint32_t first, n;

		isthd_host_stats(d, h, v);
		isthd_host_chunks(d, h, &first, &n);
		fprintf(f, "island host %u: chunks %" PRIu32 "-%" PRId64, h, first,
			(int64_t)first + n - 1);
		for (unsigned int i = 0; i < ISTHD_N_HOST_COUNTERS; i++)
			fprintf(f, " %s %" PRIu64, host_counter_names[i], v[i]);
		fprintf(f, "\n");
	}
}

void
isthd_print_counters(const struct isthd *d, FILE *f)
{
	struct isth_backend_stats be;
	struct isth_pace_stats ps;
	unsigned int i;

	fprintf(f, "isthmusd counters:\n");
	isthd_stats_walk(d, print_one, f);
	isthd_backend_stats_sum(d, &be);
	fprintf(f, "backend %s:\n", d->cfg.backend);
	for (i = 0; i < be.n; i++)
		fprintf(f, "  %-24s %" PRIu64 "\n", be.names[i], be.values[i]);
	/* several workers: who summed what (worker k: chunk % N == k) */
	for (unsigned int k = 0; d->n_workers > 1 && k < d->n_workers; k++) {
		const struct isthd_dp_stats *st = &d->workers[k].st;
		struct isth_backend_counts bc;

		isth_backend_counts(d->workers[k].be, &bc);
		fprintf(f,
			"worker %u: peer_data %" PRIu64 " peer_data_bytes %" PRIu64
			" completed %" PRIu64 " partial %" PRIu64 " idle_sleeps %" PRIu64
			" agg_out %" PRIu64 " nacks %" PRIu64 " resent %" PRIu64 " gone %" PRIu64
			" sealed %" PRIu64 " access_tx %" PRIu64 " drop_tx_access %" PRIu64
			" data_out %" PRIu64 " wan_tx %" PRIu64 " repairs_sent %" PRIu64
			" tail_copies_sent %" PRIu64 "\n",
			k, isth_ctr_get(&st->peer_data), isth_ctr_get(&st->peer_data_bytes),
			bc.completed, bc.partial, isth_ctr_get(&st->idle_sleeps),
			isth_ctr_get(&st->agg_out), isth_ctr_get(&st->nacks),
			isth_ctr_get(&st->resent), isth_ctr_get(&st->gone),
			isth_ctr_get(&st->sealed), isth_ctr_get(&st->access_tx),
			isth_ctr_get(&st->drop[ISTHD_DROP_tx_access]), isth_ctr_get(&st->data_out),
			isth_ctr_get(&st->wan_tx), isth_ctr_get(&st->repairs_sent),
			isth_ctr_get(&st->tail_copies_sent));
	}
	print_hosts(d, f);
	isthd_pace_stats_sum(d, &ps);
	fprintf(f,
		"pacer:\n  enqueued %" PRIu64 " released %" PRIu64 " queue_full %" PRIu64
		" late_starts %" PRIu64 "\n",
		ps.enqueued, ps.released, ps.queue_full, ps.late_starts);
}

/*
 * Several workers each pace the island's stream for their own peers
 * (doc/isthmusd.md, "Workers"): the cumulative counters are summed (a
 * chunk sent by two workers is released twice, and a round in which a
 * worker has no peer is one of its empty_rounds); the round_* gauges are
 * those of the pacer furthest into the newest round (the most bytes
 * released), but the start lag is the latest of those that released in
 * it (a late worker shows).
 */
void
isthd_pace_stats_sum(const struct isthd *d, struct isth_pace_stats *ps)
{
	struct isth_pace_stats x;
	uint64_t lag;

	isth_pace_stats(d->workers[0].eg.pace, ps);
	lag = ps->round_bytes ? ps->round_start_lag_ns : 0;
	for (unsigned int k = 1; k < n_workers(d); k++) {
		isth_pace_stats(d->workers[k].eg.pace, &x);
		if (x.round > ps->round ||
			(x.round == ps->round && x.round_bytes > ps->round_bytes)) {
			if (x.round > ps->round)
				lag = 0;
			ps->round = x.round;
			ps->round_bytes = x.round_bytes;
			ps->round_active_ns = x.round_active_ns;
			ps->round_achieved_bps = x.round_achieved_bps;
			ps->round_planned_bps = x.round_planned_bps;
		}
		if (x.round == ps->round && x.round_bytes && x.round_start_lag_ns > lag)
			lag = x.round_start_lag_ns;
#define SUM(f) ps->f += x.f
		SUM(enqueued);
		SUM(queue_full);
		SUM(oversize);
		SUM(released);
		SUM(bytes_sent);
		SUM(flushed);
		SUM(rounds);
		SUM(late_starts);
		SUM(empty_rounds);
		SUM(plans_busy);
		SUM(plans_published);
		SUM(plan_reuse_waits);
		SUM(queued);
#undef SUM
	}
	ps->round_start_lag_ns = lag;
}

void
isthd_backend_counts_sum(const struct isthd *d, struct isth_backend_counts *c)
{
	struct isth_backend_counts x;

	isth_backend_counts(d->workers[0].be, c);
	for (unsigned int k = 1; k < n_workers(d); k++) {
		isth_backend_counts(d->workers[k].be, &x);
		c->completed += x.completed;
		c->partial += x.partial;
		c->dev_pending += x.dev_pending;
	}
}

void
isthd_backend_stats_sum(const struct isthd *d, struct isth_backend_stats *st)
{
	struct isth_backend_stats x;

	isth_backend_stats(d->workers[0].be, st);
	/* every instance is of the same backend: the same names in order */
	for (unsigned int k = 1; k < n_workers(d); k++) {
		isth_backend_stats(d->workers[k].be, &x);
		for (unsigned int i = 0; i < st->n && i < x.n; i++)
			st->values[i] += x.values[i];
	}
	/* the pacer's plans are round tables too (lib/pace on lib/rtab) */
	if (d->workers[0].eg.pace != NULL) {
		struct isth_pace_stats ps;

		isthd_pace_stats_sum(d, &ps);
		for (unsigned int i = 0; i < st->n; i++) {
			if (strcmp(st->names[i], "round_tables_published") == 0)
				st->values[i] += ps.plans_published;
			else if (strcmp(st->names[i], "round_table_reuse_waits") == 0)
				st->values[i] += ps.plan_reuse_waits;
		}
	}
}

void
isthd_backend_caps_sum(const struct isthd *d, struct isth_backend_caps *caps)
{
	/* several workers: memory and slots are the sum of their backends' */
	isth_backend_caps(d->workers[0].be, caps);
	for (unsigned int k = 1; k < n_workers(d); k++) {
		struct isth_backend_caps c;

		isth_backend_caps(d->workers[k].be, &c);
		caps->mem_bytes += c.mem_bytes;
		caps->n_slots += c.n_slots;
	}
}
