/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Several worker lcores (doc/isthmusd.md, "Workers"). isthmusd -l 0,1,..,N
 * runs the controller on the main lcore and N workers. Worker k aggregates
 * the peer DATA of the chunks with chunk % N == k, in a backend instance of
 * its own (slots, memory M/N, counters): summing is the work that grows
 * with the number of peers and their rate, and it is what is spread.
 *
 * Worker 0 is the edge's data path as with one worker (datapath.c): it
 * polls both ports (the PMDs here have one queue), parses and verifies,
 * admits, tracks and repairs the WAN, paces and replicates the island's
 * DATA, and numbers, seals and sends every AGG. It hands each admitted
 * peer DATA whose chunk is another worker's to that worker through an
 * SP/SC ring (the frame and its parse), and takes the AGG messages the
 * others build back through another; the others touch no port.
 *
 * Why these stay on worker 0: the island follows one AGG sequence stream
 * (lib/island: a gap is NACKed, a jump resyncs), so AGGs are numbered in
 * one place, and the ring that keeps them answers the island's NACKs by
 * that sequence; WAN repair tracks each peer's chunks in order
 * (repair_nack.c), which a shard of them would see as gaps; every stream
 * the edge starts (AGG, GONE, NACK, ROUND) then has one writer, so no
 * receiver's replay window sees a seq twice.
 *
 * With one worker none of this runs: no ring, no steering, no cost.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "isthd.h"

/* Ring sizes: a few bursts of every kind in flight per worker. */
#define SHARD_IN_SIZE 1024
#define SHARD_OUT_SIZE 1024

int
isthd_rcu_setup(struct isthd *d)
{
	unsigned int k, n = RTE_MAX(d->n_workers, 1u);

	d->qs = isth_rtab_qs_create(n);
	if (d->qs == NULL)
		return -errno;
	/* registered from the start, offline until a worker's loop runs:
	 * a worker that is not running holds nothing up */
	for (k = 0; k < n; k++)
		if (rte_rcu_qsbr_thread_register(d->qs, k) != 0)
			return -EINVAL;
	return 0;
}

int
isthd_workers_setup(struct isthd *d, const struct isth_backend_conf *bc, char *err, size_t err_size)
{
	char name[RTE_RING_NAMESIZE];
	unsigned int k;

	if (d->n_workers <= 1)
		return 0;
	d->stage = rte_zmalloc("isthd_stage",
		(size_t)d->n_workers * ISTHD_BURST * sizeof(*d->stage), RTE_CACHE_LINE_SIZE);
	if (d->stage == NULL)
		goto nomem;
	for (k = 1; k < d->n_workers; k++) {
		struct isthd_shard *w;

		w = rte_zmalloc("isthd_shard", sizeof(*w), RTE_CACHE_LINE_SIZE);
		if (w == NULL)
			goto nomem;
		d->shard[k] = w;
		w->d = d;
		w->id = k;
		w->expire_next = d->expire_next;
		snprintf(name, sizeof(name), "isthd_in%u", k);
		w->in = rte_ring_create_elem(name, sizeof(struct isthd_shard_msg), SHARD_IN_SIZE,
			rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "isthd_out%u", k);
		w->out = rte_ring_create(
			name, SHARD_OUT_SIZE, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (w->in == NULL || w->out == NULL)
			goto nomem;
		w->be = isth_backend_create(d->cfg.backend, bc);
		if (w->be == NULL) {
			snprintf(err, err_size, "%s: backend '%s' for worker %u: %s", d->cfg.path,
				d->cfg.backend, k, rte_strerror(rte_errno));
			return -rte_errno;
		}
	}
	return 0;
nomem:
	snprintf(err, err_size, "%u workers: rings and state: %s (try a larger -m)", d->n_workers,
		rte_strerror(rte_errno));
	return -ENOMEM;
}

static void
free_msgs(struct rte_ring *r)
{
	struct isthd_shard_msg msg[16];
	unsigned int n, i;

	while ((n = rte_ring_dequeue_burst_elem(r, msg, sizeof(msg[0]), RTE_DIM(msg), NULL)) > 0)
		for (i = 0; i < n; i++)
			rte_pktmbuf_free(msg[i].m);
}

void
isthd_workers_teardown(struct isthd *d)
{
	void *objs[64];
	unsigned int k, n;

	for (k = 1; k < ISTHD_MAX_WORKERS; k++) {
		struct isthd_shard *w = d->shard[k];

		if (w == NULL)
			continue;
		if (w->in) {
			free_msgs(w->in);
			rte_ring_free(w->in);
		}
		if (w->out) {
			while ((n = rte_ring_dequeue_burst(w->out, objs, RTE_DIM(objs), NULL)) > 0)
				rte_pktmbuf_free_bulk((struct rte_mbuf **)objs, n);
			rte_ring_free(w->out);
		}
		isth_backend_destroy(w->be);
		rte_free(w);
		d->shard[k] = NULL;
	}
	rte_free(d->stage);
	d->stage = NULL;
}

int
isthd_workers_launch(struct isthd *d)
{
	unsigned int k, lc = rte_get_next_lcore(-1, 1, 0);
	int rc;

	/* RTE_MAX_LCORE: not launched (isthd_workers_wait skips it) */
	for (k = 0; k < ISTHD_MAX_WORKERS; k++)
		d->lcore[k] = RTE_MAX_LCORE;
	for (k = 0; k < RTE_MAX(d->n_workers, 1u); k++) {
		if (lc >= RTE_MAX_LCORE)
			return -ENODEV;
		rc = k == 0 ? rte_eal_remote_launch(isthd_worker, d, lc)
			    : rte_eal_remote_launch(isthd_shard_worker, d->shard[k], lc);
		if (rc < 0)
			return rc;
		d->lcore[k] = lc;
		lc = rte_get_next_lcore(lc, 1, 0);
	}
	return 0;
}

void
isthd_workers_wait(struct isthd *d)
{
	for (unsigned int k = 0; k < RTE_MAX(d->n_workers, 1u); k++)
		if (d->lcore[k] < RTE_MAX_LCORE)
			rte_eal_wait_lcore(d->lcore[k]);
}

bool
isthd_shard_steer(struct isthd *d, struct rte_mbuf *m, const struct isth_wire_pkt *p)
{
	/* the chunk id is below the round's n_chunks (data_shape) */
	unsigned int k = p->hdr.chunk % d->n_workers;
	struct isthd_shard_msg *s;

	if (k == 0)
		return false;
	if (d->n_stage[k] == ISTHD_BURST)
		isthd_shard_flush(d);
	s = &d->stage[k * ISTHD_BURST + d->n_stage[k]++];
	s->m = m;
	s->p = *p;
	return true;
}

void
isthd_shard_flush(struct isthd *d)
{
	for (unsigned int k = 1; k < d->n_workers; k++) {
		struct isthd_shard_msg *s = &d->stage[k * ISTHD_BURST];
		unsigned int n = d->n_stage[k], sent;

		if (n == 0)
			continue;
		sent = rte_ring_enqueue_burst_elem(d->shard[k]->in, s, sizeof(*s), n, NULL);
		if (unlikely(sent < n)) {
			isth_ctr_add(&d->st.drop[ISTHD_DROP_worker_ring_full], n - sent);
			for (unsigned int i = sent; i < n; i++)
				rte_pktmbuf_free(s[i].m);
		}
		d->n_stage[k] = 0;
	}
}

unsigned int
isthd_shard_collect(struct isthd *d, struct rte_mbuf **out, unsigned int cap)
{
	unsigned int k, n = 0;

	for (k = 1; k < d->n_workers && n < cap; k++)
		n += rte_ring_dequeue_burst(d->shard[k]->out, (void **)out + n, cap - n, NULL);
	return n;
}

/* Sum what worker 0 handed over. */
static unsigned int
shard_aggregate(struct isthd_shard *w, uint64_t now_ns)
{
	struct isthd_shard_msg msg[ISTHD_BURST];
	struct rte_mbuf *m[ISTHD_BURST];
	struct isth_wire_pkt p[ISTHD_BURST];
	uint64_t bytes = 0;
	unsigned int n, i;

	n = rte_ring_dequeue_burst_elem(w->in, msg, sizeof(msg[0]), ISTHD_BURST, NULL);
	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		m[i] = msg[i].m;
		p[i] = msg[i].p;
		bytes += p[i].payload_size;
	}
	isth_ctr_add(&w->st.peer_data, n);
	isth_ctr_add(&w->st.peer_data_bytes, bytes);
	/* takes the mbufs; refusals are the backend's counters */
	isth_backend_aggregate_burst(w->be, m, p, n, now_ns);
	return n;
}

/* Finished aggregates to worker 0, as many as its ring takes whole. */
static unsigned int
shard_emit(struct isthd_shard *w, uint64_t now_ns)
{
	struct rte_mbuf *out[ISTHD_BURST];
	unsigned int n;

	/* what the backend gives is enqueued whole: only this worker
	 * enqueues, so the room it sees cannot shrink */
	if (rte_ring_free_count(w->out) < ISTHD_BURST)
		return 0;
	n = isth_backend_drain(w->be, now_ns, out, ISTHD_BURST);
	if (n)
		rte_ring_enqueue_bulk(w->out, (void **)out, n, NULL);
	return n;
}

unsigned int
isthd_shard_poll(struct isthd_shard *w)
{
	uint64_t now_ns = isthd_tsc_to_ns(w->d, rte_rdtsc());
	unsigned int work = 0;

	work += isthd_expire_rounds(w->d, w->be, &w->expire_next, now_ns);
	work += shard_aggregate(w, now_ns);
	work += shard_emit(w, now_ns);
	return work;
}

int
isthd_shard_worker(void *arg)
{
	struct isthd_shard *w = arg;
	const struct isthd *d = w->d;
	uint32_t idle = 0;

	isthd_rcu_online(d, w->id);
	while (!d->stop) {
		/* round tables are read only within one pass */
		isthd_rcu_quiescent(d, w->id);
		if (isthd_shard_poll(w)) {
			idle = 0;
			continue;
		}
		/* the same back-off as worker 0 (shared hosts) */
		if (d->cfg.idle_polls && ++idle >= d->cfg.idle_polls) {
			isth_ctr_add(&w->st.idle_sleeps, 1);
			isthd_rcu_offline(d, w->id);
			rte_delay_us_sleep((unsigned int)(d->cfg.idle_sleep_ns / 1000));
			isthd_rcu_online(d, w->id);
		}
	}
	isthd_rcu_offline(d, w->id);
	return 0;
}

unsigned int
isthd_shard_drain_final(struct isthd *d, bool first)
{
	uint64_t now_ns = isthd_tsc_to_ns(d, rte_rdtsc());
	unsigned int k, n = 0;

	for (k = 1; k < d->n_workers; k++) {
		struct isthd_shard *w = d->shard[k];

		if (first) {
			while (shard_aggregate(w, now_ns) > 0)
				;
			isth_backend_flush(w->be);
		}
		n += shard_emit(w, now_ns);
	}
	return n;
}

void
isthd_backend_counts_sum(const struct isthd *d, struct isth_backend_counts *c)
{
	struct isth_backend_counts x;

	isth_backend_counts(d->be, c);
	for (unsigned int k = 1; k < d->n_workers; k++) {
		isth_backend_counts(d->shard[k]->be, &x);
		c->completed += x.completed;
		c->partial += x.partial;
		c->dev_pending += x.dev_pending;
	}
}

void
isthd_backend_stats_sum(const struct isthd *d, struct isth_backend_stats *st)
{
	struct isth_backend_stats x;

	isth_backend_stats(d->be, st);
	/* every instance is of the same backend: the same names in order */
	for (unsigned int k = 1; k < d->n_workers; k++) {
		isth_backend_stats(d->shard[k]->be, &x);
		for (unsigned int i = 0; i < st->n && i < x.n; i++)
			st->values[i] += x.values[i];
	}
	/* the pacer's plans are round tables too (lib/pace on lib/rtab) */
	if (d->pace != NULL) {
		struct isth_pace_stats ps;

		isth_pace_stats(d->pace, &ps);
		for (unsigned int i = 0; i < st->n; i++) {
			if (strcmp(st->names[i], "round_tables_published") == 0)
				st->values[i] += ps.plans_published;
			else if (strcmp(st->names[i], "round_table_reuse_waits") == 0)
				st->values[i] += ps.plan_reuse_waits;
		}
	}
}
