/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop every worker runs (doc/isthmusd.md, "Workers"), one pass over
 * every source of work it has:
 *
 *   key set of the pass; rounds past their deadline out of its backend
 *   tail copies to its peers (WAN repair)
 *   RX role:    WAN repair's tail checks; access RX (rx.c)
 *   from the RX worker: peer DATA summed, NACKs served; the island's DATA
 *     into its pacer (handoff.c)
 *   its pacer -> keep (WAN repair) -> replicate to its peers -> its WAN TX
 *   RX role:    WAN RX (rx.c); tree rounds' cutoffs, pace and TX (tree.c)
 *   its backend's finished aggregates -> AGGs of its stream: number, keep,
 *     seal -> its access TX
 *   queue-0 roles: the others' frames onto queue 0, the controller's ROUND
 *
 * Everything it touches was allocated at set-up; it takes no lock and
 * makes no syscall except the optional idle sleep (shared hosts only).
 */
#include <errno.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "isthd.h"

/* Bursts of the others' WAN frames relayed a pass (ISTHD_ROLE_WAN_RELAY):
 * a burst of DATA a worker released is a copy per peer. */
#define WAN_RELAY_BURSTS 8

/*
 * Rounds whose end (+ slack) has passed: their unfinished aggregates in
 * @w's backend leave as partials now, while the island still waits for
 * them.
 */
static unsigned int
expire_rounds(struct isthd_worker *w, uint64_t now_ns)
{
	const struct isthd *d = w->d;
	unsigned int n = 0;

	if (now_ns < d->clk.epoch_ns)
		return 0;
	for (;;) {
		uint64_t end = d->clk.epoch_ns + (w->expire_next + 1) * d->clk.round_ns +
			d->cfg.agg_round_slack_ns;

		if (now_ns < end)
			break;
		if (isth_backend_expire_round(w->be, d->cfg.job, (uint32_t)w->expire_next) > 0)
			n++;
		w->expire_next++;
	}
	return n;
}

/* One AGG @m of @w's stream before it is sealed: its stream, the room for
 * its tag, its frame (to the host that owns its chunk), its seq and a
 * reference in that host's resend ring; with the
 * device sealing (auth_dev.c), sealed again on the host if the device's seq
 * is out of step. @return false if it was dropped (counted, freed). */
static inline bool
agg_prepare(struct isthd_worker *w, struct rte_mbuf *m, uint64_t now_ns)
{
	struct isthd *d = w->d;
	uint32_t len = rte_pktmbuf_pkt_len(m);
	uint64_t seq, dev_seq = 0;
	enum isthd_drop why = ISTHD_DROP_tx_access;
	unsigned int host =
		isthd_chunk_host(d, isth_wire_get_hdr_chunk(rte_pktmbuf_mtod(m, uint8_t *)));

	/* sealed by the device: its tag is in the message already */
	if (d->auth.dev_seal) {
		len -= ISTH_AUTH_TAG_SIZE;
		dev_seq = isth_wire_get_seq(rte_pktmbuf_mtod(m, uint8_t *));
	}
	isth_ctr_add(&w->st.agg_out_bytes, len - ISTH_WIRE_HDR_SIZE);
	if (w->id != 0)
		isth_wire_or_flags(rte_pktmbuf_mtod(m, uint8_t *),
			(uint16_t)(w->id << ISTH_WIRE_STREAM_SHIFT));
	/* room for the tag, inside the frame's lengths */
	if (d->auth.on && !d->auth.dev_seal &&
		unlikely(m->nb_segs > 1 || rte_pktmbuf_append(m, ISTH_AUTH_TAG_SIZE) == NULL)) {
		why = ISTHD_DROP_auth_seal;
		goto drop;
	}
	/* The host's ring numbers the AGG (seq written into its header) and
	 * keeps its own reference for resends; framed first, pushed before
	 * TX. */
	if (unlikely(isthd_frame_to_host(d, m, host) < 0 ||
		    isth_resend_push(w->host_ring[host], m, now_ns, &seq) < 0))
		goto drop;
	isth_ctr_add(&w->st.host[host][ISTHD_HOST_agg_out], 1);
	if (d->auth.dev_seal && unlikely(seq != dev_seq)) {
		/* The device numbered it from the ring's first seq, one per
		 * AGG: the ring wrote the same seq and the tag holds. Out of
		 * step (an AGG the device sealed was lost on its way to the
		 * ring), the host seals it (counted). */
		isth_ctr_add(&w->st.agg_host_sealed, 1);
		why = ISTHD_DROP_auth_seal;
		if (unlikely(isthd_auth_seal_msg(d, w->eng, ISTH_AUTH_DOWN,
				     rte_pktmbuf_mtod_offset(m, uint8_t *, ISTHD_ISLAND_HDR),
				     len + ISTH_AUTH_TAG_SIZE, len + ISTH_AUTH_TAG_SIZE) < 0))
			goto drop;
		isth_ctr_add(&w->st.sealed, 1);
	}
	return true;
drop:
	isth_ctr_add(&w->st.drop[why], 1);
	rte_pktmbuf_free(m);
	return false;
}

/*
 * The one AGG emitter: @w's finished aggregates as AGGs of its stream k, a
 * burst at a time: each framed, its stream set, numbered and kept by its
 * ring; then (auth on) the burst sealed in one submission with its engine,
 * in place (the ring's reference sees the sealed bytes: resends start from
 * them), and sent in one TX burst on its access TX path. Through a ring to
 * the owner of queue 0, only as many as the ring takes whole.
 */
static unsigned int
emit_aggs(struct isthd_worker *w, uint64_t now_ns)
{
	struct isthd *d = w->d;
	struct rte_ring *ring = w->tx[ISTHD_ACCESS].ring;
	struct rte_mbuf *out[ISTHD_BURST];
	unsigned int n, i, ok = 0;

	/* what the backend gives is enqueued whole; only this worker
	 * enqueues, so the room it sees cannot shrink */
	if (ring != NULL && rte_ring_free_count(ring) < ISTHD_BURST)
		return 0;
	n = isth_backend_drain(w->be, now_ns, out, ISTHD_BURST);
	n += isthd_tree_drain(w, out + n, ISTHD_BURST - n); /* tree rounds (tree.c) */
	if (n == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (agg_prepare(w, out[i], now_ns))
			out[ok++] = out[i];
	/* sealed after their last header change, the seq */
	if (d->auth.on && !d->auth.dev_seal && ok)
		ok = isthd_auth_seal_frames(
			d, &w->st, w->eng, ISTH_AUTH_DOWN, out, ok, ISTHD_ISLAND_HDR);
	__atomic_store_n(&w->agg_seq, isth_resend_next_seq(w->agg_ring), __ATOMIC_RELAXED);
	isth_ctr_add(&w->st.agg_out, ok);
	isthd_worker_tx(w, ISTHD_ACCESS, out, ok);
	return n;
}

/*
 * Worker @w's pacer: the island's DATA due now, kept for its peers' NACKs,
 * replicated to its peers by its backend (which has this worker's share of
 * the round's fan-out table: control.c, publish_tables) and sent on its
 * WAN TX path. With one worker: all of it.
 */
static unsigned int
egress_release(struct isthd_worker *w, uint64_t now_tsc)
{
	struct isthd *d = w->d;
	struct isthd_egress *eg = &w->eg;
	struct rte_mbuf *out[ISTHD_BURST * 4];
	void *objs[ISTHD_BURST];
	unsigned int n, done = 0, max = ISTHD_BURST;

	if (w->tx[ISTHD_WAN].ring != NULL) {
		/* through the owner of queue 0: release only what the ring
		 * can take, a copy per peer of the worker (at most), so that
		 * paced DATA waits in the pacer rather than being dropped */
		unsigned int per = (d->n_islands - 1 + d->n_workers - 1) / d->n_workers;
		unsigned int fit = rte_ring_free_count(w->tx[ISTHD_WAN].ring) / (per ? per : 1u);

		max = RTE_MIN(max, fit);
		if (max == 0)
			return 0;
	}
	n = isth_pace_dequeue_burst(eg->pace, now_tsc, objs, max);
	if (n == 0)
		return 0;
	isth_ctr_add(&w->st.data_out, n);
	if (eg->ring)
		isthd_repair_keep(w, (struct rte_mbuf **)objs, n, isthd_tsc_to_ns(d, now_tsc));
	while (done < n) {
		uint16_t n_out = 0, k;

		k = isth_backend_replicate_burst(w->be, (struct rte_mbuf **)objs + done,
			(uint16_t)(n - done), out, RTE_DIM(out), &n_out);
		isthd_worker_tx(w, ISTHD_WAN, out, n_out);
		done += k;
	}
	isth_mbuf_free_bulk((struct rte_mbuf **)objs, n);
	return n;
}

/* ISTHD_ROLE_ACCESS_Q0: the controller's ROUND frames onto the wire. */
static unsigned int
ctl_msgs(struct isthd_worker *w)
{
	struct rte_mbuf *m[8];
	unsigned int n;

	n = rte_ring_dequeue_burst(w->d->ctl_ring, (void **)m, RTE_DIM(m), NULL);
	if (n) {
		isth_ctr_add(&w->st.round_msgs, n);
		isthd_worker_tx(w, ISTHD_ACCESS, m, n);
	}
	return n;
}

/* The queue-0 roles: the others' frames, then the controller's. */
static unsigned int
queue0_work(struct isthd_worker *w)
{
	unsigned int work = 0;

	if (w->role & ISTHD_ROLE_ACCESS_RELAY)
		work += isthd_handoff_relay(w, ISTHD_ACCESS, 1);
	if (w->role & ISTHD_ROLE_WAN_RELAY)
		work += isthd_handoff_relay(w, ISTHD_WAN, WAN_RELAY_BURSTS);
	if (w->role & ISTHD_ROLE_ACCESS_Q0)
		work += ctl_msgs(w);
	return work;
}

unsigned int
isthd_worker_poll(struct isthd_worker *w)
{
	struct isthd *d = w->d;
	uint64_t tsc = rte_rdtsc();
	uint64_t now_ns = isthd_tsc_to_ns(d, tsc);
	unsigned int work = 0;

	if (d->auth.on)
		isthd_auth_step(w); /* the key set published, this pass */
	work += expire_rounds(w, now_ns);
	if (w->eg.ring != NULL && now_ns >= d->clk.epoch_ns)
		work += isthd_repair_tail_copies(w, now_ns);
	if (w->role & ISTHD_ROLE_RX) {
		work += isthd_repair_tail_check(w, now_ns);
		work += isthd_access_rx(w, now_ns);
	}
	work += isthd_handoff_in(w, now_ns);
	work += isthd_handoff_pace_in(w);
	work += egress_release(w, tsc);
	if (w->role & ISTHD_ROLE_RX) {
		work += isthd_wan_rx(w, now_ns);
		/* tree rounds: cutoffs, the pace, one TX burst (tree.c) */
		work += isthd_tree_poll(w, now_ns);
	}
	work += emit_aggs(w, now_ns);
	if (w->role & (ISTHD_ROLE_ACCESS_Q0 | ISTHD_ROLE_ACCESS_RELAY | ISTHD_ROLE_WAN_RELAY))
		work += queue0_work(w);
	for (unsigned int h = 0; h < RTE_MAX(w->d->cfg.n_island_hosts, 1u); h++)
		isth_resend_expire(w->host_ring[h], now_ns);
	if (w->eg.ring != NULL)
		isth_resend_expire(w->eg.ring, now_ns);
	return work;
}

int
isthd_worker_main(void *arg)
{
	struct isthd_worker *w = arg;
	const struct isthd *d = w->d;
	uint32_t idle = 0;

	isthd_rcu_online(d, w->id);
	while (!d->stop) {
		/* round tables are read only within one pass */
		isthd_rcu_quiescent(d, w->id);
		if (isthd_worker_poll(w)) {
			idle = 0;
			continue;
		}
		/* Shared hosts: after idle_polls empty passes, sleep briefly
		 * so other processes on the core get to run. */
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

/*
 * Shutdown, on one thread once every worker has stopped: every worker's
 * queues and rings are this thread's now. What the hand-off rings hold is
 * summed (and the island's DATA put into the pacers, which teardown
 * flushes: nothing is sent unpaced), every backend flushed, and every
 * worker's last AGGs leave through its emitter, relayed where a port has
 * one TX queue.
 */
void
isthd_dp_drain_final(struct isthd *d)
{
	unsigned int k, n = RTE_MAX(d->n_workers, 1u), spins = 0, work;
	struct isth_backend_counts bc;

	for (k = 0; k < n; k++) {
		struct isthd_worker *w = &d->workers[k];

		/* the key set published now, for the seals below (the one
		 * of a worker's last pass may have been freed) */
		if (d->auth.on)
			isthd_auth_step(w);
		while (isthd_handoff_in(w, isthd_tsc_to_ns(d, rte_rdtsc())) > 0)
			;
		while (isthd_handoff_pace_in(w) > 0)
			;
		isth_backend_flush(w->be);
	}
	/* An asynchronous backend (fpga) may still hold aggregates when a
	 * drain returns nothing: wait for its dev_pending gauge, bounded. */
	do {
		do {
			work = 0;
			for (k = 0; k < n; k++)
				work += emit_aggs(&d->workers[k], isthd_tsc_to_ns(d, rte_rdtsc()));
			if (d->workers[0].role & ISTHD_ROLE_ACCESS_RELAY)
				work += isthd_handoff_relay(&d->workers[0], ISTHD_ACCESS, 1);
			if (d->workers[0].role & ISTHD_ROLE_WAN_RELAY)
				work += isthd_handoff_relay(
					&d->workers[0], ISTHD_WAN, WAN_RELAY_BURSTS);
		} while (work > 0);
		isth_backend_counts(d->workers[0].be, &bc); /* fpga: one worker */
		if (bc.dev_pending)
			rte_delay_us_sleep(100);
	} while (bc.dev_pending && ++spins < 20000);
	ctl_msgs(&d->workers[0]);
}
