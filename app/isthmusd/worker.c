/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Several worker lcores (doc/isthmusd.md, "Workers"). isthmusd -l 0,1,..,N
 * runs the controller on the main lcore and N workers. Worker k aggregates
 * the peer DATA of the chunks with chunk % N == k, in a backend instance of
 * its own (slots, memory M/N, counters): summing is the work that grows
 * with the number of peers and their rate, and it is what is spread.
 *
 * Worker k also owns AGG stream k (doc/protocol.md, "AGG streams"): it
 * numbers the AGGs it builds in a seq of its own, keeps them in a resend
 * ring of its own, and serves the island's NACKs of stream k from it
 * (GONE with a seq counter of its own). With auth on it seals them too,
 * with a tag engine of its own (AGGs in one burst submission, resends
 * and GONEs as they are built), after their last header change. The
 * island follows the N streams (lib/island) and NACKs each by its stream
 * index.
 *
 * Worker k also sends the island's DATA of each round to its share of the
 * round's peers (the ranks k, k + N, ...: isthd_egress_worker): it paces
 * it with a pacer of its own (the round's whole plan), replicates it to
 * those peers through its backend
 * (whose fan-out table holds only them), keeps it in a WAN repair ring of
 * its own and serves those peers' chunk NACKs and tail copies from it,
 * within budgets of its own (struct isthd_egress). A peer's flow so has
 * one pacer, one ring and one TX queue: in chunk order, which the peer
 * edge's WAN repair relies on (a split by chunk would reorder it).
 *
 * Worker 0 is the edge's data path as with one worker (datapath.c): it
 * polls every RX queue of both ports, parses and verifies, admits, tracks
 * peers' chunks for WAN repair, seals the island's DATA once for the WAN,
 * and numbers, seals and sends stream 0. It hands each admitted peer DATA
 * whose chunk is another worker's, each island NACK of another worker's
 * stream and each chunk NACK of another worker's peer to that worker
 * through an SP/SC ring (the frame and its parse), and the island's DATA
 * (a reference) to every other worker with peers in the round through
 * another (pace_in). Where a port has a TX queue per worker (setup.c
 * chooses once per port, from the PMD's max_tx_queues), worker k sends on
 * TX queue k itself; otherwise it hands its frames back through a ring
 * per port (out, wan_out), and worker 0 puts them on the wire unchanged.
 * No worker but 0 receives.
 *
 * Why the rest stays on worker 0: one RX queue per port on these PMDs
 * (no steering by chunk); WAN repair tracks each peer's chunks in order
 * (repair_nack.c), which a shard of them would see as gaps. Every stream
 * the edge starts still has one writer: AGG and GONE of stream k worker
 * k, NACK and stream 0 worker 0, ROUND the controller, the island's DATA
 * its one WAN seal by worker 0; so no receiver's replay window sees a seq
 * twice.
 *
 * Keys: every worker has an engine of its own in the key set published
 * (auth.c, struct isthd_keyset); a reload publishes a new set through
 * lib/rtab and each worker takes it at the start of its next pass
 * (isthd_auth_shard_step), the old engines freed by the controller only
 * once every worker has reported a quiescent state (d->qs) since. The
 * FPGA backend's device sealing (auth_dev.c) is worker 0's alone because
 * that backend runs with one worker only (setup.c refuses more).
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

#include "isth_mcast.h"
#include "isthd.h"

/* Ring sizes: a few bursts of every kind in flight per worker. */
#define SHARD_IN_SIZE 1024
#define SHARD_OUT_SIZE 1024
/* to the WAN through worker 0: a released burst is a copy per peer */
#define SHARD_WAN_OUT_SIZE 4096

_Static_assert(ISTHD_MAX_WORKERS <= ISTH_WIRE_MAX_STREAMS, "one AGG stream per worker");

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
	d->pstage = rte_zmalloc("isthd_pstage",
		(size_t)d->n_workers * ISTHD_BURST * sizeof(*d->pstage), RTE_CACHE_LINE_SIZE);
	if (d->stage == NULL || d->pstage == NULL)
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
		snprintf(name, sizeof(name), "isthd_wout%u", k);
		w->wan_out = rte_ring_create(
			name, SHARD_WAN_OUT_SIZE, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
		/* as deep as the pacer's queue: a round's DATA waits in one
		 * or the other, never dropped here before the pacer would */
		snprintf(name, sizeof(name), "isthd_pace%u", k);
		w->pace_in =
			rte_ring_create_elem(name, sizeof(struct isthd_pace_msg), d->cfg.pace_queue,
				rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
		if (w->in == NULL || w->out == NULL || w->wan_out == NULL || w->pace_in == NULL)
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
free_mbufs(struct rte_ring *r)
{
	void *objs[64];
	unsigned int n;

	while ((n = rte_ring_dequeue_burst(r, objs, RTE_DIM(objs), NULL)) > 0)
		rte_pktmbuf_free_bulk((struct rte_mbuf **)objs, n);
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
			free_mbufs(w->out);
			rte_ring_free(w->out);
		}
		if (w->wan_out) {
			free_mbufs(w->wan_out);
			rte_ring_free(w->wan_out);
		}
		if (w->pace_in) {
			struct isthd_pace_msg pm[16];

			while ((n = rte_ring_dequeue_burst_elem(
					w->pace_in, pm, sizeof(pm[0]), RTE_DIM(pm), NULL)) > 0)
				for (unsigned int i = 0; i < n; i++)
					rte_pktmbuf_free(pm[i].m);
			rte_ring_free(w->pace_in);
		}
		isth_backend_destroy(w->be);
		isth_resend_destroy(w->agg_ring);
		rte_free(w);
		d->shard[k] = NULL;
	}
	rte_free(d->stage);
	d->stage = NULL;
	rte_free(d->pstage);
	d->pstage = NULL;
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

void
isthd_shard_stage(
	struct isthd *d, unsigned int k, struct rte_mbuf *m, const struct isth_wire_pkt *p)
{
	struct isthd_shard_msg *s;

	if (d->n_stage[k] == ISTHD_BURST)
		isthd_shard_flush(d);
	s = &d->stage[k * ISTHD_BURST + d->n_stage[k]++];
	s->m = m;
	s->p = *p;
}

bool
isthd_shard_steer(struct isthd *d, struct rte_mbuf *m, const struct isth_wire_pkt *p)
{
	/* the chunk id is below the round's n_chunks (data_shape) */
	unsigned int k = p->hdr.chunk % d->n_workers;

	if (k == 0)
		return false;
	isthd_shard_stage(d, k, m, p);
	return true;
}

void
isthd_shard_flush(struct isthd *d)
{
	for (unsigned int k = 1; k < d->n_workers; k++) {
		struct isthd_shard_msg *s = &d->stage[k * ISTHD_BURST];
		struct isthd_pace_msg *pm = &d->pstage[k * ISTHD_BURST];
		unsigned int n = d->n_stage[k], sent;

		if (d->n_pstage[k]) {
			unsigned int np = d->n_pstage[k];

			sent = rte_ring_enqueue_burst_elem(
				d->shard[k]->pace_in, pm, sizeof(*pm), np, NULL);
			if (unlikely(sent < np)) {
				isth_ctr_add(&d->st.drop[ISTHD_DROP_worker_ring_full], np - sent);
				for (unsigned int i = sent; i < np; i++)
					rte_pktmbuf_free(pm[i].m);
			}
			d->n_pstage[k] = 0;
		}
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
isthd_shard_collect(struct isthd *d, bool wan, struct rte_mbuf **out, unsigned int cap)
{
	unsigned int k, n = 0;

	for (k = 1; k < d->n_workers && n < cap; k++)
		n += rte_ring_dequeue_burst(wan ? d->shard[k]->wan_out : d->shard[k]->out,
			(void **)out + n, cap - n, NULL);
	return n;
}

/*
 * The island's DATA of round @r, admitted and sealed for the WAN by worker
 * 0, goes to every worker with peers in the round (the round's repair
 * table names them; with n of them, workers 0..min(n, N)-1 each send to
 * some, isthd_egress_worker): each paces, replicates and keeps it for its
 * own peers, holding a reference of its own (the mbuf's refcount, atomic
 * across lcores; the DATA is only read once sealed, but for a repair's
 * RESENT flag, which lib/resend sets in place only when its ring holds
 * the last reference, and otherwise sets in a header copy). Worker 0's
 * goes into its pacer here, the others' are staged for their pace_in
 * rings (flushed at the end of the RX burst). A round with no peer (a
 * bye) or no table goes to worker 0 alone, as with one worker.
 */
int
isthd_egress_steer(struct isthd *d, struct rte_mbuf *m, uint32_t bytes, uint64_t r)
{
	const struct isthd_repair_round *rt = isthd_repair_round(d, r);
	unsigned int n = 1, k;
	int rc;

	if (rt != NULL && !d->cfg.wan_repl_network)
		n = RTE_MIN((unsigned int)__builtin_popcountll(rt->expected), d->n_workers);
	if (n <= 1)
		return isth_pace_enqueue(d->eg.pace, m, bytes);
	/* the UDP checksum's sum of the message, once here rather than once
	 * per worker that fans it out (lib/mcast reuses it) */
	if (d->cfg.wan_udp_csum)
		isth_mcast_sum_attach(m);
	rte_mbuf_refcnt_update(m, (int16_t)(n - 1));
	for (k = 1; k < n; k++) {
		struct isthd_pace_msg *pm;

		if (d->n_pstage[k] == ISTHD_BURST)
			isthd_shard_flush(d);
		pm = &d->pstage[k * ISTHD_BURST + d->n_pstage[k]++];
		pm->m = m;
		pm->bytes = bytes;
	}
	/* the others took theirs: worker 0's refusal is its own pacer's,
	 * counted here, and the DATA still leaves for the others' peers */
	rc = isth_pace_enqueue(d->eg.pace, m, bytes);
	if (unlikely(rc < 0)) {
		isth_ctr_add(&d->st.drop[isthd_pace_refusal(rc)], 1);
		rte_pktmbuf_free(m);
	}
	return 0;
}

/* Stream k's finished frames onto the wire: on access TX queue k, which
 * only this worker uses, where the port has a queue per worker (counted
 * access_tx and drop tx_access in its own counters); else to worker 0
 * through the out ring, what it cannot take dropped and counted (the
 * island NACKs it again). */
static void
shard_out(struct isthd_shard *w, struct rte_mbuf **m, unsigned int n)
{
	const struct isthd *d = w->d;
	unsigned int sent;

	if (d->access_txq > 1) {
		isthd_tx_queue(&w->st, d->access_port, (uint16_t)w->id, m, (uint16_t)n,
			ISTHD_DROP_tx_access, &w->st.access_tx);
		return;
	}
	sent = n ? rte_ring_enqueue_burst(w->out, (void **)m, n, NULL) : 0;
	if (unlikely(sent < n)) {
		isth_ctr_add(&w->st.drop[ISTHD_DROP_worker_ring_full], n - sent);
		rte_pktmbuf_free_bulk(m + sent, n - sent);
	}
}

/* An island NACK of stream k, served from this worker's ring
 * (isthd_serve_seq_nack, datapath.c); the resends and GONEs are sealed
 * here (auth on) and leave through shard_out. */
static void
shard_emit_out(void *arg, struct rte_mbuf **m, unsigned int n)
{
	shard_out(arg, m, n);
}

static void
shard_serve_nack(struct isthd_shard *w, const struct isth_wire_pkt *p, uint64_t now_ns)
{
	isthd_serve_seq_nack(w->d, &w->st, w->agg_ring, &w->nack_budget, w->eng, &w->seq_gone, p,
		now_ns, shard_emit_out, w);
}

/* The island's DATA worker 0 handed over, into this worker's pacer for
 * its peers, by payload bytes as worker 0 admitted them; refusals counted
 * here (pace_full, pace_oversize). */
static unsigned int
shard_pace(struct isthd_shard *w)
{
	struct isthd_pace_msg pm[ISTHD_BURST];
	unsigned int n, i;

	n = rte_ring_dequeue_burst_elem(w->pace_in, pm, sizeof(pm[0]), ISTHD_BURST, NULL);
	for (i = 0; i < n; i++) {
		int rc = isth_pace_enqueue(w->eg.pace, pm[i].m, (uint32_t)pm[i].bytes);

		if (unlikely(rc < 0)) {
			isth_ctr_add(&w->st.drop[isthd_pace_refusal(rc)], 1);
			rte_pktmbuf_free(pm[i].m);
		}
	}
	return n;
}

/* Sum what worker 0 handed over; serve the NACKs it steered here (the
 * island's of AGG stream k, peers' chunk NACKs of this worker's peers). */
static unsigned int
shard_aggregate(struct isthd_shard *w, uint64_t now_ns)
{
	struct isthd_shard_msg msg[ISTHD_BURST];
	struct rte_mbuf *m[ISTHD_BURST];
	struct isth_wire_pkt p[ISTHD_BURST];
	uint64_t bytes = 0;
	unsigned int n, i, k = 0;

	n = rte_ring_dequeue_burst_elem(w->in, msg, sizeof(msg[0]), ISTHD_BURST, NULL);
	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		if (unlikely(msg[i].p.hdr.type == ISTH_WIRE_NACK)) {
			if (msg[i].p.hdr.flags & ISTH_WIRE_F_CHUNKS)
				isthd_repair_serve(w->d, w->id, &msg[i].p, now_ns);
			else
				shard_serve_nack(w, &msg[i].p, now_ns);
			rte_pktmbuf_free(msg[i].m);
			continue;
		}
		m[k] = msg[i].m;
		p[k] = msg[i].p;
		bytes += p[k++].payload_size;
	}
	if (k == 0)
		return n;
	isth_ctr_add(&w->st.peer_data, k);
	isth_ctr_add(&w->st.peer_data_bytes, bytes);
	/* takes the mbufs; refusals are the backend's counters */
	isth_backend_aggregate_burst(w->be, m, p, k, now_ns);
	return n;
}

/*
 * Finished aggregates as AGGs of stream k: framed, stream field set,
 * numbered and kept by this worker's ring, then (auth on) sealed in one
 * burst submission with this worker's engine, in place (the ring's
 * reference sees the sealed bytes: resends start from them), and sent on
 * access TX queue k; with one TX queue, as many as worker 0's ring takes
 * whole, handed to it.
 */
static unsigned int
shard_emit(struct isthd_shard *w, uint64_t now_ns)
{
	const struct isthd *d = w->d;
	struct rte_mbuf *out[ISTHD_BURST];
	unsigned int n, i, ok = 0;

	/* the hand-off: what the backend gives is enqueued whole; only
	 * this worker enqueues, so the room it sees cannot shrink */
	if (d->access_txq == 1 && rte_ring_free_count(w->out) < ISTHD_BURST)
		return 0;
	n = isth_backend_drain(w->be, now_ns, out, ISTHD_BURST);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = out[i];
		uint64_t seq;

		isth_ctr_add(&w->st.agg_out_bytes, rte_pktmbuf_pkt_len(m) - ISTH_WIRE_HDR_SIZE);
		isth_wire_or_flags(rte_pktmbuf_mtod(m, uint8_t *),
			(uint16_t)(w->id << ISTH_WIRE_STREAM_SHIFT));
		if (d->auth.on &&
			unlikely(m->nb_segs > 1 ||
				rte_pktmbuf_append(m, ISTH_AUTH_TAG_SIZE) == NULL)) {
			isth_ctr_add(&w->st.drop[ISTHD_DROP_auth_seal], 1);
			rte_pktmbuf_free(m);
			continue;
		}
		if (unlikely(isthd_frame_to_island(d, m) < 0 ||
			    isth_resend_push(w->agg_ring, m, now_ns, &seq) < 0)) {
			isth_ctr_add(&w->st.drop[ISTHD_DROP_tx_access], 1);
			rte_pktmbuf_free(m);
			continue;
		}
		out[ok++] = m;
	}
	if (d->auth.on && ok)
		ok = isthd_auth_seal_frames(
			d, &w->st, w->eng, ISTH_AUTH_DOWN, out, ok, ISTHD_ISLAND_HDR);
	isth_ctr_add(&w->st.agg_out, ok);
	if (d->access_txq > 1)
		isthd_tx_queue(&w->st, d->access_port, (uint16_t)w->id, out, (uint16_t)ok,
			ISTHD_DROP_tx_access, &w->st.access_tx);
	else if (ok)
		rte_ring_enqueue_bulk(w->out, (void **)out, ok, NULL);
	return n;
}

unsigned int
isthd_shard_poll(struct isthd_shard *w)
{
	uint64_t tsc = rte_rdtsc();
	uint64_t now_ns = isthd_tsc_to_ns(w->d, tsc);
	unsigned int work = 0;

	if (w->d->auth.on)
		isthd_auth_shard_step(w); /* the key set published, this pass */
	work += isthd_expire_rounds(w->d, w->be, &w->expire_next, now_ns);
	if (w->eg.ring != NULL)
		work += isthd_repair_tail_copies(w->d, w->id, now_ns);
	work += shard_aggregate(w, now_ns);
	work += shard_pace(w);
	work += isthd_egress_release(w->d, w->id, tsc);
	work += shard_emit(w, now_ns);
	isth_resend_expire(w->agg_ring, now_ns);
	if (w->eg.ring != NULL)
		isth_resend_expire(w->eg.ring, now_ns);
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

/* Every worker has stopped: worker k's access TX queue (if it has one)
 * is used by this thread alone now, which sends stream k's last AGGs on
 * it (shard_emit), or hands them to worker 0's stream_frames. */
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
			/* the island's DATA still on its way: into the pacer,
			 * which teardown flushes (nothing is sent unpaced) */
			while (shard_pace(w) > 0)
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
	if (d->eg.pace != NULL) {
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
