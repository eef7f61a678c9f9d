/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker array (doc/isthmusd.md, "Workers"): isthmusd -l 0,1,..,N runs
 * the controller on the main lcore and N workers, d->workers[0..N-1], every
 * one running the same loop (worker.c) on state of its own (worker.h).
 *
 * What is spread: worker k aggregates the peer DATA of the chunks with
 * chunk % N == k in a backend instance of its own (slots, memory M/N,
 * counters), owns AGG stream k (numbers, keeps, seals and sends its AGGs,
 * serves the island's NACKs of it, GONE with a seq of its own), and sends
 * the island's DATA of each round to its share of the round's peers (the
 * ranks k, k + N, ...: isthd_egress_worker) with a pacer, a WAN repair
 * ring and budgets of its own. A peer's flow so has one pacer, one ring and
 * one TX queue: in chunk order, which the peer edge's WAN repair relies on.
 *
 * What is a role (isthd_workers_roles), held by worker 0: the RX queues
 * (one per port on these PMDs: no steering by chunk), the replay windows
 * and the tracking of peers' chunks in order (repair_nack.c, which a shard
 * of them would see as gaps), the hand-off of what it received to the
 * worker it belongs to (handoff.c), the controller's ROUND frames, and,
 * where a port has one TX queue, putting the other workers' frames on it.
 * Every stream the edge starts still has one writer: AGG and GONE of
 * stream k worker k, NACK to peers the RX worker, ROUND the controller,
 * the island's DATA its one WAN seal by the RX worker; so no receiver's
 * replay window sees a seq twice.
 *
 * Keys: every worker has an engine of its own in the key set published
 * (auth.c, struct isthd_keyset), taken at the start of each pass
 * (isthd_auth_step). The FPGA backend's device sealing (auth_dev.c) is
 * worker 0's alone because that backend runs with one worker (setup.c
 * refuses more).
 *
 * With one worker, nothing of the hand-off runs: no ring, no steering.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "isthd.h"

/* Ring sizes: a few bursts of every kind in flight per worker. */
#define HANDOFF_IN_SIZE 1024
#define HANDOFF_OUT_SIZE 1024
/* to the WAN through worker 0: a released burst is a copy per peer */
#define HANDOFF_WAN_OUT_SIZE 4096

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

void
isthd_workers_roles(struct isthd *d)
{
	unsigned int k, n = RTE_MAX(d->n_workers, 1u);

	for (k = 0; k < n; k++) {
		struct isthd_worker *w = &d->workers[k];

		w->d = d;
		w->id = k;
		w->role = 0;
		if (k == 0) {
			w->role = ISTHD_ROLE_RX | ISTHD_ROLE_ACCESS_Q0;
			if (n > 1)
				w->role |= ISTHD_ROLE_STEER;
			/* txq <= 1, not == 1: a struct built by hand whose
			 * ports never started (tests) has 0, and then no
			 * worker but 0 may touch queue 0 either */
			if (n > 1 && d->access_txq <= 1)
				w->role |= ISTHD_ROLE_ACCESS_RELAY;
			if (n > 1 && d->wan_txq <= 1)
				w->role |= ISTHD_ROLE_WAN_RELAY;
		}
		w->tx[ISTHD_ACCESS].port = d->access_port;
		w->tx[ISTHD_ACCESS].q = (uint16_t)(d->access_txq > 1 ? k : 0);
		w->tx[ISTHD_ACCESS].ring = k && d->access_txq <= 1 ? w->access_out : NULL;
		w->tx[ISTHD_WAN].port = d->wan_port;
		w->tx[ISTHD_WAN].q = (uint16_t)(d->wan_txq > 1 ? k : 0);
		w->tx[ISTHD_WAN].ring = k && d->wan_txq <= 1 ? w->wan_out : NULL;
	}
}

/* Worker k >= 1's rings: from the RX worker (messages, pacer input) and
 * to the owner of queue 0 (frames, where a port has one TX queue). */
static int
rings_create(struct isthd *d, struct isthd_worker *w)
{
	char name[RTE_RING_NAMESIZE];
	unsigned int k = w->id;

	snprintf(name, sizeof(name), "isthd_in%u", k);
	w->in = rte_ring_create_elem(name, sizeof(struct isthd_msg), HANDOFF_IN_SIZE,
		rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "isthd_out%u", k);
	w->access_out = rte_ring_create(
		name, HANDOFF_OUT_SIZE, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "isthd_wout%u", k);
	w->wan_out = rte_ring_create(
		name, HANDOFF_WAN_OUT_SIZE, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	/* as deep as the pacer's queue: a round's DATA waits in one or the
	 * other, never dropped here before the pacer would */
	snprintf(name, sizeof(name), "isthd_pace%u", k);
	w->pace_in = rte_ring_create_elem(name, sizeof(struct isthd_pace_msg), d->cfg.pace_queue,
		rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
	return w->in && w->access_out && w->wan_out && w->pace_in ? 0 : -ENOMEM;
}

int
isthd_workers_setup(struct isthd *d, const struct isth_backend_conf *bc, char *err, size_t err_size)
{
	unsigned int k, n = RTE_MAX(d->n_workers, 1u);
	struct isthd_worker *w0 = &d->workers[0];

	for (k = 0; k < n; k++) {
		struct isthd_worker *w = &d->workers[k];

		w->d = d;
		w->id = k;
		memset(&w->nack_budget, 0, sizeof(w->nack_budget));
		if (k > 0 && rings_create(d, w) < 0)
			goto nomem;
		w->be = isth_backend_create(d->cfg.backend, bc);
		if (w->be == NULL && k > 0) {
			snprintf(err, err_size, "%s: backend '%s' for worker %u: %s", d->cfg.path,
				d->cfg.backend, k, rte_strerror(rte_errno));
			return -rte_errno;
		}
		if (w->be == NULL) {
			snprintf(err, err_size, "%s: backend '%s': %s%s", d->cfg.path,
				d->cfg.backend, rte_strerror(rte_errno),
				d->cfg.auth && rte_errno == ENOTSUP
					? " ([auth] mode = on needs a device of interface 1.1)"
					: "");
			return -rte_errno;
		}
	}
	if (n > 1) {
		w0->stage = rte_zmalloc("isthd_stage", (size_t)n * ISTHD_BURST * sizeof(*w0->stage),
			RTE_CACHE_LINE_SIZE);
		w0->pstage = rte_zmalloc("isthd_pstage",
			(size_t)n * ISTHD_BURST * sizeof(*w0->pstage), RTE_CACHE_LINE_SIZE);
		if (w0->stage == NULL || w0->pstage == NULL)
			goto nomem;
	}
	isthd_workers_roles(d);
	return 0;
nomem:
	snprintf(err, err_size, "%u workers: rings and state: %s (try a larger -m)", n,
		rte_strerror(rte_errno));
	return -ENOMEM;
}

static void
free_mbufs(struct rte_ring *r)
{
	void *objs[64];
	unsigned int n;

	if (r == NULL)
		return;
	while ((n = rte_ring_dequeue_burst(r, objs, RTE_DIM(objs), NULL)) > 0)
		rte_pktmbuf_free_bulk((struct rte_mbuf **)objs, n);
	rte_ring_free(r);
}

/* A ring of elements @esize bytes each that start with an mbuf pointer
 * (struct isthd_msg, struct isthd_pace_msg): the mbufs freed, the ring too. */
static void
free_elems(struct rte_ring *r, unsigned int esize)
{
	uint8_t buf[16 * sizeof(struct isthd_msg)];
	unsigned int n, i, max = (unsigned int)sizeof(buf) / esize;

	if (r == NULL)
		return;
	while ((n = rte_ring_dequeue_burst_elem(r, buf, esize, max, NULL)) > 0)
		for (i = 0; i < n; i++) {
			struct rte_mbuf *m;

			memcpy(&m, buf + (size_t)i * esize, sizeof(m));
			rte_pktmbuf_free(m);
		}
	rte_ring_free(r);
}

void
isthd_workers_teardown(struct isthd *d)
{
	for (unsigned int k = 0; k < ISTHD_MAX_WORKERS; k++) {
		struct isthd_worker *w = &d->workers[k];

		isthd_egress_fini(&w->eg);
		free_elems(w->in, sizeof(struct isthd_msg));
		free_elems(w->pace_in, sizeof(struct isthd_pace_msg));
		free_mbufs(w->access_out);
		free_mbufs(w->wan_out);
		w->in = w->pace_in = w->access_out = w->wan_out = NULL;
		w->tx[0].ring = w->tx[1].ring = NULL;
		isth_backend_destroy(w->be);
		w->be = NULL;
		isth_resend_destroy(w->agg_ring);
		w->agg_ring = w->host_ring[0] = NULL;
		for (unsigned int h = 1; h < ISTHD_ISLAND_MAX_HOSTS; h++) {
			isth_resend_destroy(w->host_ring[h]);
			w->host_ring[h] = NULL;
		}
		rte_free(w->stage);
		rte_free(w->pstage);
		w->stage = NULL;
		w->pstage = NULL;
		w->eng = NULL;
	}
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
		rc = rte_eal_remote_launch(isthd_worker_main, &d->workers[k], lc);
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
